package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/catalog"
	"github.com/schedbridge/schedbridge/storage/catalog/catalogtest"
	"github.com/schedbridge/schedbridge/storage/commit"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/lake/laketest"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// EnvBenchLocations scales BenchmarkChain (default 20,000 market
// locations; `make bench-chain` runs 1,000,000).
const EnvBenchLocations = "SCHEDBRIDGE_BENCH_LOCATIONS"

// EnvBenchTrace names a file for an execution trace of BenchmarkChain's
// chain (`go tool trace -pprof=syscall FILE` shows where the stages waited;
// that is how the setup's checkpoint was found inside the forecast stage).
const EnvBenchTrace = "SCHEDBRIDGE_BENCH_TRACE"

// traceTo starts an execution trace into path, unless path is "", and
// returns the function that stops it.
func traceTo(b *testing.B, path string) func() {
	b.Helper()
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := trace.Start(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		trace.Stop()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChain is the chain benchmark: a portfolio of N market
// locations (95% slp over seven BDEW profiles and DSO profiles for some
// MGAs, 5% rlm with eight weeks of metered history) on the embedded default
// (SQLite + local directory store), then the whole chain for one day. It
// reports per-stage wall time and values per second, the peak RSS of the
// chain alone, and two DuckDB peers measured in the same run: the same
// aggregation over the same forecast_malo Parquet files
// (aggregate_vs_duckdb), and writing the same rows as zstd Parquet on two
// threads, copied from the stage's files (forecast_vs_duckdb_write, the
// forecast stage's time over DuckDB's). It also
// times DuckDB's filter on one market location over the stage's files
// (duckdb_malo_filter_ms), the query that the malo statistics serve.
func BenchmarkChain(b *testing.B) {
	n := benchLocations(b, EnvBenchLocations, 20000)
	ctx := context.Background()
	env := newChainBench(b, n)
	db, bucket, dir, probe, sc := env.db, env.bucket, env.dir, env.probe, env.sc

	timed := &timedCatalog{Catalog: env.cat, took: map[string]time.Duration{}}
	lk := env.lake(timed)
	r := jobs.New(db, lk, bucket, jobs.Config{Attempts: 1, Commit: commit.New(db, timed, nil)})
	duck := laketest.DuckDB(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resetPeakRSS()
		stopTrace := traceTo(b, os.Getenv(EnvBenchTrace))
		chain, err := r.Orchestrate(ctx, day, "bench")
		stopTrace()
		if err != nil {
			b.Fatal(err)
		}
		peak := peakRSS()
		b.StopTimer()
		runs, err := db.Runs(ctx, pipeline.RunQuery{ParentID: &chain.ID})
		if err != nil {
			b.Fatal(err)
		}
		var aggSecs, forecastSecs float64
		var values int64
		for _, run := range runs {
			secs := run.FinishedAt.Sub(run.StartedAt).Seconds()
			b.ReportMetric(secs, string(run.Stage)+"_s")
			switch run.Stage {
			case pipeline.StageForecast:
				var o jobs.ForecastOutputs
				_ = json.Unmarshal(run.Outputs, &o)
				values = o.Values
				forecastSecs = secs
				b.ReportMetric(float64(o.Values)/secs, "forecast_values/s")
				b.ReportMetric(o.CommitSeconds, "forecast_commit_s")
			case pipeline.StageAggregate:
				var o jobs.AggregateOutputs
				_ = json.Unmarshal(run.Outputs, &o)
				aggSecs = secs
				b.ReportMetric(float64(o.Rows)/secs, "aggregate_values/s")
			}
		}
		b.ReportMetric(chain.FinishedAt.Sub(chain.StartedAt).Seconds(), "chain_s")
		b.ReportMetric(float64(peak)/(1<<20), "peak_rss_MiB")
		// The Iceberg commit of each dataset's run (footers read, manifests
		// and metadata written, catalog row updated), and their sum: what
		// publishing through the catalog adds to the chain.
		var publish time.Duration
		for dataset, d := range timed.took {
			b.ReportMetric(float64(d.Microseconds())/1000, "publish_ms_"+dataset)
			publish += d
		}
		b.ReportMetric(publish.Seconds(), "publish_total_s")
		clear(timed.took)

		// DuckDB aggregates the same forecast_malo files to control-area
		// totals per quarter-hour, as the aggregate stage does.
		_, files := env.forecastFiles(b, lk)
		res, err := duck.Query(ctx, fmt.Sprintf(`select portfolio, control_area, kind, qh_index, sum(power_mw) as mw
			from read_parquet([%s]) group by all`, strings.Join(files, ",")))
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Rows) == 0 {
			b.Fatal("DuckDB found no rows")
		}
		b.ReportMetric(res.Elapsed.Seconds(), "duckdb_aggregate_s")
		b.ReportMetric(aggSecs/res.Elapsed.Seconds(), "aggregate_vs_duckdb")

		filter, err := duck.Query(ctx, fmt.Sprintf(`select count(*) as n, sum(power_mw) as mw
			from read_parquet([%s]) where malo = %s`, strings.Join(files, ","), laketest.Quote(probe)))
		if err != nil {
			b.Fatal(err)
		}
		if got, err := filter.Int(0, "n"); err != nil || got != int64(day.Intervals()) {
			b.Fatalf("DuckDB found %d rows of malo %s (%v), want %d", got, probe, err, day.Intervals())
		}
		b.ReportMetric(float64(filter.Elapsed.Microseconds())/1000, "duckdb_malo_filter_ms")

		// DuckDB writes the same rows: it reads the stage's files and writes
		// them again. Generating them in SQL instead cost it a printf per
		// row and took twice as long (81 s against 40 s at 1,000,000
		// locations), so copying is the harder peer.
		duckWrite := duckCopySeconds(ctx, b, duck, files, filepath.Join(dir, "duckdb-copy.parquet"))
		b.ReportMetric(duckWrite, "duckdb_copy_s")
		b.ReportMetric(forecastSecs/duckWrite, "forecast_vs_duckdb_write")
		b.Logf("chain for %d locations (%d values): %.1f s, peak RSS %.0f MiB; aggregate %.2f s vs DuckDB %.2f s; forecast %.2f s vs DuckDB writing the rows %.2f s; DuckDB filter on one malo %.0f ms",
			n, values, chain.FinishedAt.Sub(chain.StartedAt).Seconds(), float64(peak)/(1<<20), aggSecs, res.Elapsed.Seconds(),
			forecastSecs, duckWrite, float64(filter.Elapsed.Microseconds())/1000)
		b.StartTimer()
	}
	b.StopTimer()

	// The kalkulation of the day once it is over and every location's Ist
	// arrived: the stage reads the master data and one metered day of every
	// location, the schedules and the prices, and writes its dataset.
	ist := make([]float64, day.Intervals())
	for i := range ist {
		ist[i] = 2.5
	}
	stageBulk(b, db, "metered", func(st *sqldb.BulkStage) error {
		batch := make([]pipeline.MeteredEntry, 0, 5000)
		for _, l := range jobs.SynthLocations(sc) {
			batch = append(batch, pipeline.MeteredEntry{Day: day, Malo: l.Malo, Unit: pipeline.KWH, Values: ist})
			if len(batch) == cap(batch) {
				if err := st.Metered(ctx, batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		return st.Metered(ctx, batch)
	})
	after := jobs.New(db, lk, bucket, jobs.Config{Attempts: 1, Now: func() time.Time { return day.AddDays(1).Start().Add(7 * time.Hour) },
		Commit: commit.New(db, timed, nil)})
	resetPeakRSS()
	// The runner's clock stands still after the day, so the wall time is
	// taken here.
	start := time.Now()
	if _, err := after.RunStage(ctx, pipeline.StageKalkulation, day, "bench"); err != nil {
		b.Fatal(err)
	}
	secs := time.Since(start).Seconds()
	b.ReportMetric(secs, "kalkulation_s")
	b.ReportMetric(float64(timed.took[pipeline.DatasetKalkulation].Microseconds())/1000, "publish_ms_kalkulation")
	b.ReportMetric(float64(peakRSS())/(1<<20), "kalkulation_peak_rss_MiB")
	b.Logf("kalkulation stage for %d locations with their Ist: %.2f s", n, secs)
}

// chainBench is the synthetic portfolio "bench" of BenchmarkChain, staged
// into SQLite on the local directory store: n market locations, 95% slp over
// the BDEW profiles with DSO profiles for 10 MGAs, 5% rlm with eight weeks of
// metered history.
type chainBench struct {
	db     *sqldb.DB
	bucket *objstore.Local
	cat    *catalog.Catalog // in db, on bucket
	dir    string
	probe  string // a malo in the middle, for DuckDB's filter on one location
	sc     jobs.SynthConfig
}

// lake is a lake on the benchmark's store that publishes through cat (the
// benchmark's catalog, or a wrapper of it).
func (c chainBench) lake(cat lake.Catalog) *lake.Lake {
	return lake.New(c.bucket, lake.Options{Alloc: memory.NewGoAllocator(), SpoolDir: c.dir, Catalog: cat})
}

// forecastFiles returns the current forecast_malo snapshot and the paths
// of its files as SQL literals, for DuckDB's read_parquet.
func (c chainBench) forecastFiles(b *testing.B, lk *lake.Lake) (lake.Snapshot, []string) {
	b.Helper()
	snap, err := lk.Latest(context.Background(), pipeline.DatasetForecastMalo, day)
	if err != nil {
		b.Fatal(err)
	}
	files := make([]string, len(snap.Files))
	for i, f := range snap.Files {
		files[i] = laketest.Quote(filepath.Join(c.dir, "bucket", f.Key))
	}
	return snap, files
}

// newChainBench stages the portfolio of n locations; the database closes
// when the benchmark ends.
func newChainBench(b *testing.B, n int) chainBench {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	db, err := sqldb.Open(ctx, sqldb.Options{URL: "sqlite:" + filepath.Join(dir, "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	bucket, err := objstore.NewLocal(filepath.Join(dir, "bucket"))
	if err != nil {
		b.Fatal(err)
	}
	setup := time.Now()
	p := pipeline.Portfolio{ID: "bench", Name: "Bench", BalancingGroup: bg, ExchangeBalancingGroup: exchange,
		ControlAreas: []pipeline.ControlArea{pipeline.TenneT, pipeline.Amprion, pipeline.FiftyHertz, pipeline.TransnetBW}}
	if _, err := db.PutPortfolio(ctx, p, time.Now()); err != nil {
		b.Fatal(err)
	}
	sc := jobs.SynthConfig{Portfolio: p.ID, Locations: n, RLMShare: 0.05, Areas: p.ControlAreas, MGAs: 50, HistoryWeeks: 8, Day: day, Seed: 1}
	locs := jobs.SynthLocations(sc)
	stageBulk(b, db, "location", func(st *sqldb.BulkStage) error { return st.Locations(ctx, locs) })
	var hist []pipeline.MeteredEntry
	var meteredValues int
	stageBulk(b, db, "metered", func(st *sqldb.BulkStage) error {
		if err := jobs.SynthHistory(sc, locs, func(e pipeline.MeteredEntry) error {
			hist = append(hist, e)
			meteredValues += len(e.Values)
			if len(hist) == 5000 {
				err := st.Metered(ctx, hist)
				hist = hist[:0]
				return err
			}
			return nil
		}); err != nil {
			return err
		}
		return st.Metered(ctx, hist)
	})
	a := &pipeline.AuditEntry{ReceivedAt: time.Now(), PortfolioID: p.ID, Endpoint: "bench", InputHash: "p", StatusCode: 200}
	if _, err := db.StageProfiles(ctx, a, jobs.SynthDSOProfiles(day, 10)); err != nil {
		b.Fatal(err)
	}
	b.Logf("setup: %d locations, %d rlm history values staged in %.1f s", n, meteredValues, time.Since(setup).Seconds())
	return chainBench{db: db, bucket: bucket, cat: catalogtest.Open(b, db, bucket), dir: dir, probe: locs[len(locs)/2].Malo, sc: sc}
}

// duckCopySeconds is DuckDB's time to read the forecast stage's files and
// write the same rows again as zstd Parquet with the lake's row group size, on
// two threads.
func duckCopySeconds(ctx context.Context, b *testing.B, duck *laketest.Duck, files []string, path string) float64 {
	b.Helper()
	defer os.Remove(path)
	rs, err := duck.QueryAll(ctx, "set threads = 2", fmt.Sprintf(`copy (select * from read_parquet([%s]))
		to %s (format parquet, compression zstd, row_group_size %d)`,
		strings.Join(files, ","), laketest.Quote(path), lake.DefaultRowGroupRows))
	if err != nil {
		b.Fatal(err)
	}
	return rs[1].Elapsed.Seconds()
}

// benchLocations is the number of market locations of a benchmark at scale:
// the environment variable env when set, else def.
func benchLocations(b *testing.B, env string, def int) int {
	s := os.Getenv(env)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number of market locations", env, s)
	}
	return n
}

// bulkFiles numbers the files stageBulk claims, so that each is a new one.
var bulkFiles int

// stageBulk stages a large input of the portfolio "bench" in one bulk
// transaction, as the inbox does.
func stageBulk(b *testing.B, db *sqldb.DB, kind string, fn func(*sqldb.BulkStage) error) {
	b.Helper()
	stageBulkFor(b, db, "bench", kind, fn)
}

// stageBulkFor is stageBulk for any portfolio.
func stageBulkFor(b *testing.B, db *sqldb.DB, portfolio, kind string, fn func(*sqldb.BulkStage) error) {
	b.Helper()
	ctx := context.Background()
	// Bulk staging commits under an inbox claim, as a dropped file would.
	bulkFiles++
	key := fmt.Sprintf("inbox/%s/%s/bench-%d.csv", portfolio, kind, bulkFiles)
	f, ok, err := db.ClaimInboxFile(ctx, pipeline.InboxFile{Key: key, ETag: "1", PortfolioID: portfolio, Kind: kind},
		"bench", time.Now(), time.Hour)
	if err != nil || !ok {
		b.Fatalf("claim: %v %v", ok, err)
	}
	st, err := db.BeginBulk(ctx, kind, portfolio, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Rollback()
	if err := fn(st); err != nil {
		b.Fatal(err)
	}
	a := &pipeline.AuditEntry{ReceivedAt: time.Now(), PortfolioID: portfolio, Endpoint: "bench " + kind, InputHash: kind, StatusCode: 200}
	dest := "processed/" + portfolio + "/" + kind
	if _, err := st.Commit(ctx, f.ID, "bench", dest, a, func(pipeline.StageResult) ([]byte, error) { return nil, nil }); err != nil {
		b.Fatal(err)
	}
	// The inbox closes the record once the file is moved; left staged, it
	// would count as a file in processing in the console.
	ev := pipeline.Event{At: time.Now(), Kind: "inbox.processed", PortfolioID: portfolio, Subject: key,
		Data: json.RawMessage(fmt.Sprintf(`{"id":%d,"dest":%q,"kind":%q}`, f.ID, dest, kind))}
	if err := db.FinishInboxFile(ctx, f.ID, "bench", time.Now(), ev); err != nil {
		b.Fatal(err)
	}
	// The file's WAL checkpoint runs in the background after its commit;
	// a stage timed while it runs would be timed with it (issue 35).
	db.Settle()
}

// resetPeakRSS resets the kernel's high-water mark of this process's
// resident set (Linux: clear_refs 5), so peakRSS measures the chain alone.
// The setup's garbage (every location's master data and history, generated
// in memory) is first collected and given back to the system: the Go heap
// keeps freed pages resident until its scavenger returns them, so without
// that the chain's peak grew with the setup's size (1,171 MiB at 2,000,000
// locations in issue 35) although the chain streams.
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS is VmHWM of this process in bytes (0 where /proc is missing).
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// timedCatalog times each commit of a run's tables per dataset: the
// catalog's staging and the run's commit transaction, which also writes the
// run's read model.
type timedCatalog struct {
	*catalog.Catalog
	mu   sync.Mutex
	took map[string]time.Duration
}

func (c *timedCatalog) Commit(ctx context.Context, pubs []lake.Publication,
	inTx func(ctx context.Context, apply func(ctx context.Context, tx bun.IDB) error) error) error {
	start := time.Now()
	err := c.Catalog.Commit(ctx, pubs, inTx)
	c.mu.Lock()
	for _, p := range pubs {
		c.took[p.Dataset] += time.Since(start)
	}
	c.mu.Unlock()
	return err
}
