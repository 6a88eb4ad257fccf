package main

import (
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// TestRestoreAtAnotherPath is the operator's backup and restore of
// docs/operations.md at binary level. On SQLite, `backup` copies the
// database and the local bucket while the service serves; on PostgreSQL the
// database stays where it is and the bucket is copied by hand (a restored
// or moved bucket directory). The copy is put at another path and the
// original moved away. Before `lake relocate` the lake refuses the copy and
// says what to run (it used to fail on the missing original, and a chain
// retried that for 90 s); after it, `lake files` lists the copy's files
// with the same energy, the next chain succeeds, and the service starts and
// answers from the restored data.
func TestRestoreAtAnotherPath(t *testing.T) {
	for _, d := range []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			in := newInstance(t, d)
			_, key := runDemo(in, 30)
			dir := envValue(in.env, "SCHEDBRIDGE_DATA_DIR")
			want := lakeEnergy(in)

			backup := filepath.Join(t.TempDir(), "backup")
			if d == sqldb.SQLite {
				srv, logs := in.serve()
				in.cli(0, "backup", backup)
				if code, _, _ := in.do("GET", "/health", "", nil); code != 200 {
					t.Errorf("health during the backup: %d", code)
				}
				stop(t, srv, logs)
			} else {
				_, stderr := in.cli(2, "backup", backup)
				if !strings.Contains(stderr, "pg_basebackup") {
					t.Errorf("backup on PostgreSQL: %s; want a pointer to pg_basebackup", stderr)
				}
				if err := os.CopyFS(filepath.Join(backup, "bucket"), os.DirFS(filepath.Join(dir, "bucket"))); err != nil {
					t.Fatal(err)
				}
			}

			// The restore: the backup at another path, the original gone.
			restored := filepath.Join(t.TempDir(), "elsewhere", "var")
			if err := os.CopyFS(restored, os.DirFS(backup)); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(dir, dir+".away"); err != nil {
				t.Fatal(err)
			}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			l.Close()
			re := &instance{t: t, addr: addr, dbURL: in.dbURL,
				env: append(append([]string{}, in.env...), "SCHEDBRIDGE_DATA_DIR="+restored, "SCHEDBRIDGE_ADDR="+addr)}

			_, stderr := re.cli(1, "lake", "files", "forecast_malo", "--day", "2026-03-29")
			if !strings.Contains(stderr, "lake relocate") {
				t.Errorf("lake files before the relocation: %s; want a pointer to `lake relocate`", stderr)
			}
			stdout, _ := re.cli(0, "lake", "relocate")
			if !strings.Contains(stdout, "forecast_malo: file://"+dir+"/bucket/lake/forecast_malo -> file://"+restored+"/bucket/lake/forecast_malo") {
				t.Errorf("lake relocate: %s", stdout)
			}
			paths, _ := re.cli(0, "lake", "files", "forecast_malo", "--day", "2026-03-29")
			for _, p := range strings.Fields(paths) {
				if !strings.HasPrefix(p, restored+"/") {
					t.Errorf("lake files lists %s, outside the restored data directory", p)
				}
			}
			if got := lakeEnergy(re); math.Abs(got-want) > 1e-6*math.Abs(want) || want == 0 {
				t.Errorf("restored lake: %v MWh, before the backup %v MWh", got, want)
			}
			if stdout, stderr := re.cli(0, "run", "chain", "--day", "2026-03-29"); strings.Contains(stderr, "retrying") {
				t.Errorf("chain on the restored data retried: %s %s", stdout, stderr)
			}
			if got := lakeEnergy(re); math.Abs(got-want) > 1e-6*math.Abs(want) {
				t.Errorf("after the next chain: %v MWh, want %v", got, want)
			}

			re.serve()
			code, _, body := re.do("GET", "/v1/process/positions?day=2026-03-29&portfolio=demo", key, nil)
			if areas, _ := body["areas"].([]any); code != 200 || len(areas) != 2 {
				t.Errorf("positions from the restored service: %d %v", code, body)
			}
			if code, _, body := re.do("GET", "/readyz", "", nil); code != 200 {
				t.Errorf("readyz of the restored service: %d %v", code, body)
			}
		})
	}
}
