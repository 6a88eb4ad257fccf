package sqldb_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
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

// TestValuesRoundTrip checks that staged values come back bit for bit,
// including values that decimal text would round, and that -0 is stored as 0
// so that it does not count as new content.
func TestValuesRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		day := pipeline.NewDay(2026, time.March, 29) // 92 quarter-hours
		vals := make([]float64, day.Intervals())
		for i := range vals {
			vals[i] = float64(i) / 3
		}
		vals[1], vals[2], vals[3] = math.SmallestNonzeroFloat64, math.MaxFloat64, 0.1+0.2
		m := pipeline.MeteredEntry{Malo: "01234567890", Day: day, Unit: pipeline.MWH, Values: vals}
		if _, err := db.StageMetered(ctx, audit("p1", "a"), []pipeline.MeteredEntry{m}); err != nil {
			t.Fatal(err)
		}
		got, err := db.MeteredDay(ctx, "p1", m.Malo, day)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Values, vals) || got.Unit != pipeline.MWH || got.Version.Version != 1 || got.InputHash != "a" {
			t.Errorf("metered read back = %+v", got)
		}

		zero := slices.Clone(vals)
		zero[0] = math.Copysign(0, -1)
		res, err := db.StageMetered(ctx, audit("p1", "b"), []pipeline.MeteredEntry{{Malo: m.Malo, Day: day, Unit: pipeline.MWH, Values: zero}})
		if err != nil || res.Status != pipeline.Unchanged {
			t.Errorf("-0 instead of 0 = %+v, %v; want unchanged", res, err)
		}

		p := pipeline.ProfileEntry{MGA: "MGA Nord", Profile: "H25", Day: day, ValuesKWh: vals}
		if _, err := db.StageProfiles(ctx, audit("p1", "c"), []pipeline.ProfileEntry{p}); err != nil {
			t.Fatal(err)
		}
		gp, err := db.ProfileDay(ctx, "p1", p.MGA, p.Profile, day)
		if err != nil || !slices.Equal(gp.ValuesKWh, vals) {
			t.Errorf("profile read back = %+v, %v", gp, err)
		}
		if _, err := db.MeteredDay(ctx, "p1", m.Malo, day.AddDays(1)); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("missing day: %v, want not found", err)
		}
		if _, err := db.ProfileDay(ctx, "p1", p.MGA, "G0", day); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("missing profile: %v, want not found", err)
		}
	})
}

// TestMigrateValuesToBinary fills the JSON value columns of the foundation
// schema, migrates, and checks that the values survive and that the same
// content staged again is recognised as unchanged (the content hashes were
// recomputed over the new form).
func TestMigrateValuesToBinary(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := sqltest.OpenUnmigrated(t, d)
			if err := sqldb.MigrateThrough(ctx, db, "20261122000002"); err != nil {
				t.Fatal(err)
			}
			ins := func(q string, args ...any) {
				t.Helper()
				if err := sqldb.Exec(ctx, db, q, args...); err != nil {
					t.Fatal(err)
				}
			}
			// The portfolio is written in the schema of the time: PutPortfolio
			// writes columns that later migrations add.
			ins("INSERT INTO portfolios (id, name, control_areas, created_at, updated_at) VALUES ('p1', 'Test p1', 'TenneT', ?, ?)", t0, t0)
			for i, malo := range []string{"01234567890", "01234567891"} {
				ins("INSERT INTO metered_versions (portfolio_id, malo, day, version, content_hash, input_hash, unit, vals, received_at) "+
					"VALUES ('p1', ?, '2026-11-20', 1, 'old', 'h', 'KWH', ?, ?)", malo, []string{"[0.25,0.5,1.5]", "[2,0,1e-7]"}[i], t0)
			}
			ins("INSERT INTO profile_versions (portfolio_id, mga, profile, day, version, content_hash, input_hash, vals, received_at) "+
				"VALUES ('p1', 'MGA1', 'H25', '2026-11-20', 1, 'old', 'h', '[0.125,3]', ?)", t0)
			if err := sqldb.MigrateThrough(ctx, db, "20261122000003"); err != nil {
				t.Fatalf("migrate to 20261122000003: %v", err)
			}
			// Staging and reading use the columns of the later migrations
			// (the audit trail's token columns, the packed values), so the
			// rest of the schema comes first.
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			day := pipeline.NewDay(2026, time.November, 20)
			got, err := db.MeteredDay(ctx, "p1", "01234567891", day)
			if err != nil || !slices.Equal(got.Values, []float64{2, 0, 1e-7}) {
				t.Fatalf("migrated metered = %+v, %v", got, err)
			}
			gp, err := db.ProfileDay(ctx, "p1", "MGA1", "H25", day)
			if err != nil || !slices.Equal(gp.ValuesKWh, []float64{0.125, 3}) {
				t.Fatalf("migrated profile = %+v, %v", gp, err)
			}
			res, err := db.StageMetered(ctx, audit("p1", "again"), []pipeline.MeteredEntry{
				{Malo: "01234567890", Day: day, Unit: pipeline.KWH, Values: []float64{0.25, 0.5, 1.5}}})
			if err != nil || res.Status != pipeline.Unchanged {
				t.Errorf("re-stage after migration = %+v, %v; want unchanged", res, err)
			}
			res, err = db.StageProfiles(ctx, audit("p1", "again"), []pipeline.ProfileEntry{
				{MGA: "MGA1", Profile: "H25", Day: day, ValuesKWh: []float64{0.125, 3}}})
			if err != nil || res.Status != pipeline.Unchanged {
				t.Errorf("re-stage profile after migration = %+v, %v; want unchanged", res, err)
			}

			// Down converts back to JSON text; up again restores the binary
			// form. The later migrations go first, as they came last; they
			// include the packed values', whose down gives vals_f64 back.
			if _, err := sqldb.RollbackLast(ctx, db); err != nil {
				t.Fatal(err)
			}
			if back, err := sqldb.RollbackLast(ctx, db); err != nil || !slices.Equal(back, []string{"20261122000003"}) {
				t.Fatalf("rollback = %v, %v", back, err)
			}
			if s, err := sqldb.QueryString(ctx, db, "SELECT vals FROM metered_versions WHERE malo = '01234567891'"); err != nil || s != "[2,0,1e-7]" {
				t.Errorf("rolled-back vals = %q, %v", s, err)
			}
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if got, err := db.MeteredDay(ctx, "p1", "01234567890", day); err != nil || !slices.Equal(got.Values, []float64{0.25, 0.5, 1.5}) {
				t.Errorf("after down and up = %+v, %v", got, err)
			}
		})
	}
}

// TestLookupPlanProbesIndex pins the plan of PostgreSQL's current-version
// lookup to one index probe per key, whatever the statistics say: a hash
// join or bitmap scan over the portfolio's rows per batch makes a large
// bulk file quadratic.
func TestLookupPlanProbesIndex(t *testing.T) {
	if !slices.Contains(sqltest.Backends, sqldb.Postgres) {
		t.Skip("PostgreSQL only")
	}
	t.Parallel()
	ctx := context.Background()
	db := sqltest.Open(t, sqldb.Postgres)
	seedPortfolio(t, db, "p1")
	day := pipeline.NewDay(2026, time.November, 20)
	var entries []pipeline.MeteredEntry
	var keys [][2]string
	for i := range 20000 {
		malo := fmt.Sprintf("%011d", 10000000000+i/10)
		d := day.AddDays(i % 10)
		entries = append(entries, pipeline.MeteredEntry{Malo: malo, Day: d, Unit: pipeline.KWH, Values: []float64{1}})
		if i%10 == 0 {
			keys = append(keys, [2]string{malo, d.String()})
		}
	}
	if _, err := db.StageMetered(ctx, audit("p1", "a"), entries); err != nil {
		t.Fatal(err)
	}
	if err := sqldb.Exec(ctx, db, "ANALYZE metered_versions"); err != nil {
		t.Fatal(err)
	}
	plan, err := sqldb.ExplainCurrentLookup(ctx, db, "p1", keys)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "Index Scan using metered_versions_current") ||
		strings.Contains(plan, "Hash") || strings.Contains(plan, "Bitmap") || strings.Contains(plan, "Seq Scan") {
		t.Errorf("lookup plan is not one index probe per key:\n%s", plan)
	}
}

// TestMigrateValuesToPacked fills vals_f64 as the schema before the packed
// values had it, migrates, and checks that the values read back bit for
// bit, that the same content staged again is unchanged (the content hashes
// were kept), and that down gives back the same doubles.
func TestMigrateValuesToPacked(t *testing.T) {
	raw := func(vals ...float64) []byte {
		var b []byte
		for _, v := range vals {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		return b
	}
	metered := [][]float64{{0.25, 0.5, 1.5}, {1.0 / 3, 0, 7}}
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := sqltest.OpenUnmigrated(t, d)
			if err := sqldb.MigrateThrough(ctx, db, "20261201000002"); err != nil {
				t.Fatal(err)
			}
			seedPortfolio(t, db, "p1")
			day := pipeline.NewDay(2026, time.November, 20)
			// Staged through the schema of the time, so that the rows carry
			// the content hashes staging computed then.
			for i, malo := range []string{"01234567890", "01234567891"} {
				if err := sqldb.Exec(ctx, db, "INSERT INTO metered_versions (portfolio_id, malo, day, version, content_hash, input_hash, unit, vals_f64, received_at) "+
					"VALUES ('p1', ?, '2026-11-20', 1, ?, 'h', 'KWH', ?, ?)", malo, sqldb.ContentHash([]byte("KWH"), raw(metered[i]...)),
					raw(metered[i]...), t0); err != nil {
					t.Fatal(err)
				}
			}
			if err := sqldb.Exec(ctx, db, "INSERT INTO profile_versions (portfolio_id, mga, profile, day, version, content_hash, input_hash, vals_f64, received_at) "+
				"VALUES ('p1', 'MGA1', 'H25', '2026-11-20', 1, ?, 'h', ?, ?)", sqldb.ContentHash(raw(0.125, 3)), raw(0.125, 3), t0); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			for i, malo := range []string{"01234567890", "01234567891"} {
				got, err := db.MeteredDay(ctx, "p1", malo, day)
				if err != nil || !slices.Equal(got.Values, metered[i]) {
					t.Errorf("migrated metered %s = %+v, %v", malo, got, err)
				}
				res, err := db.StageMetered(ctx, audit("p1", "again"), []pipeline.MeteredEntry{
					{Malo: malo, Day: day, Unit: pipeline.KWH, Values: metered[i]}})
				if err != nil || res.Status != pipeline.Unchanged {
					t.Errorf("re-stage %s after migration = %+v, %v; want unchanged", malo, res, err)
				}
			}
			if gp, err := db.ProfileDay(ctx, "p1", "MGA1", "H25", day); err != nil || !slices.Equal(gp.ValuesKWh, []float64{0.125, 3}) {
				t.Errorf("migrated profile = %+v, %v", gp, err)
			}
			// A day staged from a bulk file names its input in
			// staging_inputs; rolling that migration back moves the hash
			// into the row.
			claim, st := claimAndBegin(t, db)
			if err := st.Metered(ctx, []pipeline.MeteredEntry{{Malo: "01234567899", Day: day, Unit: pipeline.KWH, Values: []float64{1}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Commit(ctx, claim.ID, "me", "processed/p1/a.csv", audit("p1", "bulkhash"),
				func(pipeline.StageResult) ([]byte, error) { return []byte(`{}`), nil }); err != nil {
				t.Fatal(err)
			}
			if got, err := db.MeteredDay(ctx, "p1", "01234567899", day); err != nil || got.InputHash != "bulkhash" {
				t.Fatalf("bulk-staged day = %+v, %v", got, err)
			}
			back, err := sqldb.RollbackLast(ctx, db)
			if err != nil || !slices.Contains(back, "20261202000001") || !slices.Contains(back, "20261202000002") ||
				!slices.Contains(back, "20261202000003") {
				t.Fatalf("rollback = %v, %v", back, err)
			}
			if s, err := sqldb.QueryString(ctx, db, "SELECT input_hash FROM metered_versions WHERE malo = '01234567899'"); err != nil || s != "bulkhash" {
				t.Errorf("rolled-back input_hash = %q, %v", s, err)
			}
			for i, malo := range []string{"01234567890", "01234567891"} {
				s, err := sqldb.QueryString(ctx, db, "SELECT vals_f64 FROM metered_versions WHERE malo = ?", malo)
				if err != nil || s != string(raw(metered[i]...)) {
					t.Errorf("rolled-back vals_f64 of %s = %x, %v", malo, s, err)
				}
			}
			// The rollback restores PostgreSQL's foreign keys of the value
			// tables (20261202000003).
			err = sqldb.Exec(ctx, db, "INSERT INTO metered_versions (portfolio_id, malo, day, version, content_hash, input_hash, unit, vals_f64, received_at) "+
				"VALUES ('nope', '01234567899', '2026-11-20', 1, 'h', 'h', 'KWH', ?, ?)", raw(1), t0)
			if err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") && !strings.Contains(err.Error(), "foreign key") {
				t.Errorf("insert for an unknown portfolio after the rollback = %v, want a foreign key violation", err)
			}
		})
	}
}

// TestValuesUnknownPortfolio checks that metered and profile days of a
// portfolio that does not exist are refused and write nothing, through the
// API's paths (one submission alone, and a few together in a group commit
// on PostgreSQL) and through a bulk file of each kind. PostgreSQL has no
// foreign key on these tables but locks the portfolio row (lockPortfolios);
// SQLite keeps the key, except on a bulk file's connection, which checks
// the portfolio once instead.
func TestValuesUnknownPortfolio(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		day := pipeline.NewDay(2026, time.November, 20)
		m := func(malo string) []pipeline.MeteredEntry {
			return []pipeline.MeteredEntry{{Malo: malo, Day: day, Unit: pipeline.KWH, Values: []float64{1, 2}}}
		}
		refused := func(what string, err error) {
			t.Helper()
			if err == nil {
				t.Errorf("%s for an unknown portfolio was staged", what)
			} else if db.Dialect() == sqldb.Postgres && pipeline.KindOf(err) != pipeline.NotFound {
				t.Errorf("%s for an unknown portfolio: %v, want not found", what, err)
			}
		}
		_, err := db.StageMetered(ctx, audit("nope", "a"), m("01234567890"))
		refused("a metered day", err)
		_, err = db.StageProfiles(ctx, audit("nope", "b"), []pipeline.ProfileEntry{{MGA: "M", Profile: "H25", Day: day, ValuesKWh: []float64{1}}})
		refused("a profile day", err)

		// Submissions that arrive together share a group commit on
		// PostgreSQL: the known portfolio's is staged, the other refused.
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, p := range []string{"p1", "nope"} {
			wg.Go(func() { _, errs[i] = db.StageMetered(ctx, audit(p, "c"), m("0123456789"+strconv.Itoa(i))) })
		}
		wg.Wait()
		if errs[0] != nil {
			t.Errorf("p1's submission beside the unknown one: %v", errs[0])
		}
		refused("a submission beside another", errs[1])

		// A bulk file checks its portfolio once, on both backends: on
		// SQLite its connection runs without foreign keys (bulkPragmas).
		// The kinds written at the commit (forecasts, master data, trades)
		// are refused there.
		claim, ok, err := db.ClaimInboxFile(ctx, inboxFile("inbox/nope/x.csv", "e1"), "me", t0, time.Minute)
		if err != nil || !ok {
			t.Fatalf("claim = %v, %v", ok, err)
		}
		f, canonical := forecast(day, 1)
		commit := func(st *sqldb.BulkStage) error {
			_, err := st.Commit(ctx, claim.ID, "me", "processed/nope/x.csv", audit("nope", "d"),
				func(pipeline.StageResult) ([]byte, error) { return []byte(`{}`), nil })
			return err
		}
		for _, c := range []struct {
			kind     string
			stage    func(*sqldb.BulkStage) error
			atCommit bool // the kind is written at the commit
		}{
			{"metered", func(st *sqldb.BulkStage) error { return st.Metered(ctx, m("01234567893")) }, false},
			{"profile", func(st *sqldb.BulkStage) error {
				return st.Profiles(ctx, []pipeline.ProfileEntry{{MGA: "M", Profile: "H25", Day: day, ValuesKWh: []float64{1}}})
			}, false},
			{"forecast", func(st *sqldb.BulkStage) error { return st.Forecast(ctx, f, canonical) }, true},
			{"location", func(st *sqldb.BulkStage) error {
				return st.Locations(ctx, []pipeline.Location{location("01234567890", "MGA1", 1000)})
			}, true},
		} {
			st, err := db.BeginBulk(ctx, c.kind, "nope", t0)
			if err != nil {
				t.Fatal(err)
			}
			err = c.stage(st)
			if c.atCommit && err == nil {
				err = commit(st)
			}
			if pipeline.KindOf(err) != pipeline.NotFound {
				t.Errorf("a bulk file's %s for an unknown portfolio: %v, want not found", c.kind, err)
			}
			// Nothing commits after a failure: a failed batch is named
			// again, and a failed commit has ended the stage.
			want := pipeline.NotFound
			if c.atCommit {
				want = pipeline.Conflict
			}
			if err := commit(st); pipeline.KindOf(err) != want {
				t.Errorf("a commit after the failed %s: %v, want %s", c.kind, err, want)
			}
			st.Rollback()
		}
		for _, kind := range []string{"metered", "profile", "forecast", "location"} {
			if n, err := db.CountVersions(ctx, kind, "nope", false); err != nil || n != 0 {
				t.Errorf("%s versions of the unknown portfolio = %d, %v", kind, n, err)
			}
		}
		if n, _ := db.CountVersions(ctx, "metered", "p1", false); n != 1 {
			t.Errorf("p1 metered versions = %d, want 1", n)
		}

	})
}
