package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/fahrplan"
	"github.com/schedbridge/schedbridge/storage/catalog"
	"github.com/schedbridge/schedbridge/storage/catalog/catalogtest"
	"github.com/schedbridge/schedbridge/storage/commit"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

func TestMain(m *testing.M) {
	os.Exit(objtest.Main(objtest.RunFunc(func() int { return sqltest.Main(m) })))
}

// The delivery day of the tests and a clock on the morning before it.
var (
	day = pipeline.NewDay(2026, time.November, 24)
	t0  = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
)

const (
	bg       = "11XSBTEST-BKV--A"
	exchange = "11XSBEXCHANGE--G"
	cpty     = "11XSBCPTY-A----I"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

type env struct {
	tb     testing.TB
	db     *sqldb.DB
	bucket objstore.Bucket
	cat    *catalog.Catalog
	lake   *lake.Lake
	// commitCat is the catalog that the runners' commit point commits
	// through: cat, or a hooked one (hooked).
	commitCat commit.Catalog
	clock     *clock
	alloc     *memory.CheckedAllocator
	sleeps    []time.Duration
}

type combo struct {
	name  string
	db    sqldb.Dialect
	minio bool
}

// The chain runs against both databases and both object stores.
var combos = []combo{
	{"sqlite+local", sqldb.SQLite, false},
	{"postgres+minio", sqldb.Postgres, true},
}

func eachCombo(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, c := range combos {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fn(t, newEnv(t, c))
		})
	}
}

func newEnv(t testing.TB, c combo) *env {
	t.Helper()
	return openEnv(t, newEnvSpec(t, c))
}

// envSpec says where an env's database and bucket are, so that a child
// process of the test binary can open the same (crash_test.go).
type envSpec struct {
	DB     string             `json:"db"`
	Bucket string             `json:"bucket,omitempty"` // a local directory store
	S3     *objstore.S3Config `json:"s3,omitempty"`
}

// newEnvSpec makes a fresh database and bucket of the combo.
func newEnvSpec(t testing.TB, c combo) envSpec {
	t.Helper()
	var s envSpec
	switch c.db {
	case sqldb.SQLite:
		s.DB = "sqlite:" + filepath.Join(t.TempDir(), "test.db")
	default:
		s.DB = sqltest.PostgresURL(t)
	}
	if c.minio {
		cfg := objtest.MinIO(t)
		s.S3 = &cfg
	} else {
		s.Bucket = filepath.Join(t.TempDir(), "bucket")
	}
	return s
}

// openEnv opens the database (migrated) and bucket of the spec.
func openEnv(t testing.TB, s envSpec) *env {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, sqldb.Options{URL: s.DB})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	e := &env{tb: t, db: db, clock: &clock{t: t0}, alloc: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	t.Cleanup(func() { e.alloc.AssertSize(t, 0) })
	if s.S3 != nil {
		e.bucket, err = objstore.NewS3(ctx, *s.S3)
	} else {
		e.bucket, err = objstore.NewLocal(s.Bucket)
	}
	if err != nil {
		t.Fatal(err)
	}
	e.cat = catalogtest.Open(t, e.db, e.bucket)
	e.lake = lake.New(e.bucket, lake.Options{Alloc: e.alloc, Now: e.clock.Now, SpoolDir: t.TempDir(), Catalog: e.cat})
	return e
}

func (e *env) runner(mod ...func(*jobs.Config)) *jobs.Runner {
	cfg := jobs.Config{Now: e.clock.Now, Alloc: e.alloc, Backoff: time.Second,
		Sleep: func(_ context.Context, d time.Duration) error { e.sleeps = append(e.sleeps, d); return nil }}
	for _, m := range mod {
		m(&cfg)
	}
	if cfg.Commit == nil {
		cfg.Commit = e.committer()
	}
	r := jobs.New(e.db, e.lake, e.bucket, cfg)
	// Background runs end before the database and the allocator are
	// checked and closed.
	e.tb.Cleanup(func() {
		if err := r.Shutdown(context.Background()); err != nil {
			e.tb.Errorf("shutdown: %v", err)
		}
	})
	return r
}

// committer is the commit point of the env's runs.
func (e *env) committer() *commit.Point {
	cat := e.commitCat
	if cat == nil {
		cat = e.cat
	}
	return commit.New(e.db, cat, e.clock.Now)
}

// seed stages a small synthetic portfolio: slp and rlm locations in two
// control areas, rlm history, and DSO profiles for one MGA.
func (e *env) seed(t *testing.T, id string, n int) jobs.SynthConfig {
	t.Helper()
	ctx := context.Background()
	p := pipeline.Portfolio{ID: id, Name: "Test " + id, BalancingGroup: bg, ExchangeBalancingGroup: exchange,
		ControlAreas: []pipeline.ControlArea{pipeline.TenneT, pipeline.Amprion}}
	if _, err := e.db.PutPortfolio(ctx, p, t0); err != nil {
		t.Fatal(err)
	}
	sc := jobs.SynthConfig{Portfolio: id, Locations: n, RLMShare: 0.2, Areas: p.ControlAreas, MGAs: 3, HistoryWeeks: 8, Day: day, Seed: 7}
	locs := jobs.SynthLocations(sc)
	a := &pipeline.AuditEntry{ReceivedAt: t0, PortfolioID: id, Endpoint: "test", InputHash: "h", StatusCode: 200}
	if _, err := e.db.StageLocations(ctx, a, locs); err != nil {
		t.Fatal(err)
	}
	var hist []pipeline.MeteredEntry
	if err := jobs.SynthHistory(sc, locs, func(m pipeline.MeteredEntry) error { hist = append(hist, m); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.StageMetered(ctx, a, hist); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.StageProfiles(ctx, a, jobs.SynthDSOProfiles(day, 1)); err != nil {
		t.Fatal(err)
	}
	return sc
}

func outputs[T any](t *testing.T, run pipeline.Run) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(run.Outputs, &v); err != nil {
		t.Fatalf("outputs of run %d: %v (%s)", run.ID, err, run.Outputs)
	}
	return v
}

func readObject(t *testing.T, b objstore.Bucket, key string) []byte {
	t.Helper()
	rc, err := b.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestChain runs the whole chain and checks that every stage's output agrees
// with its inputs: the positions are the sums of the per-location forecasts,
// the open position subtracts the trades, and the schedule messages carry
// the trades and the rest of the open position.
func TestChain(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.seed(t, "p1", 60)
		r := e.runner()
		chain, err := r.Orchestrate(ctx, day, "test")
		if err != nil {
			t.Fatalf("chain: %v", err)
		}
		if chain.Status != pipeline.RunSucceeded || chain.Stage != pipeline.StageChain {
			t.Fatalf("chain run = %+v", chain)
		}
		stages, err := e.db.Runs(ctx, pipeline.RunQuery{ParentID: &chain.ID})
		if err != nil || len(stages) != 4 {
			t.Fatalf("stage runs = %v, %v", stages, err)
		}

		// forecast_malo: every location, 96 rows each, sums per area.
		snap, err := e.lake.Latest(ctx, pipeline.DatasetForecastMalo, day)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Rows != 60*96 {
			t.Errorf("forecast_malo rows = %d, want %d", snap.Rows, 60*96)
		}
		sums := map[string]float64{}
		if err := e.lake.Read(ctx, snap, nil, func(rec arrowRecord) error {
			addByArea(t, rec, sums)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		runID, rows, err := e.db.Positions(ctx, "p1", day)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, r := range rows {
			got[string(r.ControlArea)] += r.NetMW
			if r.Source != "generated" {
				t.Errorf("position source = %q", r.Source)
			}
		}
		for area, want := range sums {
			if math.Abs(got[area]-want) > 1e-6*math.Max(1, want) {
				t.Errorf("%s: positions sum %.6f, forecast_malo sum %.6f", area, got[area], want)
			}
		}
		if len(got) != 2 || runID == 0 {
			t.Errorf("areas %v, run %d", got, runID)
		}

		// No trades: each area's open position is its net position, and the
		// schedule buys it from the exchange.
		_, open, err := e.db.OpenPosition(ctx, "p1", day)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range open {
			if o.OpenMW != o.NetMW || o.BoughtMW != 0 {
				t.Fatalf("open row without trades: %+v", o)
			}
		}
		msgs, err := e.db.Schedules(ctx, "p1", day)
		if err != nil || len(msgs) != 2 {
			t.Fatalf("schedules = %v, %v", msgs, err)
		}
		for _, m := range msgs {
			if m.Version != 1 || m.Status != pipeline.ScheduleSubmitted || !strings.HasPrefix(m.ObjectKey, jobs.OutboxPrefix) {
				t.Errorf("schedule %+v", m)
			}
			doc, err := fahrplan.ParseSchedule(readObject(t, e.bucket, m.ObjectKey))
			if err != nil {
				t.Fatal(err)
			}
			if doc.Version != 1 || doc.Sender != bg || len(doc.Series) != 1 || doc.Series[0].OutParty != exchange {
				t.Errorf("document %s: version %d sender %s series %+v", m.FileName, doc.Version, doc.Sender, doc.Series)
			}
			var sum float64
			for _, q := range doc.Series[0].Quantities {
				sum += q
			}
			if math.Abs(sum-got[string(m.ControlArea)]) > 0.001*96 {
				t.Errorf("%s: schedule sum %.3f, net %.3f", m.ControlArea, sum, got[string(m.ControlArea)])
			}
			if m.FileName != doc.FileName() || !strings.HasPrefix(m.FileName, "20261124_TPS_"+bg+"_") || !strings.HasSuffix(m.FileName, "_001.XML") {
				t.Errorf("file name %s", m.FileName)
			}
		}

		// A second chain on the same inputs gives the same outputs and
		// sends no new version.
		again, err := r.Orchestrate(ctx, day, "test")
		if err != nil {
			t.Fatal(err)
		}
		_, rows2, _ := e.db.Positions(ctx, "p1", day)
		if !equalPositions(rows, rows2) {
			t.Error("a re-run changed the positions")
		}
		msgs2, _ := e.db.Schedules(ctx, "p1", day)
		if len(msgs2) != 2 {
			t.Errorf("re-run recorded new versions: %d messages", len(msgs2))
		}
		st, _ := e.db.Runs(ctx, pipeline.RunQuery{ParentID: &again.ID, Stage: pipeline.StageSchedules})
		so := outputs[jobs.SchedulesOutputs](t, st[0])
		for _, m := range so.Messages {
			if m.New {
				t.Errorf("re-run sent %s again", m.FileName)
			}
		}

		// Trades change the open position and the schedule: version 2 with
		// the trade as its own series.
		buy := make([]float64, 96)
		for i := range buy {
			buy[i] = 1.5
		}
		set := pipeline.TradeSet{Portfolio: "p1", Day: day, Trades: []pipeline.Trade{
			{ControlArea: pipeline.TenneT, Counterparty: cpty, Direction: pipeline.Buy, Unit: pipeline.MW, Values: buy}}}
		canon, _ := json.Marshal(set)
		if _, err := e.db.StageTrades(ctx, &pipeline.AuditEntry{ReceivedAt: t0, PortfolioID: "p1", Endpoint: "test", InputHash: "t", StatusCode: 200}, set, canon); err != nil {
			t.Fatal(err)
		}
		// Schedules before the open position saw the trades would count
		// them twice: refused, not retried.
		if _, err := r.RunStage(ctx, pipeline.StageSchedules, day, "test"); pipeline.KindOf(err) != pipeline.Invalid ||
			!strings.Contains(err.Error(), "run the open-position stage again") {
			t.Fatalf("schedules with newer trades: %v", err)
		}
		for _, st := range []pipeline.Stage{pipeline.StageOpenPosition, pipeline.StageSchedules} {
			if _, err := r.RunStage(ctx, st, day, "test"); err != nil {
				t.Fatal(err)
			}
		}
		_, open, _ = e.db.OpenPosition(ctx, "p1", day)
		for _, o := range open {
			want := o.NetMW
			if o.ControlArea == pipeline.TenneT {
				want -= 1.5
			}
			if math.Abs(o.OpenMW-want) > 1e-9 {
				t.Fatalf("open %+v, want %.3f", o, want)
			}
		}
		tennet, err := e.db.LatestSchedule(ctx, "p1", day, pipeline.TenneT)
		if err != nil || tennet.Version != 2 {
			t.Fatalf("TenneT latest = %+v, %v", tennet, err)
		}
		doc, err := fahrplan.ParseSchedule(readObject(t, e.bucket, tennet.ObjectKey))
		if err != nil {
			t.Fatal(err)
		}
		if doc.Version != 2 || len(doc.Series) < 1 || doc.Series[0].OutParty != cpty || doc.Series[0].Quantities[0] != 1.5 {
			t.Errorf("version 2 document: %+v", doc.Series)
		}
		amprion, _ := e.db.LatestSchedule(ctx, "p1", day, pipeline.Amprion)
		if amprion.Version != 1 {
			t.Errorf("Amprion without trades got version %d", amprion.Version)
		}

		// Events tell the story.
		evs, err := e.db.Events(ctx, pipeline.EventQuery{Day: &day, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, ev := range evs {
			kinds[ev.Kind]++
		}
		if kinds["run.started"] == 0 || kinds["run.succeeded"] == 0 || kinds["schedule.sent"] != 3 {
			t.Errorf("event kinds %v", kinds)
		}
	})
}

func equalPositions(a, b []pipeline.PositionRow) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].NetMW != b[i].NetMW || a[i].ControlArea != b[i].ControlArea || a[i].QH != b[i].QH {
			return false
		}
	}
	return true
}

var errCrash = errors.New("simulated crash before publish")

// crashPublish makes the catalog's Publish fail while armed: the crash
// between moving a snapshot's Parquet files to their final keys and
// publishing them.
func crashPublish(c *catalogtest.Hooked, armed bool) {
	if !armed {
		c.Set(nil)
		return
	}
	c.Set(func(context.Context, lake.Publication) error { return errCrash })
}

// TestCrashBeforePublish: a run whose snapshot is written but not published
// leaves the previous run visible, and the next run completes.
func TestCrashBeforePublish(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.seed(t, "p1", 20)
		fc := e.hooked()
		r := e.runner()
		first, err := r.RunStage(ctx, pipeline.StageForecast, day, "test")
		if err != nil {
			t.Fatal(err)
		}
		crashPublish(fc, true)
		crashed, err := r.RunStage(ctx, pipeline.StageForecast, day, "test")
		if err == nil || crashed.Status != pipeline.RunFailed {
			t.Fatalf("crashed run: %+v, %v", crashed, err)
		}
		snap, err := e.lake.Latest(ctx, pipeline.DatasetForecastMalo, day)
		if err != nil || snap.RunID != first.ID {
			t.Fatalf("after the crash latest = run %d (%v), want %d", snap.RunID, err, first.ID)
		}
		crashPublish(fc, false)
		next, err := r.RunStage(ctx, pipeline.StageForecast, day, "test")
		if err != nil {
			t.Fatal(err)
		}
		snap, err = e.lake.Latest(ctx, pipeline.DatasetForecastMalo, day)
		if err != nil || snap.RunID != next.ID || snap.Rows != 20*96 {
			t.Fatalf("after the next run latest = %+v, %v", snap, err)
		}
	})
}

// TestRetryAndStop: a transient failure is retried with doubling backoff
// and shows in events; a stage that keeps failing stops the chain, and bad
// configuration is not retried at all.
func TestRetryAndStop(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.seed(t, "p1", 10)
		fc := e.hooked()
		crashPublish(fc, true)
		r := e.runner(func(c *jobs.Config) { c.Attempts = 3 })
		chain, err := r.Orchestrate(ctx, day, "test")
		if err == nil || chain.Status != pipeline.RunFailed {
			t.Fatalf("chain = %+v, %v", chain, err)
		}
		stages, _ := e.db.Runs(ctx, pipeline.RunQuery{ParentID: &chain.ID})
		if len(stages) != 3 {
			t.Fatalf("want 3 forecast attempts and nothing after, got %d runs", len(stages))
		}
		for _, s := range stages {
			if s.Stage != pipeline.StageForecast || s.Status != pipeline.RunFailed {
				t.Errorf("run %+v", s)
			}
		}
		if len(e.sleeps) != 2 || e.sleeps[0] != time.Second || e.sleeps[1] != 2*time.Second {
			t.Errorf("backoff waits %v, want [1s 2s]", e.sleeps)
		}
		evs, _ := e.db.Events(ctx, pipeline.EventQuery{Kind: "stage.retry", Limit: 100})
		if len(evs) != 2 {
			t.Errorf("stage.retry events = %d", len(evs))
		}

		// A portfolio without a balancing group cannot be scheduled: the
		// chain stops at schedules on the first attempt.
		crashPublish(fc, false)
		e.sleeps = nil
		p := pipeline.Portfolio{ID: "p2", Name: "No BG", ControlAreas: []pipeline.ControlArea{pipeline.TenneT}}
		if _, err := e.db.PutPortfolio(ctx, p, t0); err != nil {
			t.Fatal(err)
		}
		f := pipeline.Forecast{DeliveryDay: day, Series: []pipeline.Series{{ControlArea: pipeline.TenneT, Kind: pipeline.Consumption, Unit: pipeline.MW, Values: make([]float64, 96)}}}
		body, _ := json.Marshal(f)
		if _, err := e.db.StageForecast(ctx, &pipeline.AuditEntry{ReceivedAt: t0, PortfolioID: "p2", Endpoint: "test", InputHash: "f", StatusCode: 200}, f, body); err != nil {
			t.Fatal(err)
		}
		chain, err = r.Orchestrate(ctx, day, "test")
		if err == nil || pipeline.KindOf(err) != pipeline.Invalid || !strings.Contains(err.Error(), "no balancing group") {
			t.Fatalf("chain error = %v", err)
		}
		stages, _ = e.db.Runs(ctx, pipeline.RunQuery{ParentID: &chain.ID})
		if len(stages) != 4 || stages[0].Stage != pipeline.StageSchedules || len(e.sleeps) != 0 {
			t.Errorf("runs %d (newest %s), sleeps %v", len(stages), stages[0].Stage, e.sleeps)
		}
	})
}

// TestSchedulerChainStops: cron stages run only after their predecessor
// succeeded for the day; otherwise they are skipped and say why.
func TestSchedulerChainStops(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.seed(t, "p1", 10)
		r := e.runner()
		s, err := jobs.NewScheduler(r, e.db, jobs.SchedulerConfig{Now: e.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Fire(ctx, pipeline.StageAggregate); pipeline.KindOf(err) != pipeline.Conflict {
			t.Fatalf("aggregate before forecast: %v", err)
		}
		evs, _ := e.db.Events(ctx, pipeline.EventQuery{Kind: "stage.skipped", Limit: 10})
		if len(evs) != 1 || evs[0].DeliveryDay == nil || *evs[0].DeliveryDay != day {
			t.Fatalf("skipped events %+v", evs)
		}
		for _, st := range pipeline.Stages {
			run, err := s.Fire(ctx, st)
			if err != nil || run.Day != day || run.Trigger != "cron" {
				t.Fatalf("fire %s: %+v, %v", st, run, err)
			}
		}
	})
}

func TestDefaultSpecsBeforeDeadline(t *testing.T) {
	specs, err := jobs.ParseSpecs(nil)
	if err != nil {
		t.Fatal(err)
	}
	// On the spring-forward and fall-back days as on a normal day, the last
	// stage fires before 14:30 Berlin time.
	for _, d := range []string{"2026-03-28", "2026-03-29", "2026-10-25", "2026-11-23"} {
		dd, _ := pipeline.ParseDay(d)
		start := dd.Start()
		deadline := time.Date(dd.Year, dd.Month, dd.Dom, 14, 30, 0, 0, pipeline.Berlin)
		var last time.Time
		for _, st := range pipeline.Stages {
			next := specs[st].Next(start)
			if next.Before(last) {
				t.Errorf("%s: %s fires before its predecessor", d, st)
			}
			last = next
		}
		if !last.Before(deadline.Add(-2 * time.Hour)) {
			t.Errorf("%s: schedules fire at %s, too close to the deadline", d, last)
		}
	}
	if _, err := jobs.ParseSpecs(map[pipeline.Stage]string{pipeline.StageForecast: "61 * * * *"}); pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("bad spec accepted: %v", err)
	}
}

type arrowRecord = arrow.RecordBatch

// addByArea sums power_mw per control area of a forecast_malo batch.
func addByArea(t *testing.T, rec arrow.RecordBatch, sums map[string]float64) {
	t.Helper()
	areas, ok := rec.Column(pipeline.FMControlArea).(*array.Dictionary)
	if !ok {
		t.Fatalf("control_area column is %T", rec.Column(pipeline.FMControlArea))
	}
	names := areas.Dictionary().(*array.String)
	mw := rec.Column(pipeline.FMPowerMW).(*array.Float64)
	for i := 0; i < int(rec.NumRows()); i++ {
		sums[names.Value(areas.GetValueIndex(i))] += mw.Value(i)
	}
}
