package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/schedbridge/schedbridge/api"
	portalapi "github.com/schedbridge/schedbridge/api/portal"
	"github.com/schedbridge/schedbridge/ingest/edifact"
	"github.com/schedbridge/schedbridge/ingest/mail"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/portal"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// webConsole is the console fixture with the portal wired (insecure cookies,
// as in local development, so the cookie names are the bare ones) and
// sessions made directly in the store: the sign-in itself is the portal's,
// tested there and in the browser suite.
type webConsole struct {
	*consoleFixture
}

func newWebConsole(t *testing.T, d sqldb.Dialect) *webConsole {
	f := newConsoleFixture(t, d)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	deps := f.deps
	deps.Results, deps.Runner, deps.Starter, deps.RunLogs, deps.Recorded = f.db, f.runner, f.runner, f.db, f.db
	deps.Portal = portalapi.New(portalapi.Config{BaseURL: "http://console.test", InsecureCookies: true, Now: f.clock.Now, Logger: quiet},
		f.db, nil, nil)
	deps.Operators, deps.EventCursor, deps.Calculator = f.db, f.db, f.runner
	m, err := jobs.NewMako(f.db, f.bucket, jobs.MakoConfig{Now: f.clock.Now, ParseEDI: edifact.Parse, ParseMail: mail.Parse, Logger: quiet,
		Self: jobs.Identity{MPID: "9900000000000", Name: "Beispiel Energie GmbH", Street: "Musterweg 1", PostalCode: "10115",
			City: "Berlin", Email: "mako@beispiel-energie.de", BalancingGroup: "11XSBTEST-BKV--A"}})
	if err != nil {
		t.Fatal(err)
	}
	deps.Mako = m
	f.deps = deps
	f.srv = api.New(api.Config{Now: f.clock.Now, Logger: quiet}, deps)
	return &webConsole{f}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// signIn stores a user and a live session; the answer is the cookie header
// and the CSRF token of that session.
func (w *webConsole) signIn(t *testing.T, email string, method portal.Method, claim bool) (cookie, csrf string) {
	t.Helper()
	ctx := context.Background()
	now := w.clock.Now()
	id := "u_" + sha(email)[:12]
	if err := w.db.CreateUser(ctx, portal.User{ID: id, Email: email, Name: "Op " + email, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	tok, csrf := "session-of-"+email, "csrf-of-"+email
	if err := w.db.CreateSession(ctx, portal.Session{IDHash: sha(tok), CSRFHash: sha(csrf), UserID: id, Method: method,
		Client: portal.ClientWeb, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour), OperatorClaim: claim}, ""); err != nil {
		t.Fatal(err)
	}
	return "sb_session=" + tok + "; sb_csrf=" + csrf, csrf
}

// TestWebConsoleAccess: who gets in, and what the others see.
func TestWebConsoleAccess(t *testing.T) {
	for _, d := range []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			w := newWebConsole(t, d)
			if _, err := w.db.AddOperator(context.Background(), portal.Operator{Email: "list@firma.test", AddedAt: consoleNow, AddedBy: "cli"}); err != nil {
				t.Fatal(err)
			}
			claim, _ := w.signIn(t, "claim@firma.test", portal.MethodSSO, true)
			listed, _ := w.signIn(t, "list@firma.test", portal.MethodSSO, false)
			other, _ := w.signIn(t, "other@firma.test", portal.MethodSSO, false)
			link, _ := w.signIn(t, "link@firma.test", portal.MethodMagicLink, true)
			for _, tc := range []struct {
				name, cookie string
				code         int
				location     string
				text         string
			}{
				{"anonymous", "", http.StatusSeeOther, "/console/anmelden", ""},
				{"unknown session", "sb_session=nothing", http.StatusSeeOther, "/console/anmelden", ""},
				{"group claim", claim, http.StatusOK, "", "Kette"},
				{"operator list", listed, http.StatusOK, "", "Kette"},
				{"not an operator", other, http.StatusForbidden, "", "nicht als Disponentin"},
				{"magic link", link, http.StatusForbidden, "", "Firmenkonto"},
			} {
				r := w.do("GET", "/console/lage", nil, "Cookie", tc.cookie)
				if r.code != tc.code || r.header.Get("Location") != tc.location || !strings.Contains(string(r.body), tc.text) {
					t.Errorf("%s: %d %q, want %d %q containing %q", tc.name, r.code, r.header.Get("Location"), tc.code, tc.location, tc.text)
				}
				if csp := r.header.Get("Content-Security-Policy"); tc.code != http.StatusSeeOther &&
					(!strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe")) {
					t.Errorf("%s: CSP %q", tc.name, csp)
				}
				// The API takes the same decision: 401 without a session, 403
				// for a person who is not an operator.
				want := map[int]int{http.StatusSeeOther: 401, http.StatusOK: 200, http.StatusForbidden: 403}[tc.code]
				if r := w.do("GET", "/v1/console/summary", nil, "Cookie", tc.cookie); r.code != want {
					t.Errorf("%s: API %d, want %d: %s", tc.name, r.code, want, r.body)
				}
			}
			// Removed from the list: out at the next request.
			if err := w.db.RemoveOperator(context.Background(), "list@firma.test"); err != nil {
				t.Fatal(err)
			}
			if r := w.do("GET", "/console/laeufe", nil, "Cookie", listed); r.code != http.StatusForbidden {
				t.Errorf("removed operator: %d", r.code)
			}
		})
	}
}

// TestWebConsoleActions: an action needs the session's CSRF token, is
// idempotent by its key, and lands in the audit trail with the operator.
func TestWebConsoleActions(t *testing.T) {
	for _, d := range []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			w := newWebConsole(t, d)
			cookie, csrf := w.signIn(t, "claim@firma.test", portal.MethodSSO, true)
			_, otherCSRF := w.signIn(t, "other@firma.test", portal.MethodSSO, true)
			body := []byte(`{"stage":"aggregate","day":"2026-11-24"}`)
			for _, tc := range []struct {
				name    string
				headers []string
				code    int
			}{
				{"no CSRF header", []string{"Cookie", cookie}, 403},
				{"another session's token", []string{"Cookie", cookie, "X-CSRF-Token", otherCSRF}, 403},
				{"another origin", []string{"Cookie", cookie, "X-CSRF-Token", csrf, "Origin", "http://evil.test"}, 403},
				{"with token", []string{"Cookie", cookie, "X-CSRF-Token", csrf, "Idempotency-Key", "web-1"}, 202},
				{"same key again", []string{"Cookie", cookie, "X-CSRF-Token", csrf, "Idempotency-Key", "web-1"}, 202},
			} {
				if r := w.do("POST", "/v1/console/runs", body, tc.headers...); r.code != tc.code {
					t.Errorf("%s: %d, want %d: %s", tc.name, r.code, tc.code, r.body)
				}
			}
			runs, err := w.db.Runs(context.Background(), pipeline.RunQuery{Stage: pipeline.StageAggregate, Limit: 10})
			if err != nil || len(runs) != 1 {
				t.Fatalf("runs started: %d, %v; want 1 (the key makes the second click the same action)", len(runs), err)
			}
			w.awaitRun(t, runs[0].ID)
			trail, err := w.db.RecentAudit(context.Background(), 10)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range trail {
				got = append(got, fmt.Sprintf("%s %d %s", a.Endpoint, a.StatusCode, a.Operator))
			}
			want := []string{"POST /v1/console/runs 202 claim@firma.test", "POST /v1/console/runs 202 claim@firma.test",
				"POST /v1/console/runs 403 claim@firma.test", "POST /v1/console/runs 403 claim@firma.test", "POST /v1/console/runs 403 claim@firma.test"}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("audit trail, newest first:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// A process key's action is audited with its key.
			if r := w.as("process", "POST", "/v1/console/runs/"+fmt.Sprint(runs[0].ID)+"/retry", nil); r.code != 202 {
				t.Fatalf("retry with the key: %d %s", r.code, r.body)
			}
			if trail, _ := w.db.RecentAudit(context.Background(), 1); len(trail) != 1 || trail[0].KeyID == "" || trail[0].Operator != "" {
				t.Errorf("key action in the trail: %+v", trail)
			}
		})
	}
}

// TestWebConsolePages: every page renders for an operator as well-formed
// HTML with its title and navigation; bad parameters get the error page.
func TestWebConsolePages(t *testing.T) {
	w := newWebConsole(t, sqldb.SQLite)
	w.seedSchedules(t, pipeline.NewDay(2026, 11, 24))
	// A file rejected for one bad cell: the Eingang page names its line
	// and column.
	var csv strings.Builder
	csv.WriteString("malo;day;unit")
	for q := 1; q <= 96; q++ {
		fmt.Fprintf(&csv, ";v%d", q)
	}
	csv.WriteString("\n123;2026-11-20;KWH" + strings.Repeat(";1,5", 96) + "\n")
	ctx := context.Background()
	if err := w.bucket.Put(ctx, "inbox/p1/metered-data/kaputt.csv", strings.NewReader(csv.String()), int64(csv.Len())); err != nil {
		t.Fatal(err)
	}
	if _, err := w.inbox.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	cookie, _ := w.signIn(t, "claim@firma.test", portal.MethodSSO, true)
	for _, tc := range []struct {
		path, title string
		code        int
		text        string
	}{
		{"/console/lage", "Lage", 200, "Anomalie (ANO)"},
		{"/console/lage?day=2026-11-24", "Lage", 200, "A63: time series mismatch (Zeitreihe TS1)"},
		{"/console/laeufe", "Läufe", 200, "Fahrpläne"},
		{"/console/laeufe?status=failed", "Läufe", 200, "Keine Läufe"},
		{"/console/laeufe?stage=&status=&trigger=&day=", "Läufe", 200, "Fahrpläne"}, // a form's "alle" is no filter
		{"/console/eingang", "Eingang", 200, "<tr><td>2</td><td>malo</td><td>"},
		{"/console/eingang?state=pending", "Eingang", 200, "Keine Dateien"},
		{"/console/fahrplaene?day=2026-11-24", "Fahrpläne", 200, "MSG-p1-TenneT"},
		{"/console/kalkulation", "Kalkulation", 200, "CSV herunterladen"},
		{"/console/marktpartner", "Marktpartner", 200, "Nach letztem Kontakt ordnen"},
		{"/console/marktpartner?ordnung=kontakt", "Marktpartner", 200, "Nach Status ordnen"},
		{"/console/antworten", "Antworten", 200, "Keine Antworten"},
		{"/console/lage?day=2026-13-01", "Fehler", 422, "ungültig"},
		{"/console/eingang?state=lost", "Fehler", 422, "ungültig"},
		{"/console/laeufe/999999", "Fehler", 404, "Nicht gefunden"},
		{"/console/gibtsnicht", "Fehler", 404, "Nicht gefunden"},
	} {
		r := w.do("GET", tc.path, nil, "Cookie", cookie)
		if r.code != tc.code || !strings.Contains(string(r.body), tc.text) {
			t.Errorf("%s: %d, want %d with %q:\n%.2000s", tc.path, r.code, tc.code, tc.text, r.body)
			continue
		}
		doc, err := html.Parse(strings.NewReader(string(r.body)))
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if got := titleOf(doc); got != tc.title+" – Leitstand" {
			t.Errorf("%s: title %q", tc.path, got)
		}
	}
}

func titleOf(n *html.Node) string {
	if n.Type == html.ElementNode && n.Data == "title" && n.FirstChild != nil {
		return n.FirstChild.Data
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if s := titleOf(c); s != "" {
			return s
		}
	}
	return ""
}
