package sqldb_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/portal"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// TestOperators keeps an operator list through a sequence of steps on both
// backends. After every step, refused ones included, the whole list is
// compared with what it must be, so that a refusal that wrote anything, a
// second add that changed the first entry, or a wrong order shows.
func TestOperators(t *testing.T) {
	anna := portal.Operator{Email: "anna.schmidt@firma.de", AddedAt: t0, AddedBy: "cli"}
	zoe := portal.Operator{Email: "zoe@firma.de", AddedAt: t0.Add(time.Minute), AddedBy: "cli"}
	bob := portal.Operator{Email: "bob@firma.de", AddedAt: t0.Add(2 * time.Minute), AddedBy: "jobs"}
	type step struct {
		name string
		// add or remove: exactly one is set.
		add    *portal.Operator
		remove string
		// created is what AddOperator must report.
		created bool
		// kind is the error kind the step must fail with; "" for success.
		kind pipeline.ErrorKind
		// want is the whole list afterwards, by address.
		want []portal.Operator
	}
	op := func(email string, at time.Time, by string) *portal.Operator {
		return &portal.Operator{Email: email, AddedAt: at, AddedBy: by}
	}
	steps := []step{
		{name: "first add, mixed case", add: op("Anna.Schmidt@Firma.DE", t0, "cli"), created: true, want: []portal.Operator{anna}},
		{name: "second add keeps the first entry", add: op(" anna.schmidt@firma.de ", t0.Add(time.Hour), "someone else"),
			want: []portal.Operator{anna}},
		{name: "a later address", add: op("zoe@firma.de", zoe.AddedAt, "cli"), created: true, want: []portal.Operator{anna, zoe}},
		{name: "an earlier address is listed first", add: op("BOB@firma.de", bob.AddedAt, "jobs"), created: true,
			want: []portal.Operator{anna, bob, zoe}},
		{name: "display name is no bare address", add: op("Carl <carl@firma.de>", t0, "cli"), kind: pipeline.Invalid,
			want: []portal.Operator{anna, bob, zoe}},
		{name: "header injection", add: op("carl@firma.de\r\nBcc: x@y.de", t0, "cli"), kind: pipeline.Invalid,
			want: []portal.Operator{anna, bob, zoe}},
		{name: "no time", add: op("carl@firma.de", time.Time{}, "cli"), kind: pipeline.Invalid, want: []portal.Operator{anna, bob, zoe}},
		{name: "no author", add: op("carl@firma.de", t0, " "), kind: pipeline.Invalid, want: []portal.Operator{anna, bob, zoe}},
		{name: "remove unknown", remove: "carl@firma.de", kind: pipeline.NotFound, want: []portal.Operator{anna, bob, zoe}},
		{name: "remove invalid", remove: "carl", kind: pipeline.Invalid, want: []portal.Operator{anna, bob, zoe}},
		{name: "remove, any case", remove: "Zoe@Firma.de", want: []portal.Operator{anna, bob}},
		{name: "remove twice", remove: "zoe@firma.de", kind: pipeline.NotFound, want: []portal.Operator{anna, bob}},
		{name: "add again after removal", add: op("zoe@firma.de", t0.Add(time.Hour), "cli"), created: true,
			want: []portal.Operator{anna, bob, {Email: "zoe@firma.de", AddedAt: t0.Add(time.Hour), AddedBy: "cli"}}},
	}
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if got, err := db.Operators(ctx); err != nil || len(got) != 0 {
			t.Fatalf("empty list = %v, %v", got, err)
		}
		for _, s := range steps {
			var err error
			created := false
			if s.add != nil {
				created, err = db.AddOperator(ctx, *s.add)
			} else {
				err = db.RemoveOperator(ctx, s.remove)
			}
			switch {
			case s.kind == "" && err != nil:
				t.Fatalf("%s: %v", s.name, err)
			case s.kind != "" && operatorErrKind(err) != s.kind:
				t.Fatalf("%s: error %v (kind %v), want kind %v", s.name, err, pipeline.KindOf(err), s.kind)
			case created != s.created:
				t.Errorf("%s: created = %v, want %v", s.name, created, s.created)
			}
			got, err := db.Operators(ctx)
			if err != nil {
				t.Fatalf("%s: list: %v", s.name, err)
			}
			if !slices.EqualFunc(got, s.want, func(a, b portal.Operator) bool {
				return a.Email == b.Email && a.AddedAt.Equal(b.AddedAt) && a.AddedAt.Location() == time.UTC && a.AddedBy == b.AddedBy
			}) {
				t.Errorf("%s: list = %+v, want %+v", s.name, got, s.want)
			}
		}
	})
}

// TestIsOperator asks the list the way the console will, with the address
// of an ID token in whatever case it comes.
func TestIsOperator(t *testing.T) {
	cases := []struct {
		email string
		want  bool
		kind  pipeline.ErrorKind
	}{
		{"anna@firma.de", true, ""},
		{"ANNA@Firma.DE", true, ""},
		{" anna@firma.de", true, ""},
		{"bob@firma.de", false, ""},
		{"anna@firma.de.evil.example", false, ""},
		{"anna", false, pipeline.Invalid},
		{"", false, pipeline.Invalid},
	}
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if _, err := db.AddOperator(ctx, portal.Operator{Email: "anna@firma.de", AddedAt: t0, AddedBy: "cli"}); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			got, err := db.IsOperator(ctx, c.email)
			if got != c.want || operatorErrKind(err) != c.kind {
				t.Errorf("IsOperator(%q) = %v, %v; want %v, kind %v", c.email, got, err, c.want, c.kind)
			}
		}
	})
}

// TestIsOperatorPlan: with a few thousand operators, the lookup the console
// makes on every page request reads the primary key's index, never the
// whole table.
func TestIsOperatorPlan(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		if err := sqldb.Exec(ctx, db, "WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < 5000) "+
			"INSERT INTO operators (email, added_at, added_by) SELECT 'op' || i || '@firma.de', ?, 'cli' FROM seq", t0); err != nil {
			t.Fatal(err)
		}
		if err := sqldb.Exec(ctx, db, "ANALYZE"); err != nil {
			t.Fatal(err)
		}
		// A scan of the index is no lookup either: SQLite then says SCAN
		// with the index's name, and a search names the column it seeks.
		index, fullScan := "operators_pkey", []string{"Seq Scan", "Full Scan"}
		if db.Dialect() == sqldb.SQLite {
			index, fullScan = "SEARCH operator_row USING COVERING INDEX sqlite_autoindex_operators_1 (email=?)", []string{"SCAN "}
		}
		plan, err := sqldb.ExplainIsOperator(ctx, db, "op4711@firma.de")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan, index) {
			t.Errorf("plan does not use %s:\n%s", index, plan)
		}
		for _, bad := range fullScan {
			if strings.Contains(plan, bad) {
				t.Errorf("plan scans the table:\n%s", plan)
			}
		}
		if ok, err := db.IsOperator(ctx, "OP4711@firma.de"); !ok || err != nil {
			t.Errorf("IsOperator(op4711) = %v, %v", ok, err)
		}
	})
}

// TestOperatorsMigrationDownUp applies the operators migration on a
// database with the schema before it, and rolls it back, twice: the table
// comes and goes with its rows, and the rest of the schema stays usable.
func TestOperatorsMigrationDownUp(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := sqltest.OpenUnmigrated(t, d)
			if err := sqldb.MigrateThrough(ctx, db, "20261129000002"); err != nil {
				t.Fatal(err)
			}
			for round := range 2 {
				if err := sqldb.MigrateThrough(ctx, db, "20261201000001"); err != nil {
					t.Fatalf("round %d: migrate: %v", round, err)
				}
				if created, err := db.AddOperator(ctx, portal.Operator{Email: "anna@firma.de", AddedAt: t0, AddedBy: "cli"}); err != nil || !created {
					t.Fatalf("round %d: add = %v, %v", round, created, err)
				}
				if ok, err := db.IsOperator(ctx, "anna@firma.de"); !ok || err != nil {
					t.Fatalf("round %d: IsOperator = %v, %v", round, ok, err)
				}
				back, err := sqldb.RollbackLast(ctx, db)
				if err != nil || !slices.Equal(back, []string{"20261201000001"}) {
					t.Fatalf("round %d: rollback = %v, %v", round, back, err)
				}
				if _, err := db.IsOperator(ctx, "anna@firma.de"); err == nil {
					t.Errorf("round %d: operators still there after the rollback", round)
				}
			}
		})
	}
}

// operatorErrKind is the kind of err, "" for none.
func operatorErrKind(err error) pipeline.ErrorKind {
	if err == nil {
		return ""
	}
	return pipeline.KindOf(err)
}
