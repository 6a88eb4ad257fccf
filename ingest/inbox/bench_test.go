package inbox_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// benchRows is the size of the benchmark file: SCHEDBRIDGE_BENCH_INBOX_ROWS,
// 20,000 by default so that `make bench` stays short; `make bench-inbox`
// runs the 1,000,000-row file of the issue.
func benchRows(b *testing.B) int {
	if s := os.Getenv("SCHEDBRIDGE_BENCH_INBOX_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("SCHEDBRIDGE_BENCH_INBOX_ROWS=%q", s)
		}
		return n
	}
	return 20000
}

// writeMeteredCSV writes rows metered days (96 values, decimal comma, ';')
// spread over market locations and ten November days, streaming to disk.
func writeMeteredCSV(b *testing.B, path string, rows int) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("malo;day;unit")
	for i := 1; i <= 96; i++ {
		fmt.Fprintf(w, ";v%d", i)
	}
	w.WriteString("\n")
	rng := rand.New(rand.NewPCG(1, 2))
	var line []byte
	for r := range rows {
		line = line[:0]
		line = fmt.Appendf(line, "%011d;2026-11-%02d;KWH", 10000000000+r/10, 10+r%10)
		for range 96 {
			line = append(line, ';')
			line = strconv.AppendFloat(line, float64(rng.IntN(5_000_000))/1000, 'f', -1, 64)
			if i := bytes.IndexByte(line[len(line)-12:], '.'); i >= 0 {
				line[len(line)-12+i] = ','
			}
		}
		line = append(line, '\n')
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// resetPeakRSS clears the kernel's high-water mark of this process's
// resident memory, so that each run reports its own peak.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS reads VmHWM in MiB.
func peakRSS(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkInboxMeteredCSV drops one metered-data CSV into MinIO and
// measures the scan that validates, stages and moves it, per database: wall
// time, values per second and the peak resident memory of the process
// during the scan.
func BenchmarkInboxMeteredCSV(b *testing.B) {
	rows := benchRows(b)
	path := filepath.Join(b.TempDir(), "metered.csv")
	writeMeteredCSV(b, path, rows)
	st, _ := os.Stat(path)
	for _, d := range sqltest.Backends {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			var wall time.Duration
			var peak float64
			for range b.N {
				b.StopTimer()
				e := &env{db: sqltest.Open(b, d), clock: clocktest.New(t0)}
				bucket, err := objstore.NewS3(ctx, objtest.MinIO(b))
				if err != nil {
					b.Fatal(err)
				}
				e.bucket = bucket
				p := pipeline.Portfolio{ID: "p1", Name: "Bench", ControlAreas: []pipeline.ControlArea{pipeline.TenneT}}
				if _, err := e.db.PutPortfolio(ctx, p, t0); err != nil {
					b.Fatal(err)
				}
				f, _ := os.Open(path)
				err = bucket.Put(ctx, "inbox/p1/metered-data/metered.csv", f, st.Size())
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
				proc := e.processor(b, "bench")
				resetPeakRSS()
				b.StartTimer()
				start := time.Now()
				sum, err := proc.Scan(ctx)
				wall += time.Since(start)
				b.StopTimer()
				if err != nil || sum.Processed != 1 {
					b.Fatalf("scan = %+v, %v", sum, err)
				}
				peak = max(peak, peakRSS(b))
			}
			values := float64(rows) * 96 * float64(b.N)
			b.ReportMetric(wall.Seconds()/float64(b.N), "s/file")
			b.ReportMetric(values/wall.Seconds(), "values/s")
			b.ReportMetric(peak, "peak-RSS-MiB")
			b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
		})
	}
}
