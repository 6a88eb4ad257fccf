package sqldb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

var pday = pipeline.NewDay(2026, time.November, 24)

func TestPortfolioExchangeBalancingGroup(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		p := pipeline.Portfolio{ID: "p1", Name: "One", ControlAreas: []pipeline.ControlArea{pipeline.TenneT},
			BalancingGroup: "11XSCHEDBRIDGE1W", ExchangeBalancingGroup: "11XEPEXSPOT-DE-S"}
		for _, c := range []struct {
			exchange string
			kind     pipeline.ErrorKind // "" = stored
		}{
			{"11XEPEXSPOT-DE-S", ""},
			{"11XEPEX", pipeline.Invalid},
			{"11XEPEXSPOT-DE-X", pipeline.Invalid}, // wrong check character
			{"", ""},                               // clearing it
			{"11XEPEXSPOT-DE2M", ""},
		} {
			p.ExchangeBalancingGroup = c.exchange
			_, err := db.PutPortfolio(ctx, p, t0)
			if c.kind != "" {
				if pipeline.KindOf(err) != c.kind {
					t.Errorf("exchange %q: %v, want %s", c.exchange, err, c.kind)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := db.Portfolio(ctx, "p1")
			if err != nil || got.ExchangeBalancingGroup != c.exchange || got.BalancingGroup != "11XSCHEDBRIDGE1W" {
				t.Errorf("exchange %q read back %+v, %v", c.exchange, got, err)
			}
		}
		list, err := db.Portfolios(ctx)
		if err != nil || len(list) != 1 || list[0].ExchangeBalancingGroup != "11XEPEXSPOT-DE2M" {
			t.Errorf("list = %+v, %v", list, err)
		}
	})
}

func TestRunLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		other := pday.AddDays(1)
		chain, err := db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageChain, Day: pday, Status: pipeline.RunSucceeded,
			Trigger: "cron", StartedAt: t0})
		if err != nil || chain.ID == 0 || chain.Status != pipeline.RunRunning || chain.Attempt != 1 {
			t.Fatalf("chain = %+v, %v", chain, err)
		}
		var stages []pipeline.Run
		for i, st := range pipeline.Stages {
			r, err := db.CreateRun(ctx, pipeline.Run{ParentID: &chain.ID, Stage: st, Day: pday, Trigger: "cron",
				Attempt: 1 + i%2, StartedAt: t0.Add(time.Duration(i) * time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			stages = append(stages, r)
		}
		lone, _ := db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageForecast, Day: other, Trigger: "api", StartedAt: t0})

		for _, c := range []struct {
			status  pipeline.RunStatus
			errText string
			outputs json.RawMessage
			kind    pipeline.ErrorKind
		}{
			{pipeline.RunSucceeded, "", json.RawMessage(`{"rows":384}`), ""},
			{pipeline.RunFailed, "again", nil, pipeline.Conflict}, // finished already
			{pipeline.RunRunning, "", nil, pipeline.Invalid},
			{pipeline.RunSucceeded, "", json.RawMessage(`{bad`), pipeline.Invalid},
		} {
			err := db.FinishRun(ctx, stages[0].ID, c.status, c.errText, c.outputs, t0.Add(time.Hour))
			if (c.kind == "" && err != nil) || (c.kind != "" && pipeline.KindOf(err) != c.kind) {
				t.Errorf("finish %s: %v, want %q", c.status, err, c.kind)
			}
		}
		if err := db.FinishRun(ctx, 99999, pipeline.RunFailed, "x", nil, t0); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("finish unknown run: %v", err)
		}
		if err := db.FinishRun(ctx, stages[1].ID, pipeline.RunFailed, "no forecast", nil, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, err := db.Run(ctx, stages[0].ID)
		if err != nil || got.Status != pipeline.RunSucceeded || string(got.Outputs) != `{"rows":384}` ||
			got.FinishedAt == nil || !got.FinishedAt.Equal(t0.Add(time.Hour)) || *got.ParentID != chain.ID || got.Trigger != "cron" {
			t.Errorf("finished run = %+v, %v", got, err)
		}
		if _, err := db.Run(ctx, 99999); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("unknown run: %v", err)
		}

		ids := func(runs []pipeline.Run) []int64 {
			var out []int64
			for _, r := range runs {
				out = append(out, r.ID)
			}
			return out
		}
		for _, c := range []struct {
			name string
			q    pipeline.RunQuery
			want []int64
		}{
			{"all, newest first", pipeline.RunQuery{}, []int64{lone.ID, stages[3].ID, stages[2].ID, stages[1].ID, stages[0].ID, chain.ID}},
			{"day", pipeline.RunQuery{Day: &other}, []int64{lone.ID}},
			{"stage", pipeline.RunQuery{Stage: pipeline.StageForecast}, []int64{lone.ID, stages[0].ID}},
			{"stage and day", pipeline.RunQuery{Stage: pipeline.StageForecast, Day: &pday}, []int64{stages[0].ID}},
			{"chain", pipeline.RunQuery{ParentID: &chain.ID}, []int64{stages[3].ID, stages[2].ID, stages[1].ID, stages[0].ID}},
			{"limit", pipeline.RunQuery{Limit: 2}, []int64{lone.ID, stages[3].ID}},
		} {
			runs, err := db.Runs(ctx, c.q)
			if err != nil || !slices.Equal(ids(runs), c.want) {
				t.Errorf("%s: %v, %v; want %v", c.name, ids(runs), err, c.want)
			}
		}

		for _, bad := range []pipeline.Run{
			{Stage: "publish", Day: pday, StartedAt: t0},
			{Stage: pipeline.StageForecast, StartedAt: t0},
			{Stage: pipeline.StageForecast, Day: pday},
		} {
			if _, err := db.CreateRun(ctx, bad); pipeline.KindOf(err) != pipeline.Invalid {
				t.Errorf("create %+v: %v, want invalid", bad, err)
			}
		}

		// The chain, stages 2 and 3 and the lone run were left running by a
		// process that died.
		failed, err := db.FailStaleRuns(ctx, t0.Add(2*time.Hour), 30*time.Second, "process ended")
		if want := []int64{chain.ID, stages[2].ID, stages[3].ID, lone.ID}; err != nil || !slices.Equal(failed, want) {
			t.Fatalf("fail stale = %v, %v; want %v", failed, err, want)
		}
		if failed, err := db.FailStaleRuns(ctx, t0.Add(3*time.Hour), 30*time.Second, "again"); err != nil || len(failed) != 0 {
			t.Errorf("second fail stale = %v, %v", failed, err)
		}
		for _, id := range []int64{chain.ID, stages[2].ID, lone.ID} {
			r, _ := db.Run(ctx, id)
			if r.Status != pipeline.RunFailed || r.Error != "process ended" || !r.FinishedAt.Equal(t0.Add(2*time.Hour)) {
				t.Errorf("stale run %d = %+v", id, r)
			}
		}
		if r, _ := db.Run(ctx, stages[0].ID); r.Status != pipeline.RunSucceeded {
			t.Errorf("finished run changed by FailStaleRuns: %+v", r)
		}
		// The presumed-dead process learns that its result was not recorded.
		if err := db.FinishRun(ctx, stages[3].ID, pipeline.RunSucceeded, "", nil, t0); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("finish after fail stale: %v", err)
		}
	})
}

func location(malo string, mga string, kwh float64) pipeline.Location {
	to := pipeline.NewDay(2026, time.July, 1)
	return pipeline.Location{Malo: malo, Slices: []pipeline.Slice{
		{ValidFrom: pipeline.NewDay(2026, time.January, 1), ValidTo: &to, Active: true, ControlArea: pipeline.TenneT,
			MGA: mga, MeteringType: pipeline.SLP, Profile: "H25", AnnualConsumptionKWh: &kwh, Kind: pipeline.Consumption},
		{ValidFrom: to, Active: true, ControlArea: pipeline.Amprion, MGA: mga, MeteringType: pipeline.RLM, Kind: pipeline.Consumption},
	}}
}

// TestCurrentLocations streams a portfolio's master data in batches of
// several sizes: every location once, in malo order, in its current
// version, none of another portfolio.
func TestCurrentLocations(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		seedPortfolio(t, db, "p2")
		const n = 250
		var locs []pipeline.Location
		for i := range n {
			// Staged out of order: the stream sorts.
			locs = append(locs, location(fmt.Sprintf("%011d", 10000000000+(i*37)%n), "MGA Nord", float64(i)))
		}
		if _, err := db.StageLocations(ctx, audit("p1", "a"), locs); err != nil {
			t.Fatal(err)
		}
		// New versions of some: the stream must show only these.
		want := map[string]pipeline.Location{}
		for _, l := range locs {
			want[l.Malo] = l
		}
		var changed []pipeline.Location
		for i := 0; i < n; i += 10 {
			l := location(fmt.Sprintf("%011d", 10000000000+i), "MGA \"Süd\"", 1e6+float64(i))
			changed = append(changed, l)
			want[l.Malo] = l
		}
		if _, err := db.StageLocations(ctx, audit("p1", "b"), changed); err != nil {
			t.Fatal(err)
		}
		if _, err := db.StageLocations(ctx, audit("p2", "c"), []pipeline.Location{location("10000000001", "X", 1), location("00000000001", "X", 1)}); err != nil {
			t.Fatal(err)
		}
		for _, batch := range []int{1, 7, 100, n - 1, n, n + 1, 0} {
			t.Run(fmt.Sprint(batch), func(t *testing.T) {
				var got []pipeline.Location
				calls := 0
				err := db.CurrentLocations(ctx, "p1", batch, func(b []pipeline.Location) error {
					calls++
					if size := max(batch, 1); batch > 0 && len(b) != size && len(got)+len(b) != n {
						t.Errorf("batch %d has %d locations", calls, len(b))
					}
					got = append(got, b...)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != n {
					t.Fatalf("streamed %d locations, want %d", len(got), n)
				}
				for i, l := range got {
					if i > 0 && got[i-1].Malo >= l.Malo {
						t.Fatalf("location %d: %s after %s", i, l.Malo, got[i-1].Malo)
					}
					if !reflect.DeepEqual(l, want[l.Malo]) {
						t.Fatalf("location %s = %+v, want %+v", l.Malo, l, want[l.Malo])
					}
				}
				if batch > 0 && calls != (n+batch-1)/batch {
					t.Errorf("%d calls", calls)
				}
			})
		}
		stop := errors.New("stop")
		calls := 0
		if err := db.CurrentLocations(ctx, "p1", 10, func([]pipeline.Location) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
			t.Errorf("fn error = %v after %d calls", err, calls)
		}
		if err := db.CurrentLocations(ctx, "nobody", 10, func([]pipeline.Location) error { return stop }); err != nil {
			t.Errorf("empty portfolio: %v", err)
		}
	})
}

// TestMeteredHistory reads the current metered days of a portfolio on some
// days, across the reader's page size.
func TestMeteredHistory(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		seedPortfolio(t, db, "p2")
		const malos = 1300 // 4 of 5 days: 5200 entries, more than one page
		entry := func(m, d int, v float64) pipeline.MeteredEntry {
			return pipeline.MeteredEntry{Malo: fmt.Sprintf("%011d", 20000000000+m), Day: pday.AddDays(-d), Unit: pipeline.KWH,
				Values: []float64{v, float64(m), float64(d)}}
		}
		var entries []pipeline.MeteredEntry
		for d := range 5 {
			for m := range malos {
				entries = append(entries, entry(m, d, 1))
			}
		}
		if _, err := db.StageMetered(ctx, audit("p1", "a"), entries); err != nil {
			t.Fatal(err)
		}
		if _, err := db.StageMetered(ctx, audit("p1", "b"), []pipeline.MeteredEntry{entry(5, 1, 2), entry(6, 2, 2)}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.StageMetered(ctx, audit("p2", "c"), []pipeline.MeteredEntry{entry(5, 1, 9)}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			days []int
		}{
			{"four days", []int{1, 3, 2, 4}},
			{"one day", []int{1}},
			{"no stored day", []int{7}},
			{"none", nil},
		} {
			t.Run(c.name, func(t *testing.T) {
				var days []pipeline.Day
				wantDays := map[pipeline.Day]bool{}
				for _, d := range c.days {
					days = append(days, pday.AddDays(-d))
					if d < 5 {
						wantDays[pday.AddDays(-d)] = true
					}
				}
				var got []pipeline.MeteredEntry
				if err := db.MeteredHistory(ctx, "p1", days, func(e pipeline.MeteredEntry) error {
					got = append(got, e)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if len(got) != malos*len(wantDays) {
					t.Fatalf("%d entries, want %d", len(got), malos*len(wantDays))
				}
				for i, e := range got {
					if i > 0 && (got[i-1].Malo > e.Malo || (got[i-1].Malo == e.Malo && !got[i-1].Day.Before(e.Day))) {
						t.Fatalf("entry %d (%s %s) after %s %s", i, e.Malo, e.Day, got[i-1].Malo, got[i-1].Day)
					}
					if !wantDays[e.Day] || e.Unit != pipeline.KWH {
						t.Fatalf("entry %+v", e)
					}
					m, d := int(e.Values[1]), int(e.Values[2])
					v := 1.0
					if (m == 5 && d == 1) || (m == 6 && d == 2) {
						v = 2
					}
					if e.Values[0] != v || e.Malo != fmt.Sprintf("%011d", 20000000000+m) || e.Day != pday.AddDays(-d) {
						t.Fatalf("entry %+v, want value %v", e, v)
					}
				}
			})
		}
	})
}

func TestProfilesForDay(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		seedPortfolio(t, db, "p2")
		var entries []pipeline.ProfileEntry
		for _, mga := range []string{"MGA2", "MGA1"} {
			for _, prof := range []string{"H25", "G25"} {
				for d := range 2 {
					entries = append(entries, pipeline.ProfileEntry{MGA: mga, Profile: prof, Day: pday.AddDays(d),
						ValuesKWh: []float64{float64(d), 1}})
				}
			}
		}
		if _, err := db.StageProfiles(ctx, audit("p1", "a"), entries); err != nil {
			t.Fatal(err)
		}
		if _, err := db.StageProfiles(ctx, audit("p1", "b"), []pipeline.ProfileEntry{
			{MGA: "MGA1", Profile: "H25", Day: pday, ValuesKWh: []float64{0, 2}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.StageProfiles(ctx, audit("p2", "c"), []pipeline.ProfileEntry{
			{MGA: "MGA0", Profile: "H25", Day: pday, ValuesKWh: []float64{5}}}); err != nil {
			t.Fatal(err)
		}
		got, err := db.ProfilesForDay(ctx, "p1", pday)
		if err != nil {
			t.Fatal(err)
		}
		want := []pipeline.ProfileEntry{
			{Day: pday, MGA: "MGA1", Profile: "G25", ValuesKWh: []float64{0, 1}},
			{Day: pday, MGA: "MGA1", Profile: "H25", ValuesKWh: []float64{0, 2}},
			{Day: pday, MGA: "MGA2", Profile: "G25", ValuesKWh: []float64{0, 1}},
			{Day: pday, MGA: "MGA2", Profile: "H25", ValuesKWh: []float64{0, 1}},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("profiles = %+v\nwant %+v", got, want)
		}
		if got, err := db.ProfilesForDay(ctx, "p1", pday.AddDays(5)); err != nil || len(got) != 0 {
			t.Errorf("day without profiles = %+v, %v", got, err)
		}
	})
}

func tradeSet(day pipeline.Day, mw float64) (pipeline.TradeSet, []byte) {
	set := pipeline.TradeSet{Day: day, Trades: []pipeline.Trade{}}
	if mw > 0 {
		vals := make([]float64, day.Intervals())
		for i := range vals {
			vals[i] = mw
		}
		set.Trades = append(set.Trades, pipeline.Trade{ControlArea: pipeline.TenneT, Counterparty: "11XEPEXSPOT-DE-X",
			Direction: pipeline.Buy, Unit: pipeline.MW, Values: vals})
	}
	canonical, _ := json.Marshal(struct {
		Day    pipeline.Day     `json:"delivery_day"`
		Trades []pipeline.Trade `json:"trades"`
	}{set.Day, set.Trades})
	return set, canonical
}

func TestStageTrades(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		seedPortfolio(t, db, "p2")
		for i, s := range []struct {
			mw      float64
			status  pipeline.Status
			version int
		}{
			{5, pipeline.Created, 1},
			{5, pipeline.Unchanged, 1},
			{7, pipeline.Replaced, 2},
			{0, pipeline.Replaced, 3}, // an empty set clears the day's trades
			{0, pipeline.Unchanged, 3},
			{5, pipeline.Replaced, 4},
		} {
			set, canonical := tradeSet(pday, s.mw)
			a := audit("p1", fmt.Sprintf("t%d", i))
			res, err := db.StageTrades(ctx, a, set, canonical)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != s.status || res.Version != s.version || a.ID == 0 || a.Outcome != string(s.status) {
				t.Errorf("step %d: %s v%d audit %d %q, want %s v%d", i, res.Status, res.Version, a.ID, a.Outcome, s.status, s.version)
			}
			got, version, err := db.Trades(ctx, "p1", pday)
			want := set
			want.Portfolio = "p1"
			if err != nil || version != s.version || !reflect.DeepEqual(got, want) {
				t.Errorf("step %d: trades = %+v v%d, %v", i, got, version, err)
			}
		}
		if entries, err := db.AuditByHash(ctx, "p1", "t4"); err != nil || len(entries) != 1 || entries[0].Outcome != "unchanged" {
			t.Errorf("audit t4 = %+v, %v", entries, err)
		}
		for _, c := range []struct {
			current bool
			want    int
		}{{true, 1}, {false, 4}} {
			if n, err := db.CountVersions(ctx, "trades", "p1", c.current); err != nil || n != c.want {
				t.Errorf("count current=%v: %d, %v", c.current, n, err)
			}
		}
		if _, _, err := db.Trades(ctx, "p1", pday.AddDays(1)); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("day without trades: %v", err)
		}
		if _, _, err := db.Trades(ctx, "p2", pday); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("other portfolio's trades: %v", err)
		}
		set, canonical := tradeSet(pday, 1)
		set.Portfolio = "p2"
		if _, err := db.StageTrades(ctx, audit("p1", "x"), set, canonical); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("set of another portfolio: %v", err)
		}

		// A trades file in the bulk inbox: one set per file.
		claim, ok, err := db.ClaimInboxFile(ctx, pipeline.InboxFile{Key: "inbox/p2/trades/a.json", ETag: "e", Size: 1,
			PortfolioID: "p2", Kind: "trades", Name: "a.json"}, "me", t0, time.Minute)
		if err != nil || !ok {
			t.Fatalf("claim = %v, %v", ok, err)
		}
		st, err := db.BeginBulk(ctx, "trades", "p2", t0)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Rollback()
		set, canonical = tradeSet(pday, 3)
		if err := st.Trades(ctx, set, canonical); err != nil {
			t.Fatal(err)
		}
		res, err := st.Commit(ctx, claim.ID, "me", "processed/p2/a.json", audit("p2", "file"),
			func(pipeline.StageResult) ([]byte, error) { return []byte(`{}`), nil })
		if err != nil || res.Status != pipeline.Created || res.Version != 1 {
			t.Fatalf("bulk commit = %+v, %v", res, err)
		}
		if got, v, err := db.Trades(ctx, "p2", pday); err != nil || v != 1 || got.Trades[0].Values[0] != 3 {
			t.Errorf("bulk trades = %+v v%d, %v", got, v, err)
		}
	})
}

func positionRows(runID int64, portfolios []string, quarters int) []pipeline.PositionRow {
	var rows []pipeline.PositionRow
	for _, p := range portfolios {
		for _, a := range []pipeline.ControlArea{pipeline.FiftyHertz, pipeline.TenneT} { // read order
			for qh := range quarters {
				// Every value carries the run, so a reader can tell a mix.
				rows = append(rows, pipeline.PositionRow{Portfolio: p, ControlArea: a, QH: qh,
					TS: pday.Start().Add(time.Duration(qh) * 15 * time.Minute).UTC(), ConsumptionMW: float64(runID),
					ProductionMW: float64(qh), NetMW: float64(runID), Source: "generated"})
			}
		}
	}
	return rows
}

func createRuns(t *testing.T, db *sqldb.DB, st pipeline.Stage, day pipeline.Day, n int) []int64 {
	t.Helper()
	var ids []int64
	for range n {
		r, err := db.CreateRun(context.Background(), pipeline.Run{Stage: st, Day: day, Trigger: "test", StartedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// TestPublishPositions: a published run replaces the one before it as a
// whole: rows, run id, and the stored rows of the old run.
func TestPublishPositions(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if _, _, err := db.Positions(ctx, "", pday); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("before any publish: %v", err)
		}
		runs := createRuns(t, db, pipeline.StageAggregate, pday, 3)
		if err := db.PublishPositions(ctx, runs[0], pday, positionRows(runs[0], []string{"p2", "p1"}, 4)); err != nil {
			t.Fatal(err)
		}
		id, rows, err := db.Positions(ctx, "p1", pday)
		if err != nil || id != runs[0] || len(rows) != 8 {
			t.Fatalf("run 1 positions = %d, %d rows, %v", id, len(rows), err)
		}
		if want := positionRows(runs[0], []string{"p1"}, 4); !reflect.DeepEqual(rows, want) {
			t.Errorf("rows = %+v\nwant %+v", rows, want)
		}
		// Run 2 has no p2 and fewer quarter-hours.
		if err := db.PublishPositions(ctx, runs[1], pday, positionRows(runs[1], []string{"p1", "p3"}, 2)); err != nil {
			t.Fatal(err)
		}
		id, rows, err = db.Positions(ctx, "", pday)
		if err != nil || id != runs[1] || len(rows) != 8 {
			t.Fatalf("run 2 positions = %d, %d rows, %v", id, len(rows), err)
		}
		for i, r := range rows {
			if r.NetMW != float64(runs[1]) || (i > 0 && rows[i-1].Portfolio > r.Portfolio) {
				t.Fatalf("row %d of run 2 = %+v", i, r)
			}
		}
		if id, rows, err := db.Positions(ctx, "p2", pday); err != nil || id != runs[1] || len(rows) != 0 {
			t.Errorf("p2 after run 2 = %d, %+v, %v; want run 2 without rows", id, rows, err)
		}
		if n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM position_rows WHERE run_id <> ?", runs[1]); err != nil || n != "0" {
			t.Errorf("rows of other runs left: %s, %v", n, err)
		}
		// Another day is its own read model.
		next := createRuns(t, db, pipeline.StageAggregate, pday.AddDays(1), 1)[0]
		if err := db.PublishPositions(ctx, next, pday.AddDays(1), nil); err != nil {
			t.Fatal(err)
		}
		if id, rows, err := db.Positions(ctx, "", pday.AddDays(1)); err != nil || id != next || len(rows) != 0 {
			t.Errorf("empty publish = %d, %d rows, %v", id, len(rows), err)
		}
		if id, _, _ := db.Positions(ctx, "", pday); id != runs[1] {
			t.Errorf("publishing another day moved this day to %d", id)
		}

		for _, c := range []struct {
			name  string
			run   int64
			day   pipeline.Day
			rows  []pipeline.PositionRow
			kind  pipeline.ErrorKind
			after int64 // the run published afterwards
		}{
			{"older run", runs[0], pday, positionRows(runs[0], []string{"p1"}, 1), pipeline.Conflict, runs[1]},
			{"unknown run", 99999, pday, nil, pipeline.NotFound, runs[1]},
			{"run of another day", next, pday, nil, pipeline.Invalid, runs[1]},
			{"quarter-hour outside the day", runs[2], pday, positionRows(runs[2], []string{"p1"}, 97), pipeline.Invalid, runs[1]},
			{"repeated row", runs[2], pday, append(positionRows(runs[2], []string{"p1"}, 1), positionRows(runs[2], []string{"p1"}, 1)...), pipeline.Invalid, runs[1]},
			{"same run again", runs[1], pday, positionRows(runs[1], []string{"p1"}, 3), "", runs[1]},
		} {
			err := db.PublishPositions(ctx, c.run, c.day, c.rows)
			if (c.kind == "" && err != nil) || (c.kind != "" && pipeline.KindOf(err) != c.kind) {
				t.Errorf("%s: %v, want %q", c.name, err, c.kind)
			}
			if id, _, _ := db.Positions(ctx, "", pday); id != c.after {
				t.Errorf("%s: published run is %d, want %d", c.name, id, c.after)
			}
		}
		if _, rows, _ := db.Positions(ctx, "", pday); len(rows) != 6 {
			t.Errorf("republished run has %d rows, want 6", len(rows))
		}
	})
}

// TestPublishReadersSeeOneRun reads while runs are published one after the
// other: every read returns the complete rows of exactly the run it names.
func TestPublishReadersSeeOneRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		runs := createRuns(t, db, pipeline.StageAggregate, pday, 8)
		if err := db.PublishPositions(ctx, runs[0], pday, positionRows(runs[0], []string{"p1", "p2"}, 96)); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			for _, r := range runs[1:] {
				if err := db.PublishPositions(ctx, r, pday, positionRows(r, []string{"p1", "p2"}, 96)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		reads := 0
		for {
			select {
			case <-done:
				wg.Wait()
				if id, _, _ := db.Positions(ctx, "", pday); id != runs[len(runs)-1] {
					t.Errorf("final run %d", id)
				}
				t.Logf("%d reads", reads)
				return
			default:
			}
			id, rows, err := db.Positions(ctx, "", pday)
			if err != nil {
				t.Fatal(err)
			}
			reads++
			if len(rows) != 2*2*96 {
				t.Fatalf("run %d read with %d rows", id, len(rows))
			}
			for _, r := range rows {
				if r.NetMW != float64(id) {
					t.Fatalf("read of run %d has a row of run %v", id, r.NetMW)
				}
			}
		}
	})
}

func TestPublishOpenPosition(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		runs := createRuns(t, db, pipeline.StageOpenPosition, pday, 2)
		mk := func(run int64) []pipeline.OpenPositionRow {
			var rows []pipeline.OpenPositionRow
			for _, p := range []string{"p2", "p1"} {
				for qh := range 3 {
					rows = append(rows, pipeline.OpenPositionRow{Portfolio: p, ControlArea: pipeline.Amprion, QH: qh,
						TS: pday.Start().Add(time.Duration(qh) * 15 * time.Minute).UTC(), NetMW: 10, BoughtMW: float64(run),
						SoldMW: 1, OpenMW: 11 - float64(run)})
				}
			}
			return rows
		}
		if _, _, err := db.OpenPosition(ctx, "p1", pday); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("before publish: %v", err)
		}
		for _, r := range runs {
			if err := db.PublishOpenPosition(ctx, r, pday, mk(r)); err != nil {
				t.Fatal(err)
			}
		}
		id, rows, err := db.OpenPosition(ctx, "p1", pday)
		want := mk(runs[1])[3:]
		if err != nil || id != runs[1] || !reflect.DeepEqual(rows, want) {
			t.Errorf("open position = %d %+v, %v\nwant %+v", id, rows, err, want)
		}
		// The positions read model is separate.
		if _, _, err := db.Positions(ctx, "p1", pday); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("positions after open-position publish: %v", err)
		}
		if n, _ := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM open_position_rows"); n != "6" {
			t.Errorf("%s stored rows, want 6", n)
		}
	})
}

func schedule(area pipeline.ControlArea, hash string, version int) pipeline.ScheduleMessage {
	return scheduleOn(pday, area, hash, version)
}

func scheduleOn(day pipeline.Day, area pipeline.ControlArea, hash string, version int) pipeline.ScheduleMessage {
	name := fmt.Sprintf("%s_TPS_11XSCHEDBRIDGE-1_%s_%03d.XML", day, area, version)
	return pipeline.ScheduleMessage{PortfolioID: "p1", Day: day, ControlArea: area, MessageID: fmt.Sprintf("TPS-p1-%s-%s", day, area),
		Version: version, FileName: name, ObjectKey: "outbox/" + name, ContentHash: hash, Sender: "11XSCHEDBRIDGE-1",
		Receiver: "10XDE-EON-NETZ-C", RunID: 7, SentAt: t0}
}

func TestRecordSchedule(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		if _, err := db.LatestSchedule(ctx, "p1", pday, pipeline.TenneT); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("latest before any: %v", err)
		}
		for i, s := range []struct {
			area        pipeline.ControlArea
			hash        string
			version     int // what the caller built the document for; 0 = next
			wantVersion int
			created     bool
			kind        pipeline.ErrorKind
		}{
			{pipeline.TenneT, "A", 1, 1, true, ""},
			{pipeline.TenneT, "A", 2, 1, false, ""}, // unchanged re-run: nothing new
			{pipeline.TenneT, "B", 2, 2, true, ""},
			{pipeline.TenneT, "C", 2, 0, false, pipeline.Conflict}, // version 2 is taken
			{pipeline.TenneT, "A", 0, 3, true, ""},                 // back to A is a new version
			{pipeline.Amprion, "A", 1, 1, true, ""},
			{"tennet", "A", 1, 0, false, pipeline.Invalid},
			{pipeline.Amprion, "", 2, 0, false, pipeline.Invalid},
		} {
			got, created, err := db.RecordSchedule(ctx, schedule(s.area, s.hash, s.version))
			if s.kind != "" {
				if pipeline.KindOf(err) != s.kind {
					t.Errorf("step %d: %v, want %s", i, err, s.kind)
				}
				continue
			}
			if err != nil || created != s.created || got.Version != s.wantVersion || got.ContentHash != s.hash ||
				got.Status != pipeline.ScheduleSubmitted || got.ID == 0 {
				t.Errorf("step %d: %+v created %v, %v; want v%d created %v", i, got, created, err, s.wantVersion, s.created)
			}
		}
		latest, err := db.LatestSchedule(ctx, "p1", pday, pipeline.TenneT)
		if err != nil || latest.Version != 3 || latest.ContentHash != "A" || latest.FileName != schedule(pipeline.TenneT, "", 0).FileName ||
			!latest.SentAt.Equal(t0) || latest.RunID != 7 || latest.Receiver != "10XDE-EON-NETZ-C" {
			t.Errorf("latest = %+v, %v", latest, err)
		}
		all, err := db.Schedules(ctx, "p1", pday)
		var got []string
		for _, m := range all {
			got = append(got, fmt.Sprintf("%s/%d", m.ControlArea, m.Version))
		}
		if want := []string{"Amprion/1", "TenneT/3", "TenneT/2", "TenneT/1"}; err != nil || !slices.Equal(got, want) {
			t.Errorf("schedules = %v, %v; want %v", got, err, want)
		}
		if all, _ := db.Schedules(ctx, "", pday); len(all) != 4 {
			t.Errorf("all portfolios: %d", len(all))
		}
		if all, _ := db.Schedules(ctx, "p1", pday.AddDays(1)); len(all) != 0 {
			t.Errorf("other day: %d", len(all))
		}
		m, err := db.ScheduleByMessage(ctx, schedule(pipeline.TenneT, "", 0).MessageID, 2)
		if err != nil || m.ContentHash != "B" {
			t.Errorf("by message = %+v, %v", m, err)
		}
		if _, err := db.ScheduleByMessage(ctx, schedule(pipeline.TenneT, "", 0).MessageID, 4); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("unknown version: %v", err)
		}
	})
}

// TestRecordScheduleRace: writers that built the same next version race;
// one records it, the others get a Conflict. Writers that take any next
// version all get distinct ones.
func TestRecordScheduleRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		const writers = 6
		race := func(area pipeline.ControlArea, version int) (versions []int, conflicts int) {
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m, created, err := db.RecordSchedule(ctx, schedule(area, fmt.Sprint("h", i), version))
					mu.Lock()
					defer mu.Unlock()
					switch {
					case pipeline.KindOf(err) == pipeline.Conflict:
						conflicts++
					case err != nil:
						t.Error(err)
					case created:
						versions = append(versions, m.Version)
					}
				}()
			}
			wg.Wait()
			slices.Sort(versions)
			return versions, conflicts
		}
		if v, c := race(pipeline.TenneT, 1); !slices.Equal(v, []int{1}) || c != writers-1 {
			t.Errorf("same version: created %v, %d conflicts", v, c)
		}
		if v, c := race(pipeline.Amprion, 0); !slices.Equal(v, []int{1, 2, 3, 4, 5, 6}) || c != 0 {
			t.Errorf("next version: created %v, %d conflicts", v, c)
		}
	})
}

type answer struct {
	status pipeline.ScheduleStatus
	kind   string
	at     time.Duration // after t0
}

// TestScheduleAnswerPrecedence: per version, confirmed > anomaly = rejected
// > acknowledged > submitted; equal ranks keep the newer answer.
func TestScheduleAnswerPrecedence(t *testing.T) {
	ack := answer{pipeline.ScheduleAcknowledged, "ACK", time.Minute}
	ano := answer{pipeline.ScheduleAnomaly, "ANO", 2 * time.Minute}
	cnf := answer{pipeline.ScheduleConfirmed, "CNF", 3 * time.Minute}
	nack := answer{pipeline.ScheduleRejected, "ACK", 2 * time.Minute}
	// Answers in the order they arrive, and the outcome on their version.
	cases := []struct {
		name     string
		answers  []answer
		status   pipeline.ScheduleStatus
		kind     string
		at       time.Duration
		keyIndex int // which answer's key stays
	}{
		{"ack", []answer{ack}, pipeline.ScheduleAcknowledged, "ACK", time.Minute, 0},
		{"ack then cnf", []answer{ack, cnf}, pipeline.ScheduleConfirmed, "CNF", 3 * time.Minute, 1},
		{"cnf then late ack", []answer{cnf, {pipeline.ScheduleAcknowledged, "ACK", time.Hour}}, pipeline.ScheduleConfirmed, "CNF", 3 * time.Minute, 0},
		{"ack then ano", []answer{ack, ano}, pipeline.ScheduleAnomaly, "ANO", 2 * time.Minute, 1},
		{"ano then ack", []answer{ano, ack}, pipeline.ScheduleAnomaly, "ANO", 2 * time.Minute, 0},
		{"ano then cnf", []answer{ano, cnf}, pipeline.ScheduleConfirmed, "CNF", 3 * time.Minute, 1},
		{"cnf then ano", []answer{cnf, ano}, pipeline.ScheduleConfirmed, "CNF", 3 * time.Minute, 0},
		{"negative ack then ack", []answer{nack, ack}, pipeline.ScheduleRejected, "ACK", 2 * time.Minute, 0},
		{"newer ano wins", []answer{ano, {pipeline.ScheduleAnomaly, "ANO", 5 * time.Minute}}, pipeline.ScheduleAnomaly, "ANO", 5 * time.Minute, 1},
		{"older ano arriving late loses", []answer{{pipeline.ScheduleAnomaly, "ANO", 5 * time.Minute}, ano}, pipeline.ScheduleAnomaly, "ANO", 5 * time.Minute, 0},
	}
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				// Each case has a delivery day of its own.
				day := pday.AddDays(i)
				v1, _, err := db.RecordSchedule(ctx, scheduleOn(day, pipeline.TenneT, "A", 1))
				if err != nil {
					t.Fatal(err)
				}
				v2, _, err := db.RecordSchedule(ctx, scheduleOn(day, pipeline.TenneT, "B", 2))
				if err != nil {
					t.Fatal(err)
				}
				// Answers to version 1 arrive after version 2 was sent.
				for i, a := range c.answers {
					if err := db.RecordScheduleAnswer(ctx, v1.ID, a.status, a.kind, t0.Add(a.at), fmt.Sprint("answer-", i), a.kind+" detail"); err != nil {
						t.Fatal(err)
					}
				}
				got, err := db.ScheduleByMessage(ctx, v1.MessageID, 1)
				if err != nil || got.Status != c.status || got.AnswerKind != c.kind || got.AnswerAt == nil ||
					!got.AnswerAt.Equal(t0.Add(c.at)) || got.AnswerKey != fmt.Sprint("answer-", c.keyIndex) {
					t.Errorf("version 1 = %+v, %v; want %s %s at %v key %d", got, err, c.status, c.kind, c.at, c.keyIndex)
				}
				if latest, _ := db.LatestSchedule(ctx, "p1", day, pipeline.TenneT); latest.ID != v2.ID ||
					latest.Status != pipeline.ScheduleSubmitted || latest.AnswerAt != nil {
					t.Errorf("answers to version 1 changed version 2: %+v", latest)
				}
			})
		}
		m, _, _ := db.RecordSchedule(ctx, scheduleOn(pday.AddDays(-1), pipeline.TenneT, "A", 1))
		for _, c := range []struct {
			id     int64
			status pipeline.ScheduleStatus
			kind   pipeline.ErrorKind
		}{
			{m.ID, pipeline.ScheduleSubmitted, pipeline.Invalid},
			{m.ID, "ok", pipeline.Invalid},
			{99999, pipeline.ScheduleConfirmed, pipeline.NotFound},
		} {
			if err := db.RecordScheduleAnswer(ctx, c.id, c.status, "X", t0, "k", ""); pipeline.KindOf(err) != c.kind {
				t.Errorf("answer %d %s: %v, want %s", c.id, c.status, err, c.kind)
			}
		}
	})
}

func TestEventFilters(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		d1, d2 := pday, pday.AddDays(1)
		events := []pipeline.Event{
			{At: t0, Kind: "run.started", PortfolioID: "", Subject: "chain", DeliveryDay: &d1},
			{At: t0.Add(time.Minute), Kind: "schedule.sent", PortfolioID: "p1", Subject: "a.xml", DeliveryDay: &d1},
			{At: t0.Add(2 * time.Minute), Kind: "inbox.processed", PortfolioID: "p1", Subject: "f.csv"},
			{At: t0.Add(3*time.Minute + 500*time.Millisecond), Kind: "schedule.sent", PortfolioID: "p2", Subject: "b.xml", DeliveryDay: &d2},
			{At: t0.Add(time.Hour), Kind: "run.succeeded", Subject: "chain", DeliveryDay: &d1},
		}
		for _, ev := range events {
			if err := db.RecordEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		all, err := db.Events(ctx, pipeline.EventQuery{Limit: 100})
		if err != nil || len(all) != len(events) {
			t.Fatalf("all = %d, %v", len(all), err)
		}
		if all[1].DeliveryDay == nil || *all[1].DeliveryDay != d1 || all[2].DeliveryDay != nil {
			t.Errorf("delivery days read back: %v, %v", all[1].DeliveryDay, all[2].DeliveryDay)
		}
		subjects := func(evs []pipeline.Event) []int {
			var out []int
			for _, e := range evs {
				out = append(out, slices.IndexFunc(all, func(a pipeline.Event) bool { return a.ID == e.ID }))
			}
			return out
		}
		for _, c := range []struct {
			name string
			q    pipeline.EventQuery
			want []int
		}{
			{"from", pipeline.EventQuery{From: t0.Add(time.Minute)}, []int{1, 2, 3, 4}},
			{"to is exclusive", pipeline.EventQuery{To: t0.Add(2 * time.Minute)}, []int{0, 1}},
			{"from and to", pipeline.EventQuery{From: t0.Add(2 * time.Minute), To: t0.Add(time.Hour)}, []int{2, 3}},
			{"sub-second bound", pipeline.EventQuery{From: t0.Add(3*time.Minute + 500*time.Millisecond)}, []int{3, 4}},
			{"sub-second bound excluded", pipeline.EventQuery{From: t0.Add(3*time.Minute + 600*time.Millisecond)}, []int{4}},
			{"other zone", pipeline.EventQuery{From: t0.Add(time.Minute).In(pipeline.Berlin), To: t0.Add(2 * time.Minute).In(pipeline.Berlin)}, []int{1}},
			{"day", pipeline.EventQuery{Day: &d1}, []int{0, 1, 4}},
			{"day and kind prefix", pipeline.EventQuery{Day: &d1, Kind: "run.*"}, []int{0, 4}},
			{"day and portfolio", pipeline.EventQuery{Day: &d2, Portfolio: "p2"}, []int{3}},
			{"day and time", pipeline.EventQuery{Day: &d1, From: t0.Add(30 * time.Second)}, []int{1, 4}},
			{"kind", pipeline.EventQuery{Kind: "schedule.sent"}, []int{1, 3}},
			{"after id", pipeline.EventQuery{AfterID: all[2].ID, Kind: "schedule.*"}, []int{3}},
			{"limit", pipeline.EventQuery{Day: &d1, Limit: 2}, []int{0, 1}},
		} {
			q := c.q
			if q.Limit == 0 {
				q.Limit = 100
			}
			got, err := db.Events(ctx, q)
			if err != nil || !slices.Equal(subjects(got), c.want) {
				t.Errorf("%s: %v, %v; want %v", c.name, subjects(got), err, c.want)
			}
		}
	})
}

// openTwice opens two independent *DB on one database of the backend, as
// two serve processes would.
func openTwice(t *testing.T, d sqldb.Dialect) (*sqldb.DB, *sqldb.DB) {
	t.Helper()
	url := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	if d == sqldb.Postgres {
		url = sqltest.PostgresURL(t)
	}
	var dbs [2]*sqldb.DB
	for i := range dbs {
		db, err := sqldb.Open(context.Background(), sqldb.Options{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	return dbs[0], dbs[1]
}

func TestTryLeader(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, b := openTwice(t, d)
			try := func(db *sqldb.DB, name string) (func(), bool) {
				t.Helper()
				held, release, ok, err := db.TryLeader(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				if ok && held.Err() != nil {
					t.Fatalf("leader, but its held context ended: %v", held.Err())
				}
				if ok {
					// The held context ends with the leadership.
					return func() { release(); <-held.Done() }, ok
				}
				return release, ok
			}
			releaseA, ok := try(a, "scheduler")
			if !ok {
				t.Fatal("first TryLeader refused")
			}
			if _, ok := try(b, "scheduler"); ok {
				t.Fatal("second process became leader too")
			}
			if _, ok := try(a, "scheduler"); ok {
				t.Fatal("a second TryLeader of the same process succeeded")
			}
			releaseOther, ok := try(b, "other")
			if !ok {
				t.Fatal("a lock of another name was refused")
			}
			releaseOther()
			releaseA()
			releaseA() // idempotent
			releaseB, ok := try(b, "scheduler")
			if !ok {
				t.Fatal("leadership not free after release")
			}
			if _, ok := try(a, "scheduler"); ok {
				t.Fatal("old leader took the lock back while the new one holds it")
			}
			releaseB()
			if _, _, _, err := a.TryLeader(ctx, "../x"); pipeline.KindOf(err) != pipeline.Invalid {
				t.Errorf("bad name: %v", err)
			}
		})
	}
}

// TestLeaderLost: when the connection holding a PostgreSQL leader's lock
// dies, the server drops the lock; the leader's held context ends with the
// reason, and another process can lead.
func TestLeaderLost(t *testing.T) {
	ctx := context.Background()
	a, b := openTwice(t, sqldb.Postgres)
	held, release, ok, err := a.TryLeader(ctx, "scheduler")
	if err != nil || !ok {
		t.Fatalf("leader: %v %v", ok, err)
	}
	defer release()
	// Another session kills the one that holds the advisory lock.
	if err := sqldb.ExecForTest(ctx, b, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
	case <-time.After(3 * sqldb.LeaderCheck):
		t.Fatal("the leader did not notice that its lock was gone")
	}
	if cause := context.Cause(held); cause == nil || !strings.Contains(cause.Error(), "connection holding the lock failed") {
		t.Errorf("cause = %v", cause)
	}
	_, releaseB, ok, err := b.TryLeader(ctx, "scheduler")
	if err != nil || !ok {
		t.Fatalf("successor: %v %v", ok, err)
	}
	releaseB()
}

// TestPipelineMigrationDownUp reverts the pipeline migration and applies it
// again; the data of the tables it does not own survives.
func TestPipelineMigrationDownUp(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := sqltest.OpenUnmigrated(t, d)
			if err := sqldb.MigrateThrough(ctx, db, "20261122000003"); err != nil {
				t.Fatal(err)
			}
			if err := sqldb.Exec(ctx, db, "INSERT INTO portfolios (id, name, control_areas, created_at, updated_at) "+
				"VALUES ('p1', 'One', 'TenneT', ?, ?)", t0, t0); err != nil {
				t.Fatal(err)
			}
			for round := range 2 {
				// Later migrations are not this test's concern: apply up to
				// the pipeline's, so that the rollback undoes just that one.
				if err := sqldb.MigrateThrough(ctx, db, "20261123000001"); err != nil {
					t.Fatalf("round %d: migrate: %v", round, err)
				}
				p, err := db.Portfolio(ctx, "p1")
				if err != nil || p.Name != "One" || p.ExchangeBalancingGroup != "" {
					t.Fatalf("round %d: portfolio = %+v, %v", round, p, err)
				}
				p.ExchangeBalancingGroup = "11XEPEXSPOT-DE-S"
				if _, err := db.PutPortfolio(ctx, p, t0); err != nil {
					t.Fatal(err)
				}
				runID := insertRun(t, db, pipeline.StageAggregate)
				if runID != 1 {
					t.Fatalf("round %d: run id = %d", round, runID)
				}
				if err := db.PublishPositions(ctx, runID, pday, positionRows(runID, []string{"p1"}, 2)); err != nil {
					t.Fatal(err)
				}
				if err := db.RecordEvent(ctx, pipeline.Event{At: t0, Kind: "run.started", Subject: "x", DeliveryDay: &pday}); err != nil {
					t.Fatal(err)
				}
				back, err := sqldb.RollbackLast(ctx, db)
				if err != nil || !slices.Equal(back, []string{"20261123000001"}) {
					t.Fatalf("round %d: rollback = %v, %v", round, back, err)
				}
				if n, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM events"); err != nil || n != fmt.Sprint(round+1) {
					t.Errorf("round %d: events after rollback = %s, %v", round, n, err)
				}
				if name, err := sqldb.QueryString(ctx, db, "SELECT name FROM portfolios WHERE id = 'p1'"); err != nil || name != "One" {
					t.Errorf("round %d: portfolio after rollback = %q, %v", round, name, err)
				}
				if _, err := sqldb.QueryString(ctx, db, "SELECT COUNT(*) FROM runs"); err == nil {
					t.Errorf("round %d: runs table survived the rollback", round)
				}
			}
		})
	}
}

// insertRun records a running run of the stage on pday by hand, for tests of
// an earlier schema than the one CreateRun writes, and returns its id.
func insertRun(t *testing.T, db *sqldb.DB, st pipeline.Stage) int64 {
	t.Helper()
	id, err := sqldb.QueryString(context.Background(), db, "INSERT INTO runs (stage, delivery_day, status, started_at) "+
		"VALUES (?, ?, 'running', ?) RETURNING id", string(st), pday.String(), t0)
	if err != nil {
		t.Fatalf("insert run: %v", err)
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		t.Fatalf("insert run: id %q: %v", id, err)
	}
	return n
}
