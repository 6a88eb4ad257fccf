package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/storage/lake/laketest"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// TestDemoAndRun is the newcomer's first run at binary level: demo stages a
// portfolio and runs the chain for the day, `run` repeats one stage with the
// same result, and serve answers the read endpoints with the key demo
// printed.
func TestDemoAndRun(t *testing.T) {
	for _, d := range []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			in := newInstance(t, d)
			out, key := runDemo(in, 60)
			dir := envValue(in.env, "SCHEDBRIDGE_DATA_DIR")
			files, _ := filepath.Glob(filepath.Join(dir, "bucket", "outbox", "fahrplan", "20260329_TPS_*_001.XML"))
			if len(files) != 2 {
				t.Fatalf("schedule files %v", files)
			}
			// The demo's DuckDB line reads the files that `lake files` lists:
			// the current run's, so that a re-run of the stage replaces them
			// instead of adding to them.
			if !strings.Contains(out, "lake files forecast_malo --day 2026-03-29 --sql") || strings.Contains(out, "run=") {
				t.Errorf("demo's DuckDB line does not read the current files, or pins a run:\n%s", out)
			}
			current := func() (string, float64) {
				t.Helper()
				stdout, _ := in.cli(0, "lake", "files", "forecast_malo", "--day", "2026-03-29")
				paths := strings.Fields(stdout)
				runs := map[string]bool{}
				for _, p := range paths {
					if _, err := os.Stat(p); err != nil || !strings.HasPrefix(p, filepath.Join(dir, "bucket", "lake", "forecast_malo", "delivery_day=2026-03-29")+"/run=") {
						t.Fatalf("lake files lists %s: %v", p, err)
					}
					runs[filepath.Base(filepath.Dir(p))] = true
				}
				if len(paths) == 0 || len(runs) != 1 {
					t.Fatalf("lake files: %q, want the files of one run", stdout)
				}
				mwh := lakeEnergy(in)
				for run := range runs {
					return run, mwh
				}
				return "", 0
			}
			firstRun, firstMWh := current()
			in.cli(0, "run", "forecast", "--day", "2026-03-29")
			secondRun, secondMWh := current()
			if secondRun == firstRun || math.Abs(secondMWh-firstMWh) > 1e-6*math.Abs(firstMWh) || firstMWh == 0 {
				t.Errorf("after a re-run of the forecast: %s with %v MWh, before %s with %v MWh; want a new run with the same energy",
					secondRun, secondMWh, firstRun, firstMWh)
			}
			in.cli(2, "lake", "files", "nonsense")

			// The same stage again: a new run, the same schedule version.
			stdout, stderr := in.cli(0, "run", "schedules", "--day", "2026-03-29")
			if !strings.Contains(stderr, "schedules 2026-03-29: run") || !strings.Contains(stdout, `"new":false`) {
				t.Errorf("run schedules: stdout %s stderr %s", stdout, stderr)
			}
			in.cli(2, "run", "nonsense")
			in.cli(2, "run", "forecast", "--day", "2026-02-30")
			// The day is over (the binary runs on the wall clock): the
			// kalkulation materializes it, on the schedules since no Ist came.
			if stdout, _ := in.cli(0, "run", "kalkulation", "--day", "2026-03-29"); !strings.Contains(stdout, `"basis":"fahrplan"`) {
				t.Errorf("run kalkulation: %s", stdout)
			}

			in.serve()
			code, _, body := in.do("GET", "/v1/process/kalkulation?von=2026-03-29&bis=2026-03-29&portfolio=demo", key, nil)
			if code != 200 {
				t.Fatalf("kalkulation: %d %v", code, body)
			}
			tage, _ := body["tage"].([]any)
			if len(tage) != 1 || tage[0].(map[string]any)["viertelstunden"] != 184.0 || tage[0].(map[string]any)["fehlende_spotpreise"] != 184.0 {
				t.Errorf("kalkulation of the spring-forward day in two areas without prices: %v", body)
			}
			if code, _, body := in.do("GET", "/v1/process/marktrollen", key, nil); code != 200 || body["zeitreihen"] == nil {
				t.Errorf("marktrollen: %d %v", code, body)
			}
			code, _, body = in.do("GET", "/v1/process/positions?day=2026-03-29&portfolio=demo", key, nil)
			if code != 200 {
				t.Fatalf("positions: %d %v", code, body)
			}
			areas, _ := body["areas"].([]any)
			if len(areas) != 2 {
				t.Fatalf("positions areas: %v", body)
			}
			series, _ := areas[0].(map[string]any)["series"].([]any)
			if len(series) != 92 {
				t.Errorf("spring-forward day has %d quarter-hours in positions", len(series))
			}
			code, _, body = in.do("GET", "/v1/process/schedules?day=2026-03-29&portfolio=demo", key, nil)
			if code != 200 {
				t.Fatalf("schedules: %d %v", code, body)
			}
		})
	}
}

// runDemo runs the demo with n locations for 2026-03-29 without the
// scheduler and returns its stdout and the process key it printed.
func runDemo(in *instance, n int) (out, key string) {
	in.t.Helper()
	in.env = append(in.env, "SCHEDBRIDGE_SCHEDULER=false")
	out, _ = in.cli(0, "demo", "--locations", strconv.Itoa(n), "--day", "2026-03-29")
	m := regexp.MustCompile(`export KEY=(sbk_[A-Z2-7]+)`).FindStringSubmatch(out)
	if m == nil {
		in.t.Fatalf("demo printed no key:\n%s", out)
	}
	return out, m[1]
}

// lakeEnergy is the energy of the current forecast_malo files of
// 2026-03-29 in MWh, as DuckDB reads the files that `lake files --sql`
// lists: what the demo tells an analyst to run.
func lakeEnergy(in *instance) float64 {
	in.t.Helper()
	list, _ := in.cli(0, "lake", "files", "forecast_malo", "--day", "2026-03-29", "--sql")
	r, err := laketest.DuckDB(in.t).Query(context.Background(), "select sum(power_mw) / 4 as mwh from read_parquet("+strings.TrimSpace(list)+")")
	if err != nil {
		in.t.Fatal(err)
	}
	mwh, err := r.Float(0, "mwh")
	if err != nil {
		in.t.Fatal(err)
	}
	return mwh
}
