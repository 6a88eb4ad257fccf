package sqldb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

func runIDs(runs []pipeline.Run) []int64 {
	out := []int64{}
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

// TestRunRetryFields: what a console start records (the run retried, the
// stage a chain starts at, the idempotency key and the request's hash) reads
// back from Run and Runs, and a chain can only start at a stage of the chain.
func TestRunRetryFields(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		failed, err := db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageChain, Day: pday, Trigger: "cron", StartedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageForecast, Day: pday, Trigger: "cli", StartedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		want := pipeline.Run{Stage: pipeline.StageChain, Day: pday, Trigger: "api", StartedAt: t0.Add(time.Minute),
			RetryOf: &failed.ID, FromStage: pipeline.StageOpenPosition, IdempotencyKey: "k1", RequestHash: "h1"}
		retry, err := db.CreateRun(ctx, want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.Run(ctx, retry.ID)
		if err != nil {
			t.Fatal(err)
		}
		listed, err := db.Runs(ctx, pipeline.RunQuery{Trigger: "api"})
		if err != nil || len(listed) != 1 {
			t.Fatalf("listed = %+v, %v", listed, err)
		}
		for name, r := range map[string]pipeline.Run{"created": retry, "read": got, "listed": listed[0]} {
			if r.ID != retry.ID || r.RetryOf == nil || *r.RetryOf != failed.ID || r.FromStage != pipeline.StageOpenPosition ||
				r.IdempotencyKey != "k1" || r.RequestHash != "h1" || r.Status != pipeline.RunRunning {
				t.Errorf("%s run = %+v", name, r)
			}
		}
		if got, _ := db.Run(ctx, plain.ID); got.RetryOf != nil || got.FromStage != "" || got.IdempotencyKey != "" || got.RequestHash != "" {
			t.Errorf("plain run = %+v", got)
		}

		// Another run with the key is refused by CreateRun; CreateRunOnce
		// returns the first instead.
		if _, err := db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageForecast, Day: pday, StartedAt: t0, IdempotencyKey: "k1"}); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("second run with key k1: %v, want conflict", err)
		}

		for _, c := range []struct {
			name  string
			stage pipeline.Stage
			from  pipeline.Stage
		}{
			{"a stage run starting at a stage", pipeline.StageForecast, pipeline.StageAggregate},
			{"a chain starting at kalkulation", pipeline.StageChain, pipeline.StageKalkulation},
			{"a chain starting at an unknown stage", pipeline.StageChain, "publish"},
			{"a chain starting at itself", pipeline.StageChain, pipeline.StageChain},
		} {
			r := pipeline.Run{Stage: c.stage, FromStage: c.from, Day: pday, StartedAt: t0}
			if _, err := db.CreateRun(ctx, r); pipeline.KindOf(err) != pipeline.Invalid {
				t.Errorf("%s: %v, want invalid", c.name, err)
			}
		}
		if all, _ := db.Runs(ctx, pipeline.RunQuery{}); len(all) != 3 {
			t.Errorf("refused runs were recorded: %d runs", len(all))
		}
	})
}

// TestRunQueryFilters: status, trigger and keyset filters alone and with the
// others, and paging with BeforeID walks every run once, newest first.
func TestRunQueryFilters(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		other := pday.AddDays(1)
		mk := func(st pipeline.Stage, day pipeline.Day, trigger string, status pipeline.RunStatus) int64 {
			t.Helper()
			r, err := db.CreateRun(ctx, pipeline.Run{Stage: st, Day: day, Trigger: trigger, StartedAt: t0})
			if err != nil {
				t.Fatal(err)
			}
			if status != pipeline.RunRunning {
				if err := db.FinishRun(ctx, r.ID, status, "", nil, t0.Add(time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
			return r.ID
		}
		f1 := mk(pipeline.StageForecast, pday, "cron", pipeline.RunSucceeded)
		a1 := mk(pipeline.StageAggregate, pday, "cron", pipeline.RunFailed)
		f2 := mk(pipeline.StageForecast, pday, "api", pipeline.RunFailed)
		a2 := mk(pipeline.StageAggregate, pday, "api", pipeline.RunSucceeded)
		f3 := mk(pipeline.StageForecast, other, "cli", pipeline.RunRunning)
		k1 := mk(pipeline.StageKalkulation, other, "cron", pipeline.RunFailed)

		for _, c := range []struct {
			name string
			q    pipeline.RunQuery
			want []int64
		}{
			{"failed", pipeline.RunQuery{Status: pipeline.RunFailed}, []int64{k1, f2, a1}},
			{"succeeded", pipeline.RunQuery{Status: pipeline.RunSucceeded}, []int64{a2, f1}},
			{"running", pipeline.RunQuery{Status: pipeline.RunRunning}, []int64{f3}},
			{"trigger", pipeline.RunQuery{Trigger: "cron"}, []int64{k1, a1, f1}},
			{"unknown trigger", pipeline.RunQuery{Trigger: "demo"}, []int64{}},
			{"failed of a stage", pipeline.RunQuery{Status: pipeline.RunFailed, Stage: pipeline.StageForecast}, []int64{f2}},
			{"failed of a day", pipeline.RunQuery{Status: pipeline.RunFailed, Day: &pday}, []int64{f2, a1}},
			{"stage and trigger", pipeline.RunQuery{Stage: pipeline.StageForecast, Trigger: "api"}, []int64{f2}},
			{"before", pipeline.RunQuery{BeforeID: f3}, []int64{a2, f2, a1, f1}},
			{"before with a filter", pipeline.RunQuery{BeforeID: a2, Stage: pipeline.StageForecast}, []int64{f2, f1}},
			{"before and limit", pipeline.RunQuery{BeforeID: a2, Limit: 2}, []int64{f2, a1}},
			{"before the first", pipeline.RunQuery{BeforeID: f1}, []int64{}},
		} {
			runs, err := db.Runs(ctx, c.q)
			if err != nil || !slices.Equal(runIDs(runs), c.want) {
				t.Errorf("%s: %v, %v; want %v", c.name, runIDs(runs), err, c.want)
			}
		}

		// Pages of two, each starting before the last id of the one before.
		var paged []int64
		var pages int
		for q := (pipeline.RunQuery{Limit: 2}); ; pages++ {
			runs, err := db.Runs(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) == 0 {
				break
			}
			paged = append(paged, runIDs(runs)...)
			q.BeforeID = runs[len(runs)-1].ID
		}
		if want := []int64{k1, f3, a2, f2, a1, f1}; !slices.Equal(paged, want) || pages != 3 {
			t.Errorf("paged %v in %d pages, want %v in 3", paged, pages, want)
		}
	})
}

// TestCreateRunOnce: a key creates one run; a repeat returns that run as it
// is now, with the first request's hash, and writes nothing; without a key
// every call creates a run; writers racing with one key create one run.
func TestCreateRunOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		first, created, err := db.CreateRunOnce(ctx, pipeline.Run{Stage: pipeline.StageForecast, Day: pday, Trigger: "api",
			StartedAt: t0, IdempotencyKey: "caller-1/abc", RequestHash: "h1"})
		if err != nil || !created || first.ID == 0 || first.Status != pipeline.RunRunning {
			t.Fatalf("first = %+v, %v, %v", first, created, err)
		}
		if err := db.FinishRun(ctx, first.ID, pipeline.RunFailed, "boom", nil, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		// The repeat may differ (here in stage, day and hash): the key
		// decides, and the caller compares the hashes.
		again, created, err := db.CreateRunOnce(ctx, pipeline.Run{Stage: pipeline.StageChain, Day: pday.AddDays(1), Trigger: "api",
			StartedAt: t0.Add(time.Hour), IdempotencyKey: "caller-1/abc", RequestHash: "h2"})
		if err != nil || created || again.ID != first.ID || again.RequestHash != "h1" || again.Stage != pipeline.StageForecast ||
			again.Status != pipeline.RunFailed || again.Error != "boom" {
			t.Errorf("repeat = %+v, %v, %v", again, created, err)
		}
		for i := range 2 {
			r, created, err := db.CreateRunOnce(ctx, pipeline.Run{Stage: pipeline.StageForecast, Day: pday, StartedAt: t0})
			if err != nil || !created || r.ID == first.ID {
				t.Errorf("keyless %d = %+v, %v, %v", i, r, created, err)
			}
		}
		if _, _, err := db.CreateRunOnce(ctx, pipeline.Run{Stage: pipeline.StageForecast, StartedAt: t0, IdempotencyKey: "k-bad"}); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("run without a day: %v, want invalid", err)
		}
		if all, _ := db.Runs(ctx, pipeline.RunQuery{}); len(all) != 3 {
			t.Errorf("runs = %d, want 3", len(all))
		}

		const writers = 8
		var (
			mu      sync.Mutex
			wg      sync.WaitGroup
			ids     = map[int64]int{}
			creates int
		)
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, created, err := db.CreateRunOnce(ctx, pipeline.Run{Stage: pipeline.StageChain, Day: pday, Trigger: "api",
					StartedAt: t0, IdempotencyKey: "race", RequestHash: "h"})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				ids[r.ID]++
				if created {
					creates++
				}
			}()
		}
		wg.Wait()
		if len(ids) != 1 || creates != 1 {
			t.Errorf("racing writers: runs %v, %d created; want one run created once", ids, creates)
		}
		if chains, _ := db.Runs(ctx, pipeline.RunQuery{Stage: pipeline.StageChain}); len(chains) != 1 {
			t.Errorf("chain runs = %d, want 1", len(chains))
		}
	})
}

// TestRunLog: lines read back in seq order whatever order they were written
// in, a limit keeps the last lines, and bad lines are refused.
func TestRunLog(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		run, _ := db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageForecast, Day: pday, StartedAt: t0})
		other, _ := db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageAggregate, Day: pday, StartedAt: t0})
		line := func(runID int64, seq int, level, msg, attrs string) pipeline.RunLogLine {
			l := pipeline.RunLogLine{RunID: runID, Seq: seq, At: t0.Add(time.Duration(seq) * time.Second), Level: level, Message: msg}
			if attrs != "" {
				l.Attrs = json.RawMessage(attrs)
			}
			return l
		}
		lines := []pipeline.RunLogLine{
			line(run.ID, 1, "INFO", "stage started", `{"attempt":1,"stage":"forecast"}`),
			line(run.ID, 2, "WARN", "slow", ""),
			line(run.ID, 3, "ERROR", "stage finished", `{"err":"stage forecast 2026-11-24: boom","nested":{"a":[1,2]}}`),
		}
		for _, i := range []int{2, 0, 1} {
			if err := db.AppendRunLog(ctx, lines[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.AppendRunLog(ctx, line(other.ID, 1, "INFO", "other run", "")); err != nil {
			t.Fatal(err)
		}
		got, err := db.RunLog(ctx, run.ID, 0)
		if err != nil || len(got) != 3 {
			t.Fatalf("log = %+v, %v", got, err)
		}
		for i, g := range got {
			w := lines[i]
			if g.RunID != w.RunID || g.Seq != w.Seq || !g.At.Equal(w.At) || g.At.Location() != time.UTC || g.Level != w.Level ||
				g.Message != w.Message || string(g.Attrs) != string(w.Attrs) {
				t.Errorf("line %d = %+v\nwant %+v", i, g, w)
			}
		}
		if last, err := db.RunLog(ctx, run.ID, 2); err != nil || len(last) != 2 || last[0].Seq != 2 || last[1].Seq != 3 {
			t.Errorf("last two lines = %+v, %v", last, err)
		}
		if none, err := db.RunLog(ctx, 99999, 10); err != nil || len(none) != 0 {
			t.Errorf("log of an unknown run = %+v, %v", none, err)
		}

		for _, c := range []struct {
			name string
			line pipeline.RunLogLine
			kind pipeline.ErrorKind
		}{
			{"seq taken", line(run.ID, 2, "INFO", "again", ""), pipeline.Conflict},
			{"unknown run", line(99999, 1, "INFO", "x", ""), pipeline.NotFound},
			{"seq 0", line(run.ID, 0, "INFO", "x", ""), pipeline.Invalid},
			{"attrs not JSON", line(run.ID, 4, "INFO", "x", `{bad`), pipeline.Invalid},
			{"no time", pipeline.RunLogLine{RunID: run.ID, Seq: 5, Level: "INFO", Message: "x"}, pipeline.Invalid},
		} {
			if err := db.AppendRunLog(ctx, c.line); pipeline.KindOf(err) != c.kind {
				t.Errorf("%s: %v, want %s", c.name, err, c.kind)
			}
		}
		if got, _ := db.RunLog(ctx, run.ID, 0); len(got) != 3 || got[1].Message != "slow" {
			t.Errorf("refused lines changed the log: %+v", got)
		}
	})
}

// TestLastSuccesses: per stage and for the chain, the succeeded run that
// finished last, not the one created last; failed and running runs do not
// count, and a stage that never succeeded is absent.
func TestLastSuccesses(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if got, err := db.LastSuccesses(ctx); err != nil || len(got) != 0 {
			t.Fatalf("empty database: %v, %v", got, err)
		}
		mk := func(st pipeline.Stage, status pipeline.RunStatus, finished time.Duration) int64 {
			t.Helper()
			r, err := db.CreateRun(ctx, pipeline.Run{Stage: st, Day: pday, StartedAt: t0})
			if err != nil {
				t.Fatal(err)
			}
			if status != pipeline.RunRunning {
				if err := db.FinishRun(ctx, r.ID, status, "", nil, t0.Add(finished)); err != nil {
					t.Fatal(err)
				}
			}
			return r.ID
		}
		slowForecast := mk(pipeline.StageForecast, pipeline.RunSucceeded, 3*time.Hour) // finished after the next one
		mk(pipeline.StageForecast, pipeline.RunSucceeded, time.Hour)
		mk(pipeline.StageForecast, pipeline.RunFailed, 4*time.Hour)
		mk(pipeline.StageForecast, pipeline.RunRunning, 0)
		mk(pipeline.StageAggregate, pipeline.RunSucceeded, time.Hour)
		tiedLater := mk(pipeline.StageAggregate, pipeline.RunSucceeded, time.Hour)
		mk(pipeline.StageSchedules, pipeline.RunFailed, time.Hour)
		chain := mk(pipeline.StageChain, pipeline.RunSucceeded, 2*time.Hour)
		kalk := mk(pipeline.StageKalkulation, pipeline.RunSucceeded, 5*time.Hour)
		// The fractions matter on SQLite, which compares the stored text:
		// a whole second is stored without a fraction and must still sort
		// before the same second with one, and .5 after .25.
		openHalf := mk(pipeline.StageOpenPosition, pipeline.RunSucceeded, 2*time.Hour+500*time.Millisecond)
		mk(pipeline.StageOpenPosition, pipeline.RunSucceeded, 2*time.Hour)
		mk(pipeline.StageOpenPosition, pipeline.RunSucceeded, 2*time.Hour+250*time.Millisecond)
		// A time given in another zone is stored and compared as UTC: the
		// run finished at 15:30 UTC is newer than the one finished at 16:00
		// Berlin (15:00 UTC), though its wall-clock text is smaller.
		utcLater := mk(pipeline.StageSchedules, pipeline.RunSucceeded, 5*time.Hour+30*time.Minute)
		berlin, err := db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageSchedules, Day: pday, StartedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.FinishRun(ctx, berlin.ID, pipeline.RunSucceeded, "", nil, t0.Add(5*time.Hour).In(pipeline.Berlin)); err != nil {
			t.Fatal(err)
		}

		got, err := db.LastSuccesses(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[pipeline.Stage]int64{pipeline.StageForecast: slowForecast, pipeline.StageAggregate: tiedLater,
			pipeline.StageChain: chain, pipeline.StageKalkulation: kalk, pipeline.StageOpenPosition: openHalf,
			pipeline.StageSchedules: utcLater}
		gotIDs := map[pipeline.Stage]int64{}
		for st, r := range got {
			gotIDs[st] = r.ID
			if r.Stage != st || r.Status != pipeline.RunSucceeded || r.FinishedAt == nil {
				t.Errorf("%s: %+v", st, r)
			}
		}
		if !maps.Equal(gotIDs, want) {
			t.Errorf("last successes = %v, want %v", gotIDs, want)
		}
	})
}

// TestRunQueryPlans: with a year of runs (10,000), a page of runs filtered
// by stage or status is read through an index, never by a scan of the
// table (on SQLite in id order from the index, with no sort); a day's runs
// are found by index; and the latest success per stage is an index step.
func TestRunQueryPlans(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		// 10,000 runs over 365 days, kalkulation rare among them: every 50th
		// failed, a few running.
		seq := "WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < 10000) "
		day := "date('2026-01-01', '+' || (i / 28) || ' days')"
		if db.Dialect() == sqldb.Postgres {
			seq = "WITH seq(i) AS (SELECT generate_series(1, 10000)) "
			day = "to_char(date '2026-01-01' + i / 28, 'YYYY-MM-DD')"
		}
		if err := sqldb.Exec(ctx, db, seq+"INSERT INTO runs (stage, delivery_day, status, triggered_by, started_at, finished_at) "+
			"SELECT CASE i % 6 WHEN 0 THEN 'forecast' WHEN 1 THEN 'aggregate' WHEN 2 THEN 'open-position' "+
			"WHEN 3 THEN 'schedules' WHEN 4 THEN 'chain' ELSE CASE WHEN i % 60 = 5 THEN 'kalkulation' ELSE 'forecast' END END, "+day+", "+
			"CASE WHEN i % 50 = 0 THEN 'failed' WHEN i % 997 = 0 THEN 'running' ELSE 'succeeded' END, 'cron', ?, ? FROM seq",
			t0, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := sqldb.Exec(ctx, db, "ANALYZE"); err != nil {
			t.Fatal(err)
		}
		if n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM runs"); err != nil || n != "10000" {
			t.Fatalf("runs = %s, %v", n, err)
		}
		d := pipeline.NewDay(2026, time.June, 1)
		// fullScan names a scan of the whole table, which no plan may
		// contain. sorts names a sort of the rows found: SQLite takes the
		// order from the index and must not sort; PostgreSQL may sort a few
		// dozen rows that a bitmap scan of the filter's index found, when
		// its costs say that is cheaper, so its sorts are not checked.
		var sorts []string
		fullScan := []string{"Seq Scan"}
		if db.Dialect() == sqldb.SQLite {
			sorts, fullScan = []string{"USE TEMP B-TREE"}, []string{"SCAN runs\n", "SCAN runs\x00"}
		}
		// A stage as common as forecast (a third of the runs) may be paged
		// by walking the primary key backwards and skipping the others, a
		// page's worth of rows being near; PostgreSQL does so. A rare stage
		// or status needs its index.
		pkey := "runs_pkey"
		if db.Dialect() == sqldb.SQLite {
			pkey = "no such plan"
		}
		for _, c := range []struct {
			name     string
			q        pipeline.RunQuery
			index    []string // one of them
			sortedOK bool     // a day's few dozen runs may be sorted
		}{
			{"rare stage", pipeline.RunQuery{Stage: pipeline.StageKalkulation, Limit: 50}, []string{"runs_stage_id"}, false},
			{"rare stage, next page", pipeline.RunQuery{Stage: pipeline.StageKalkulation, BeforeID: 5000, Limit: 50}, []string{"runs_stage_id"}, false},
			{"common stage", pipeline.RunQuery{Stage: pipeline.StageForecast, Limit: 50}, []string{"runs_stage_id", pkey}, false},
			{"common stage, next page", pipeline.RunQuery{Stage: pipeline.StageForecast, BeforeID: 5000, Limit: 50}, []string{"runs_stage_id", pkey}, false},
			{"failed", pipeline.RunQuery{Status: pipeline.RunFailed, Limit: 50}, []string{"runs_status_id"}, false},
			{"failed, next page", pipeline.RunQuery{Status: pipeline.RunFailed, BeforeID: 5000, Limit: 50}, []string{"runs_status_id"}, false},
			{"running", pipeline.RunQuery{Status: pipeline.RunRunning, Limit: 50}, []string{"runs_status_id", "runs_running"}, true},
			{"day", pipeline.RunQuery{Day: &d, Limit: 50}, []string{"runs_day"}, true},
			{"day and stage", pipeline.RunQuery{Day: &d, Stage: pipeline.StageForecast, Limit: 50}, []string{"runs_day", "runs_stage_id"}, true},
		} {
			plan, err := sqldb.ExplainRuns(ctx, db, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(c.index, func(ix string) bool { return strings.Contains(plan, ix) }) {
				t.Errorf("%s: plan uses none of %v:\n%s", c.name, c.index, plan)
			}
			for _, bad := range fullScan {
				if strings.Contains(plan+"\x00", bad) {
					t.Errorf("%s: plan scans the table:\n%s", c.name, plan)
				}
			}
			for _, bad := range sorts {
				if !c.sortedOK && strings.Contains(plan, bad) {
					t.Errorf("%s: plan sorts:\n%s", c.name, plan)
				}
			}
		}
		plan, err := sqldb.ExplainLastSuccesses(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(plan, "runs_succeeded") != len(pipeline.AllStages)+1 {
			t.Errorf("last successes do not step into runs_succeeded per stage:\n%s", plan)
		}
		for _, bad := range slices.Concat(sorts, fullScan) {
			if strings.Contains(plan+"\x00", bad) {
				t.Errorf("last successes: plan sorts or scans:\n%s", plan)
			}
		}
		got, err := db.LastSuccesses(ctx)
		if err != nil || len(got) != len(pipeline.AllStages)+1 {
			t.Errorf("last successes = %d stages, %v", len(got), err)
		}
	})
}

// TestConsoleRunsMigrationDownUp reverts the console migration and applies
// it again: runs recorded before it read back without retry fields, and the
// rollback keeps the runs while it drops the log and the new columns. The
// code reads runs with the columns of the latest schema, so each round
// applies every migration from the console's on and rolls them all back,
// the later ones' down migrations included.
func TestConsoleRunsMigrationDownUp(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := sqltest.OpenUnmigrated(t, d)
			if err := sqldb.MigrateThrough(ctx, db, "20261127000001"); err != nil {
				t.Fatal(err)
			}
			old := insertRun(t, db, pipeline.StageForecast)
			for round := range 2 {
				applied, err := db.Migrate(ctx)
				if err != nil || len(applied) == 0 || applied[0] != "20261128000001" {
					t.Fatalf("round %d: migrate = %v, %v", round, applied, err)
				}
				r, err := db.Run(ctx, old)
				if err != nil || r.RetryOf != nil || r.FromStage != "" || r.IdempotencyKey != "" || r.RequestHash != "" ||
					r.HeartbeatAt != nil || r.CronSlot != nil {
					t.Fatalf("round %d: old run = %+v, %v", round, r, err)
				}
				retry, created, err := db.CreateRunOnce(ctx, pipeline.Run{Stage: pipeline.StageChain, Day: pday, StartedAt: t0,
					RetryOf: &old, FromStage: pipeline.StageForecast, IdempotencyKey: "k", RequestHash: "h"})
				if err != nil || !created {
					t.Fatalf("round %d: retry = %+v, %v", round, retry, err)
				}
				if err := db.AppendRunLog(ctx, pipeline.RunLogLine{RunID: retry.ID, Seq: 1, At: t0, Level: "INFO", Message: "x"}); err != nil {
					t.Fatal(err)
				}
				back, err := sqldb.RollbackLast(ctx, db)
				slices.Sort(back)
				if err != nil || !slices.Equal(back, applied) {
					t.Fatalf("round %d: rollback = %v, %v; want %v", round, back, err, applied)
				}
				for _, q := range []string{"SELECT COUNT(*) FROM run_logs", "SELECT COUNT(retry_of) FROM runs",
					"SELECT COUNT(from_stage) FROM runs", "SELECT COUNT(idempotency_key) FROM runs", "SELECT COUNT(request_hash) FROM runs",
					"SELECT COUNT(heartbeat_at) FROM runs", "SELECT COUNT(cron_slot) FROM runs"} {
					if _, err := sqldb.QueryString(ctx, db, q); err == nil {
						t.Errorf("round %d: %q still works after the rollback", round, q)
					}
				}
				if n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM runs"); err != nil || n != fmt.Sprint(round+2) {
					t.Errorf("round %d: runs after rollback = %s, %v", round, n, err)
				}
			}
		})
	}
}

// TestRunHeartbeat: FailStaleRuns fails only the running runs whose
// heartbeat is older than the threshold, so that a run another process is
// alive to execute survives a new leader; a run recorded before heartbeats
// counts from its start; a heartbeat on a run that is no longer running
// changes nothing and reports it gone.
func TestRunHeartbeat(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		const stale = 30 * time.Second
		now := t0.Add(time.Hour)
		create := func(started time.Time) pipeline.Run {
			t.Helper()
			r, err := db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageForecast, Day: pday, Trigger: "cli", StartedAt: started})
			if err != nil {
				t.Fatal(err)
			}
			if r.HeartbeatAt == nil || !r.HeartbeatAt.Equal(started) {
				t.Fatalf("created run's heartbeat = %v, want its start %v", r.HeartbeatAt, started)
			}
			return r
		}
		cases := []struct {
			name    string
			started time.Time
			beat    *time.Time // nil: no heartbeat after the start
			legacy  bool       // recorded before heartbeats: heartbeat_at is NULL
			finish  bool
			failed  bool
		}{
			{name: "fresh start", started: now.Add(-10 * time.Second)},
			{name: "old start, fresh beat", started: now.Add(-time.Hour), beat: ptr(now.Add(-5 * time.Second))},
			{name: "beat at the threshold", started: now.Add(-time.Hour), beat: ptr(now.Add(-stale))},
			{name: "beat just past the threshold", started: now.Add(-time.Hour), beat: ptr(now.Add(-stale - time.Millisecond)), failed: true},
			{name: "no beat since an old start", started: now.Add(-time.Hour), failed: true},
			{name: "legacy, old start", started: now.Add(-time.Hour), legacy: true, failed: true},
			{name: "legacy, recent start", started: now.Add(-time.Second), legacy: true},
			{name: "finished long ago", started: now.Add(-time.Hour), finish: true},
		}
		runs := make([]pipeline.Run, len(cases))
		var wantFailed []int64
		for i, c := range cases {
			runs[i] = create(c.started)
			if c.beat != nil {
				gone, err := db.HeartbeatRuns(ctx, []int64{runs[i].ID}, *c.beat)
				if err != nil || len(gone) != 0 {
					t.Fatalf("%s: heartbeat = %v, %v", c.name, gone, err)
				}
			}
			if c.legacy {
				if err := sqldb.Exec(ctx, db, "UPDATE runs SET heartbeat_at = NULL WHERE id = ?", runs[i].ID); err != nil {
					t.Fatal(err)
				}
			}
			if c.finish {
				if err := db.FinishRun(ctx, runs[i].ID, pipeline.RunSucceeded, "", nil, c.started.Add(time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
			if c.failed {
				wantFailed = append(wantFailed, runs[i].ID)
			}
		}
		if _, err := db.FailStaleRuns(ctx, now, 0, "x"); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("no threshold: %v, want invalid", err)
		}
		failed, err := db.FailStaleRuns(ctx, now, stale, "the process running it stopped its heartbeat")
		if err != nil || !slices.Equal(failed, wantFailed) {
			t.Fatalf("failed %v, %v; want %v", failed, err, wantFailed)
		}
		for i, c := range cases {
			got, err := db.Run(ctx, runs[i].ID)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.failed:
				if got.Status != pipeline.RunFailed || got.Error != "the process running it stopped its heartbeat" || !got.FinishedAt.Equal(now) {
					t.Errorf("%s: %+v, want failed as stale", c.name, got)
				}
			case c.finish:
				if got.Status != pipeline.RunSucceeded {
					t.Errorf("%s: %+v, want it left succeeded", c.name, got)
				}
			default:
				if got.Status != pipeline.RunRunning || got.FinishedAt != nil {
					t.Errorf("%s: %+v, want it still running", c.name, got)
				}
			}
			if c.beat != nil && (got.HeartbeatAt == nil || !got.HeartbeatAt.Equal(*c.beat)) {
				t.Errorf("%s: heartbeat read back %v, want %v", c.name, got.HeartbeatAt, *c.beat)
			}
		}
		// One heartbeat for all the runs a process executes: the failed and
		// the finished ones come back gone and keep their records.
		all := runIDs(runs)
		later := now.Add(time.Second)
		gone, err := db.HeartbeatRuns(ctx, all, later)
		wantGone := append(slices.Clone(wantFailed), runs[len(runs)-1].ID)
		slices.Sort(gone)
		slices.Sort(wantGone)
		if err != nil || !slices.Equal(gone, wantGone) {
			t.Errorf("gone = %v, %v; want %v", gone, err, wantGone)
		}
		for i, c := range cases {
			got, _ := db.Run(ctx, runs[i].ID)
			alive := !c.failed && !c.finish
			if alive != (got.HeartbeatAt != nil && got.HeartbeatAt.Equal(later)) {
				t.Errorf("%s: heartbeat %v after the batch (alive %v)", c.name, got.HeartbeatAt, alive)
			}
		}
		if gone, err := db.HeartbeatRuns(ctx, nil, later); err != nil || gone != nil {
			t.Errorf("empty heartbeat = %v, %v", gone, err)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestRunCronSlot: a slot of the cron runs each attempt of a stage for a day
// once; a second leader firing the same slot is refused with a Conflict, on
// both backends, and the slot reads back with the run.
func TestRunCronSlot(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		slot := t0.Add(30 * time.Minute)
		other := pday.AddDays(1)
		cases := []struct {
			name string
			run  pipeline.Run
			kind pipeline.ErrorKind // "" = created
		}{
			{"first", pipeline.Run{Stage: pipeline.StageForecast, Day: pday, Attempt: 1, CronSlot: &slot}, ""},
			{"the same slot again", pipeline.Run{Stage: pipeline.StageForecast, Day: pday, Attempt: 1, CronSlot: &slot}, pipeline.Conflict},
			{"its next attempt", pipeline.Run{Stage: pipeline.StageForecast, Day: pday, Attempt: 2, CronSlot: &slot}, ""},
			{"another day", pipeline.Run{Stage: pipeline.StageForecast, Day: other, Attempt: 1, CronSlot: &slot}, ""},
			{"another stage", pipeline.Run{Stage: pipeline.StageAggregate, Day: pday, Attempt: 1, CronSlot: &slot}, ""},
			{"the next slot", pipeline.Run{Stage: pipeline.StageForecast, Day: pday, Attempt: 1, CronSlot: ptr(slot.Add(time.Second))}, ""},
			{"no slot, twice", pipeline.Run{Stage: pipeline.StageForecast, Day: pday, Attempt: 1}, ""},
			{"no slot, twice (2)", pipeline.Run{Stage: pipeline.StageForecast, Day: pday, Attempt: 1}, ""},
			{"a chain", pipeline.Run{Stage: pipeline.StageChain, Day: pday, Attempt: 1, CronSlot: &slot}, pipeline.Invalid},
			{"a zero slot", pipeline.Run{Stage: pipeline.StageForecast, Day: pday, Attempt: 1, CronSlot: &time.Time{}}, pipeline.Invalid},
		}
		for _, c := range cases {
			c.run.Trigger, c.run.StartedAt = "cron", slot.Add(time.Second)
			got, err := db.CreateRun(ctx, c.run)
			if c.kind != "" {
				if pipeline.KindOf(err) != c.kind {
					t.Errorf("%s: %v, want %s", c.name, err, c.kind)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			read, err := db.Run(ctx, got.ID)
			if err != nil {
				t.Fatal(err)
			}
			if (c.run.CronSlot == nil) != (read.CronSlot == nil) || (read.CronSlot != nil && !read.CronSlot.Equal(*c.run.CronSlot)) {
				t.Errorf("%s: slot read back %v, want %v", c.name, read.CronSlot, c.run.CronSlot)
			}
		}
		if runs, _ := db.Runs(ctx, pipeline.RunQuery{}); len(runs) != 7 {
			t.Errorf("%d runs recorded, want 7", len(runs))
		}
	})
}
