package portal_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	portalapi "github.com/schedbridge/schedbridge/api/portal"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// TestCookieModes: by default the cookies are Secure with the __Host-
// prefix; the local-development mode drops both, and only then.
func TestCookieModes(t *testing.T) {
	db := sqltest.Open(t, sqldb.SQLite)
	for _, c := range []struct {
		insecure bool
		name     string
		secure   bool
	}{
		{false, "__Host-sb_csrf", true},
		{true, "sb_csrf", false},
	} {
		h := portalapi.New(portalapi.Config{BaseURL: "http://localhost:8080", InsecureCookies: c.insecure,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, db, nil, nil)
		g := gin.New()
		h.Register(g)
		w := httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest("GET", "/api/auth/session", nil))
		res := w.Result()
		cookies := res.Cookies()
		if len(cookies) != 1 || cookies[0].Name != c.name || cookies[0].Secure != c.secure || cookies[0].SameSite != http.SameSiteLaxMode {
			t.Errorf("insecure=%v: cookies %+v", c.insecure, cookies)
		}
		// A cookie under the other mode's name is not this mode's cookie:
		// the CSRF check must not accept it.
		other := "sb_csrf"
		if c.insecure {
			other = "__Host-sb_csrf"
		}
		req := httptest.NewRequest("POST", "/api/auth/magic-link", nil)
		req.AddCookie(&http.Cookie{Name: other, Value: cookies[0].Value})
		req.Header.Set(portalapi.CSRFHeader, cookies[0].Value)
		w = httptest.NewRecorder()
		g.ServeHTTP(w, req)
		if w.Code != http.StatusForbidden {
			t.Errorf("insecure=%v: a cookie of the other mode passed the CSRF check: %d", c.insecure, w.Code)
		}
	}
}
