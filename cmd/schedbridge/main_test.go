package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "schedbridge-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "schedbridge")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := objtest.Main(objtest.RunFunc(func() int { return sqltest.Main(m) }))
	os.RemoveAll(dir)
	os.Exit(code)
}

// instance is one configuration of the binary: a data dir and a database.
type instance struct {
	t     *testing.T
	env   []string
	addr  string
	dbURL string
	// metricsAddr is the listener of GET /metrics, apart from the API's.
	metricsAddr string
}

// freeAddr returns a loopback address with a port that is free now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func newInstance(t *testing.T, d sqldb.Dialect) *instance {
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	dir := t.TempDir()
	env := append(os.Environ(), "SCHEDBRIDGE_DATA_DIR="+dir, "SCHEDBRIDGE_ADDR="+addr, "SCHEDBRIDGE_METRICS_ADDR="+metricsAddr)
	dbURL := "sqlite:" + filepath.Join(dir, sqldb.DefaultSQLiteFile)
	if d == sqldb.Postgres {
		dbURL = sqltest.PostgresURL(t)
		env = append(env, "SCHEDBRIDGE_DATABASE_URL="+dbURL)
	}
	return &instance{t: t, env: env, addr: addr, dbURL: dbURL, metricsAddr: metricsAddr}
}

// cli runs a command and returns stdout and stderr.
func (in *instance) cli(wantCode int, args ...string) (string, string) {
	in.t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = in.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		in.t.Fatal(err)
	}
	if code != wantCode {
		in.t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, wantCode, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// envValue is the last value of an environment variable in env, the one
// the binary reads.
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, name+"="); ok {
			v = s
		}
	}
	return v
}

// serve starts serve and waits until it answers.
func (in *instance) serve() (*exec.Cmd, *syncBuffer) {
	in.t.Helper()
	cmd, logs := in.serveWith("serve")
	if cmd == nil {
		in.t.FailNow()
	}
	return cmd, logs
}

// serveWith starts the binary with args, a serve command, and waits until
// its /health answers. A failure is reported with Errorf and nil results,
// not Fatal, so that tests may start servers from goroutines.
func (in *instance) serveWith(args ...string) (*exec.Cmd, *syncBuffer) {
	in.t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = in.env
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		in.t.Error(err)
		return nil, nil
	}
	in.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for range 400 {
		if resp, err := http.Get("http://" + in.addr + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return cmd, logs
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	in.t.Errorf("server did not come up: %s", logs.String())
	return nil, nil
}

// syncBuffer is a buffer that the process's stderr copier and the test may
// use at once. It has no ReadFrom (a bytes.Buffer embedded would lend it
// one, which io.Copy would call without the lock).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// stop ends a server with SIGTERM and waits for it to exit.
func stop(t *testing.T, srv *exec.Cmd, logs *syncBuffer) {
	t.Helper()
	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, srv, logs)
}

// waitExit waits for a server that was signalled to exit 0.
func waitExit(t *testing.T, srv *exec.Cmd, logs *syncBuffer) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, logs)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("server did not exit after SIGTERM")
	}
}

// raw sends a request with an API key (none when key is empty) and returns
// the answer's status, header and body.
func (in *instance) raw(method, path, key string, body []byte) (int, http.Header, []byte) {
	in.t.Helper()
	req, _ := http.NewRequest(method, "http://"+in.addr+path, bytes.NewReader(body))
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		in.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, b
}

// do is raw with the body decoded as a JSON object.
func (in *instance) do(method, path, key string, body []byte) (int, http.Header, map[string]any) {
	in.t.Helper()
	code, hdr, b := in.raw(method, path, key, body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return code, hdr, out
}

func forecastBody(day string, n int, v float64) []byte {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprint(v)
	}
	return []byte(fmt.Sprintf(`{"delivery_day":%q,"series":[{"control_area":"TenneT","kind":"consumption","values":[%s]}]}`,
		day, strings.Join(vals, ",")))
}

var keyPattern = regexp.MustCompile(`^sbk_[A-Z2-7]{32}\n$`)

// TestWalkthrough follows the README: portfolio, key, serve, submit, read back,
// revoke, shut down; on both backends.
func TestWalkthrough(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			in := newInstance(t, d)
			in.cli(0, "portfolio", "put", "acme", "--name", "ACME Energie", "--control-areas", "50Hertz,TenneT", "--balancing-group", "11XACME-ENERGIEZ")
			in.cli(2, "portfolio", "put", "bad", "--name", "x", "--control-areas", "tennet")
			out, _ := in.cli(0, "portfolio", "list")
			if !strings.Contains(out, "acme") || !strings.Contains(out, "50Hertz,TenneT") || strings.Contains(out, "bad") {
				t.Errorf("portfolio list:\n%s", out)
			}
			key, _ := in.cli(0, "key", "create", "--scope", "data", "--portfolio", "acme", "--label", "walkthrough")
			if !keyPattern.MatchString(key) {
				t.Fatalf("key create stdout = %q, want only the key", key)
			}
			key = strings.TrimSpace(key)
			in.cli(2, "key", "create", "--scope", "data") // a data key needs a portfolio
			report, _ := in.cli(0, "key", "create", "--scope", "report", "--portfolio", "acme")
			list, _ := in.cli(0, "key", "list", "--json")
			var keys []map[string]any
			if err := json.Unmarshal([]byte(list), &keys); err != nil || len(keys) != 2 {
				t.Fatalf("key list: %v %s", err, list)
			}
			if strings.Contains(list, key) || strings.Contains(list, pipeline.HashKey(key)) {
				t.Error("key list shows the secret or its hash")
			}
			srv, logs := in.serve()

			code, _, ack := in.do("POST", "/v1/forecasts", key, forecastBody("2026-03-29", 92, 1.5))
			if code != 200 || ack["status"] != "created" {
				t.Fatalf("submit: %d %v", code, ack)
			}
			code, _, got := in.do("GET", "/v1/forecasts/2026-03-29", key, nil)
			if code != 200 || got["input_hash"] != ack["input_hash"] {
				t.Fatalf("read back: %d %v", code, got)
			}
			if code, _, _ := in.do("POST", "/v1/forecasts", strings.TrimSpace(report), forecastBody("2026-03-29", 92, 1)); code != 403 {
				t.Errorf("report key: %d", code)
			}
			// Revocation by another process takes effect at once: nothing caches keys.
			kl, _ := in.cli(0, "key", "list")
			id := regexp.MustCompile(`key_[0-9a-f]{10}`).FindString(kl)
			in.cli(0, "key", "revoke", id)
			if code, _, body := in.do("GET", "/v1/forecasts/2026-03-29", key, nil); code != 401 {
				t.Errorf("revoked key: %d %v", code, body)
			}
			stop(t, srv, logs)
			if strings.Contains(logs.String(), key) {
				t.Error("server log contains the key")
			}
		})
	}
}

// TestDrainOnSIGTERM holds a request in flight by sending half its body,
// signals SIGTERM, checks that a new request gets 503 with Retry-After, then
// finishes the first request, which must still be accepted, and the process
// must exit 0.
func TestDrainOnSIGTERM(t *testing.T) {
	in := newInstance(t, sqldb.SQLite)
	in.cli(0, "portfolio", "put", "acme", "--name", "ACME", "--control-areas", "TenneT")
	key, _ := in.cli(0, "key", "create", "--scope", "data", "--portfolio", "acme")
	key = strings.TrimSpace(key)
	srv, logs := in.serve()
	// serve wires every readiness check: ready before the signal.
	if code, _, body := in.do("GET", "/readyz", "", nil); code != 200 || body["status"] != "ok" {
		t.Fatalf("readyz before SIGTERM: %d %v", code, body)
	}

	body := forecastBody("2026-11-23", 96, 2)
	conn, err := net.Dial("tcp", in.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/forecasts HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", key, len(body))
	conn.Write(body[:len(body)/2])
	// Wait until the handler is reading the body: the in-flight gauge counts
	// it (the scrape that reads the gauge is not an API request).
	for i := 0; in.metric("schedbridge_http_requests_in_flight") != 1; i++ {
		if i == 500 {
			t.Fatal("the held request never reached its handler")
		}
		time.Sleep(10 * time.Millisecond)
	}

	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var code int
	var hdr http.Header
	for range 100 {
		if code, hdr, _ = in.do("GET", "/health", "", nil); code == 503 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code != 503 || hdr.Get("Retry-After") == "" {
		t.Fatalf("during drain: %d Retry-After=%q", code, hdr.Get("Retry-After"))
	}
	// Unready while draining, so that the orchestrator sends no new
	// traffic; alive, so that it does not kill the drain.
	if code, _, body := in.do("GET", "/readyz", "", nil); code != 503 || fmt.Sprint(body["failing"]) != "[draining]" {
		t.Errorf("readyz during drain: %d %v", code, body)
	}
	if code, _, _ := in.do("GET", "/livez", "", nil); code != 200 {
		t.Errorf("livez during drain: %d", code)
	}
	conn.Write(body[len(body)/2:])
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("in-flight request: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"created"`) {
		t.Errorf("in-flight request: %d %s", resp.StatusCode, b)
	}
	waitExit(t, srv, logs)
}

func TestConfigPrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("addr: 127.0.0.1:9000\nmax_body_bytes: 1000\nrate_limit: 7\n"), 0o600)
	env := map[string]string{"SCHEDBRIDGE_MAX_BODY_BYTES": "2048"}
	c, err := loadConfig(path, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:9000" || c.MaxBodyBytes != 2048 || c.RateLimit != 7 || c.DataDir != "./var" {
		t.Errorf("config = %+v", c)
	}
	os.WriteFile(path, []byte("adr: typo\n"), 0o600)
	if _, err := loadConfig(path, func(string) string { return "" }); err == nil {
		t.Error("unknown YAML field accepted")
	}
	if _, err := loadConfig("", func(k string) string { return map[string]string{"SCHEDBRIDGE_MAX_BODY_BYTES": "x"}[k] }); err == nil {
		t.Error("bad number accepted")
	}
}

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"frobnicate"}, &out, &errb, func(string) string { return "" }); code != 2 {
		t.Errorf("unknown command: exit %d", code)
	}
	if code := run(t.Context(), []string{"key", "create", "--scope", "admin"}, &out, &errb, func(string) string { return "" }); code != 2 {
		t.Errorf("bad scope: exit %d", code)
	}
	if out.Len() != 0 {
		t.Errorf("stdout on errors: %q", out.String())
	}
}
