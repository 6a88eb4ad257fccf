// Package catalogtest opens storage/catalog's Iceberg catalog for tests of
// the lake and of what publishes through it.
package catalogtest

import (
	"context"
	"sync"
	"testing"

	"github.com/schedbridge/schedbridge/storage/catalog"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
	"github.com/uptrace/bun"
)

// Open opens the catalog in db for the bucket (a local directory store or
// an S3 store) and closes it when the test ends.
func Open(tb testing.TB, db *sqldb.DB, b objstore.Bucket) *catalog.Catalog {
	tb.Helper()
	w, props, err := catalog.Warehouse(b)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := catalog.Open(context.Background(), catalog.Config{
		DB: db.SQL(), Postgres: db.Dialect() == sqldb.Postgres, Warehouse: w, IO: props})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// OpenSQLite opens the catalog for the bucket in a fresh SQLite database of
// its own, for tests that have no database otherwise.
func OpenSQLite(tb testing.TB, b objstore.Bucket) *catalog.Catalog {
	tb.Helper()
	return Open(tb, sqltest.Open(tb, sqldb.SQLite), b)
}

// Hooked is a catalog whose Publish and Commit first call a hook that the test sets:
// to observe or hold a stage's publication, or to fail it as a process that
// died between writing its files and the catalog's commit would. A nil hook,
// or one that returns nil, lets the publication through. It is safe for
// concurrent use.
type Hooked struct {
	*catalog.Catalog
	mu   sync.Mutex
	hook func(ctx context.Context, p lake.Publication) error
}

// Set replaces the hook; nil removes it.
func (h *Hooked) Set(hook func(ctx context.Context, p lake.Publication) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hook = hook
}

// Commit calls the hook for each publication, then commits unless the hook
// failed: the commit of a run's parts (storage/commit) passes here.
func (h *Hooked) Commit(ctx context.Context, pubs []lake.Publication,
	inTx func(ctx context.Context, apply func(ctx context.Context, tx bun.IDB) error) error) error {
	h.mu.Lock()
	hook := h.hook
	h.mu.Unlock()
	if hook != nil {
		for _, p := range pubs {
			if err := hook(ctx, p); err != nil {
				return err
			}
		}
	}
	return h.Catalog.Commit(ctx, pubs, inTx)
}

// Publish calls the hook, then publishes unless the hook failed.
func (h *Hooked) Publish(ctx context.Context, p lake.Publication) error {
	h.mu.Lock()
	hook := h.hook
	h.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, p); err != nil {
			return err
		}
	}
	return h.Catalog.Publish(ctx, p)
}
