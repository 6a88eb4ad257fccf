package sqldb_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

func TestMain(m *testing.M) { os.Exit(sqltest.Main(m)) }

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// eachBackend runs the contract against SQLite and PostgreSQL.
func eachBackend(t *testing.T, fn func(t *testing.T, db *sqldb.DB)) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, sqltest.Open(t, d))
		})
	}
}

func seedPortfolio(t *testing.T, db *sqldb.DB, id string) {
	t.Helper()
	p := pipeline.Portfolio{ID: id, Name: "Test " + id, ControlAreas: []pipeline.ControlArea{pipeline.TenneT, pipeline.FiftyHertz}}
	if _, err := db.PutPortfolio(context.Background(), p, t0); err != nil {
		t.Fatal(err)
	}
}

func audit(p, hash string) *pipeline.AuditEntry {
	return &pipeline.AuditEntry{ReceivedAt: t0, KeyID: "key_1", PortfolioID: p, Endpoint: "POST /v1/test", InputHash: hash, StatusCode: 200}
}

func TestMigrateTwice(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		applied, err := db.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) != 0 {
			t.Errorf("second migrate applied %v", applied)
		}
		pending, err := db.PendingMigrations(ctx)
		if err != nil || len(pending) != 0 {
			t.Errorf("pending = %v, %v", pending, err)
		}
	})
}

func TestPortfolios(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		p := pipeline.Portfolio{ID: "p1", Name: "One", ControlAreas: []pipeline.ControlArea{pipeline.TenneT, pipeline.FiftyHertz}}
		created, err := db.PutPortfolio(ctx, p, t0)
		if err != nil || !created {
			t.Fatalf("create: %v %v", created, err)
		}
		p.Name, p.ControlAreas, p.BalancingGroup = "One renamed", []pipeline.ControlArea{pipeline.Amprion}, "11XSCHEDBRIDGE1W"
		created, err = db.PutPortfolio(ctx, p, t0.Add(time.Hour))
		if err != nil || created {
			t.Fatalf("update: %v %v", created, err)
		}
		got, err := db.Portfolio(ctx, "p1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "One renamed" || len(got.ControlAreas) != 1 || got.ControlAreas[0] != pipeline.Amprion ||
			got.BalancingGroup != "11XSCHEDBRIDGE1W" || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0.Add(time.Hour)) {
			t.Errorf("got %+v", got)
		}
		if _, err := db.Portfolio(ctx, "nope"); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("missing portfolio: %v", err)
		}
		bad := pipeline.Portfolio{ID: "p2", Name: "x", ControlAreas: []pipeline.ControlArea{"tennet"}}
		if _, err := db.PutPortfolio(ctx, bad, t0); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("lower-case area accepted: %v", err)
		}
		list, err := db.Portfolios(ctx)
		if err != nil || len(list) != 1 {
			t.Errorf("list = %v, %v", list, err)
		}
	})
}

func TestKeys(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		k := pipeline.APIKey{ID: "key_a", Scope: pipeline.ScopeData, PortfolioID: "p1", Label: "supplier", CreatedAt: t0}
		if err := db.CreateKey(ctx, k, pipeline.HashKey("secret-a")); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateKey(ctx, pipeline.APIKey{ID: "key_b", Scope: pipeline.ScopeData, CreatedAt: t0}, "h"); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("data key without portfolio: %v", err)
		}
		if err := db.CreateKey(ctx, pipeline.APIKey{ID: "key_c", Scope: pipeline.ScopeData, PortfolioID: "zz", CreatedAt: t0}, "h"); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("data key of unknown portfolio: %v", err)
		}
		got, err := db.KeyByHash(ctx, pipeline.HashKey("secret-a"))
		if err != nil || got.ID != "key_a" || got.PortfolioID != "p1" || got.Revoked() {
			t.Fatalf("lookup = %+v, %v", got, err)
		}
		if _, err := db.KeyByHash(ctx, pipeline.HashKey("secret-a\n")); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("key with newline matched: %v", err)
		}
		if err := db.RevokeKey(ctx, "key_a", t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := db.RevokeKey(ctx, "key_a", t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, _ = db.KeyByHash(ctx, pipeline.HashKey("secret-a"))
		if !got.Revoked() || !got.RevokedAt.Equal(t0.Add(time.Minute)) {
			t.Errorf("revoked = %+v", got.RevokedAt)
		}
		if err := db.RevokeKey(ctx, "key_none", t0); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("revoke unknown: %v", err)
		}
	})
}

func forecast(day pipeline.Day, v float64) (pipeline.Forecast, []byte) {
	vals := make([]float64, day.Intervals())
	for i := range vals {
		vals[i] = v
	}
	f := pipeline.Forecast{DeliveryDay: day, MaloMapping: map[string]pipeline.ControlArea{},
		Series: []pipeline.Series{{ControlArea: pipeline.TenneT, Kind: pipeline.Consumption, Unit: pipeline.MW, Values: vals}}}
	b, _ := json.Marshal(f)
	return f, b
}

func TestStageForecastVersions(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		seedPortfolio(t, db, "p2")
		day := pipeline.NewDay(2026, time.March, 29)
		steps := []struct {
			value   float64
			status  pipeline.Status
			version int
		}{
			{1, pipeline.Created, 1},
			{1, pipeline.Unchanged, 1},
			{2, pipeline.Replaced, 2},
			{1, pipeline.Replaced, 3}, // going back to old content is a new version
			{1, pipeline.Unchanged, 3},
		}
		for i, s := range steps {
			f, b := forecast(day, s.value)
			res, err := db.StageForecast(ctx, audit("p1", fmt.Sprintf("h%d", i)), f, b)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != s.status || res.Version != s.version {
				t.Errorf("step %d: got %s v%d, want %s v%d", i, res.Status, res.Version, s.status, s.version)
			}
		}
		cur, err := db.Forecast(ctx, "p1", day, 0)
		if err != nil || cur.Version.Version != 3 || cur.InputHash != "h3" {
			t.Fatalf("current = %+v, %v", cur.Version, err)
		}
		var body pipeline.Forecast
		if err := json.Unmarshal(cur.Body, &body); err != nil || len(body.Series[0].Values) != 92 || body.Series[0].Values[0] != 1 {
			t.Errorf("body = %s, %v", cur.Body, err)
		}
		old, err := db.Forecast(ctx, "p1", day, 2)
		if err != nil || old.SupersededAt == nil {
			t.Errorf("version 2 = %+v, %v", old.Version, err)
		}
		vs, err := db.ForecastVersions(ctx, "p1", day)
		if err != nil || len(vs) != 3 || vs[0].Version != 3 || vs[0].SupersededAt != nil {
			t.Errorf("versions = %+v, %v", vs, err)
		}
		if _, err := db.Forecast(ctx, "p2", day, 0); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("other portfolio sees forecast: %v", err)
		}
		for _, c := range []struct {
			current bool
			want    int
		}{{true, 1}, {false, 3}} {
			if n, err := db.CountVersions(ctx, "forecast", "p1", c.current); err != nil || n != c.want {
				t.Errorf("count current=%v: %d, %v", c.current, n, err)
			}
		}
		entries, err := db.AuditByHash(ctx, "p1", "h1")
		if err != nil || len(entries) != 1 || entries[0].Outcome != "unchanged" {
			t.Errorf("audit h1 = %+v, %v", entries, err)
		}
		if _, err := db.AuditByHash(ctx, "p2", "h1"); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("audit of other portfolio visible: %v", err)
		}
	})
}

func TestStageMeteredMixed(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		day := pipeline.NewDay(2026, time.November, 20)
		mk := func(n int, v float64) []pipeline.MeteredEntry {
			out := make([]pipeline.MeteredEntry, n)
			for i := range out {
				vals := make([]float64, 96)
				vals[0] = v
				out[i] = pipeline.MeteredEntry{Malo: fmt.Sprintf("%011d", i), Day: day, Unit: pipeline.KWH, Values: vals}
			}
			return out
		}
		// 1200 entries cross the lookup and insert chunk sizes.
		res, err := db.StageMetered(ctx, audit("p1", "a"), mk(1200, 1))
		if err != nil || res.Status != pipeline.Created || res.Created != 1200 {
			t.Fatalf("first = %+v, %v", res, err)
		}
		second := mk(1300, 1)
		second[5].Values[3] = 7
		second[1100].Unit = pipeline.MWH // a unit change alone is new content
		res, err = db.StageMetered(ctx, audit("p1", "b"), second)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != pipeline.Replaced || res.Created != 100 || res.Replaced != 2 || res.Unchanged != 1198 {
			t.Errorf("second = %+v", res)
		}
		if n, _ := db.CountVersions(ctx, "metered", "p1", true); n != 1300 {
			t.Errorf("current = %d", n)
		}
		if n, _ := db.CountVersions(ctx, "metered", "p1", false); n != 1302 {
			t.Errorf("all = %d", n)
		}
	})
}

func TestStageLocationsAndProfiles(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		to := pipeline.NewDay(2026, time.July, 1)
		kwh := 3500.0
		loc := pipeline.Location{Malo: "01234567890", Slices: []pipeline.Slice{
			{ValidFrom: pipeline.NewDay(2026, time.January, 1), ValidTo: &to, Active: true, ControlArea: pipeline.TenneT,
				MGA: "MGA1", MeteringType: pipeline.SLP, Profile: "H25", AnnualConsumptionKWh: &kwh, Kind: pipeline.Consumption},
			{ValidFrom: to, Active: false, Kind: pipeline.Consumption},
		}}
		if res, err := db.StageLocations(ctx, audit("p1", "l1"), []pipeline.Location{loc}); err != nil || res.Status != pipeline.Created {
			t.Fatalf("stage = %+v, %v", res, err)
		}
		got, err := db.Location(ctx, "p1", "01234567890")
		if err != nil || len(got.Slices) != 2 || *got.Slices[0].ValidTo != to || *got.Slices[0].AnnualConsumptionKWh != 3500 {
			t.Fatalf("location = %+v, %v", got, err)
		}
		if res, _ := db.StageLocations(ctx, audit("p1", "l2"), []pipeline.Location{loc}); res.Status != pipeline.Unchanged {
			t.Errorf("resend = %s", res.Status)
		}
		if _, err := db.Location(ctx, "p1", "99999999999"); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("unknown malo: %v", err)
		}
		day := pipeline.NewDay(2026, time.October, 25)
		prof := []pipeline.ProfileEntry{{MGA: "MGA1", Profile: "H25", Day: day, ValuesKWh: make([]float64, 100)}}
		if res, err := db.StageProfiles(ctx, audit("p1", "pr1"), prof); err != nil || res.Status != pipeline.Created {
			t.Fatalf("profiles = %+v, %v", res, err)
		}
		prof[0].ValuesKWh[99] = 0.5
		if res, _ := db.StageProfiles(ctx, audit("p1", "pr2"), prof); res.Status != pipeline.Replaced || res.Version != 2 {
			t.Errorf("profiles replace = %+v", res)
		}
	})
}

// Concurrent writers of one delivery day must produce gap-free versions and
// exactly one current row.
func TestStageConcurrent(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		day := pipeline.NewDay(2026, time.November, 23)
		const writers = 8
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, b := forecast(day, float64(i))
				if _, err := db.StageForecast(ctx, audit("p1", fmt.Sprint(i)), f, b); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		vs, err := db.ForecastVersions(ctx, "p1", day)
		if err != nil || len(vs) != writers {
			t.Fatalf("versions = %d, %v", len(vs), err)
		}
		current := 0
		for i, v := range vs {
			if v.Version != writers-i {
				t.Errorf("version[%d] = %d", i, v.Version)
			}
			if v.SupersededAt == nil {
				current++
			}
		}
		if current != 1 {
			t.Errorf("%d current versions", current)
		}
	})
}

// A failed staging transaction stores neither versions nor its audit entry,
// and leaves the entry unsaved for the caller to record.
func TestStageFailureLeavesAuditToCaller(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		f, b := forecast(pipeline.NewDay(2026, time.November, 23), 1)
		a := audit("unknown-portfolio", "h")
		if _, err := db.StageForecast(ctx, a, f, b); err == nil {
			t.Fatal("staging for an unknown portfolio succeeded")
		}
		if a.ID != 0 || a.Outcome != "" {
			t.Errorf("entry after rollback: id %d outcome %q", a.ID, a.Outcome)
		}
		if entries, err := db.RecentAudit(ctx, 10); err != nil || len(entries) != 0 {
			t.Errorf("audit after rollback: %v, %v", entries, err)
		}
		a.Outcome, a.StatusCode = "error", 500
		if err := db.RecordAudit(ctx, a); err != nil || a.ID == 0 {
			t.Errorf("record after rollback: id %d, %v", a.ID, err)
		}
	})
}

// Many concurrent small submissions, which PostgreSQL stages in shared
// transactions (group commit): each gets the result of a transaction of its
// own in some order, with its own committed audit entry; repeats of the same
// content are unchanged; a submission that fails (unknown portfolio) fails
// alone and leaves no entry. The first round has no failing submission, the
// second has (a failed shared transaction is retried one by one).
func TestStageConcurrentGroups(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		seedPortfolio(t, db, "p1")
		seedPortfolio(t, db, "p2")
		for round, portfolios := range [][]string{{"p1", "p2"}, {"p1", "p2", "unknown"}} {
			days := []pipeline.Day{pipeline.NewDay(2026, time.November, 23).AddDays(2 * round),
				pipeline.NewDay(2026, time.November, 24).AddDays(2 * round)}
			stageConcurrently(t, db, portfolios, days)
		}
	})
}

func stageConcurrently(t *testing.T, db *sqldb.DB, portfolios []string, days []pipeline.Day) {
	t.Helper()
	ctx := context.Background()
	const writers = 48
	type outcome struct {
		a   *pipeline.AuditEntry
		res pipeline.StageResult
		err error
		day pipeline.Day
		p   string
	}
	out := make([]outcome, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			p := portfolios[i%len(portfolios)]
			day := days[(i/len(portfolios))%2]
			// Every fourth writer sends content another writer also sends.
			f, b := forecast(day, float64(i-i%4))
			a := audit(p, fmt.Sprintf("h%d-%s", i, day))
			res, err := db.StageForecast(ctx, a, f, b)
			out[i] = outcome{a, res, err, day, p}
		})
	}
	wg.Wait()
	ids := map[int64]bool{}
	for i, o := range out {
		if o.p == "unknown" {
			if o.err == nil || o.a.ID != 0 {
				t.Errorf("writer %d for an unknown portfolio: id %d, %v", i, o.a.ID, o.err)
			}
			continue
		}
		if o.err != nil {
			t.Fatalf("writer %d: %v", i, o.err)
		}
		if o.a.ID == 0 || ids[o.a.ID] || o.a.Outcome != string(o.res.Status) {
			t.Errorf("writer %d: audit id %d (seen %v) outcome %q, result %+v", i, o.a.ID, ids[o.a.ID], o.a.Outcome, o.res)
		}
		ids[o.a.ID] = true
		got, err := db.AuditByHash(ctx, o.p, o.a.InputHash)
		if err != nil || len(got) != 1 || got[0].ID != o.a.ID || got[0].Outcome != o.a.Outcome {
			t.Errorf("writer %d: stored entry %+v, %v; want id %d outcome %s", i, got, err, o.a.ID, o.a.Outcome)
		}
	}
	for _, p := range []string{"p1", "p2"} {
		for _, day := range days {
			vs, err := db.ForecastVersions(ctx, p, day)
			if err != nil {
				t.Fatal(err)
			}
			// The writers' versions of this key, created or replaced,
			// are exactly the stored versions 1..n.
			written := map[int]int{}
			for _, o := range out {
				if o.p == p && o.day == day && o.res.Status != pipeline.Unchanged {
					written[o.res.Version]++
				}
			}
			current := 0
			for i, v := range vs {
				if v.Version != len(vs)-i || written[v.Version] != 1 {
					t.Errorf("%s %s: version[%d] = %d written %d times", p, day, i, v.Version, written[v.Version])
				}
				if v.SupersededAt == nil {
					current++
				}
			}
			if current != 1 || len(written) != len(vs) {
				t.Errorf("%s %s: %d current of %d versions, %d written", p, day, current, len(vs), len(written))
			}
		}
	}
}

// Concurrent small submissions share their transactions on PostgreSQL (group
// commit): while the staging table is locked by another session, so that no
// transaction can finish, all of them queue; when it is released, they are
// staged in at most one transaction per group writer plus one for those that
// queued behind them, far fewer than one each. Each still gets its own
// version. SQLite has no group commit (one writer at a time): there every
// submission runs in a transaction of its own.
func TestStageGroupCommitShares(t *testing.T) {
	const writers = 48
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var db *sqldb.DB
			release := func() {}
			if d == sqldb.Postgres {
				url := sqltest.PostgresURL(t)
				var err error
				if db, err = sqldb.Open(ctx, sqldb.Options{URL: url}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				if _, err := db.Migrate(ctx); err != nil {
					t.Fatal(err)
				}
				release = lockTable(t, url, "forecast_versions")
			} else {
				db = sqltest.Open(t, d)
			}
			seedPortfolio(t, db, "p1")
			results := make([]pipeline.StageResult, writers)
			errs := make([]error, writers)
			var wg sync.WaitGroup
			for i := range writers {
				wg.Go(func() {
					f, b := forecast(pipeline.NewDay(2026, time.November, 23).AddDays(i), 1)
					results[i], errs[i] = db.StageForecast(ctx, audit("p1", fmt.Sprint(i)), f, b)
				})
			}
			if d == sqldb.Postgres {
				// Every request is queued or in a transaction that waits for
				// the lock; none can have been answered.
				deadline := time.Now().Add(30 * time.Second)
				for queued, _ := sqldb.GroupCommitStats(db); queued < writers; queued, _ = sqldb.GroupCommitStats(db) {
					if time.Now().After(deadline) {
						t.Fatalf("%d of %d requests queued", queued, writers)
					}
					time.Sleep(time.Millisecond)
				}
			}
			release()
			wg.Wait()
			for i, err := range errs {
				if err != nil || results[i].Status != pipeline.Created || results[i].Version != 1 {
					t.Errorf("writer %d: %+v, %v", i, results[i], err)
				}
			}
			queued, txs := sqldb.GroupCommitStats(db)
			if d == sqldb.SQLite {
				if queued != 0 || txs != 0 {
					t.Errorf("SQLite: %d requests queued for group commit in %d transactions, want none", queued, txs)
				}
				return
			}
			// Each writer may have taken one request before the others
			// queued; the first to finish takes all the rest (64 at most).
			if queued != writers || txs > sqldb.MaxGroupWriters+1 {
				t.Errorf("%d requests went out in %d transactions, want at most %d", queued, txs, sqldb.MaxGroupWriters+1)
			}
			t.Logf("%d requests in %d transactions", queued, txs)
		})
	}
}

// lockTable holds an exclusive lock on a table in a session of its own until
// the returned function is called (or the test ends).
func lockTable(t *testing.T, url, table string) func() {
	t.Helper()
	ctx := context.Background()
	side, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { side.Close() })
	tx, err := side.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unlock := func() { once.Do(func() { tx.Rollback() }) }
	t.Cleanup(unlock)
	return unlock
}
