package portal_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	portalapi "github.com/schedbridge/schedbridge/api/portal"
	"github.com/schedbridge/schedbridge/api/portal/portaltest"
	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/portal"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// logBuf collects the server's log lines, to prove no secret is logged.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// env is one portal server on one database backend, with the shared
// identity provider and mail catcher.
type env struct {
	t       *testing.T
	base    string
	srv     *httptest.Server
	h       *portalapi.Handler
	db      *sqldb.DB
	clock   *clocktest.Clock
	logs    *logBuf
	idp     *portaltest.IdP
	mail    *portaltest.MailDev
	secrets *secrets
	// tag makes e-mail addresses unique per backend, as the mail catcher is shared.
	tag string
}

// secrets are every token the test saw: cookie values, magic-link codes,
// authorization codes. No response may carry one in a URL or a Location
// header, and no log line may carry one.
type secrets struct {
	mu  sync.Mutex
	set map[string]bool
}

func (s *secrets) add(v string) {
	if len(v) < 16 {
		return
	}
	s.mu.Lock()
	s.set[v] = true
	s.mu.Unlock()
}

func (s *secrets) in(text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for v := range s.set {
		if strings.Contains(text, v) || strings.Contains(text, url.QueryEscape(v)) {
			return v
		}
	}
	return ""
}

const (
	webClient    = "schedbridge-portal"
	webSecret    = "web-client-secret-for-tests-only"
	nativeClient = "schedbridge-app"
	nativeURI    = "de.schedbridge.portal:/callback"
)

// listen reserves the server's address before the identity provider starts,
// because the provider must know the redirect URI.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// newEnv starts the server; opts change the relying party's configuration.
func newEnv(t *testing.T, d sqldb.Dialect, ln net.Listener, idp *portaltest.IdP, mail *portaltest.MailDev, insecure bool,
	opts ...func(*portalapi.OIDCConfig)) *env {
	t.Helper()
	db := sqltest.Open(t, d)
	e := &env{t: t, db: db, clock: clocktest.New(time.Date(2026, 11, 23, 9, 0, 0, 0, pipeline.Berlin)), logs: &logBuf{},
		idp: idp, mail: mail, secrets: &secrets{set: map[string]bool{}}, tag: string(d)}
	e.base = "http://" + ln.Addr().String()
	oc := portalapi.OIDCConfig{Issuer: idp.Issuer, ClientID: webClient, ClientSecret: webSecret,
		RedirectURL: e.base + "/portal/anmelden/sso/callback", NativeClientID: nativeClient, NativeRedirectURIs: []string{nativeURI}}
	for _, o := range opts {
		o(&oc)
	}
	sso, err := portalapi.NewOIDC(oc)
	if err != nil {
		t.Fatal(err)
	}
	mailer, err := portalapi.NewSMTP(portalapi.SMTPConfig{Addr: mail.SMTPAddr, From: "Mitarbeiterportal <portal@firma.test>", Security: "none"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.h = portalapi.New(portalapi.Config{BaseURL: e.base, InsecureCookies: insecure, Now: e.clock.Now, Logger: log, Audit: db}, db, sso, mailer)
	gin.SetMode(gin.ReleaseMode)
	g := gin.New()
	g.HandleMethodNotAllowed = true
	g.NoRoute(portalapi.NotFound)
	g.NoMethod(portalapi.NotFound)
	e.h.Register(g)
	e.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: g}}
	e.srv.Start()
	t.Cleanup(func() {
		e.srv.Close()
		e.h.Close()
		if v := e.secrets.in(e.logs.String()); v != "" {
			t.Errorf("a token is in the server's log: %.12s...", v)
		}
	})
	e.seed()
	return e
}

// seed loads what HR would: two employees (one linked by SSO subject, one
// new hire signing in by magic link) and an applicant without a record.
func (e *env) seed() {
	ctx := context.Background()
	at := e.clock.Now()
	must := func(err error) {
		e.t.Helper()
		if err != nil {
			e.t.Fatal(err)
		}
	}
	entry, _ := pipeline.ParseDay("2019-04-01")
	_, err := e.db.PutEmployee(ctx, portal.Employee{ID: "P-1001", Name: "Anna Schmidt", Email: "anna@firma.test", Department: "Energiehandel",
		Position: "Portfoliomanagerin", EntryDate: entry, State: "BE", WeeklyHours: 39.5, LeaveDaysPerYear: 30},
		portal.User{Email: "anna@firma.test", Name: "Anna Schmidt", SSOIssuer: e.idp.Issuer, SSOSubject: "sub-anna"}, at)
	must(err)
	must(e.db.PutCompensation(ctx, "P-1001", []portal.Component{
		{Name: "Grundgehalt", AmountCents: 520000, Interval: portal.Monthly, Visibility: portal.Visible},
		{Name: "Jahresbonus", AmountCents: 640000, Interval: portal.Yearly, Visibility: portal.Masked},
	}, at))
	_, err = e.db.PutEmployee(ctx, portal.Employee{ID: "P-1002", Name: "Jonas Neu", Email: e.addr("jonas"), State: "BY", LeaveDaysPerYear: 28},
		portal.User{Email: e.addr("jonas"), Name: "Jonas Neu", MagicLink: true}, at)
	must(err)
	must(e.db.PutCompensation(ctx, "P-1002", []portal.Component{
		{Name: "Grundgehalt", AmountCents: 410000, Interval: portal.Monthly, Visibility: portal.Visible},
	}, at))
	_, _, err = e.db.PutUser(ctx, portal.User{Email: e.addr("bewerberin"), Name: "Berta Bewerberin", Roles: []string{portal.RoleApplicant}, MagicLink: true}, at)
	must(err)
}

func (e *env) addr(local string) string { return local + "-" + e.tag + "@example.test" }

// browser keeps cookies like a browser, but also over plain http (the
// Secure flag is asserted separately), and never follows redirects.
type browser struct {
	e       *env
	cookies map[string]*http.Cookie
	header  http.Header
}

func (e *env) browser() *browser {
	return &browser{e: e, cookies: map[string]*http.Cookie{}, header: http.Header{}}
}

type resp struct {
	code   int
	body   []byte
	header http.Header
	set    map[string]*http.Cookie
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

var urlInText = regexp.MustCompile(`https?://[^\s"'<>]+|/(?:api|portal)/[^\s"'<>]*`)

func (b *browser) do(method, path string, body any, hdr ...string) resp {
	t := b.e.t
	t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	case url.Values:
		rd = strings.NewReader(v.Encode())
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.e.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := body.(url.Values); ok {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range b.header {
		req.Header[k] = v
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	for _, c := range b.cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := resp{code: res.StatusCode, body: raw, header: res.Header, set: map[string]*http.Cookie{}}
	for _, c := range res.Cookies() {
		r.set[c.Name] = c
		b.e.secrets.add(c.Value)
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c
		}
	}
	// No token in a Location header or in any URL of the body.
	if loc := res.Header.Get("Location"); loc != "" {
		if v := b.e.secrets.in(loc); v != "" {
			t.Errorf("%s %s: Location %q carries a token", method, path, loc)
		}
	}
	for _, u := range urlInText.FindAllString(string(raw), -1) {
		if v := b.e.secrets.in(u); v != "" {
			t.Errorf("%s %s: the body has a URL with a token: %q", method, path, u)
		}
	}
	// Every answer of the portal API has one of the contract's codes.
	if strings.HasPrefix(path, "/api/") {
		switch r.code {
		case 200, 201, 400, 401, 403, 404, 409, 500:
		default:
			t.Errorf("%s %s: status %d is not in the portal contract", method, path, r.code)
		}
	}
	return r
}

// csrf is the value of the CSRF cookie, which the pages' script sends as
// the header.
func (b *browser) csrf() string {
	for name, c := range b.cookies {
		if strings.HasSuffix(name, "sb_csrf") {
			return c.Value
		}
	}
	return ""
}

// send is a state-changing call as the pages make it: with the CSRF header.
func (b *browser) send(method, path string, body any, hdr ...string) resp {
	b.e.t.Helper()
	if b.csrf() == "" {
		b.do("GET", "/api/auth/session", nil)
	}
	return b.do(method, path, body, append([]string{portalapi.CSRFHeader, b.csrf()}, hdr...)...)
}

func (b *browser) session() map[string]any {
	b.e.t.Helper()
	r := b.do("GET", "/api/auth/session", nil)
	if r.code != 200 {
		b.e.t.Fatalf("session: %d %s", r.code, r.body)
	}
	u, _ := r.json(b.e.t)["user"].(map[string]any)
	return u
}

func (b *browser) sessionCookie() string {
	for name, c := range b.cookies {
		if strings.HasSuffix(name, "sb_session") {
			return c.Value
		}
	}
	return ""
}

// ssoLogin signs in through the identity provider as a browser would: the
// start page redirects to the provider, the provider's form_post comes back
// to the callback with this browser's flow cookie.
func (b *browser) ssoLogin(login string) resp {
	t := b.e.t
	t.Helper()
	r := b.do("GET", "/portal/anmelden/sso", nil)
	if r.code != http.StatusSeeOther {
		t.Fatalf("sso start: %d %s", r.code, r.body)
	}
	action, fields := b.e.idp.LoginFormPost(t, idpClient(t), r.header.Get("Location"), login)
	b.e.secrets.add(fields.Get("code"))
	if !strings.HasPrefix(action, b.e.base) {
		t.Fatalf("form_post goes to %q, not to this server", action)
	}
	return b.do("POST", strings.TrimPrefix(action, b.e.base), fields)
}

func idpClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 20 * time.Second}
}

// magicLink requests a link for addr and returns the link from the mail.
func (b *browser) magicLink(addr string) string {
	t := b.e.t
	t.Helper()
	// Mails go out in the background: wait for earlier ones before clearing
	// the catcher, so that the next mail to addr is this request's.
	b.e.h.Close()
	b.e.mail.DeleteAll(t)
	if r := b.send("POST", "/api/auth/magic-link", map[string]string{"email": addr}); r.code != 200 || r.json(t)["success"] != true {
		t.Fatalf("request magic link: %d %s", r.code, r.body)
	}
	m := b.e.mail.WaitMessage(t, addr, 10*time.Second)
	link := regexp.MustCompile(`https?://\S+#code=[A-Za-z0-9_-]+`).FindString(m.Text)
	if link == "" {
		t.Fatalf("no link in the mail: %q", m.Text)
	}
	b.e.secrets.add(link[strings.Index(link, "#code=")+6:])
	return link
}

func codeOf(link string) string { return link[strings.Index(link, "#code=")+6:] }

func jsonInto(b []byte, v any) error { return json.Unmarshal(b, v) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
