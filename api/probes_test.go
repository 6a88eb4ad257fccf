package api_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// brokenBucket stands for an object store that does not answer; its error
// text must reach the log only, never the unauthenticated probe's body.
type brokenBucket struct{}

func (brokenBucket) List(context.Context, string, string, int) ([]pipeline.ObjectInfo, error) {
	return nil, errors.New("dial tcp 10.1.2.3:9000: connection refused (s3-secret-host)")
}

// readyz is the decoded body of GET /readyz.
type readyz struct {
	code    int
	retry   string
	status  string
	checks  map[string]string
	failing []string
}

func getReadyz(t *testing.T, srv *api.Server) readyz {
	t.Helper()
	r := serve(srv, (&fixture{}).request("GET", "/readyz", nil))
	if strings.Contains(string(r.body), "s3-secret-host") || strings.Contains(string(r.body), "10.1.2.3") {
		t.Errorf("readyz body leaks an error text: %s", r.body)
	}
	m := r.json(t)
	out := readyz{code: r.code, retry: r.header.Get("Retry-After"), checks: map[string]string{}}
	out.status, _ = m["status"].(string)
	checks, _ := m["checks"].(map[string]any)
	for k, v := range checks {
		out.checks[k], _ = v.(string)
	}
	failing, ok := m["failing"].([]any)
	if !ok {
		t.Fatalf("readyz body without a failing list: %s", r.body)
	}
	for _, v := range failing {
		out.failing = append(out.failing, v.(string))
	}
	return out
}

// TestReadyz runs the readiness probe through its states on both backends:
// each failing check is named in the body with a 503, the others keep
// their own verdict.
func TestReadyz(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := api.Config{RetryAfter: 3 * time.Second, Logger: quiet, Now: func() time.Time { return now }}
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, d, cfg)
			ready := f.deps
			ready.Schema, ready.Bucket = f.db, f.bucket
			unmigrated := sqltest.OpenUnmigrated(t, d)
			closed := sqltest.Open(t, d)
			closed.Close()

			cases := []struct {
				name     string
				deps     func() api.Deps
				drain    bool
				code     int
				checks   map[string]string
				failing  []string
				healthOK bool
			}{
				{"ready", func() api.Deps { return ready }, false, 200,
					map[string]string{"draining": "ok", "database": "ok", "migrations": "ok", "bucket": "ok"}, nil, true},
				{"migrations pending", func() api.Deps {
					deps := ready
					deps.DB, deps.Schema = unmigrated, unmigrated
					return deps
				}, false, 503, map[string]string{"draining": "ok", "database": "ok", "migrations": "pending", "bucket": "ok"},
					[]string{"migrations"}, true},
				{"database unreachable", func() api.Deps {
					deps := ready
					deps.DB, deps.Schema = closed, closed
					return deps
				}, false, 503, map[string]string{"draining": "ok", "database": "unreachable", "migrations": "unknown", "bucket": "ok"},
					[]string{"database", "migrations"}, false},
				{"bucket unreachable", func() api.Deps {
					deps := ready
					deps.Bucket = brokenBucket{}
					return deps
				}, false, 503, map[string]string{"draining": "ok", "database": "ok", "migrations": "ok", "bucket": "unreachable"},
					[]string{"bucket"}, true},
				{"checks not wired", func() api.Deps { return f.deps }, false, 503,
					map[string]string{"draining": "ok", "database": "ok", "migrations": "not_configured", "bucket": "not_configured"},
					[]string{"migrations", "bucket"}, true},
				{"draining", func() api.Deps { return ready }, true, 503,
					map[string]string{"draining": "draining", "database": "skipped", "migrations": "skipped", "bucket": "skipped"},
					[]string{"draining"}, false},
				{"draining with the database down", func() api.Deps {
					deps := ready
					deps.DB, deps.Schema = closed, closed
					return deps
				}, true, 503, map[string]string{"draining": "draining", "database": "skipped", "migrations": "skipped", "bucket": "skipped"},
					[]string{"draining"}, false},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					var logs bytes.Buffer
					cfg := cfg
					cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
					srv := api.New(cfg, tc.deps())
					if tc.drain {
						srv.Drain()
					}
					got := getReadyz(t, srv)
					wantStatus := "ok"
					if tc.code != 200 {
						wantStatus = "unavailable"
					}
					if got.code != tc.code || got.status != wantStatus || !maps.Equal(got.checks, tc.checks) || !slices.Equal(got.failing, tc.failing) {
						t.Errorf("readyz: %d %s %v failing %v; want %d %v failing %v",
							got.code, got.status, got.checks, got.failing, tc.code, tc.checks, tc.failing)
					}
					if (tc.code == 503) != (got.retry == "3") {
						t.Errorf("readyz %d with Retry-After %q", got.code, got.retry)
					}
					// Liveness is the process alone: 200 with the database
					// closed and while draining, so that the orchestrator
					// never restarts a replica for what a restart cannot fix.
					live := serve(srv, (&fixture{}).request("GET", "/livez", nil))
					if live.code != 200 || live.json(t)["status"] != "ok" {
						t.Errorf("livez: %d %s", live.code, live.body)
					}
					// /health keeps the contract's meaning: the database
					// answers and the server is not draining.
					if h := serve(srv, (&fixture{}).request("GET", "/health", nil)); (h.code == 200) != tc.healthOK {
						t.Errorf("health: %d %s", h.code, h.body)
					}
					// The orchestrator probes every few seconds: answered
					// probes stay out of the info log, an unready answer is
					// a warning.
					if strings.Contains(logs.String(), "route=/livez") {
						t.Errorf("livez logged at info:\n%s", logs.String())
					}
					if unready := strings.Contains(logs.String(), "route=/readyz status=503"); unready != (tc.code == 503) {
						t.Errorf("readyz %d, logged as unready: %v\n%s", got.code, unready, logs.String())
					}
				})
			}
		})
	}
}
