package catalog_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/catalog"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// treeSums is the SHA-256 of every file under dir, by relative path.
func treeSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	sums := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sums[rel] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// TestRelocate: a local warehouse copied to another path, as a restored
// data directory is, with its catalog in the same database. The catalog
// refuses the copy until it is relocated, since its entries still point at
// the original; after Relocate the copy works on its own: the current run,
// iceberg-go's scan, time travel to a replaced run, an independent reader
// (the catalog row, npm avsc and DuckDB), a new publish and the sweep. No
// file of the copy's metadata names the original, and the original is
// neither read from nor changed, not even by the copy's expiry, which
// deletes files.
func TestRelocate(t *testing.T) {
	day, next, run1, run2, run3 := threeRuns.day, threeRuns.next, threeRuns.run1, threeRuns.run2, threeRuns.run3
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e, _ := newEnv(t, d, false)
			e.publishRuns(t)

			dir := filepath.Join(t.TempDir(), "restored", "bucket")
			if err := os.CopyFS(dir, os.DirFS(e.localDir)); err != nil {
				t.Fatal(err)
			}
			original := treeSums(t, e.localDir)
			bucket, err := objstore.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			w, props, err := catalog.Warehouse(bucket)
			if err != nil {
				t.Fatal(err)
			}
			oldW, _, _ := catalog.Warehouse(e.bucket)
			cfg := catalog.Config{DB: e.db.SQL(), Postgres: e.db.Dialect() == sqldb.Postgres, Warehouse: w, IO: props}
			if c, err := catalog.Open(ctx, cfg); !errors.Is(err, pipeline.ErrWarehouseMoved) || !strings.Contains(err.Error(), "lake relocate") {
				if c != nil {
					c.Close()
				}
				t.Fatalf("opening the catalog over the copy: %v; want ErrWarehouseMoved naming `lake relocate`", err)
			}

			rs, err := catalog.Relocate(ctx, cfg, e.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 || rs[0].Table != pipeline.DatasetPositionControlArea || rs[0].From != oldW+"/lake/position_control_area" ||
				rs[0].To != w+"/lake/position_control_area" || !strings.HasPrefix(rs[0].Metadata, rs[0].To+"/metadata/00004-") ||
				rs[0].Written < 4 || len(rs[0].Leftover) != 0 { // three manifest lists and their manifests
				t.Fatalf("relocations %+v", rs)
			}
			if again, err := catalog.Relocate(ctx, cfg, e.clock.Now()); err != nil || len(again) != 0 {
				t.Fatalf("a second relocation: %+v, %v; want nothing to do", again, err)
			}
			cat, err := catalog.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cat.Close() })
			moved := &env{db: e.db, bucket: bucket, cat: cat, clock: e.clock, alloc: e.alloc, localDir: dir}
			moved.lake = lake.New(bucket, lake.Options{Catalog: cat, Alloc: e.alloc, Now: e.clock.Now, SpoolDir: t.TempDir()})

			// No metadata file of the copy names the original.
			err = filepath.WalkDir(filepath.Join(dir, "lake"), func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.Contains(p, "/metadata/") {
					return err
				}
				b, err := os.ReadFile(p)
				if bytes.Contains(b, []byte(e.localDir)) {
					t.Errorf("%s names the original warehouse %s", p, e.localDir)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}

			s, err := moved.lake.Latest(ctx, pipeline.DatasetPositionControlArea, day)
			if err != nil || s.RunID != 3 || len(s.Files) != 1 || !strings.Contains(s.Files[0].Key, "/run=3/") {
				t.Fatalf("Latest after the relocation = %+v, %v; want run 3", s, err)
			}
			var mwhRead float64
			err = moved.lake.Read(ctx, s, []string{"net_mw"}, func(rec arrow.RecordBatch) error {
				for _, v := range rec.Column(0).(*array.Float64).Float64Values() {
					mwhRead += v / 4
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := mwh(day, 11.5) + mwh(day, 2) + mwh(day, 7); !near(mwhRead, want) {
				t.Errorf("read %v MWh of run 3, want %v", mwhRead, want)
			}
			moved.scanRows(t, day, 0, run2)
			moved.scanRows(t, next, 0, run3)
			old := snapshotOf(t, moved.table(t), day, 1)
			moved.scanRows(t, day, old.SnapshotID, run1) // time travel
			if loc := moved.table(t).MetadataLocation(); loc != rs[0].Metadata {
				t.Errorf("the catalog names %s, want the new metadata %s", loc, rs[0].Metadata)
			}
			moved.independentReader(t, day, next, run1, run2, run3)

			// The copy goes on: a new run replaces the day, and the sweep
			// expires run 1 in the copy only.
			if _, err := moved.publish(t, day, 4, run1); err != nil {
				t.Fatal(err)
			}
			moved.scanRows(t, day, 0, run1)
			moved.clock.Add(2 * time.Minute)
			for _, age := range []time.Duration{time.Minute, 0} {
				if _, err := moved.lake.Sweep(ctx, age); err != nil {
					t.Fatal(err)
				}
			}
			const run1File = "lake/position_control_area/delivery_day=2026-11-24/run=1/part-00000.parquet"
			if moved.exists(t, run1File) {
				t.Errorf("the copy's sweep kept %s, which only an expired snapshot referenced", run1File)
			}
			if !e.exists(t, run1File) {
				t.Errorf("the copy's sweep removed %s from the original", run1File)
			}
			after := treeSums(t, e.localDir)
			if len(after) != len(original) {
				t.Errorf("the original has %d files, had %d", len(after), len(original))
			}
			for p, sum := range original {
				if after[p] != sum {
					t.Errorf("the original's %s changed or went", p)
				}
			}
		})
	}
}
