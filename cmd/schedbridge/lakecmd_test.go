package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// TestLakeSweep: `lake sweep` runs the nightly sweep now, on the
// configured retention unless --older-than says otherwise, and prints what
// it removed by kind: here the staging file of an upload that a kill
// ended, a run that crashed before its commit and a metadata file that a
// crashed commit left, all two hours old. The current runs stay. A
// negative age or an argument is refused.
func TestLakeSweep(t *testing.T) {
	for _, d := range []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			in := newInstance(t, d)
			runDemo(in, 30)
			want := lakeEnergy(in)
			bucket := filepath.Join(envValue(in.env, "SCHEDBRIDGE_DATA_DIR"), "bucket")
			lakeDir := filepath.Join(bucket, "lake", "forecast_malo")
			metas, err := filepath.Glob(filepath.Join(lakeDir, "metadata", "*.metadata.json"))
			if err != nil || len(metas) == 0 {
				t.Fatalf("metadata files of forecast_malo: %v, %v", metas, err)
			}
			data, err := os.ReadFile(metas[0])
			if err != nil {
				t.Fatal(err)
			}
			leftovers := []string{
				filepath.Join(bucket, ".tmp", "put-3141592653"),
				filepath.Join(lakeDir, "delivery_day=2026-03-29", "run=999", "part-00000.parquet"),
				filepath.Join(lakeDir, "metadata", "00099-0d5e2a8c-3f41-4b8e-a0c7-5b6d9e1f2a3b.metadata.json"),
			}
			old := time.Now().Add(-2 * time.Hour)
			for _, p := range leftovers {
				if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, data, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
			}

			// The configured retention keeps what is two hours old.
			out, _ := in.cli(0, "lake", "sweep")
			if !strings.Contains(out, "files removed: 0 (older than 168h0m0s)") {
				t.Errorf("lake sweep on the default retention:\n%s", out)
			}
			in.env = append(in.env, "SCHEDBRIDGE_LAKE_RETENTION=3h")
			if out, _ := in.cli(0, "lake", "sweep"); !strings.Contains(out, "files removed: 0 (older than 3h0m0s)") {
				t.Errorf("lake sweep on a configured retention of 3h:\n%s", out)
			}
			for _, p := range leftovers {
				if _, err := os.Stat(p); err != nil {
					t.Errorf("a sweep on a longer retention removed %s: %v", p, err)
				}
			}

			out, _ = in.cli(0, "lake", "sweep", "--older-than", "1h")
			for _, line := range []string{"temporary uploads: 1\n", "unpublished run files: 1\n", "metadata files: 1\n",
				"empty folders: 0\n", "files removed: 3 (older than 1h0m0s)\n"} {
				if !strings.Contains(out, line) {
					t.Errorf("lake sweep --older-than 1h lacks %q:\n%s", line, out)
				}
			}
			for _, p := range leftovers {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("lake sweep --older-than 1h kept %s: %v", p, err)
				}
			}
			if _, err := os.Stat(filepath.Dir(leftovers[1])); !os.IsNotExist(err) {
				t.Errorf("the crashed run's folder is still there: %v", err)
			}
			if got := lakeEnergy(in); got != want {
				t.Errorf("after the sweep the current run reads %v MWh, before %v", got, want)
			}

			if _, stderr := in.cli(2, "lake", "sweep", "--older-than", "-1h"); !strings.Contains(stderr, "--older-than -1h0m0s") {
				t.Errorf("a negative age: %s", stderr)
			}
			in.cli(2, "lake", "sweep", "forecast_malo")
			in.cli(2, "lake", "sweep", "--older", "1h")
		})
	}
}
