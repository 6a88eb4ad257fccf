package api_test

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/api/portal"
)

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
