package jobs_test

import (
	"context"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/catalog"
)

// TestMissingLakeFileIsNotRetried: a file that the lake's catalog names but
// the store no longer has (here the forecast table's current metadata file,
// as after a restore that missed it) fails the stage at once with an error
// that names the missing file. Another attempt cannot bring the file back,
// so the chain stops without the backoff's waits.
func TestMissingLakeFileIsNotRetried(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.seed(t, "p1", 10)
		r := e.runner(func(c *jobs.Config) { c.Attempts = 3 })
		if chain, err := r.Orchestrate(ctx, day, "test"); err != nil || chain.Status != pipeline.RunSucceeded {
			t.Fatalf("first chain: %+v, %v", chain, err)
		}
		var loc string
		if err := e.db.SQL().QueryRowContext(ctx, `SELECT metadata_location FROM iceberg_tables
			WHERE catalog_name = 'schedbridge' AND table_namespace = 'schedbridge' AND table_name = 'forecast_malo'`).Scan(&loc); err != nil {
			t.Fatal(err)
		}
		w, _, err := catalog.Warehouse(e.bucket)
		if err != nil {
			t.Fatal(err)
		}
		key, ok := strings.CutPrefix(loc, w+"/")
		if !ok {
			t.Fatalf("metadata location %s is not in the warehouse %s", loc, w)
		}
		if err := e.bucket.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}

		e.sleeps = nil
		chain, err := r.Orchestrate(ctx, day, "test")
		if err == nil || chain.Status != pipeline.RunFailed {
			t.Fatalf("chain over a missing metadata file = %+v, %v", chain, err)
		}
		if !pipeline.Permanent(err) || !strings.Contains(err.Error(), "missing") || !strings.Contains(err.Error(), key) {
			t.Errorf("chain error %q: want a permanent missing-file error that names %s", err, key)
		}
		stages, _ := e.db.Runs(ctx, pipeline.RunQuery{ParentID: &chain.ID})
		if len(stages) != 1 || stages[0].Stage != pipeline.StageForecast || stages[0].Status != pipeline.RunFailed {
			t.Errorf("runs of the chain = %+v, want one failed forecast attempt", stages)
		}
		if len(e.sleeps) != 0 {
			t.Errorf("backoff waits %v, want none: a missing file is not retried", e.sleeps)
		}
	})
}
