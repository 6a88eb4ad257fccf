package jobs_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// leaderLog records which scheduler became leader and when it let go, and
// how often each was refused.
type leaderLog struct {
	mu      sync.Mutex
	leads   []string
	active  map[string]bool
	both    bool // two leaders at once was seen
	refused map[string]int
}

type namedLeader struct {
	name string
	l    jobs.Leader
	log  *leaderLog
}

func (n namedLeader) TryLeader(ctx context.Context, name string) (context.Context, func(), bool, error) {
	held, release, ok, err := n.l.TryLeader(ctx, name)
	n.log.mu.Lock()
	if !ok {
		n.log.refused[n.name]++
		n.log.mu.Unlock()
		return held, release, ok, err
	}
	n.log.leads = append(n.log.leads, n.name)
	n.log.active[n.name] = true
	if len(n.log.active) > 1 {
		n.log.both = true
	}
	n.log.mu.Unlock()
	return held, func() {
		n.log.mu.Lock()
		delete(n.log.active, n.name)
		n.log.mu.Unlock()
		release()
	}, true, nil
}

// TestOneLeader: two serve processes on one database run one scheduler;
// when the leader stops, the other takes over.
func TestOneLeader(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := "sqlite:" + filepath.Join(t.TempDir(), "one.db")
			if d == sqldb.Postgres {
				url = sqltest.PostgresURL(t)
			}
			open := func() *sqldb.DB {
				db, err := sqldb.Open(ctx, sqldb.Options{URL: url})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				if _, err := db.Migrate(ctx); err != nil {
					t.Fatal(err)
				}
				return db
			}
			bucket, err := objstore.NewLocal(filepath.Join(t.TempDir(), "bucket"))
			if err != nil {
				t.Fatal(err)
			}
			log := &leaderLog{active: map[string]bool{}, refused: map[string]int{}}
			var cancels []context.CancelFunc
			var wg sync.WaitGroup
			for _, name := range []string{"A", "B"} {
				db := open()
				r := jobs.New(db, nil, bucket, jobs.Config{})
				s, err := jobs.NewScheduler(r, namedLeader{name, db, log}, jobs.SchedulerConfig{LeaderPoll: 20 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				sctx, cancel := context.WithCancel(ctx)
				cancels = append(cancels, cancel)
				wg.Add(1)
				go func() { defer wg.Done(); _ = s.Run(sctx) }()
			}
			defer func() {
				for _, c := range cancels {
					c()
				}
				wg.Wait()
			}()
			waitFor(t, func() bool { log.mu.Lock(); defer log.mu.Unlock(); return len(log.leads) == 1 })
			log.mu.Lock()
			first := log.leads[0]
			follower := map[string]string{"A": "B", "B": "A"}[first]
			polls := log.refused[follower]
			log.mu.Unlock()
			// Ten polls of the follower while the leader leads.
			waitFor(t, func() bool { log.mu.Lock(); defer log.mu.Unlock(); return log.refused[follower] >= polls+10 })
			log.mu.Lock()
			n := len(log.leads)
			log.mu.Unlock()
			if n != 1 {
				t.Fatalf("leaders %v", log.leads)
			}
			// Stop the leader: the follower takes over.
			if first == "A" {
				cancels[0]()
			} else {
				cancels[1]()
			}
			waitFor(t, func() bool { log.mu.Lock(); defer log.mu.Unlock(); return len(log.leads) == 2 })
			log.mu.Lock()
			defer log.mu.Unlock()
			if log.leads[1] == first || log.both {
				t.Errorf("leaders %v, two at once: %v", log.leads, log.both)
			}
		})
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not reached in 5 s")
}

// losingLeader grants leadership and lets the test take it away, as a
// broken database connection would.
type losingLeader struct {
	mu     sync.Mutex
	grants int
	lose   context.CancelCauseFunc
}

func (l *losingLeader) TryLeader(ctx context.Context, _ string) (context.Context, func(), bool, error) {
	held, cancel := context.WithCancelCause(ctx)
	l.mu.Lock()
	l.grants++
	l.lose = cancel
	l.mu.Unlock()
	return held, func() { cancel(nil) }, true, nil
}

// TestLeadershipLost: a scheduler whose lock is lost stops leading and
// competes for the leadership again instead of firing on.
func TestLeadershipLost(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	l := &losingLeader{}
	r := jobs.New(sqltest.Open(t, sqldb.SQLite), nil, nil, jobs.Config{})
	s, err := jobs.NewScheduler(r, l, jobs.SchedulerConfig{LeaderPoll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	grants := func() int { l.mu.Lock(); defer l.mu.Unlock(); return l.grants }
	waitFor(t, func() bool { return grants() == 1 })
	l.mu.Lock()
	l.lose(errors.New("connection lost"))
	l.mu.Unlock()
	waitFor(t, func() bool { return grants() == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
