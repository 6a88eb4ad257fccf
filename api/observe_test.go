package api_test

import (
	"bytes"
	"crypto/rand"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// randomMethod is a valid HTTP method token of n random capital letters,
// different on every call.
func randomMethod(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = 'A' + b[i]%26
	}
	return string(b)
}

// TestRequestMetricsAndLogsAreBounded: an anonymous client that sends
// hundreds of requests, each with a method of its own 1,000 characters long,
// adds no series to the request metrics beyond the method "other", and each
// of its access-log lines carries the method cut to a few dozen characters.
// Before, every method was a label value of its own and was logged whole.
func TestRequestMetricsAndLogsAreBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	f := newFixture(t, sqldb.SQLite, api.Config{Registry: reg, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})

	seriesOf := func() map[string]int {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{}
		for _, mf := range families {
			n[mf.GetName()] = len(mf.GetMetric())
		}
		return n
	}
	// The standard methods are labelled as they are.
	f.do("GET", "/health", nil)
	f.do("GET", "/no/such/path", nil)
	before := seriesOf()

	const requests = 300
	for i := range requests {
		path := "/health"
		if i%2 == 1 {
			path = "/no/such/path"
		}
		if r := f.do(randomMethod(1000), path, nil); r.code != 405 && r.code != 404 {
			t.Fatalf("%s: %d %s", path, r.code, r.body)
		}
	}
	after := seriesOf()
	for _, name := range []string{"schedbridge_http_requests_total", "schedbridge_http_request_duration_seconds"} {
		// At most one new series per status code: method "other", route
		// "unmatched", code 404 or 405.
		if grew := after[name] - before[name]; grew > 2 {
			t.Errorf("%s grew by %d series after %d requests with random methods", name, grew, requests)
		}
	}
	families, _ := reg.Gather()
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" && l.GetValue() != "GET" && l.GetValue() != "other" {
					t.Errorf("%s: method label %.40q...", mf.GetName(), l.GetValue())
				}
			}
		}
	}

	lines := 0
	for _, r := range jsonLines(t, logs.Bytes()) {
		if r["msg"] != "request" {
			continue
		}
		lines++
		if m, _ := r["method"].(string); len(m) > 40 {
			t.Errorf("access log has a method of %d bytes: %.40q...", len(m), m)
		}
	}
	if lines != requests+2 {
		t.Errorf("%d access-log lines, want %d", lines, requests+2)
	}
	if n := logs.Len(); n > (requests+2)*1000 {
		t.Errorf("the access log of %d requests is %d bytes", requests+2, n)
	}
	if !strings.Contains(logs.String(), `"method":"GET"`) {
		t.Error("a standard method is not logged as it is")
	}
}
