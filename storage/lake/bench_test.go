package lake_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/catalog/catalogtest"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/lake/laketest"
	"github.com/schedbridge/schedbridge/storage/objstore"
)

// EnvBenchLocations scales BenchmarkForecastMalo: the number of market
// locations (x 96 quarter-hours); 1000000 is the production portfolio.
const EnvBenchLocations = "SCHEDBRIDGE_BENCH_LAKE_LOCATIONS"

// BenchmarkForecastMalo writes a forecast_malo snapshot to the directory
// store in batches of 10,000 locations x 96 quarter-hours, as the forecast
// stage does, reads power_mw back, and has DuckDB sum power per control area
// over the files. Generating the batches is not counted in write-rows/s.
// peak-live-heap-MB is the largest live Go heap that a garbage collection
// found (sampled every 10 ms; Arrow buffers come from the Go heap),
// peak-RSS-MB the process's high-water mark (Linux) during the iteration.
func BenchmarkForecastMalo(b *testing.B) {
	locations := benchLocations(b, 100_000)
	const batchLocations = 10_000
	d := pipeline.NewDay(2026, 6, 15)
	rows := int64(locations * d.Intervals())
	duck := laketest.DuckDB(b)
	ctx := context.Background()
	var write, read, agg time.Duration
	var fileBytes int64
	var peakHeap, peakRSS uint64
	for b.Loop() {
		bucket, err := objstore.NewLocal(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		l := lake.New(bucket, lake.Options{Catalog: catalogtest.OpenSQLite(b, bucket)})
		runtime.GC()
		resetPeakRSS()
		stop := sampleHeap(&peakHeap)

		w, err := l.Create(ctx, fm, d, 1, pipeline.ForecastMaloSchema)
		if err != nil {
			b.Fatal(err)
		}
		for first := 0; first < locations; first += batchLocations {
			rec := forecastBatch(memory.DefaultAllocator, d, first, min(batchLocations, locations-first))
			start := time.Now()
			err := w.Write(rec)
			write += time.Since(start)
			rec.Release()
			if err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		snap, err := w.Commit(ctx)
		write += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if snap.Rows != rows {
			b.Fatalf("snapshot of %d rows, want %d", snap.Rows, rows)
		}
		for _, f := range snap.Files {
			fileBytes += f.Bytes
		}

		start = time.Now()
		var n int64
		var sum float64
		err = l.Read(ctx, snap, []string{"power_mw"}, func(rec arrow.RecordBatch) error {
			for _, v := range rec.Column(0).(*array.Float64).Float64Values() {
				sum += v
			}
			n += rec.NumRows()
			return nil
		})
		read += time.Since(start)
		if err != nil || n != rows {
			b.Fatalf("read %d rows of %d: %v", n, rows, err)
		}
		stop()
		peakRSS = max(peakRSS, highWaterRSS())

		r, err := duck.Query(ctx, `select control_area, sum(power_mw) as mw from read_parquet(`+
			laketest.Quote(filepath.Join(bucketDir(bucket), "lake", fm, "*", "*", "*.parquet"))+`) group by control_area`)
		if err != nil || len(r.Rows) != len(controlAreas) {
			b.Fatalf("DuckDB: %v", err)
		}
		agg += r.Elapsed
	}
	iters := float64(b.N)
	b.ReportMetric(float64(rows)*iters/write.Seconds(), "write-rows/s")
	b.ReportMetric(float64(rows)*iters/read.Seconds(), "read-rows/s")
	b.ReportMetric(float64(agg.Milliseconds())/iters, "duckdb-agg-ms")
	b.ReportMetric(float64(fileBytes)/iters/(1<<20), "file-MB")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-live-heap-MB")
	if peakRSS > 0 {
		b.ReportMetric(float64(peakRSS)/(1<<20), "peak-RSS-MB")
	}
}

// bucketDir is the directory of a directory store, from its file:// name.
func bucketDir(b *objstore.Local) string { return strings.TrimPrefix(b.String(), "file://") }

// sampleHeap records the largest live heap until the returned stop is called.
func sampleHeap(peak *uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			*peak = max(*peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// resetPeakRSS restarts the kernel's high-water mark of the resident set
// (Linux; elsewhere it does nothing and highWaterRSS reports 0).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// highWaterRSS is VmHWM of /proc/self/status in bytes.
func highWaterRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// benchLocations is the number of market locations of a lake benchmark:
// EnvBenchLocations when set, else def.
func benchLocations(b *testing.B, def int) int {
	v := os.Getenv(EnvBenchLocations)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number", EnvBenchLocations, v)
	}
	return n
}
