// Package commit is the commit point of a pipeline run. A run's results live
// in three places: the lake's Iceberg tables (whose catalog is in the
// service's database), the read models that the API serves, and the run's
// record with its status; for the schedules stage also the schedule versions
// that go to the TSO. CommitRun makes them current together, in one
// database transaction: the catalog's compare-and-swap of every table the run
// publishes, what the stage applies (read model, schedule versions) and the
// run's success. Before that transaction commits, nothing of the run is
// visible; after it, all of it is. A process that dies anywhere before
// leaves the previous run current everywhere, and only unreferenced files,
// which the lake's sweep removes.
//
// One transaction was chosen over deriving the read models from the current
// snapshot because the read endpoints answer from indexed rows in
// milliseconds, and the run's status must agree with the lake as well: a
// read model derived from the lake would still leave the run record's
// success as a second commit point.
package commit

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// Catalog is the lake's table catalog (storage/catalog): Commit stages the
// publications and applies them with the transaction that inTx runs.
type Catalog interface {
	Commit(ctx context.Context, pubs []lake.Publication,
		inTx func(ctx context.Context, apply func(ctx context.Context, tx bun.IDB) error) error) error
}

// Point commits runs. It is safe for concurrent use.
type Point struct {
	db  *sqldb.DB
	cat Catalog
	now func() time.Time
}

// New returns the commit point of runs recorded in db whose lake tables are
// in cat (in the same database). now stamps the snapshots' written time.
func New(db *sqldb.DB, cat Catalog, now func() time.Time) *Point {
	if now == nil {
		now = time.Now
	}
	return &Point{db: db, cat: cat, now: now}
}

// CommitRun publishes the parts that the jobs of run runID staged
// (sqldb.RecordRunParts), one table per dataset, as the day's current
// snapshots, and calls apply with a context whose store calls
// (sqldb.DB.InTx) join the same transaction; apply writes the run's other
// results and its success. Everything lands when the transaction commits,
// or nothing does. A commit that loses to a concurrent commit of one of its
// tables is staged and applied again, so apply may run more than once; a run
// already published, or a newer one, is a pipeline.Conflict.
func (p *Point) CommitRun(ctx context.Context, runID int64, day pipeline.Day, apply func(ctx context.Context) error) error {
	parts, err := p.db.RunParts(ctx, runID)
	if err != nil {
		return err
	}
	written := p.now().UTC()
	var pubs []lake.Publication
	for _, part := range parts {
		if len(pubs) == 0 || pubs[len(pubs)-1].Dataset != part.Dataset {
			pubs = append(pubs, lake.Publication{Dataset: part.Dataset, Day: day, RunID: runID, WrittenAt: written})
		}
		last := &pubs[len(pubs)-1]
		last.Files = append(last.Files, lake.FileInfo{Key: part.Key, Rows: part.Rows, Bytes: part.Bytes, Footer: part.Footer})
	}
	return p.cat.Commit(ctx, pubs, func(ctx context.Context, publish func(context.Context, bun.IDB) error) error {
		return p.db.InTx(ctx, func(ctx context.Context) error {
			if err := publish(ctx, sqldb.Tx(ctx)); err != nil {
				return err
			}
			if err := p.db.DropRunPartFooters(ctx, runID); err != nil {
				return err
			}
			return apply(ctx)
		})
	})
}
