package portal_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	portalapi "github.com/schedbridge/schedbridge/api/portal"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// TestSSOCallbackLogsTheErrorCut: anyone can post the SSO callback, and
// its "error" field is logged when the sign-in is refused; a 60,000-byte
// value is logged cut to a few dozen bytes, not whole. No identity provider
// is contacted on this path, so the issuer is a placeholder.
func TestSSOCallbackLogsTheErrorCut(t *testing.T) {
	db := sqltest.Open(t, sqldb.SQLite)
	sso, err := portalapi.NewOIDC(portalapi.OIDCConfig{Issuer: "https://idp.invalid", ClientID: webClient,
		RedirectURL: "http://portal.test/portal/anmelden/sso/callback"})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	h := portalapi.New(portalapi.Config{BaseURL: "http://portal.test", InsecureCookies: true,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, db, sso, nil)
	t.Cleanup(h.Close)
	gin.SetMode(gin.ReleaseMode)
	g := gin.New()
	h.Register(g)

	long := strings.Repeat("x", 60_000)
	form := url.Values{"state": {"not-a-state"}, "error": {long}}.Encode()
	req := httptest.NewRequest("POST", "/portal/anmelden/sso/callback", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("callback: %d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), "SSO sign-in refused") {
		t.Fatalf("the refusal is not logged: %s", logs.String())
	}
	if logs.Len() > 1000 {
		t.Errorf("the refusal's log line is %d bytes long: %.300s...", logs.Len(), logs.String())
	}
}
