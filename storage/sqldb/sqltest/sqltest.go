// Package sqltest gives test suites the real database backends: a SQLite file
// in a temporary directory and a fresh database on a PostgreSQL server that it
// starts from the installed server binaries on loopback. Suites loop over
// Backends so that one contract runs against both.
package sqltest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver

	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// Backends names the backends every contract suite runs against.
var Backends = []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres}

// EnvPostgresURL names an existing server to use instead of starting one; the
// tests create their own databases in it.
const EnvPostgresURL = "SCHEDBRIDGE_TEST_POSTGRES_URL"

var (
	pgOnce   sync.Once
	pgServer *server
	pgErr    error
	dbSeq    atomic.Int64
)

type server struct {
	adminURL string // connection to the maintenance database
	baseURL  func(db string) string
	stop     func()
}

// Runner is what Main runs: a *testing.M, or a RunFunc that runs another
// package's Main, so that suites needing several servers can nest them.
type Runner interface{ Run() int }

// RunFunc adapts a function to Runner.
type RunFunc func() int

// Run calls f.
func (f RunFunc) Run() int { return f() }

// Main runs the tests and stops the PostgreSQL server if one was started.
// Call it from TestMain: os.Exit(sqltest.Main(m)).
func Main(m Runner) int {
	code := m.Run()
	if pgServer != nil && pgServer.stop != nil {
		pgServer.stop()
	}
	return code
}

// Open returns a migrated, empty database of the backend, closed when the test ends.
func Open(tb testing.TB, d sqldb.Dialect) *sqldb.DB {
	tb.Helper()
	db := OpenUnmigrated(tb, d)
	if _, err := db.Migrate(context.Background()); err != nil {
		tb.Fatalf("migrate %s: %v", d, err)
	}
	return db
}

// OpenUnmigrated returns a fresh database of the backend without any schema,
// for tests of the migrations themselves.
func OpenUnmigrated(tb testing.TB, d sqldb.Dialect) *sqldb.DB {
	tb.Helper()
	ctx := context.Background()
	var url string
	switch d {
	case sqldb.SQLite:
		url = "sqlite:" + filepath.Join(tb.TempDir(), "test.db")
	case sqldb.Postgres:
		url = PostgresURL(tb)
	default:
		tb.Fatalf("unknown backend %s", d)
	}
	db, err := sqldb.Open(ctx, sqldb.Options{URL: url})
	if err != nil {
		tb.Fatalf("open %s: %v", d, err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// PostgresURL creates a fresh database on the test server and returns its URL.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	pgOnce.Do(func() { pgServer, pgErr = startServer() })
	if pgErr != nil {
		tb.Fatalf("PostgreSQL for tests: %v", pgErr)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	admin, err := sql.Open("pgx", pgServer.adminURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		tb.Fatalf("create database %s: %v", name, err)
	}
	return pgServer.baseURL(name)
}

func startServer() (*server, error) {
	if u := os.Getenv(EnvPostgresURL); u != "" {
		return &server{adminURL: u, baseURL: func(db string) string { return replaceDB(u, db) }}, nil
	}
	bin, err := findBinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "schedbridge-pg-")
	if err != nil {
		return nil, err
	}
	// initdb refuses to run as root; hand the directory to the postgres user.
	var asUser []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the postgres system user: %w", err)
		}
		if out, err := exec.Command("chown", u.Username, dir).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("chown %s: %v: %s", dir, err, out)
		}
		asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(args ...string) error {
		full := append(append([]string{}, asUser...), args...)
		cmd := exec.Command(full[0], full[1:]...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	data := filepath.Join(dir, "data")
	if err := run(filepath.Join(bin, "initdb"), "-D", data, "-U", "app", "--auth=trust", "-E", "UTF8", "--no-locale"); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// Buffers and WAL sized like a small production server rather than
	// initdb's defaults (128 MB, 1 GB): the inbox benchmark writes a 1 GB
	// table in one transaction, and with the defaults the server spends its
	// time evicting dirty pages and checkpointing (41.7-46 s instead of 37 s).
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c max_connections=200 "+
		"-c shared_buffers=512MB -c max_wal_size=4GB", port, dir)
	if err := run(filepath.Join(bin, "pg_ctl"), "-D", data, "-o", opts, "-l", filepath.Join(dir, "server.log"), "-w", "-t", "60", "start"); err != nil {
		return nil, err
	}
	stop := func() {
		_ = run(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "stop")
		os.RemoveAll(dir)
	}
	base := func(db string) string { return fmt.Sprintf("postgres://app@127.0.0.1:%d/%s?sslmode=disable", port, db) }
	// The server is up when pg_ctl -w returns; one ping confirms the address.
	admin, err := sql.Open("pgx", base("postgres"))
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = admin.PingContext(ctx)
		cancel()
		admin.Close()
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("ping test server: %w", err)
	}
	return &server{adminURL: base("postgres"), baseURL: base, stop: stop}, nil
}

// findBinDir locates initdb and pg_ctl: on PATH, or in Debian's versioned
// directory, which is not on PATH by default.
func findBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
		return filepath.Dir(p), nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		return "", fmt.Errorf("no initdb found on PATH or in /usr/lib/postgresql/*/bin: install postgresql-15 (make test-deps does)")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func replaceDB(u, db string) string {
	q := ""
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u, q = u[:i], u[i:]
	}
	if i := strings.LastIndexByte(u, '/'); i > len("postgres://") {
		u = u[:i]
	}
	return u + "/" + db + q
}
