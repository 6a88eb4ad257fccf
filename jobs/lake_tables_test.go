package jobs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/lake/laketest"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// TestLakeTablesAfterRerun reads the lake as an analyst's engine would,
// without iceberg-go: the catalog's row in the JDBC layout names the table's
// metadata, npm avsc reads its manifests, and DuckDB sums exactly the live
// files. After the chain ran twice for a day, the current snapshot holds
// only the second run and equals what the read endpoints serve, the
// previous snapshot holds the first run, and a glob over the day's folder,
// which the tables make unnecessary, counts the day twice.
func TestLakeTablesAfterRerun(t *testing.T) {
	for _, d := range lakeTableBackends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, combo{name: string(d) + "+local", db: d})
			e.seed(t, "p1", 40)
			r := e.runner()
			runOf := func() int64 {
				t.Helper()
				chain, err := r.Orchestrate(ctx, day, "test")
				if err != nil || chain.Status != pipeline.RunSucceeded {
					t.Fatalf("chain: %+v, %v", chain, err)
				}
				runs, err := e.db.Runs(ctx, pipeline.RunQuery{ParentID: &chain.ID, Stage: pipeline.StageAggregate})
				if err != nil || len(runs) != 1 {
					t.Fatalf("aggregate runs: %v, %v", runs, err)
				}
				return runs[0].ID
			}
			first, second := runOf(), runOf()

			_, rows, err := e.db.Positions(ctx, "p1", day)
			if err != nil {
				t.Fatal(err)
			}
			served := map[string]float64{}
			for _, row := range rows {
				served[string(row.ControlArea)] += row.NetMW / 4
			}

			var loc string
			if err := e.db.SQL().QueryRowContext(ctx, `SELECT metadata_location FROM iceberg_tables
				WHERE catalog_name = 'schedbridge' AND table_namespace = 'schedbridge' AND table_name = 'position_control_area'`).Scan(&loc); err != nil {
				t.Fatal(err)
			}
			duck := laketest.DuckDB(t)
			totals := func(snapshot string, wantRun int64) (map[string]float64, int64, string) {
				t.Helper()
				s, err := duck.IcebergFiles(ctx, strings.TrimPrefix(loc, "file://"), snapshot)
				if err != nil {
					t.Fatal(err)
				}
				var files []string
				var records int64
				for _, f := range s.Files {
					if !strings.Contains(f.Path, fmt.Sprintf("/run=%d/", wantRun)) {
						t.Errorf("snapshot %s: live file %s is not of run %d", s.ID, f.Path, wantRun)
					}
					files = append(files, laketest.Quote(f.LocalPath()))
					records += f.Records
				}
				res, err := duck.Query(ctx, fmt.Sprintf(`select control_area, sum(net_mw) / 4 as mwh from read_parquet([%s])
					where delivery_day = date '%s' and portfolio = 'p1' group by 1`, strings.Join(files, ", "), day))
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]float64{}
				for i := range res.Rows {
					v, err := res.Float(i, "mwh")
					if err != nil {
						t.Fatal(err)
					}
					got[res.String(i, "control_area")] = v
				}
				return got, records, s.Summary["schedbridge.run-id"]
			}
			cur, records, run := totals("", second)
			if run != fmt.Sprint(second) {
				t.Errorf("current snapshot names run %s, want %d", run, second)
			}
			if records != int64(len(rows)) {
				t.Errorf("current snapshot: %d records in the manifests, the read endpoint serves %d rows", records, len(rows))
			}
			sameTotals(t, "current snapshot", cur, served)

			prevID := snapshotOfRun(t, strings.TrimPrefix(loc, "file://"), first)
			prev, _, run := totals(prevID, first)
			if run != fmt.Sprint(first) {
				t.Errorf("previous snapshot names run %s, want %d", run, first)
			}
			sameTotals(t, "previous snapshot", prev, served)

			glob, err := duck.Query(ctx, fmt.Sprintf(`select sum(net_mw) / 4 as mwh from read_parquet(%s, hive_partitioning = true)
				where portfolio = 'p1'`, laketest.Quote(e.bucket.(interface{ Dir() string }).Dir()+"/lake/position_control_area/**/*.parquet")))
			if err != nil {
				t.Fatal(err)
			}
			all, _ := glob.Float(0, "mwh")
			var want float64
			for _, v := range served {
				want += v
			}
			if math.Abs(all-2*want) > 1e-6*math.Abs(want) {
				t.Errorf("a glob over both runs' files gives %v MWh, want twice the day's %v (the reason for the tables)", all, want)
			}
		})
	}
}

var lakeTableBackends = []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres}

// snapshotOfRun reads the table's metadata.json itself and returns the id of
// the snapshot whose summary names the run.
func snapshotOfRun(t *testing.T, metadataPath string, run int64) string {
	t.Helper()
	b, err := os.ReadFile(metadataPath)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Snapshots []struct {
			ID      json.Number       `json:"snapshot-id"`
			Summary map[string]string `json:"summary"`
		} `json:"snapshots"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&meta); err != nil {
		t.Fatal(err)
	}
	for _, s := range meta.Snapshots {
		if s.Summary["schedbridge.run-id"] == fmt.Sprint(run) {
			return s.ID.String()
		}
	}
	t.Fatalf("no snapshot of run %d in %s", run, metadataPath)
	return ""
}

func sameTotals(t *testing.T, what string, got, want map[string]float64) {
	t.Helper()
	if len(got) != len(want) || len(got) == 0 {
		t.Errorf("%s: areas %v, the read endpoint %v", what, got, want)
	}
	for area, w := range want {
		if math.Abs(got[area]-w) > 1e-6*math.Max(1, math.Abs(w)) {
			t.Errorf("%s: %s = %v MWh, the read endpoint %v", what, area, got[area], w)
		}
	}
}
