package portal_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	portalapi "github.com/schedbridge/schedbridge/api/portal"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/portal"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// BenchmarkPortal measures signed-in requests through the handler on both
// databases: the session lookup (and its touch), the user, and the route's
// own reads or writes. An employee with a year of leave requests stands
// behind each.
func BenchmarkPortal(b *testing.B) {
	for _, d := range []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			db := sqltest.Open(b, d)
			ctx := context.Background()
			now := time.Date(2026, 11, 23, 9, 0, 0, 0, pipeline.Berlin)
			if _, err := db.PutEmployee(ctx, portal.Employee{ID: "P-1", Name: "Anna", Email: "anna@firma.test", State: "BE", LeaveDaysPerYear: 30},
				portal.User{Email: "anna@firma.test", Name: "Anna"}, now); err != nil {
				b.Fatal(err)
			}
			if err := db.PutCompensation(ctx, "P-1", []portal.Component{
				{Name: "Grundgehalt", AmountCents: 520000, Interval: portal.Monthly, Visibility: portal.Visible},
				{Name: "Bonus", AmountCents: 640000, Interval: portal.Yearly, Visibility: portal.Masked},
			}, now); err != nil {
				b.Fatal(err)
			}
			start := pipeline.NewDay(2026, time.January, 5)
			for i := range 24 { // one week of leave every two weeks
				s := start.AddDays(14 * i)
				if _, err := db.CreateLeaveRequest(ctx, portal.LeaveRequest{EmployeeID: "P-1", Type: portal.Erholungsurlaub, Start: s, End: s.AddDays(4),
					WorkingDays: 5, Status: portal.LeaveRequested, CreatedAt: now}); err != nil {
					b.Fatal(err)
				}
			}
			u, err := db.UserByEmail(ctx, "anna@firma.test")
			if err != nil {
				b.Fatal(err)
			}
			tok, csrf := strings.Repeat("s", 43), strings.Repeat("c", 43)
			if err := db.CreateSession(ctx, portal.Session{IDHash: sum(tok), CSRFHash: sum(csrf), UserID: u.ID, Method: portal.MethodSSO,
				Client: portal.ClientWeb, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(12 * time.Hour)}, ""); err != nil {
				b.Fatal(err)
			}
			h := portalapi.New(portalapi.Config{BaseURL: "https://portal.example", Now: func() time.Time { return now },
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, db, nil, nil)
			gin.SetMode(gin.ReleaseMode)
			g := gin.New()
			h.Register(g)
			do := func(b *testing.B, method, path, body string, want int) {
				req := httptest.NewRequest(method, path, strings.NewReader(body))
				req.AddCookie(&http.Cookie{Name: "__Host-sb_session", Value: tok})
				req.AddCookie(&http.Cookie{Name: "__Host-sb_csrf", Value: csrf})
				req.Header.Set(portalapi.CSRFHeader, csrf)
				w := httptest.NewRecorder()
				g.ServeHTTP(w, req)
				if w.Code != want {
					b.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
				}
			}
			for _, c := range []struct{ name, path string }{
				{"session", "/api/auth/session"},
				{"profile", "/api/v1/portal/profile"},
				{"compensation", "/api/v1/portal/compensation"},
				{"leave-page", "/portal/urlaub"},
			} {
				b.Run(c.name, func(b *testing.B) {
					for b.Loop() {
						do(b, "GET", c.path, "", 200)
					}
				})
			}
			// Each new request lies a week after the last one, across runs
			// of the benchmark too, so none overlaps; the overlap check
			// reads the employee's absences each time.
			i := 0
			b.Run("create-leave", func(b *testing.B) {
				for b.Loop() {
					s := pipeline.NewDay(2030, time.January, 7).AddDays(7 * i)
					i++
					do(b, "POST", "/api/v1/portal/leave-requests",
						fmt.Sprintf(`{"start_date":%q,"end_date":%q}`, s, s.AddDays(2)), 201)
				}
			})
		})
	}
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
