package api_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/api/requestid"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestRequestID: every answer carries X-Request-ID, the client's when it is
// sane, a generated one otherwise; the access log line carries the same id
// and the duration in float seconds (duration_s), and a data request's audit
// entry stores it.
func TestRequestID(t *testing.T) {
	var logs bytes.Buffer
	f := newFixture(t, sqldb.SQLite, api.Config{Logger: slog.New(requestid.Handler(slog.NewJSONHandler(&logs, nil)))})
	tests := []struct {
		name, method, path string
		sent               string // "" sends no header
		key                string // "" sends no credential
		status             int
		route              string
		audited            bool
		keep               bool // the sent id is answered
	}{
		{"client id kept", "POST", "/v1/forecasts", "0b9c6a8e-4d1f-4c55-9f7e-2a2d1c3b4e5f", "data1", 422, "/v1/forecasts", true, true},
		{"none sent", "POST", "/v1/forecasts", "", "data1", 422, "/v1/forecasts", true, false},
		{"refused key, still audited", "GET", "/v1/forecasts/2026-11-24", "trace-7", "", 401, "/v1/forecasts/:delivery_day", true, true},
		{"spaces replaced", "GET", "/v1/process/inbox", "a b c", "process", 200, "/v1/process/inbox", false, false},
		{"too long replaced", "GET", "/health", strings.Repeat("x", 129), "", 200, "/health", false, false},
		{"unknown path", "GET", "/v1/nothing-here", "abc", "", 404, "unmatched", false, true},
		{"portal path without a portal", "GET", "/api/v1/portal/me", "portal-1", "", 404, "unmatched", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs.Reset()
			var headers []string
			if tt.sent != "" {
				headers = append(headers, "X-Request-ID", tt.sent)
			}
			if tt.key != "" {
				headers = append(headers, "X-API-Key", f.keys[tt.key])
			}
			r := f.do(tt.method, tt.path, []byte(`{}`), headers...)
			if r.code != tt.status {
				t.Fatalf("status %d, want %d: %s", r.code, tt.status, r.body)
			}
			id := r.header.Get("X-Request-ID")
			switch {
			case tt.keep && id != tt.sent:
				t.Errorf("answered id %q, want the client's %q", id, tt.sent)
			case !tt.keep && !generatedID.MatchString(id):
				t.Errorf("answered id %q, want a generated one", id)
			}
			var access []map[string]any
			for _, rec := range jsonLines(t, logs.Bytes()) {
				if rec["request_id"] != id {
					t.Errorf("line without the request's id: %v", rec)
				}
				if rec["msg"] == "request" {
					access = append(access, rec)
				}
			}
			if len(access) != 1 {
				t.Fatalf("access log lines: %v", access)
			}
			a := access[0]
			d, ok := a["duration_s"].(float64)
			if !ok || d < 0 || d > 60 || a["duration"] != nil || a["route"] != tt.route || a["status"] != float64(tt.status) {
				t.Errorf("access line %v: want duration_s as float seconds, no duration, route %s", a, tt.route)
			}
			if tt.audited {
				entries, err := f.db.RecentAudit(context.Background(), 1)
				if err != nil || len(entries) != 1 || entries[0].RequestID != id || entries[0].StatusCode != tt.status {
					t.Errorf("newest audit entry %+v, %v; want request id %s", entries, err, id)
				}
			}
		})
	}
}

type downDB struct{}

func (downDB) Ping(context.Context) error { return errors.New("connection refused") }

// TestRequestIDInHandlerLogs: a line a handler logs with the request's
// context carries the request's id too, not only the access line.
func TestRequestIDInHandlerLogs(t *testing.T) {
	var logs bytes.Buffer
	srv := api.New(api.Config{Now: func() time.Time { return now }, Logger: slog.New(requestid.Handler(slog.NewJSONHandler(&logs, nil)))},
		api.Deps{DB: downDB{}})
	r := serve(srv, (&fixture{}).request("GET", "/health", nil, "X-Request-ID", "probe-42"))
	if r.code != 503 || r.header.Get("X-Request-ID") != "probe-42" {
		t.Fatalf("GET /health: %d, X-Request-ID %q", r.code, r.header.Get("X-Request-ID"))
	}
	var msgs []string
	for _, rec := range jsonLines(t, logs.Bytes()) {
		if rec["request_id"] != "probe-42" {
			t.Errorf("line without the request's id: %v", rec)
		}
		msgs = append(msgs, rec["msg"].(string))
	}
	if strings.Join(msgs, "|") != "health: database unreachable|request" {
		t.Errorf("logged %q", msgs)
	}
}

// TestOpenAPIRequestID: every response of the served document, inline or
// shared, documents the X-Request-ID header, and the description says that
// a client may send its own.
func TestOpenAPIRequestID(t *testing.T) {
	f := newFixture(t, sqldb.SQLite, api.Config{})
	doc, _ := servedDocument(t, f)
	comps := doc.raw["components"].(map[string]any)
	if comps["headers"].(map[string]any)["RequestID"] == nil {
		t.Error("components.headers has no RequestID")
	}
	if info := doc.raw["info"].(map[string]any)["description"].(string); !strings.Contains(info, "`X-Request-ID`") {
		t.Error("info.description does not describe X-Request-ID")
	}
	check := func(where string, r any) {
		resp := r.(map[string]any)
		if ref, ok := resp["$ref"].(string); ok {
			name, _ := strings.CutPrefix(ref, "#/components/responses/")
			resp = comps["responses"].(map[string]any)[name].(map[string]any)
		}
		h, _ := resp["headers"].(map[string]any)
		if x, _ := h["X-Request-ID"].(map[string]any); x["$ref"] != "#/components/headers/RequestID" {
			t.Errorf("%s documents no X-Request-ID header: %v", where, h)
		}
	}
	n := 0
	for path, item := range doc.raw["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			for code, r := range op.(map[string]any)["responses"].(map[string]any) {
				check(method+" "+path+" "+code, r)
				n++
			}
		}
	}
	if n < 100 {
		t.Errorf("checked %d responses only", n)
	}
}
