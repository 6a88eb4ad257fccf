package catalog_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// TestCommitFromKeptFooters: a run's commit registers its files from the
// footers their writer kept, without reading them: it succeeds while the
// files are away from their keys, and the data files it records (row count,
// size, column sizes, value and null counts, bounds, partition) are exactly
// those that iceberg-go reads from the files themselves. On the local store
// and on MinIO.
func TestCommitFromKeptFooters(t *testing.T) {
	for _, minio := range []bool{false, true} {
		name := "local"
		if minio {
			name = "minio"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e, _ := newEnv(t, sqldb.SQLite, minio)
			day := pipeline.NewDay(2026, 11, 24)
			pub := e.stage(t, day, 1, map[string]float64{"TenneT": 1.5, "Amprion": -2})
			for _, f := range pub.Files {
				if len(f.Footer) == 0 {
					t.Fatalf("staged file %s kept no footer", f.Key)
				}
			}
			// The files leave their keys for the commit: a read of one would
			// fail it.
			for _, f := range pub.Files {
				if err := e.bucket.Move(ctx, f.Key, f.Key+".away"); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.cat.Publish(ctx, pub); err != nil {
				t.Fatalf("commit from the kept footers: %v", err)
			}
			for _, f := range pub.Files {
				if err := e.bucket.Move(ctx, f.Key+".away", f.Key); err != nil {
					t.Fatal(err)
				}
			}

			tbl := e.table(t)
			fio, err := tbl.FS(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]iceberg.DataFile{}
			tasks, err := tbl.Scan().PlanFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range tasks {
				got[task.File.FilePath()] = task.File
			}
			if len(got) != len(pub.Files) {
				t.Fatalf("the table holds %d files, want %d", len(got), len(pub.Files))
			}
			for _, f := range pub.Files {
				uri := e.cat.URI(f.Key)
				df, ok := got[uri]
				if !ok {
					t.Fatalf("%s is not in the table", uri)
				}
				read, err := table.FileToDataFile(ctx, fio, uri, tbl.Schema(), tbl.Spec(), 0, tbl.Properties())
				if err != nil {
					t.Fatal(err)
				}
				for what, pair := range map[string][2]any{
					"count":        {df.Count(), read.Count()},
					"size":         {df.FileSizeBytes(), read.FileSizeBytes()},
					"column sizes": {df.ColumnSizes(), read.ColumnSizes()},
					"value counts": {df.ValueCounts(), read.ValueCounts()},
					"null counts":  {df.NullValueCounts(), read.NullValueCounts()},
					"lower bounds": {df.LowerBoundValues(), read.LowerBoundValues()},
					"upper bounds": {df.UpperBoundValues(), read.UpperBoundValues()},
					"partition":    {df.Partition(), read.Partition()},
					"splits":       {df.SplitOffsets(), read.SplitOffsets()},
				} {
					if !reflect.DeepEqual(pair[0], pair[1]) {
						t.Errorf("%s of %s: committed %v, read from the file %v", what, f.Key, pair[0], pair[1])
					}
				}
				if df.Count() != f.Rows || df.FileSizeBytes() != f.Bytes {
					t.Errorf("%s: %d rows and %d bytes committed, the writer wrote %d and %d", f.Key, df.Count(), df.FileSizeBytes(), f.Rows, f.Bytes)
				}
			}
			e.scanRows(t, day, 0, map[string]float64{"TenneT": 1.5, "Amprion": -2})
		})
	}
}
