package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// TestRequestIDEndToEnd: the binary answers X-Request-ID on the data API
// and the portal, writes the id and duration_s into its JSON access lines,
// and the submission's audit entry shows the id.
func TestRequestIDEndToEnd(t *testing.T) {
	in := newInstance(t, sqldb.SQLite)
	in.cli(0, "portfolio", "put", "acme", "--name", "ACME", "--control-areas", "TenneT")
	key, _ := in.cli(0, "key", "create", "--scope", "data", "--portfolio", "acme")
	key = strings.TrimSpace(key)
	srv, logs := in.serve()

	send := func(method, path, id string, body []byte) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+in.addr+path, bytes.NewReader(body))
		req.Header.Set("X-API-Key", key)
		if id != "" {
			req.Header.Set("X-Request-ID", id)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp, out
	}
	resp, ack := send("POST", "/v1/forecasts", "e2e-submit-1", forecastBody("2026-11-24", 96, 1))
	if resp.StatusCode != 200 || resp.Header.Get("X-Request-ID") != "e2e-submit-1" {
		t.Fatalf("submit: %d, X-Request-ID %q", resp.StatusCode, resp.Header.Get("X-Request-ID"))
	}
	hash, _ := ack["input_hash"].(string)
	resp, audit := send("GET", "/v1/submissions/"+hash, "", nil)
	generated := resp.Header.Get("X-Request-ID")
	if resp.StatusCode != 200 || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(generated) {
		t.Fatalf("audit read: %d, generated X-Request-ID %q", resp.StatusCode, generated)
	}
	reqs, _ := audit["requests"].([]any)
	if len(reqs) != 1 || reqs[0].(map[string]any)["request_id"] != "e2e-submit-1" {
		t.Errorf("audit entries %v, want the submission's request id", audit)
	}
	resp, _ = send("GET", "/portal/", "portal-7", nil)
	if resp.Header.Get("X-Request-ID") != "portal-7" {
		t.Errorf("portal page: %d, X-Request-ID %q", resp.StatusCode, resp.Header.Get("X-Request-ID"))
	}

	stop(t, srv, logs)
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is no JSON object", line)
		}
		if m["duration"] != nil {
			t.Errorf("a duration without its unit: %s", line)
		}
		if m["msg"] != "request" {
			continue
		}
		id, _ := m["request_id"].(string)
		if _, ok := m["duration_s"].(float64); !ok || id == "" {
			t.Errorf("access line without duration_s or request_id: %s", line)
		}
		seen[id] = true
	}
	for _, id := range []string{"e2e-submit-1", generated, "portal-7"} {
		if !seen[id] {
			t.Errorf("no access line with request_id %s:\n%s", id, logs)
		}
	}
}
