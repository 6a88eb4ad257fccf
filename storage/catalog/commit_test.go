package catalog_test

import (
	"context"
	"errors"
	"testing"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/catalog"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// stage writes run's files for the day and stages them without publishing.
func (e *env) stage(t *testing.T, day pipeline.Day, run int64, base map[string]float64) lake.Publication {
	t.Helper()
	rec := positionRecord(e.alloc, day, base)
	defer rec.Release()
	w, err := e.lake.Create(context.Background(), pipeline.DatasetPositionControlArea, day, run, pipeline.PositionSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	pub, err := w.Stage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// current is the day's current run of position_control_area (0: none).
func (e *env) current(t *testing.T, day pipeline.Day) int64 {
	t.Helper()
	s, err := e.cat.Current(context.Background(), pipeline.DatasetPositionControlArea, day)
	if pipeline.KindOf(err) == pipeline.NotFound {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return s.RunID
}

// TestStagedCommit: a staged commit is invisible until it is applied in a
// transaction that commits; a transaction that rolls back leaves the
// previous run current, and a staged commit whose table moved on meanwhile
// is lost (ErrLost) without changing anything.
func TestStagedCommit(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e, _ := newEnv(t, d, false)
			day := pipeline.NewDay(2026, 11, 24)
			if _, err := e.publish(t, day, 1, map[string]float64{"TenneT": 1}); err != nil {
				t.Fatal(err)
			}
			inTx := func(fn func(context.Context, bun.IDB) error) error {
				return e.db.InTx(ctx, func(ctx context.Context) error { return fn(ctx, sqldb.Tx(ctx)) })
			}

			st, err := e.cat.Stage(ctx, e.stage(t, day, 2, map[string]float64{"TenneT": 2}))
			if err != nil {
				t.Fatal(err)
			}
			if got := e.current(t, day); got != 1 {
				t.Fatalf("after staging, run %d is current, want 1", got)
			}
			rollback := errors.New("the run's other results failed")
			if err := inTx(func(ctx context.Context, tx bun.IDB) error {
				if err := st.Apply(ctx, tx); err != nil {
					return err
				}
				return rollback
			}); !errors.Is(err, rollback) {
				t.Fatal(err)
			}
			if got := e.current(t, day); got != 1 {
				t.Fatalf("after a rollback, run %d is current, want 1", got)
			}

			// Two commits staged from the same table: the first to apply
			// wins, the second is lost and changes nothing.
			pub3 := e.stage(t, day, 3, map[string]float64{"TenneT": 3})
			first, err := e.cat.Stage(ctx, pub3)
			if err != nil {
				t.Fatal(err)
			}
			second, err := e.cat.Stage(ctx, e.stage(t, day, 4, map[string]float64{"TenneT": 4}))
			if err != nil {
				t.Fatal(err)
			}
			if err := inTx(func(ctx context.Context, tx bun.IDB) error { return first.Apply(ctx, tx) }); err != nil {
				t.Fatal(err)
			}
			if err := inTx(func(ctx context.Context, tx bun.IDB) error { return second.Apply(ctx, tx) }); !errors.Is(err, catalog.ErrLost) {
				t.Fatalf("the second staged commit: %v, want ErrLost", err)
			}
			if got := e.current(t, day); got != 3 {
				t.Fatalf("run %d is current, want 3", got)
			}
			e.scanRows(t, day, 0, map[string]float64{"TenneT": 3})

			// Commit stages again after a lost race, and then finds that a
			// newer run is published: a Conflict for an older run.
			if err := e.cat.Commit(ctx, []lake.Publication{pub3}, func(ctx context.Context, apply func(context.Context, bun.IDB) error) error {
				return inTx(apply)
			}); pipeline.KindOf(err) != pipeline.Conflict {
				t.Fatalf("commit of run 3 again: %v, want a conflict", err)
			}
		})
	}
}
