// Package laketest queries Parquet files with DuckDB, an independent reader
// of what storage/lake writes, for tests and benchmarks. DuckDB comes from
// npm (@duckdb/node-api ships its binary); deploy/dev/test-deps.sh installs
// it into the user cache, and each Query runs a small embedded script with
// node. Debian has no DuckDB package and the machines reach no other source.
package laketest

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// EnvNodeDir overrides where the npm modules are looked up (default: the
// user cache directory's schedbridge/node); deploy/dev/test-deps.sh honours
// it too.
const EnvNodeDir = "SCHEDBRIDGE_NODE_DIR"

// DuckDBNodeVersion is the pinned @duckdb/node-api; keep it in sync with
// deploy/dev/test-deps.sh.
const DuckDBNodeVersion = "1.5.6-r.1"

//go:embed query.mjs
var queryScript []byte

// Duck runs SQL in DuckDB. Each Query or QueryAll starts a fresh in-memory
// database in a new node process.
type Duck struct {
	node    string
	dir     string // npm prefix holding node_modules/@duckdb/node-api
	script  string
	iceberg string // the Iceberg reader's script (IcebergFiles)
}

// Result is a query's answer. BIGINT, HUGEINT and DECIMAL values arrive as
// strings and other numbers as json.Number; Int and Float convert both.
type Result struct {
	Columns []string
	Types   []string // DuckDB's type names, e.g. "BIGINT", "DOUBLE"
	Rows    [][]any
	// Elapsed is the time the query itself took, measured inside node, so
	// that benchmarks do not count starting node and loading DuckDB.
	Elapsed time.Duration
}

// NodeDir is where test-deps.sh installs the npm modules.
func NodeDir() (string, error) {
	if d := os.Getenv(EnvNodeDir); d != "" {
		return d, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "schedbridge", "node"), nil
}

// DuckDB returns a Duck, failing tb when node or the pinned
// @duckdb/node-api is missing: the tests that use it must not pass silently
// on a machine where they cannot run.
func DuckDB(tb testing.TB) *Duck {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Fatalf("laketest: node is not installed: run `make test-deps`")
	}
	dir, err := NodeDir()
	if err != nil {
		tb.Fatalf("laketest: %v", err)
	}
	pkg, err := os.ReadFile(filepath.Join(dir, "node_modules", "@duckdb", "node-api", "package.json"))
	if err != nil {
		tb.Fatalf("laketest: @duckdb/node-api is not installed in %s (%v): run `make test-deps`", dir, err)
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(pkg, &meta); err != nil || meta.Version != DuckDBNodeVersion {
		tb.Fatalf("laketest: %s has @duckdb/node-api %q, want %s: run `make test-deps`", dir, meta.Version, DuckDBNodeVersion)
	}
	scripts := tb.TempDir()
	d := &Duck{node: node, dir: dir, script: filepath.Join(scripts, "query.mjs"), iceberg: filepath.Join(scripts, "iceberg.mjs")}
	for path, body := range map[string][]byte{d.script: queryScript, d.iceberg: icebergScript} {
		if err := os.WriteFile(path, body, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return d
}

// Query runs one SQL statement and returns its rows.
func (d *Duck) Query(ctx context.Context, sql string) (*Result, error) {
	rs, err := d.QueryAll(ctx, sql)
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// QueryAll runs the statements in order in one database, so that later ones
// see what earlier ones created (views, settings), and in one node process,
// which saves the second or so that starting node and DuckDB takes.
func (d *Duck) QueryAll(ctx context.Context, sqls ...string) ([]*Result, error) {
	in, err := json.Marshal(sqls)
	if err != nil {
		return nil, err
	}
	stdout, err := d.run(ctx, d.script, in)
	if err != nil {
		return nil, fmt.Errorf("duckdb %q: %w", abbreviate(strings.Join(sqls, "; ")), err)
	}
	var out []struct {
		Columns []string `json:"columns"`
		Types   []string `json:"types"`
		Rows    [][]any  `json:"rows"`
		Ms      float64  `json:"ms"`
	}
	dec := json.NewDecoder(bytes.NewReader(stdout))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil || len(out) != len(sqls) {
		return nil, fmt.Errorf("duckdb: decode answer (%d of %d results): %v", len(out), len(sqls), err)
	}
	rs := make([]*Result, len(out))
	for i, o := range out {
		rs[i] = &Result{Columns: o.Columns, Types: o.Types, Rows: o.Rows,
			Elapsed: time.Duration(o.Ms * float64(time.Millisecond))}
	}
	return rs, nil
}

// run runs a node script of this package with the npm modules of d.dir,
// input on its stdin, and returns its stdout; a failure carries its stderr.
func (d *Duck) run(ctx context.Context, script string, input []byte) ([]byte, error) {
	cmd := exec.CommandContext(ctx, d.node, script)
	cmd.Dir = d.dir
	cmd.Env = append(os.Environ(),
		"SCHEDBRIDGE_DUCKDB_DIR="+d.dir,
		"NODE_PATH="+filepath.Join(d.dir, "node_modules"))
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func abbreviate(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// Quote returns s as an SQL string literal, for file paths in queries.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Value returns the value of column col in row row; it panics on a column
// that the result does not have, which is a bug in the calling test.
func (r *Result) Value(row int, col string) any {
	for i, c := range r.Columns {
		if c == col {
			return r.Rows[row][i]
		}
	}
	panic(fmt.Sprintf("laketest: no column %q in %v", col, r.Columns))
}

// Int returns an integer value.
func (r *Result) Int(row int, col string) (int64, error) {
	switch v := r.Value(row, col).(type) {
	case string:
		return strconv.ParseInt(v, 10, 64)
	case json.Number:
		return v.Int64()
	default:
		return 0, fmt.Errorf("column %s: %T %v is not an integer", col, v, v)
	}
}

// Float returns a numeric value as float64.
func (r *Result) Float(row int, col string) (float64, error) {
	switch v := r.Value(row, col).(type) {
	case string:
		return strconv.ParseFloat(v, 64)
	case json.Number:
		return v.Float64()
	default:
		return 0, fmt.Errorf("column %s: %T %v is not a number", col, v, v)
	}
}

// String returns a value formatted as text.
func (r *Result) String(row int, col string) string {
	return fmt.Sprint(r.Value(row, col))
}
