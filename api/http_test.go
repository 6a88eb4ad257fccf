package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/api/portal"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// logRecords returns the JSON log records in the file. The server writes
// them from the goroutines of its connections; a file can be read meanwhile.
func logRecords(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return jsonLines(t, b)
}

// jsonLines decodes JSON log lines, one record a line.
func jsonLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// live is the API behind a real listener, as the binary serves it: what a
// connection does (deadlines, a client that goes away) only shows there.
type live struct {
	url, addr string
	logs      string // the file of the server's JSON log
	// ended receives the path of every request whose handler returned.
	ended chan string
	// metrics serves the server's registry, as the binary does on its
	// metrics listener.
	metrics http.Handler
}

// serveLive serves the fixture's database with cfg on a loopback listener
// whose server has the read timeout; change, when given, swaps adapters.
func serveLive(t *testing.T, f *fixture, cfg api.Config, readTimeout time.Duration, change func(*api.Deps)) *live {
	t.Helper()
	l := &live{logs: filepath.Join(t.TempDir(), "server.log"), ended: make(chan string, 100)}
	logs, err := os.Create(l.logs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	cfg.Now = func() time.Time { return now }
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	l.metrics = promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{})
	deps := f.deps
	if change != nil {
		change(&deps)
	}
	h := api.New(cfg, deps).Handler()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { l.ended <- r.URL.Path }()
		h.ServeHTTP(w, r)
	}))
	ts.Listener = smallSendBuffers{ts.Listener}
	ts.Config.ReadTimeout = readTimeout
	ts.Start()
	// Closing the connections first ends a handler that a failed test
	// left waiting on one; Close waits for the handlers.
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	l.url, l.addr = ts.URL, ts.Listener.Addr().String()
	return l
}

// smallSendBuffers gives accepted connections a small, fixed kernel send
// buffer, so that the writes to a client that does not read block after some
// KiB rather than the MiB of an autotuned buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// awaitEnd waits, at most bound, until the handler of a request to path
// has returned.
func (l *live) awaitEnd(t *testing.T, path string, bound time.Duration) {
	t.Helper()
	timeout := time.After(bound)
	for {
		select {
		case p := <-l.ended:
			if p == path {
				return
			}
		case <-timeout:
			t.Fatalf("the handler of %s still runs after %v", path, bound)
		}
	}
}

// metric returns the value of one sample of the server's metrics, 0 when
// absent.
func (l *live) metric(t *testing.T, sample string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	l.metrics.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}

// wantLogged checks that the request to route was logged with the status at
// info level, and that nothing was logged as an error.
func (l *live) wantLogged(t *testing.T, route string, status int) {
	t.Helper()
	found := false
	for _, r := range logRecords(t, l.logs) {
		if r["level"] == "ERROR" {
			t.Errorf("logged as an error: %v", r)
		}
		if r["msg"] == "request" && r["route"] == route {
			found = true
			if r["status"] != float64(status) || r["level"] != "INFO" {
				t.Errorf("request logged as %v %v, want %d at INFO", r["level"], r["status"], status)
			}
		}
	}
	if !found {
		t.Errorf("no request log of %s", route)
	}
}

// wantCounted checks that /metrics counts one request to route with the
// status and none as a server error.
func (l *live) wantCounted(t *testing.T, method, route string, status int) {
	t.Helper()
	sample := func(code int) string {
		return fmt.Sprintf(`schedbridge_http_requests_total{code="%d",method="%s",route="%s"}`, code, method, route)
	}
	if n := l.metric(t, sample(status)); n != 1 {
		t.Errorf("%s = %v, want 1", sample(status), n)
	}
	if n := l.metric(t, sample(500)); n != 0 {
		t.Errorf("%s = %v, want 0", sample(500), n)
	}
}

// wantAudited checks the one audit entry of the fixture's database.
func wantAudited(t *testing.T, f *fixture, status int, outcome string, hashed bool) {
	t.Helper()
	entries, err := f.db.RecentAudit(context.Background(), 10)
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit entries %+v, %v; want one", entries, err)
	}
	e := entries[0]
	if e.StatusCode != status || e.Outcome != outcome || e.KeyID != "key_data1" || e.Endpoint != "POST /v1/forecasts" ||
		(e.InputHash != "") != hashed {
		t.Errorf("audit entry %+v, want status %d, outcome %s, hashed %v", e, status, outcome, hashed)
	}
}

// gatedStaging holds a forecast's staging until the request's context is
// done, then stages it with that context on the real store, as a staging
// transaction in progress meets a client that goes away. entered receives
// once per staging that waits; it needs room for all of them.
type gatedStaging struct {
	api.Staging
	entered chan struct{}
}

func (g *gatedStaging) StageForecast(ctx context.Context, a *pipeline.AuditEntry, f pipeline.Forecast, canonical []byte) (pipeline.StageResult, error) {
	g.entered <- struct{}{}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
	}
	return g.Staging.StageForecast(ctx, a, f, canonical)
}

// sendHead writes the head of a forecast submission with the length of the
// whole body, on a connection of its own.
func sendHead(t *testing.T, l *live, key string, length int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", l.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /v1/forecasts HTTP/1.1\r\nHost: schedbridge\r\nX-API-Key: %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", key, length)
	return conn
}

// A request whose client goes away is the client's doing: 499 in the log
// (at info level) and in the metrics, and still in the audit trail, with
// nothing staged.
func TestClientGone(t *testing.T) {
	body := forecast("2026-11-23", 96, 1, "")
	tests := []struct {
		name   string
		leave  func(t *testing.T, l *live, key string, g *gatedStaging)
		hashed bool // the body was read, so the entry has its hash
	}{
		{"while sending the body", func(t *testing.T, l *live, key string, _ *gatedStaging) {
			conn := sendHead(t, l, key, len(body))
			conn.Write(body[:len(body)/2])
			conn.Close()
		}, false},
		{"while the submission is staged", func(t *testing.T, l *live, key string, g *gatedStaging) {
			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				select {
				case <-g.entered:
				case <-ctx.Done():
				}
				cancel()
			}()
			req, _ := http.NewRequestWithContext(ctx, "POST", l.url+"/v1/forecasts", bytes.NewReader(body))
			req.Header.Set("X-API-Key", key)
			if resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req); err == nil {
				resp.Body.Close()
				t.Errorf("the request was answered: %d", resp.StatusCode)
			}
		}, true},
	}
	for _, d := range sqltest.Backends {
		for _, tt := range tests {
			t.Run(string(d)+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, d, api.Config{})
				g := &gatedStaging{entered: make(chan struct{}, 1)}
				l := serveLive(t, f, api.Config{}, time.Minute, func(deps *api.Deps) {
					g.Staging = deps.Staging
					deps.Staging = g
				})
				tt.leave(t, l, f.keys["data1"], g)
				l.awaitEnd(t, "/v1/forecasts", 10*time.Second)
				wantAudited(t, f, 499, "client_closed", tt.hashed)
				if vs, err := f.db.ForecastVersions(context.Background(), "p1", pipeline.NewDay(2026, time.November, 23)); len(vs) != 0 {
					t.Errorf("staged versions %+v, %v", vs, err)
				}
				l.wantLogged(t, "/v1/forecasts", 499)
				l.wantCounted(t, "POST", "/v1/forecasts", 499)
				if n := l.metric(t, `schedbridge_data_requests_total{endpoint="POST /v1/forecasts",outcome="client_closed"}`); n != 1 {
					t.Errorf("data requests client_closed = %v, want 1", n)
				}
			})
		}
	}
}

// A load test that stops with submissions in flight leaves one audit entry
// per request in the trail, each a 499, and nothing staged.
func TestStoppedLoadKeepsAudit(t *testing.T) {
	const clients = 16
	body := forecast("2026-11-23", 96, 1, "")
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, d, api.Config{})
			g := &gatedStaging{entered: make(chan struct{}, clients)}
			l := serveLive(t, f, api.Config{}, time.Minute, func(deps *api.Deps) {
				g.Staging = deps.Staging
				deps.Staging = g
			})
			ctx, stop := context.WithCancel(t.Context())
			client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: clients}}
			var wg sync.WaitGroup
			for range clients {
				wg.Go(func() {
					req, _ := http.NewRequestWithContext(ctx, "POST", l.url+"/v1/forecasts", bytes.NewReader(body))
					req.Header.Set("X-API-Key", f.keys["data1"])
					if resp, err := client.Do(req); err == nil {
						resp.Body.Close()
						t.Errorf("a request was answered: %d", resp.StatusCode)
					}
				})
			}
			for range clients {
				select {
				case <-g.entered:
				case <-time.After(10 * time.Second):
					t.Fatal("the submissions did not all reach the staging")
				}
			}
			stop()
			wg.Wait()
			for range clients {
				l.awaitEnd(t, "/v1/forecasts", 10*time.Second)
			}
			entries, err := f.db.RecentAudit(context.Background(), 2*clients)
			if err != nil || len(entries) != clients {
				t.Fatalf("%d audit entries, %v; want %d", len(entries), err, clients)
			}
			for _, e := range entries {
				if e.StatusCode != 499 || e.Outcome != "client_closed" || e.InputHash == "" {
					t.Errorf("audit entry %+v", e)
				}
			}
			sample := `schedbridge_http_requests_total{code="499",method="POST",route="/v1/forecasts"}`
			if n := l.metric(t, sample); n != clients {
				t.Errorf("%s = %v, want %d", sample, n, clients)
			}
		})
	}
}

// A client that sends its body one byte at a time is answered 408 when the
// read timeout has passed, and its connection is closed: it holds neither
// the connection nor a goroutine. The request is in the audit trail and in
// the log at info level, not as a server error.
func TestSlowBodyDropped(t *testing.T) {
	const readTimeout = 300 * time.Millisecond
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, d, api.Config{})
			l := serveLive(t, f, api.Config{}, readTimeout, nil)
			conn := sendHead(t, l, f.keys["data1"], 1000)
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				tick := time.NewTicker(50 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if _, err := conn.Write([]byte(" ")); err != nil {
							return
						}
					}
				}
			}()
			start := time.Now()
			conn.SetReadDeadline(start.Add(5 * time.Second))
			// The server closes the connection after the answer; bytes
			// that arrive after that make its kernel reset the connection
			// rather than end it, which is as closed.
			answer, err := io.ReadAll(conn)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server kept the connection after %v (read %q)", time.Since(start), answer)
			}
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(answer)), nil)
			if err != nil {
				t.Fatalf("answer %q: %v", answer, err)
			}
			if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
				t.Errorf("answer %d, close %v; want 408 and close", resp.StatusCode, resp.Close)
			}
			var detail map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&detail); err != nil || !strings.Contains(fmt.Sprint(detail["detail"]), "read timeout") {
				t.Errorf("body %v, %v", detail, err)
			}
			l.awaitEnd(t, "/v1/forecasts", 5*time.Second)
			wantAudited(t, f, 408, "too_slow", false)
			l.wantLogged(t, "/v1/forecasts", 408)
			l.wantCounted(t, "POST", "/v1/forecasts", 408)
		})
	}
}

// bigEvents is a console feed whose every page is about 1 MiB of JSON, far
// more than the sockets' buffers hold.
type bigEvents struct{}

func (bigEvents) Events(context.Context, pipeline.EventQuery) ([]pipeline.Event, error) {
	data, _ := json.Marshal(strings.Repeat("x", 1<<10))
	evs := make([]pipeline.Event, 1000)
	for i := range evs {
		evs[i] = pipeline.Event{ID: int64(i + 1), At: now, Kind: "inbox.processed", Subject: "s", Data: data}
	}
	return evs, nil
}

// A client that asks and then does not read the answer is dropped once the
// write timeout has passed after the answer began: the handler returns and
// the connection is closed.
func TestSlowReaderDropped(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, d, api.Config{})
			l := serveLive(t, f, api.Config{WriteTimeout: 300 * time.Millisecond}, time.Minute, func(deps *api.Deps) {
				deps.Events = bigEvents{}
			})
			// A small receive buffer, so that the kernel cannot take the
			// answer in the client's stead.
			dialer := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
				var serr error
				err := c.Control(func(fd uintptr) {
					serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
				})
				if err != nil {
					return err
				}
				return serr
			}}
			conn, err := dialer.Dial("tcp", l.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "GET /v1/console/events?limit=1000 HTTP/1.1\r\nHost: schedbridge\r\nX-API-Key: %s\r\n\r\n", f.keys["process"])
			l.awaitEnd(t, "/v1/console/events", 5*time.Second)
			// What the kernels buffered can still be read, then the
			// connection ends short of the answer.
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := io.Copy(io.Discard, conn)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the connection is still open after %d bytes", n)
			}
			if full := 1000 * (1 << 10); n >= int64(full) {
				t.Errorf("read %d bytes, the whole answer", n)
			}
		})
	}
}

// A path is answered as asked or not at all: a trailing slash or another
// case is an unknown path, 404 with the body of the path's owner, never a
// redirect to the path that exists.
func TestNoRedirects(t *testing.T) {
	f := newFixture(t, "sqlite", api.Config{})
	deps := f.deps
	deps.Portal = portal.New(portal.Config{BaseURL: "http://portal.test"}, f.db, nil, nil)
	srv := api.New(api.Config{Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)}, deps)
	tests := []struct {
		method, path string
		want         int
		portal       bool // the portal's error body, else the bridge's
	}{
		{"GET", "/api/v1/portal/profile", 401, true}, // the route exists
		{"GET", "/api/v1/portal/profile/", 404, true},
		{"GET", "/api/v1/portal/Profile", 404, true},
		{"GET", "/API/v1/portal/profile", 404, false},
		{"GET", "/api/v1/portal//profile", 404, true},
		{"GET", "/health/", 404, false},
		{"GET", "/v1/forecasts/2026-11-23/", 404, false},
		{"GET", "/V1/forecasts/2026-11-23", 404, false},
		{"POST", "/v1/forecasts/", 404, false},
		{"POST", "/v1/Forecasts", 404, false},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.path, nil)
		req.Header.Set("X-API-Key", f.keys["data1"])
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != tt.want || rec.Header().Get("Location") != "" {
			t.Errorf("%s %s: %d to %q, want %d", tt.method, tt.path, rec.Code, rec.Header().Get("Location"), tt.want)
			continue
		}
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Errorf("%s %s: body %q", tt.method, tt.path, rec.Body)
			continue
		}
		if _, isPortal := body["error"]; isPortal != tt.portal || (!tt.portal && body["detail"] != "Not Found") {
			t.Errorf("%s %s: body %v, want the %s's", tt.method, tt.path, body, map[bool]string{true: "portal", false: "bridge"}[tt.portal])
		}
	}
}
