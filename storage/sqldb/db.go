// Package sqldb is the relational store of schedbridge: portfolios, API keys,
// the audit trail, the versioned staging area, and the pipeline's run
// records, read models and schedule messages. It speaks SQLite (the embedded
// default) and PostgreSQL through uptrace/bun, with one schema and one contract
// test suite for both.
package sqldb

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/sqliteshim"
	"github.com/uptrace/bun/migrate"

	"github.com/schedbridge/schedbridge/pipeline"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Dialect names the SQL backend.
type Dialect string

// Supported backends.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// DB is the schedbridge database.
type DB struct {
	bun     *bun.DB
	dialect Dialect
	// lockPath is the file that serialises migrations on SQLite, where there is
	// no advisory lock; a crashed process releases its flock automatically.
	lockPath string
	// path is the SQLite database file; leader locks are files beside it.
	path string
	// busy is SQLite's busy timeout, which a connection given a shorter one
	// for a while gets back (TouchKey).
	busy time.Duration
	// makoFacts keeps the last facts of the market-partner overview (see
	// mako_cache.go).
	makoFacts makoFactsCache
	// groups queue small API submissions for group commit on PostgreSQL
	// (see groupcommit.go).
	groups stageGroups
	// checkpoints counts the WAL checkpoints that bulk files left running
	// after their commits (see releaseConn); Settle and Close wait for them.
	checkpoints sync.WaitGroup
}

// Options configure Open.
type Options struct {
	// URL selects the backend: "" or "sqlite:PATH" for SQLite, "postgres://..."
	// or "postgresql://..." for PostgreSQL.
	URL string
	// DataDir holds the default SQLite file when URL is empty.
	DataDir string
	// MaxOpenConns caps the pool; 0 picks a default per backend.
	MaxOpenConns int
	// BusyTimeout is how long a SQLite writer waits for the write lock
	// (another write, such as a bulk inbox file being staged) before its
	// request fails as unavailable; 0 means 10 s.
	BusyTimeout time.Duration
}

// DefaultSQLiteFile is the name of the embedded database inside the data dir.
const DefaultSQLiteFile = "schedbridge.db"

// Open connects to the database named by the options. It does not migrate.
func Open(ctx context.Context, o Options) (*DB, error) {
	u := o.URL
	switch {
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		cfg, err := pgx.ParseConfig(u)
		if err != nil {
			return nil, fmt.Errorf("open postgres %s: %w", redact(u), err)
		}
		sqldb := stdlib.OpenDB(*cfg)
		n := o.MaxOpenConns
		if n == 0 {
			n = 16
		}
		sqldb.SetMaxOpenConns(n)
		sqldb.SetMaxIdleConns(n)
		db := &DB{bun: bun.NewDB(sqldb, pgdialect.New()), dialect: Postgres}
		if err := db.Ping(ctx); err != nil {
			sqldb.Close()
			return nil, fmt.Errorf("connect postgres %s: %w", redact(u), err)
		}
		return db, nil
	case u == "" || strings.HasPrefix(u, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(u, "sqlite:"), "//")
		if path == "" {
			dir := o.DataDir
			if dir == "" {
				dir = "var"
			}
			path = filepath.Join(dir, DefaultSQLiteFile)
		}
		pinSQLiteAllocator()
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return nil, fmt.Errorf("create database directory: %w", err)
		}
		// WAL lets readers run beside the single writer; _txlock=immediate takes
		// the write lock at BEGIN, so two writers queue on busy_timeout instead of
		// failing with SQLITE_BUSY when a read transaction tries to upgrade.
		busy := o.BusyTimeout
		if busy <= 0 {
			busy = 10 * time.Second
		}
		dsn := "file:" + path + fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)", busy.Milliseconds()) +
			"&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
		sqldb, err := sql.Open(sqliteshim.ShimName, dsn)
		if err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		n := o.MaxOpenConns
		if n == 0 {
			n = 4
		}
		sqldb.SetMaxOpenConns(n)
		sqldb.SetMaxIdleConns(n)
		db := &DB{bun: bun.NewDB(sqldb, sqlitedialect.New()), dialect: SQLite, lockPath: path + ".migrate.lock", path: path, busy: busy}
		if err := db.Ping(ctx); err != nil {
			sqldb.Close()
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		return db, nil
	default:
		return nil, fmt.Errorf("database url %q: want postgres://... or sqlite:PATH", redact(u))
	}
}

// redact removes the password from a database URL for messages and logs.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable url)"
	}
	return u.Redacted()
}

// Dialect reports the backend.
func (db *DB) Dialect() Dialect { return db.dialect }

// SQL returns the pool's database/sql handle, for a component that keeps
// its own tables in the service's database: storage/catalog's Iceberg
// catalog, whose layout is the JDBC catalog's and not this package's.
func (db *DB) SQL() *sql.DB { return db.bun.DB }

// Close closes the pool.
func (db *DB) Close() error {
	db.Settle()
	return db.bun.Close()
}

// Settle waits for the work that committed bulk files left running in the
// background: on SQLite the checkpoint that copies a file's pages from the
// WAL into the database, which for a large file (2.5 GB of metered history
// at 1,000,000 locations) takes seconds of disk and CPU time. A measurement
// calls it after its setup so that it does not time the setup's checkpoint
// too: while the setup's checkpoint overlapped it, the chain benchmark's
// forecast stage ran 1.4x slower on the AMD machine (issue 35).
func (db *DB) Settle() { db.checkpoints.Wait() }

// Ping checks that the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	return db.bun.NewRaw("SELECT 1").Scan(ctx, &one)
}

type templateData struct{ ID, TS string }

func (db *DB) migrator() *migrate.Migrator { return db.migratorOf(allMigrations()) }

// allMigrations is the schema history: the embedded SQL files and the
// migrations written in Go. It is discovered once, since the readiness
// probe asks for it every few seconds; migrators only read it.
var allMigrations = sync.OnceValue(func() *migrate.Migrations {
	ms := migrate.NewMigrations()
	if err := ms.Discover(migrationFiles); err != nil {
		// The files are embedded at build time; a failure here is a build defect.
		panic(fmt.Sprintf("discover migrations: %v", err))
	}
	registerBinaryValues(ms)
	registerPackedValues(ms)
	registerValuePortfolioKeys(ms)
	return ms
})

func (db *DB) migratorOf(ms *migrate.Migrations) *migrate.Migrator {
	td := templateData{ID: "INTEGER PRIMARY KEY AUTOINCREMENT", TS: "TIMESTAMP"}
	if db.dialect == Postgres {
		td = templateData{ID: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", TS: "TIMESTAMPTZ"}
	}
	return migrate.NewMigrator(db.bun, ms, migrate.WithTemplateData(td), migrate.WithMarkAppliedOnSuccess(true))
}

// Migrate applies pending migrations under a lock, so that two processes
// starting at once apply each migration once. It returns the names applied.
func (db *DB) Migrate(ctx context.Context) ([]string, error) {
	unlock, err := db.lockMigrations(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	m := db.migrator()
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("init migrations: %w", err)
	}
	group, err := m.Migrate(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	var names []string
	for _, mig := range group.Migrations {
		names = append(names, mig.Name)
	}
	return names, nil
}

// PendingMigrations lists migrations not applied yet.
func (db *DB) PendingMigrations(ctx context.Context) ([]string, error) {
	m := db.migrator()
	if err := m.Init(ctx); err != nil {
		return nil, err
	}
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, mig := range ms.Unapplied() {
		names = append(names, mig.Name)
	}
	return names, nil
}

// CheckSchema reports whether every migration this binary embeds is
// applied, for the readiness probe. It only reads the migration table (no
// Init, no lock), so it costs one small query and writes nothing, and it
// caches no status: a migration applied by another process or by `schedbridge
// migrate` counts from the next call on. Migrations applied that this binary
// does not know are fine: during a rolling upgrade the old release keeps
// serving on the schema the new release expanded. A missing migration table
// means a database that was never migrated.
func (db *DB) CheckSchema(ctx context.Context) error {
	ms, err := db.migrator().MigrationsWithStatus(ctx)
	if err != nil {
		return &pipeline.Error{Kind: pipeline.Unavailable,
			Message: "cannot read the applied migrations (never migrated?); run `schedbridge migrate`", Err: err}
	}
	if pending := ms.Unapplied(); len(pending) > 0 {
		return pipeline.Errorf(pipeline.Unavailable, "%d of %d migrations pending, the first is %s; run `schedbridge migrate`",
			len(pending), len(ms), pending[0].Name)
	}
	return nil
}

// lockMigrations takes a lock that the operating system or the server releases
// when the holder dies, unlike bun's lock table whose row would outlive a crash.
func (db *DB) lockMigrations(ctx context.Context) (func(), error) {
	if db.dialect == Postgres {
		conn, err := db.bun.Conn(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(7413920011)"); err != nil {
			conn.Close()
			return nil, fmt.Errorf("lock migrations: %w", err)
		}
		return func() {
			// A fresh context: the caller's may be cancelled, and the lock must go.
			_, _ = conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(7413920011)")
			conn.Close()
		}, nil
	}
	f, err := os.OpenFile(db.lockPath, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, fmt.Errorf("lock migrations: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock migrations: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock migrations: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// inTx runs fn in a transaction and commits when it returns nil. Within
// InTx, fn runs in InTx's transaction, which commits or rolls back as a
// whole.
func (db *DB) inTx(ctx context.Context, fn func(tx bun.Tx) error) error {
	if tx, ok := txOf(ctx); ok {
		return fn(tx)
	}
	return busyAsUnavailable(db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return fn(tx) }))
}

// txKey is the context key of InTx's transaction.
type txKey struct{}

// txOf is InTx's transaction that ctx carries.
func txOf(ctx context.Context) (bun.Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(bun.Tx)
	return tx, ok
}

// InTx runs fn in one database transaction, which commits when fn returns
// nil and rolls back otherwise. The store's methods that fn calls with the
// context it is given take part in the transaction (those that write the
// results of a run: FinishRun, the read models' Publish methods,
// RecordSchedule, RecordRunParts), and so can another store on the same
// database through Tx, such as the lake's catalog: it is how a run's results
// commit at one point. Within fn, nothing may write to the database outside
// the transaction: on SQLite such a write waits for the transaction's lock.
func (db *DB) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := txOf(ctx); ok {
		return fn(ctx)
	}
	return busyAsUnavailable(db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return fn(context.WithValue(ctx, txKey{}, tx))
	}))
}

// Tx returns the transaction of InTx that ctx carries, or nil outside one.
func Tx(ctx context.Context) bun.IDB {
	if tx, ok := txOf(ctx); ok {
		return tx
	}
	return nil
}

// conn is the connection that a statement under ctx runs on: InTx's
// transaction within one, the pool otherwise.
func (db *DB) conn(ctx context.Context) bun.IDB {
	if tx, ok := txOf(ctx); ok {
		return tx
	}
	return db.bun
}

// busyAsUnavailable marks SQLite's "database is locked" as Unavailable: the
// single write lock was held for longer than the busy timeout, typically by
// a large inbox file being staged in one transaction. The caller can retry
// the identical request; it is not an internal fault.
func busyAsUnavailable(err error) error {
	var coded interface{ Code() int }
	const sqliteBusy = 5 // primary result code; extended codes keep it in the low byte
	if errors.As(err, &coded) && coded.Code()&0xff == sqliteBusy {
		return &pipeline.Error{Kind: pipeline.Unavailable,
			Message: "the database is busy with another write (such as a bulk file being staged); retry the identical request later",
			Err:     err}
	}
	return err
}
