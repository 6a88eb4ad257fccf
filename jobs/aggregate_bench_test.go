package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/commit"
	"github.com/schedbridge/schedbridge/storage/lake/laketest"
)

// EnvBenchAggLocations scales BenchmarkAggregateStage (default 150,000
// market locations, 14.4 million forecast_malo rows).
const EnvBenchAggLocations = "SCHEDBRIDGE_BENCH_AGG_LOCATIONS"

// BenchmarkAggregateStage is the quick loop of the aggregate stage against
// its peer: the forecast stage writes a forecast_malo snapshot once (the
// same synthetic portfolio as BenchmarkChain, at a smaller scale), then
// every iteration runs the aggregate stage on its own (read, sum, write
// position_control_area, publish the positions) and has DuckDB aggregate
// the same files to totals per portfolio, control area, kind and
// quarter-hour. It reports both times and their ratio, aggregate_vs_duckdb,
// the figure that BenchmarkChain reports at 1,000,000 locations.
func BenchmarkAggregateStage(b *testing.B) {
	n := benchLocations(b, EnvBenchAggLocations, 150_000)
	ctx := context.Background()
	env := newChainBench(b, n)
	db, bucket := env.db, env.bucket
	lk := env.lake(env.cat)
	r := jobs.New(db, lk, bucket, jobs.Config{Attempts: 1, Commit: commit.New(db, env.cat, nil)})
	if run, err := r.RunStage(ctx, pipeline.StageForecast, day, "bench"); err != nil || run.Status != pipeline.RunSucceeded {
		b.Fatalf("forecast stage: %v %+v", err, run)
	}
	snap, files := env.forecastFiles(b, lk)
	query := fmt.Sprintf(`select portfolio, control_area, kind, qh_index, sum(power_mw) as mw
		from read_parquet([%s]) group by all`, strings.Join(files, ","))
	duck := laketest.DuckDB(b)

	var ours, theirs, read time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		var run pipeline.Run
		var err error
		// The label lets `go tool pprof -tagfocus=stage=aggregate` show the
		// stage alone, with the goroutines it starts, without the setup.
		pprof.Do(ctx, pprof.Labels("stage", "aggregate"), func(ctx context.Context) {
			run, err = r.RunStage(ctx, pipeline.StageAggregate, day, "bench")
		})
		ours += time.Since(start)
		if err != nil || run.Status != pipeline.RunSucceeded {
			b.Fatalf("aggregate stage: %v %+v", err, run)
		}
		var out jobs.AggregateOutputs
		if err := json.Unmarshal(run.Outputs, &out); err != nil {
			b.Fatal(err)
		}
		read += time.Duration(out.ReadSeconds * float64(time.Second))
		b.StopTimer()
		res, err := duck.Query(ctx, query)
		if err != nil || len(res.Rows) == 0 {
			b.Fatalf("DuckDB: %v (%d rows)", err, len(res.Rows))
		}
		theirs += res.Elapsed
		b.StartTimer()
	}
	iters := float64(b.N)
	b.ReportMetric(ours.Seconds()/iters, "aggregate_s")
	b.ReportMetric(read.Seconds()/iters, "read_sum_s")
	b.ReportMetric(theirs.Seconds()/iters, "duckdb_aggregate_s")
	b.ReportMetric(ours.Seconds()/theirs.Seconds(), "aggregate_vs_duckdb")
	b.ReportMetric(float64(snap.Rows)*iters/ours.Seconds(), "rows/s")
}
