package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// promtool returns the path of Prometheus's promtool, failing t when it is
// missing: deploy/dev/test-deps.sh installs it, and the check of the metric
// names must not pass silently on a machine where it cannot run.
func promtool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if p, err := exec.LookPath("/usr/bin/promtool"); err == nil {
		return p
	}
	t.Fatal("promtool is not installed (Debian package prometheus): run `make test-deps`")
	return ""
}

// scrape returns the server's /metrics as served on its metrics listener.
func (in *instance) scrape() string {
	in.t.Helper()
	resp, err := http.Get("http://" + in.metricsAddr + "/metrics")
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		in.t.Fatalf("GET /metrics: %d %v\n%s", resp.StatusCode, err, b)
	}
	return string(b)
}

// sample returns the value of one sample of a scrape; ok is false when the
// scrape lacks it.
func sample(t *testing.T, scrape, name string) (v float64, ok bool) {
	t.Helper()
	for _, line := range strings.Split(scrape, "\n") {
		if s, found := strings.CutPrefix(line, name+" "); found {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f, true
		}
	}
	return 0, false
}

// metric is the value of one sample of the server's /metrics, 0 when the
// server does not show it (yet).
func (in *instance) metric(name string) float64 {
	in.t.Helper()
	v, _ := sample(in.t, in.scrape(), name)
	return v
}

// finishedAt reads when a run finished through the process API.
func (in *instance) finishedAt(key string, id string) time.Time {
	in.t.Helper()
	code, _, body := in.do("GET", "/v1/process/runs/"+id, key, nil)
	s, _ := body["finished_at"].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if code != 200 || err != nil || body["status"] != "succeeded" {
		in.t.Fatalf("run %s: %d %v (%v)", id, code, body, err)
	}
	return at
}

// TestMetricsFromRecordedState: the stage metrics come from the run records,
// not from what the serving process ran. A run of `schedbridge run` while no
// server runs shows at /metrics after the next start, in place of the older
// run the previous server showed, and the names of the served metrics pass
// promtool's check.
func TestMetricsFromRecordedState(t *testing.T) {
	tool := promtool(t)
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			in := newInstance(t, d)
			in.env = append(in.env, "SCHEDBRIDGE_SCHEDULER=false", "SCHEDBRIDGE_DRAIN_GRACE=0s")
			// demo stages a portfolio and runs the chain: two schedule
			// messages, one per control area.
			out, _ := in.cli(0, "demo", "--locations", "60", "--day", "2026-03-29")
			key := regexp.MustCompile(`export KEY=(sbk_[A-Z2-7]+)`).FindStringSubmatch(out)
			if key == nil {
				t.Fatalf("demo printed no key:\n%s", out)
			}
			const last = `schedbridge_stage_last_success_timestamp_seconds{stage="schedules"}`
			srv, logs := in.serve()
			first, ok := sample(t, in.scrape(), last)
			if !ok {
				t.Fatalf("no %s after the demo's chain:\n%s", last, in.scrape())
			}
			stop(t, srv, logs)

			// A CLI run while no server runs.
			_, stderr := in.cli(0, "run", "schedules", "--day", "2026-03-29")
			id := regexp.MustCompile(`schedules 2026-03-29: run (\d+) succeeded`).FindStringSubmatch(stderr)
			if id == nil {
				t.Fatalf("run schedules: %s", stderr)
			}

			srv, logs = in.serve()
			defer stop(t, srv, logs)
			scrape := in.scrape()
			want := in.finishedAt(key[1], id[1])
			got, ok := sample(t, scrape, last)
			if !ok || got <= first || time.UnixMicro(int64(got*1e6+0.5)).Sub(want).Abs() > time.Microsecond {
				t.Errorf("%s = %v (present %v), want the CLI run's end %v (%v), after the demo's %v",
					last, got, ok, want, float64(want.UnixMicro())/1e6, first)
			}
			for name, want := range map[string]float64{
				// The re-run found the schedules unchanged and sent nothing.
				"schedbridge_schedules_sent_total":                     2,
				`schedbridge_schedule_messages{status="submitted"}`:    2,
				`schedbridge_schedule_messages{status="confirmed"}`:    0,
				"schedbridge_market_partners_red":                      0,
				`schedbridge_state_scrape_errors_total{source="runs"}`: 0,
			} {
				if got, ok := sample(t, scrape, name); !ok || got != want {
					t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
				}
			}
			for _, stage := range []string{"forecast", "aggregate", "open-position", "chain"} {
				if _, ok := sample(t, scrape, fmt.Sprintf(`schedbridge_stage_last_success_timestamp_seconds{stage=%q}`, stage)); !ok {
					t.Errorf("no last success of %s from the demo's chain", stage)
				}
			}
			// This process ran no stage: the runner's own counter is empty.
			if strings.Contains(scrape, "schedbridge_stage_runs_total{") {
				t.Errorf("the serving process counted runs it did not run:\n%s", scrape)
			}

			cmd := exec.Command(tool, "check", "metrics")
			cmd.Stdin = strings.NewReader(scrape)
			report, err := cmd.CombinedOutput()
			if err != nil || len(bytes.TrimSpace(report)) != 0 {
				t.Errorf("promtool check metrics: %v\n%s", err, report)
			}
		})
	}
}

// TestMetricsOnTheirOwnListener: serve shows /metrics on metrics_addr
// (SCHEDBRIDGE_METRICS_ADDR) and nowhere on the API's listener, whose
// clients must not read the schedules per TSO answer, the inbox's backlog
// or the leader flag. The metrics listener serves nothing but /metrics.
// The listeners do not depend on the database, so SQLite alone is used.
func TestMetricsOnTheirOwnListener(t *testing.T) {
	in := newInstance(t, sqldb.SQLite)
	in.env = append(in.env, "SCHEDBRIDGE_SCHEDULER=false", "SCHEDBRIDGE_DRAIN_GRACE=0s")
	srv, logs := in.serve()
	defer stop(t, srv, logs)

	if code, _, b := in.raw("GET", "/metrics", "", nil); code != 404 || strings.Contains(string(b), "schedbridge_") {
		t.Errorf("GET /metrics on the API's listener: %d\n%.300s", code, b)
	}
	scrape := in.scrape()
	for _, want := range []string{`schedbridge_http_requests_total{code="200",method="GET",route="/health"}`, "go_goroutines ", "process_resident_memory_bytes "} {
		if !strings.Contains(scrape, want) {
			t.Errorf("the metrics listener's scrape lacks %s", want)
		}
	}
	resp, err := http.Get("http://" + in.metricsAddr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET /health on the metrics listener: %d, want 404", resp.StatusCode)
	}
	if !strings.Contains(logs.String(), `"metrics_addr":"`+in.metricsAddr+`"`) {
		t.Errorf("the start line does not name the metrics listener:\n%s", logs)
	}
}

// TestMetricsAddrConfig: the metrics listen on loopback unless configured,
// and a malformed address refuses the start with the variable's name.
func TestMetricsAddrConfig(t *testing.T) {
	c, err := loadConfig("", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	host, _, err := net.SplitHostPort(c.MetricsAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() || c.MetricsAddr == c.Addr {
		t.Errorf("default metrics_addr %q (%v): want a loopback address apart from addr %q", c.MetricsAddr, err, c.Addr)
	}
	env := map[string]string{"SCHEDBRIDGE_METRICS_ADDR": "0.0.0.0:9100"}
	if c, err := loadConfig("", func(k string) string { return env[k] }); err != nil || c.MetricsAddr != "0.0.0.0:9100" {
		t.Errorf("SCHEDBRIDGE_METRICS_ADDR=0.0.0.0:9100: %q, %v", c.MetricsAddr, err)
	}
	env["SCHEDBRIDGE_METRICS_ADDR"] = "9100"
	if _, err := loadConfig("", func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "SCHEDBRIDGE_METRICS_ADDR") {
		t.Errorf("SCHEDBRIDGE_METRICS_ADDR=9100: %v, want a refusal naming the variable", err)
	}
}
