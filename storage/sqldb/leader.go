package sqldb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

var leaderNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// LeaderCheck is how often a PostgreSQL leader checks that the connection
// holding its lock is still alive.
const LeaderCheck = 2 * time.Second

// TryLeader tries, without waiting, to become the one leader named name
// among all processes on this database, such as the one scheduler of several
// serve processes. ok tells whether it succeeded. held is a context derived
// from ctx that ends when the leadership ends: on release, when ctx ends, or
// when the lock is lost (context.Cause says why), so the leader stops acting
// as one before a successor starts. release is idempotent and safe to call
// when ok is false.
//
// The lock is one the server or the operating system drops when its holder
// dies, so a crashed leader never blocks a successor: on PostgreSQL a
// session advisory lock held on a connection of its own, checked every
// LeaderCheck (if that connection breaks, the server has dropped the lock and
// another process may take it: held ends); on SQLite an exclusive flock of
// the file <database>.leader-<name>.lock, which also elects one leader among
// processes sharing one database file.
func (db *DB) TryLeader(ctx context.Context, name string) (held context.Context, release func(), ok bool, err error) {
	noop := func() {}
	if !leaderNamePattern.MatchString(name) {
		return ctx, noop, false, pipeline.Errorf(pipeline.Invalid, "leader name %q: use 1-64 letters, digits, '_' or '-'", name)
	}
	if db.dialect == Postgres {
		return db.tryAdvisoryLeader(ctx, name)
	}
	return db.tryFileLeader(ctx, name)
}

// errReleased is the cause of a leadership that its holder released.
var errReleased = errors.New("leadership released")

func (db *DB) tryAdvisoryLeader(ctx context.Context, name string) (context.Context, func(), bool, error) {
	noop := func() {}
	conn, err := db.bun.Conn(ctx)
	if err != nil {
		return ctx, noop, false, fmt.Errorf("leader %s: %w", name, err)
	}
	key := "schedbridge/leader/" + name
	var got bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(hashtextextended(?, 0))", key).Scan(&got); err != nil {
		conn.Close()
		return ctx, noop, false, fmt.Errorf("leader %s: %w", name, err)
	}
	if !got {
		conn.Close()
		return ctx, noop, false, nil
	}
	held, end := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		t := time.NewTicker(LeaderCheck)
		defer t.Stop()
		for {
			select {
			case <-held.Done():
				return
			case <-t.C:
				pctx, cancel := context.WithTimeout(held, LeaderCheck)
				err := conn.PingContext(pctx)
				cancel()
				if err != nil && held.Err() == nil {
					end(fmt.Errorf("leader %s: the connection holding the lock failed: %w", name, err))
					return
				}
			}
		}
	}()
	var once sync.Once
	return held, func() {
		once.Do(func() {
			end(errReleased)
			<-watched
			// A fresh context: the caller's is typically cancelled by now, and
			// the lock must go.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var unlocked bool
			err := conn.QueryRowContext(ctx, "SELECT pg_advisory_unlock(hashtextextended(?, 0))", key).Scan(&unlocked)
			if err != nil || !unlocked {
				// The lock's fate on this session is unknown: discard the
				// connection rather than return it to the pool, which ends the
				// session and with it the lock.
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			}
			conn.Close()
		})
	}, true, nil
}

func (db *DB) tryFileLeader(ctx context.Context, name string) (context.Context, func(), bool, error) {
	noop := func() {}
	path := db.path + ".leader-" + name + ".lock"
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return ctx, noop, false, fmt.Errorf("leader %s: %w", name, err)
	}
	// flock belongs to the open file description: another *DB, in this
	// process or another, opens its own and is refused while this one holds.
	// The kernel keeps the lock until it is released or the process dies,
	// so it cannot be lost unnoticed.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return ctx, noop, false, nil
		}
		return ctx, noop, false, fmt.Errorf("leader %s: %w", name, err)
	}
	held, end := context.WithCancelCause(ctx)
	var once sync.Once
	return held, func() {
		once.Do(func() {
			end(errReleased)
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		})
	}, true, nil
}
