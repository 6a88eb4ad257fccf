package bulk

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/ingest/ingesttest"
)

// benchmarkBulk decodes a file b.N times in the validation pass (emit ==
// nil) and reports values per second.
func benchmarkBulk(b *testing.B, name string, data []byte, values int) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := decode(BulkMetered, name, data, BulkOptions{}, nil)
		if err != nil || res.Values != int64(values) {
			b.Fatalf("%v: %d values", err, res.Values)
		}
	}
	b.ReportMetric(float64(values)*float64(b.N)/b.Elapsed().Seconds(), "values/s")
}

// BenchmarkBulkCSVMetered: 20,000 rows x 96 values, ';' and decimal comma.
func BenchmarkBulkCSVMetered(b *testing.B) {
	es := ingesttest.BenchEntries(20000)
	benchmarkBulk(b, "m.csv", ingesttest.MeteredCSV(es, ingesttest.CSVStyle{Sep: ';', DecimalComma: true, Width: 96}), 20000*96)
}

// BenchmarkBulkCSVMeteredQuoted is the same file with quoted key cells,
// which takes the slow path of the CSV reader.
func BenchmarkBulkCSVMeteredQuoted(b *testing.B) {
	es := ingesttest.BenchEntries(20000)
	benchmarkBulk(b, "m.csv", ingesttest.MeteredCSV(es, ingesttest.CSVStyle{Sep: ',', Width: 96, QuoteKeys: true}), 20000*96)
}

// BenchmarkBulkCSVMeteredGzip adds gzip decompression.
func BenchmarkBulkCSVMeteredGzip(b *testing.B) {
	es := ingesttest.BenchEntries(20000)
	benchmarkBulk(b, "m.csv.gz", gzipped(ingesttest.MeteredCSV(es, ingesttest.CSVStyle{Sep: ';', DecimalComma: true, Width: 96})), 20000*96)
}

func BenchmarkBulkJSONMetered(b *testing.B) {
	benchmarkBulk(b, "m.json", meteredJSON(ingesttest.BenchEntries(20000), ""), 20000*96)
}

func BenchmarkBulkParquetMetered(b *testing.B) {
	benchmarkBulk(b, "m.parquet", meteredParquet(b, ingesttest.BenchEntries(20000), parquetStyle{}), 20000*96)
}

// BenchmarkBulkCSVMeteredEmit is the staging pass: batches are built and
// handed over.
func BenchmarkBulkCSVMeteredEmit(b *testing.B) {
	es := ingesttest.BenchEntries(20000)
	data := ingesttest.MeteredCSV(es, ingesttest.CSVStyle{Sep: ';', DecimalComma: true, Width: 96})
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		_, err := decode(BulkMetered, "m.csv", data, BulkOptions{}, func(bb BulkBatch) error { n += len(bb.Metered); return nil })
		if err != nil || n != 20000 {
			b.Fatal(err, n)
		}
	}
	b.ReportMetric(20000*96*float64(b.N)/b.Elapsed().Seconds(), "values/s")
}

// writeBigCSV writes rows metered-data rows of 96 values to w, as a
// supplier's export of a whole portfolio-day would be.
func writeBigCSV(w io.Writer, rows int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString("malo;day;unit")
	for j := 1; j <= 96; j++ {
		bw.WriteString(";v" + strconv.Itoa(j))
	}
	bw.WriteString("\n")
	var line []byte
	for i := 0; i < rows; i++ {
		line = line[:0]
		line = fmt.Appendf(line, "%011d;2026-03-28;KWH", 10000000000+i)
		for j := 0; j < 96; j++ {
			v := (i*96 + j) % 1000000
			line = append(line, ';')
			line = strconv.AppendInt(line, int64(v/1000), 10)
			line = append(line, ',')
			frac := v % 1000
			line = append(line, byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// TestBulkMillionRows measures the validation pass over 1,000,000 rows x 96
// values (about 700 MB of CSV, written to a temporary file): wall time, peak
// heap and peak RSS. It takes a while and is run on demand:
//
//	SCHEDBRIDGE_BULK_1M=1 go test -run TestBulkMillionRows -v ./ingest/bulk
func TestBulkMillionRows(t *testing.T) {
	if os.Getenv("SCHEDBRIDGE_BULK_1M") == "" {
		t.Skip("set SCHEDBRIDGE_BULK_1M=1 to run")
	}
	rows := 1000000
	if n, err := strconv.Atoi(os.Getenv("SCHEDBRIDGE_BULK_1M")); err == nil && n > 1 {
		rows = n
	}
	name := filepath.Join(t.TempDir(), "big.csv")
	if strings.HasSuffix(os.Getenv("SCHEDBRIDGE_BULK_FILE"), ".csv") {
		name = os.Getenv("SCHEDBRIDGE_BULK_FILE")
	}
	if _, err := os.Stat(name); err != nil {
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := writeBigCSV(f, rows); err != nil {
			t.Fatal(err)
		}
		f.Close()
		t.Logf("wrote %s in %v", name, time.Since(start))
	}
	st, _ := os.Stat(name)
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	debug.FreeOSMemory()
	var peakHeap atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peakHeap.Load() {
				peakHeap.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	res, err := DecodeBulk(context.Background(), BulkMetered, BulkInput{Name: "big.csv", Body: f}, BulkOptions{}, nil)
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Entries != rows || res.Values != int64(rows)*96 || res.InputHash == "" {
		t.Fatalf("result %+v", res)
	}
	t.Logf("%d rows, %d values, %.0f MB: %v, %.1f M values/s, %.0f MB/s; peak heap in use %.1f MiB; peak RSS %s",
		res.Entries, res.Values, float64(st.Size())/1e6, elapsed.Round(time.Millisecond),
		float64(res.Values)/elapsed.Seconds()/1e6, float64(st.Size())/elapsed.Seconds()/1e6,
		float64(peakHeap.Load())/(1<<20), peakRSS())
}

// peakRSS is the process's VmHWM from /proc.
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		if bytes.HasPrefix(l, []byte("VmHWM:")) {
			return strings.Join(strings.Fields(string(l[6:])), " ")
		}
	}
	return "unknown"
}
