package commit_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/catalog/catalogtest"
	"github.com/schedbridge/schedbridge/storage/commit"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

func TestMain(m *testing.M) {
	os.Exit(objtest.Main(objtest.RunFunc(func() int { return sqltest.Main(m) })))
}

var (
	day = pipeline.NewDay(2026, 11, 24)
	t0  = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
)

// positions is a day of position_control_area rows of one portfolio in one
// control area, every quarter-hour at mw.
func positions(mem memory.Allocator, portfolio string, mw float64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, pipeline.PositionSchema)
	defer b.Release()
	ts := day.QuarterStartsMicros()
	for q := range day.Intervals() {
		b.Field(0).(*array.BinaryDictionaryBuilder).AppendString(portfolio)
		b.Field(1).(*array.Date32Builder).Append(day.Date32())
		b.Field(2).(*array.BinaryDictionaryBuilder).AppendString(string(pipeline.TenneT))
		b.Field(3).(*array.Int16Builder).Append(int16(q))
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(ts[q]))
		b.Field(5).(*array.Float64Builder).Append(mw)
		b.Field(6).(*array.Float64Builder).Append(0)
		b.Field(7).(*array.Float64Builder).Append(mw)
		b.Field(8).(*array.BinaryDictionaryBuilder).AppendString("generated")
	}
	return b.NewRecordBatch()
}

// TestRunOfSeveralJobs: the jobs of one run (one per portfolio) each write
// and record their own parts; the run commits once, and its snapshot holds
// the parts of all its jobs. A job that runs again replaces its own parts,
// not the other job's, and nothing is current before the commit.
func TestRunOfSeveralJobs(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer alloc.AssertSize(t, 0)
			db := sqltest.Open(t, d)
			bucket, err := objstore.NewLocal(filepath.Join(t.TempDir(), "bucket"))
			if err != nil {
				t.Fatal(err)
			}
			cat := catalogtest.Open(t, db, bucket)
			lk := lake.New(bucket, lake.Options{Alloc: alloc, Catalog: cat, SpoolDir: t.TempDir()})
			run, err := db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageAggregate, Day: day, Status: pipeline.RunRunning,
				Trigger: "test", Attempt: 1, StartedAt: t0})
			if err != nil {
				t.Fatal(err)
			}
			job := func(portfolio string, mw float64) {
				t.Helper()
				w, err := lk.Create(ctx, pipeline.DatasetPositionControlArea, day, run.ID, pipeline.PositionSchema, lake.WithJob(portfolio))
				if err != nil {
					t.Fatal(err)
				}
				defer w.Abort()
				rec := positions(alloc, portfolio, mw)
				defer rec.Release()
				if err := w.Write(rec); err != nil {
					t.Fatal(err)
				}
				pub, err := w.Stage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				// p1's parts keep the footers their writer kept, p2's come
				// without (as an older version recorded them): the commit
				// reads those from the bucket.
				var parts []pipeline.RunPart
				for _, f := range pub.Files {
					part := pipeline.RunPart{Dataset: pub.Dataset, Job: portfolio, Key: f.Key, Rows: f.Rows, Bytes: f.Bytes}
					if portfolio == "p1" {
						part.Footer = f.Footer
					}
					parts = append(parts, part)
				}
				if err := db.RecordRunParts(ctx, run.ID, portfolio, parts, t0); err != nil {
					t.Fatal(err)
				}
			}
			job("p1", 1)
			job("p2", 2)
			job("p2", 3) // a retry of p2's job replaces its parts
			if parts, err := db.RunParts(ctx, run.ID); err != nil || len(parts) != 2 || len(parts[0].Footer) == 0 {
				t.Fatalf("recorded parts %+v, %v: want p1's with its footer", parts, err)
			}
			if _, err := lk.Latest(ctx, pipeline.DatasetPositionControlArea, day); pipeline.KindOf(err) != pipeline.NotFound {
				t.Fatalf("a snapshot is current before the commit: %v", err)
			}
			point := commit.New(db, cat, func() time.Time { return t0 })
			err = point.CommitRun(ctx, run.ID, day, func(ctx context.Context) error {
				return db.FinishRun(ctx, run.ID, pipeline.RunSucceeded, "", nil, t0)
			})
			if err != nil {
				t.Fatal(err)
			}
			snap, err := lk.Latest(ctx, pipeline.DatasetPositionControlArea, day)
			if err != nil || snap.RunID != run.ID || len(snap.Files) != 2 || snap.Rows != int64(2*day.Intervals()) {
				t.Fatalf("snapshot %+v, %v", snap, err)
			}
			sum := map[string]float64{}
			err = lk.Read(ctx, snap, []string{"portfolio", "net_mw"}, func(rec arrow.RecordBatch) error {
				p := rec.Column(0).(*array.Dictionary)
				names := p.Dictionary().(*array.String)
				mw := rec.Column(1).(*array.Float64)
				for i := range int(rec.NumRows()) {
					sum[names.Value(p.GetValueIndex(i))] += mw.Value(i)
				}
				return nil
			})
			n := float64(day.Intervals())
			if err != nil || sum["p1"] != n || sum["p2"] != 3*n {
				t.Fatalf("sums %v, %v", sum, err)
			}
			if got, _ := db.Run(ctx, run.ID); got.Status != pipeline.RunSucceeded {
				t.Errorf("run %+v", got)
			}
			// The committed run's footers are in the table's manifests now;
			// the database keeps none of them.
			parts, err := db.RunParts(ctx, run.ID)
			if err != nil || len(parts) != 2 {
				t.Fatalf("parts after the commit %+v, %v", parts, err)
			}
			for _, part := range parts {
				if part.Footer != nil {
					t.Errorf("part %s kept its footer of %d bytes after the commit", part.Key, len(part.Footer))
				}
			}
			// A finished run takes no more parts.
			if err := db.RecordRunParts(ctx, run.ID, "p3", nil, t0); pipeline.KindOf(err) != pipeline.Conflict {
				t.Errorf("parts of a finished run: %v", err)
			}
		})
	}
}
