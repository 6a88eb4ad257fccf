package portal_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	portalapi "github.com/schedbridge/schedbridge/api/portal"
	"github.com/schedbridge/schedbridge/api/portal/portaltest"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

func TestMain(m *testing.M) { sqltest.Main(m) }

// TestPortal runs the whole portal contract against a real OpenID Connect
// provider and a real SMTP catcher, on SQLite and on PostgreSQL.
func TestPortal(t *testing.T) {
	backends := []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres}
	lns := map[sqldb.Dialect]net.Listener{}
	var redirects []string
	for _, d := range backends {
		lns[d] = listen(t)
		redirects = append(redirects, "http://"+lns[d].Addr().String()+"/portal/anmelden/sso/callback")
	}
	idp := portaltest.StartIdP(t, portaltest.IdPOptions{
		Web:    portaltest.WebClient{ID: webClient, Secret: webSecret, RedirectURIs: redirects},
		Native: portaltest.NativeClient{ID: nativeClient, RedirectURIs: []string{nativeURI}},
		Accounts: []portaltest.Account{
			{Subject: "sub-anna", Email: "anna@firma.test", EmailVerified: true, Name: "Anna Schmidt"},
			{Subject: "sub-carl", Email: "carl@firma.test", EmailVerified: true, Name: "Carl Ohneakte"},
		},
	})
	mail := portaltest.StartMailDev(t)
	for _, d := range backends {
		t.Run(string(d), func(t *testing.T) {
			e := newEnv(t, d, lns[d], idp, mail, false)
			for _, c := range []struct {
				name string
				run  func(*testing.T)
			}{
				{"anonymous", e.testAnonymous},
				{"sso", e.testSSO},
				{"csrf", e.testCSRF},
				{"employee", e.testEmployee},
				{"compensation", e.testCompensation},
				{"magic link", e.testMagicLink},
				{"fixation", e.testFixation},
				{"mobile", e.testMobile},
				{"logout and expiry", e.testLogoutExpiry},
				{"server error", e.testServerError}, // last: it closes the database
			} {
				e.t = t
				t.Run(c.name, func(t *testing.T) { e.t = t; c.run(t) })
			}
		})
	}
}

func wantStatus(t *testing.T, what string, r resp, code int, errCode string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: status %d, want %d: %s", what, r.code, code, r.body)
	}
	if errCode != "" {
		if got := r.json(t)["error"]; got != errCode {
			t.Fatalf("%s: error %v, want %q: %s", what, got, errCode, r.body)
		}
		if msg, _ := r.json(t)["message"].(string); msg == "" {
			t.Fatalf("%s: error body without message: %s", what, r.body)
		}
	}
}

func (e *env) testAnonymous(t *testing.T) {
	b := e.browser()
	r := b.do("GET", "/api/auth/session", nil)
	wantStatus(t, "session", r, 200, "")
	if string(r.body) != `{"user":null}` {
		t.Errorf("anonymous session body %s", r.body)
	}
	c := r.set["__Host-sb_csrf"]
	if c == nil || !c.Secure || c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
		t.Errorf("CSRF cookie %+v: want __Host-, Secure, not HttpOnly, SameSite=Lax, Path=/", c)
	}
	for _, p := range []string{"/api/v1/portal/profile", "/api/v1/portal/leave-requests", "/api/v1/portal/sick-leave-reports",
		"/api/v1/portal/certificates", "/api/v1/portal/certificates/1", "/api/v1/portal/compensation"} {
		wantStatus(t, "GET "+p, b.do("GET", p, nil), 401, "unauthenticated")
	}
	wantStatus(t, "POST leave", b.send("POST", "/api/v1/portal/leave-requests", map[string]string{"start_date": "2026-12-01", "end_date": "2026-12-02"}), 401, "unauthenticated")
	wantStatus(t, "unknown path", b.do("GET", "/api/v1/portal/nothing", nil), 404, "not_found")
	wantStatus(t, "unknown method", b.do("DELETE", "/api/v1/portal/profile", nil), 404, "not_found")
	wantStatus(t, "logout without session", b.do("POST", "/api/auth/logout", nil), 200, "")
	if r := b.do("GET", "/portal/", nil); r.code != http.StatusSeeOther || r.header.Get("Location") != "/portal/anmelden" {
		t.Errorf("overview without session: %d %q", r.code, r.header.Get("Location"))
	}
	if r := b.do("GET", "/portal/anmelden", nil); r.code != 200 || !strings.Contains(string(r.body), "Mit Firmenkonto anmelden") ||
		!strings.Contains(r.header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("sign-in page: %d %s", r.code, r.header)
	}
}

func (e *env) testSSO(t *testing.T) {
	b := e.browser()
	start := b.do("GET", "/portal/anmelden/sso", nil)
	loc, _ := url.Parse(start.header.Get("Location"))
	q := loc.Query()
	if start.code != http.StatusSeeOther || q.Get("response_mode") != "form_post" || q.Get("code_challenge_method") != "S256" ||
		q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" || q.Get("client_id") != webClient {
		t.Fatalf("start: %d %s", start.code, loc)
	}
	flow := start.set["__Host-sb_login"]
	if flow == nil || !flow.HttpOnly || !flow.Secure || flow.SameSite != http.SameSiteNoneMode {
		t.Errorf("flow cookie %+v: want HttpOnly, Secure, SameSite=None", flow)
	}

	// The provider's answer comes back as a POST; the code never sits in a URL.
	action, fields := e.idp.LoginFormPost(t, idpClient(t), loc.String(), "sub-anna")
	e.secrets.add(fields.Get("code"))
	cb := b.do("POST", strings.TrimPrefix(action, e.base), fields)
	if cb.code != http.StatusSeeOther || cb.header.Get("Location") != "/portal/" {
		t.Fatalf("callback: %d %q %s", cb.code, cb.header.Get("Location"), cb.body)
	}
	sc := cb.set["__Host-sb_session"]
	if sc == nil || !sc.HttpOnly || !sc.Secure || sc.SameSite != http.SameSiteLaxMode || sc.Path != "/" {
		t.Fatalf("session cookie %+v: want __Host-, HttpOnly, Secure, SameSite=Lax", sc)
	}
	u := b.session()
	if u["name"] != "Anna Schmidt" || u["email"] != "anna@firma.test" || u["login_method"] != "sso" || u["client"] != "web" ||
		u["employee_linked"] != true || len(u["roles"].([]any)) != 1 || u["id"] == "" {
		t.Errorf("session user %v", u)
	}

	// The same state again: the flow is gone.
	r := b.do("POST", strings.TrimPrefix(action, e.base), fields)
	if r.code != http.StatusSeeOther || !strings.Contains(r.header.Get("Location"), "fehler=sso_abgelaufen") {
		t.Errorf("replayed callback: %d %q", r.code, r.header.Get("Location"))
	}
	// A flow started in one browser cannot be finished in another (login CSRF).
	other := e.browser()
	start = other.do("GET", "/portal/anmelden/sso", nil)
	action, fields = e.idp.LoginFormPost(t, idpClient(t), start.header.Get("Location"), "sub-anna")
	e.secrets.add(fields.Get("code"))
	victim := e.browser()
	r = victim.do("POST", strings.TrimPrefix(action, e.base), fields)
	if r.code != http.StatusSeeOther || !strings.Contains(r.header.Get("Location"), "fehler=sso") || victim.sessionCookie() != "" {
		t.Errorf("callback in another browser: %d %q", r.code, r.header.Get("Location"))
	}

	// Staff without an employee record sign in and get 404 from the employee API.
	carl := e.browser()
	if r := carl.ssoLogin("sub-carl"); r.code != http.StatusSeeOther || r.header.Get("Location") != "/portal/" {
		t.Fatalf("carl: %d %q", r.code, r.header.Get("Location"))
	}
	if u := carl.session(); u["employee_linked"] != false || u["email"] != "carl@firma.test" {
		t.Errorf("carl %v", u)
	}
	wantStatus(t, "carl profile", carl.do("GET", "/api/v1/portal/profile", nil), 404, "not_found")
}

func (e *env) signedIn(t *testing.T) *browser {
	t.Helper()
	b := e.browser()
	if r := b.ssoLogin("sub-anna"); r.code != http.StatusSeeOther {
		t.Fatalf("sign in: %d %s", r.code, r.body)
	}
	return b
}

func (e *env) testCSRF(t *testing.T) {
	b := e.signedIn(t)
	body := map[string]string{"start_date": "2027-03-01", "end_date": "2027-03-05"}
	wantStatus(t, "no header", b.do("POST", "/api/v1/portal/leave-requests", body), 403, "forbidden")
	wantStatus(t, "wrong header", b.do("POST", "/api/v1/portal/leave-requests", body, portalapi.CSRFHeader, strings.Repeat("x", 43)), 403, "forbidden")
	wantStatus(t, "other origin", b.send("POST", "/api/v1/portal/leave-requests", body, "Origin", "https://evil.example"), 403, "forbidden")
	// A cookie planted by a sibling host matches its own header but not the
	// token bound to the session.
	planted := b.csrf()
	b.cookies["__Host-sb_csrf"].Value = strings.Repeat("A", 43)
	wantStatus(t, "planted cookie", b.send("POST", "/api/v1/portal/leave-requests", body), 403, "forbidden")
	b.cookies["__Host-sb_csrf"].Value = planted
	wantStatus(t, "logout without header", b.do("POST", "/api/auth/logout", nil), 403, "forbidden")
	if b.session() == nil {
		t.Fatal("a refused logout ended the session")
	}
	r := b.do("GET", "/api/v1/portal/leave-requests", nil)
	if r.code != 200 || strings.TrimSpace(string(r.body)) != "[]" {
		t.Errorf("refused requests stored something: %d %s", r.code, r.body)
	}
	wantStatus(t, "with header", b.send("POST", "/api/v1/portal/leave-requests", body), 201, "")
}

func (e *env) testEmployee(t *testing.T) {
	b := e.signedIn(t)
	r := b.do("GET", "/api/v1/portal/profile", nil)
	p := r.json(t)
	if r.code != 200 || p["employee_id"] != "P-1001" || p["department"] != "Energiehandel" || p["state"] != "BE" || p["entry_date"] != "2019-04-01" {
		t.Fatalf("profile: %d %s", r.code, r.body)
	}
	// 2026-12-21..2027-01-08 in Berlin: 15 weekdays, of which 25.12. and
	// 1.1. are holidays (26.12. is a Saturday).
	r = b.send("POST", "/api/v1/portal/leave-requests", map[string]string{"type": "erholungsurlaub", "start_date": "2026-12-21", "end_date": "2027-01-08", "comment": "Weihnachten"})
	wantStatus(t, "create leave", r, 201, "")
	if l := r.json(t); l["working_days"] != 13.0 || l["status"] != "beantragt" || l["id"] == nil {
		t.Errorf("leave %s", r.body)
	}
	// Overlaps: with the leave just made (same last day), and after a sick
	// report also with that; adjacent days are fine.
	wantStatus(t, "overlapping leave", b.send("POST", "/api/v1/portal/leave-requests", map[string]string{"start_date": "2027-01-08", "end_date": "2027-01-12"}), 409, "conflict")
	wantStatus(t, "adjacent leave", b.send("POST", "/api/v1/portal/leave-requests", map[string]string{"start_date": "2027-01-11", "end_date": "2027-01-12"}), 201, "")
	// The profile's leave of 2026: the two days of mid-December as stored,
	// and the Christmas request's part in 2026 (21.-31.12. without the 25th:
	// 8 days); the January days belong to 2027.
	wantStatus(t, "leave in December", b.send("POST", "/api/v1/portal/leave-requests", map[string]string{"start_date": "2026-12-14", "end_date": "2026-12-15"}), 201, "")
	leave := b.do("GET", "/api/v1/portal/profile", nil).json(t)["leave"].(map[string]any)
	if leave["year"] != 2026.0 || leave["entitlement_days"] != 30.0 || leave["requested_days"] != 10.0 || leave["remaining_days"] != 20.0 {
		t.Errorf("leave of the year %v", leave)
	}
	wantStatus(t, "sick during leave", b.send("POST", "/api/v1/portal/sick-leave-reports", map[string]any{"start_date": "2026-12-22", "end_date": "2026-12-23", "certificate": true}), 201, "")
	wantStatus(t, "overlapping sick", b.send("POST", "/api/v1/portal/sick-leave-reports", map[string]any{"start_date": "2026-12-23", "end_date": "2026-12-24"}), 409, "conflict")
	wantStatus(t, "leave over sick", b.send("POST", "/api/v1/portal/sick-leave-reports", map[string]any{"start_date": "2027-02-01", "end_date": "2027-02-03"}), 201, "")
	wantStatus(t, "leave overlapping sick", b.send("POST", "/api/v1/portal/leave-requests", map[string]string{"start_date": "2027-02-03", "end_date": "2027-02-04"}), 409, "conflict")

	// 400: malformed bodies and parameters, with the field named.
	for _, c := range []struct {
		name, path string
		body       any
		field      string
	}{
		{"end before start", "/api/v1/portal/leave-requests", map[string]string{"start_date": "2027-05-05", "end_date": "2027-05-01"}, "end_date"},
		{"bad date", "/api/v1/portal/leave-requests", map[string]string{"start_date": "05.05.2027", "end_date": "2027-05-06"}, "start_date"},
		{"bad type", "/api/v1/portal/leave-requests", map[string]string{"type": "frei", "start_date": "2027-05-05", "end_date": "2027-05-06"}, "type"},
		{"unknown field", "/api/v1/portal/leave-requests", map[string]string{"employee_id": "P-1002", "start_date": "2027-05-05", "end_date": "2027-05-06"}, "employee_id"},
		{"weekend only", "/api/v1/portal/leave-requests", map[string]string{"start_date": "2027-05-08", "end_date": "2027-05-09"}, "end_date"},
		{"wrong type", "/api/v1/portal/sick-leave-reports", map[string]any{"start_date": "2027-05-05", "end_date": "2027-05-06", "certificate": "ja"}, "certificate"},
		{"bad certificate type", "/api/v1/portal/certificates", map[string]string{"type": "urkunde"}, "type"},
		{"bad language", "/api/v1/portal/certificates", map[string]string{"type": "zwischenzeugnis", "language": "fr"}, "language"},
		{"long purpose", "/api/v1/portal/certificates", map[string]string{"type": "zwischenzeugnis", "purpose": strings.Repeat("x", 501)}, "purpose"},
	} {
		r := b.send("POST", c.path, c.body)
		wantStatus(t, c.name, r, 400, "invalid")
		if f := r.json(t)["field"]; f != c.field {
			t.Errorf("%s: field %v, want %s", c.name, f, c.field)
		}
	}
	wantStatus(t, "not JSON", b.send("POST", "/api/v1/portal/leave-requests", "{not json"), 400, "invalid")
	wantStatus(t, "two objects", b.send("POST", "/api/v1/portal/leave-requests", `{"start_date":"2027-06-01","end_date":"2027-06-01"}{}`), 400, "invalid")
	wantStatus(t, "too large", b.send("POST", "/api/v1/portal/leave-requests", `{"comment":"`+strings.Repeat("x", 70<<10)+`"}`), 400, "invalid")

	// Lists are the caller's own.
	var leaves []map[string]any
	r = b.do("GET", "/api/v1/portal/leave-requests", nil)
	if err := jsonInto(r.body, &leaves); err != nil || r.code != 200 || len(leaves) != 4 {
		t.Errorf("leave list: %d %s", r.code, r.body)
	}
	// Certificates: create, list, status; malformed and foreign ids.
	r = b.send("POST", "/api/v1/portal/certificates", map[string]string{"type": "arbeitsbescheinigung", "purpose": "Wohnungssuche"})
	wantStatus(t, "certificate", r, 201, "")
	cert := r.json(t)
	if cert["status"] != "beantragt" || cert["language"] != "de" {
		t.Errorf("certificate %s", r.body)
	}
	id := int64(cert["id"].(float64))
	if r := b.do("GET", "/api/v1/portal/certificates/"+itoa(id), nil); r.code != 200 || r.json(t)["type"] != "arbeitsbescheinigung" {
		t.Errorf("certificate status: %d %s", r.code, r.body)
	}
	if _, err := e.db.SetCertificateStatus(context.Background(), id, "ausgestellt", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if r := b.do("GET", "/api/v1/portal/certificates/"+itoa(id), nil); r.json(t)["status"] != "ausgestellt" {
		t.Errorf("certificate after HR: %s", r.body)
	}
	wantStatus(t, "malformed id", b.do("GET", "/api/v1/portal/certificates/abc", nil), 400, "invalid")
	wantStatus(t, "zero id", b.do("GET", "/api/v1/portal/certificates/0", nil), 400, "invalid")
	wantStatus(t, "unknown id", b.do("GET", "/api/v1/portal/certificates/999999", nil), 404, "not_found")
	// Another employee's certificate is not found either.
	jonas := e.browser()
	jonas.redeem(jonas.magicLink(e.addr("jonas")))
	r = jonas.send("POST", "/api/v1/portal/certificates", map[string]string{"type": "zwischenzeugnis"})
	wantStatus(t, "jonas certificate", r, 201, "")
	other := int64(r.json(t)["id"].(float64))
	wantStatus(t, "foreign certificate", b.do("GET", "/api/v1/portal/certificates/"+itoa(other), nil), 404, "not_found")
	var certs []map[string]any
	if err := jsonInto(b.do("GET", "/api/v1/portal/certificates", nil).body, &certs); err != nil || len(certs) != 1 {
		t.Errorf("certificate list %v %v", certs, err)
	}
	// Pages render the same records.
	if r := b.do("GET", "/portal/urlaub", nil); r.code != 200 || !strings.Contains(string(r.body), "21.12.2026") {
		t.Errorf("leave page: %d", r.code)
	}
}

func (b *browser) redeem(link string) resp {
	b.e.t.Helper()
	r := b.send("POST", "/api/auth/magic-link/redeem", map[string]string{"code": codeOf(link)})
	if r.code != 200 {
		b.e.t.Fatalf("redeem: %d %s", r.code, r.body)
	}
	return r
}

func (e *env) testCompensation(t *testing.T) {
	b := e.signedIn(t)
	r := b.do("GET", "/api/v1/portal/compensation", nil)
	c := r.json(t)
	comps := c["components"].([]any)
	base, bonus := comps[0].(map[string]any), comps[1].(map[string]any)
	if r.code != 200 || base["amount"] != "5200.00" || base["masked"] != false || bonus["amount"] != nil || bonus["masked"] != true ||
		bonus["mask_reason"] != "hr" || c["monthly_total"] != nil || c["yearly_total"] != nil || c["mask_reason"] != "derived" {
		t.Errorf("SSO compensation: %d %s", r.code, r.body)
	}
	if strings.Contains(string(r.body), "6400") {
		t.Errorf("the masked bonus is in the body: %s", r.body)
	}
	page := b.do("GET", "/portal/verguetung", nil)
	if !strings.Contains(string(page.body), "5.200,00") || strings.Contains(string(page.body), "6.400") || !strings.Contains(string(page.body), "Betrag verborgen") {
		t.Errorf("compensation page does not mask like the API")
	}
	// A magic-link session sees no amount at all, even a visible one.
	jonas := e.browser()
	jonas.redeem(jonas.magicLink(e.addr("jonas")))
	r = jonas.do("GET", "/api/v1/portal/compensation", nil)
	c = r.json(t)
	only := c["components"].([]any)[0].(map[string]any)
	if r.code != 200 || only["amount"] != nil || only["masked"] != true || only["mask_reason"] != "magic_link" || c["monthly_total"] != nil ||
		strings.Contains(string(r.body), "4100") {
		t.Errorf("magic-link compensation: %d %s", r.code, r.body)
	}
}

func (e *env) testMagicLink(t *testing.T) {
	b := e.browser()
	link := b.magicLink(e.addr("bewerberin"))
	u, err := url.Parse(link)
	if err != nil || u.Path != "/portal/anmelden/link" || u.RawQuery != "" || !strings.HasPrefix(u.Fragment, "code=") {
		t.Fatalf("link %q: the code must travel in the fragment only", link)
	}
	if r := b.do("GET", u.Path, nil); r.code != 200 || !strings.Contains(string(r.body), "/api/auth/magic-link/redeem") {
		t.Errorf("landing page: %d", r.code)
	}
	r := b.redeem(link)
	user := r.json(t)["user"].(map[string]any)
	if user["login_method"] != "magic_link" || user["employee_linked"] != false || user["roles"].([]any)[0] != "bewerber" {
		t.Errorf("applicant %s", r.body)
	}
	wantStatus(t, "applicant profile", b.do("GET", "/api/v1/portal/profile", nil), 404, "not_found")
	wantStatus(t, "applicant leave", b.send("POST", "/api/v1/portal/leave-requests", map[string]string{"start_date": "2027-01-04", "end_date": "2027-01-04"}), 404, "not_found")
	wantStatus(t, "applicant compensation", b.do("GET", "/api/v1/portal/compensation", nil), 404, "not_found")

	// Used once, then never again.
	other := e.browser()
	wantStatus(t, "reused link", other.send("POST", "/api/auth/magic-link/redeem", map[string]string{"code": codeOf(link)}), 401, "unauthenticated")
	if other.session() != nil {
		t.Error("a reused link signed in")
	}
	// Expired after 15 minutes.
	link = other.magicLink(e.addr("bewerberin"))
	e.clock.Add(15*time.Minute + time.Second)
	wantStatus(t, "expired link", other.send("POST", "/api/auth/magic-link/redeem", map[string]string{"code": codeOf(link)}), 401, "unauthenticated")
	wantStatus(t, "malformed code", other.send("POST", "/api/auth/magic-link/redeem", map[string]string{"code": "abc"}), 400, "invalid")
	wantStatus(t, "malformed email", other.send("POST", "/api/auth/magic-link", map[string]string{"email": "not-an-address"}), 400, "invalid")

	// The mobile client is refused, whatever it sends.
	wantStatus(t, "mobile request", other.send("POST", "/api/auth/magic-link", map[string]string{"email": e.addr("bewerberin")}, portalapi.ClientHeader, "mobile"), 403, "forbidden")
	link = other.magicLink(e.addr("bewerberin"))
	wantStatus(t, "mobile redeem", other.send("POST", "/api/auth/magic-link/redeem", map[string]string{"code": codeOf(link)}, portalapi.ClientHeader, "mobile"), 403, "forbidden")
	wantStatus(t, "mobile with a web session", b.do("GET", "/api/auth/session", nil, portalapi.ClientHeader, "mobile"), 200, "")
	jonas := e.browser()
	jonas.redeem(jonas.magicLink(e.addr("jonas")))
	wantStatus(t, "mobile with a magic-link session", jonas.do("GET", "/api/v1/portal/profile", nil, portalapi.ClientHeader, "mobile"), 403, "forbidden")

	// Unknown addresses and staff without magic links get the same answer
	// and no mail; the sixth link within an hour is not sent.
	e.h.Close()
	e.mail.DeleteAll(t)
	for _, addr := range []string{e.addr("niemand"), "anna@firma.test"} {
		r := other.send("POST", "/api/auth/magic-link", map[string]string{"email": addr})
		if r.code != 200 || string(r.body) != `{"success":true}` {
			t.Errorf("request for %s: %d %s", addr, r.code, r.body)
		}
	}
	for range 6 {
		other.send("POST", "/api/auth/magic-link", map[string]string{"email": e.addr("bewerberin")})
	}
	e.h.Close()
	var toApplicant int
	for _, m := range e.mail.Messages(t) {
		for _, to := range m.To {
			if to != e.addr("bewerberin") {
				t.Errorf("mail to %s", to)
			}
			toApplicant++
		}
	}
	// Three links were sent before in this hour (the clock moved 15 min).
	if toApplicant != 2 {
		t.Errorf("%d links to the applicant in the hour after the first three, want 2 (limit 5)", toApplicant)
	}
}

func (e *env) testFixation(t *testing.T) {
	// Anna's session, planted into another browser with its CSRF cookie, is
	// replaced at login and ends; the new id is not the planted one.
	anna := e.signedIn(t)
	planted := anna.sessionCookie()
	b := e.browser()
	b.cookies["__Host-sb_session"] = &http.Cookie{Name: "__Host-sb_session", Value: planted}
	b.cookies["__Host-sb_csrf"] = &http.Cookie{Name: "__Host-sb_csrf", Value: anna.csrf()}
	b.redeem(b.magicLink(e.addr("jonas")))
	if got := b.sessionCookie(); got == planted || got == "" {
		t.Fatalf("session id not rotated at login")
	}
	if u := b.session(); u["email"] != e.addr("jonas") {
		t.Errorf("after login %v", u)
	}
	if anna.session() != nil {
		t.Error("the session id known before login still works")
	}
	// An unknown id is not adopted either.
	c := e.browser()
	c.cookies["__Host-sb_session"] = &http.Cookie{Name: "__Host-sb_session", Value: strings.Repeat("F", 43)}
	c.ssoLogin("sub-anna")
	if c.sessionCookie() == strings.Repeat("F", 43) {
		t.Error("an id chosen by the client was adopted")
	}
}

func (e *env) testMobile(t *testing.T) {
	app := e.browser()
	app.header.Set(portalapi.ClientHeader, "mobile")
	verifier := "mobile-verifier-0123456789-abcdefghijklmnopqrstuvwxyz"
	authURL := e.idp.Issuer + "/auth?" + url.Values{
		"client_id": {nativeClient}, "redirect_uri": {nativeURI}, "response_type": {"code"}, "scope": {"openid email profile"},
		"state": {"app-state-123456"}, "code_challenge": {s256(verifier)}, "code_challenge_method": {"S256"},
	}.Encode()
	code, state := e.idp.LoginNative(t, idpClient(t), authURL, "sub-anna")
	e.secrets.add(code)
	if state != "app-state-123456" {
		t.Errorf("state %q", state)
	}
	wantStatus(t, "bad verifier format", app.send("POST", "/api/auth/sso/native", map[string]string{"code": code, "code_verifier": "short", "redirect_uri": nativeURI}), 400, "invalid")
	wantStatus(t, "foreign redirect", app.send("POST", "/api/auth/sso/native", map[string]string{"code": code, "code_verifier": verifier, "redirect_uri": "https://evil.example/cb"}), 400, "invalid")
	r := app.send("POST", "/api/auth/sso/native", map[string]string{"code": code, "code_verifier": verifier, "redirect_uri": nativeURI})
	wantStatus(t, "native exchange", r, 200, "")
	if u := r.json(t)["user"].(map[string]any); u["client"] != "mobile" || u["login_method"] != "sso" || u["email"] != "anna@firma.test" {
		t.Errorf("mobile user %s", r.body)
	}
	wantStatus(t, "mobile profile", app.do("GET", "/api/v1/portal/profile", nil), 200, "")
	// A code is good once; a wrong verifier is refused by the provider.
	wantStatus(t, "reused code", e.browser().send("POST", "/api/auth/sso/native", map[string]string{"code": code, "code_verifier": verifier, "redirect_uri": nativeURI}), 401, "unauthenticated")
	code, _ = e.idp.LoginNative(t, idpClient(t), authURL, "sub-anna")
	e.secrets.add(code)
	wantStatus(t, "wrong verifier", e.browser().send("POST", "/api/auth/sso/native", map[string]string{"code": code, "code_verifier": verifier + "x", "redirect_uri": nativeURI}), 401, "unauthenticated")
}

func (e *env) testLogoutExpiry(t *testing.T) {
	b := e.signedIn(t)
	old := b.sessionCookie()
	r := b.send("POST", "/api/auth/logout", nil)
	if r.code != 200 || string(r.body) != `{"success":true}` {
		t.Fatalf("logout: %d %s", r.code, r.body)
	}
	if c := r.set["__Host-sb_session"]; c == nil || c.MaxAge >= 0 {
		t.Errorf("logout did not clear the cookie: %+v", c)
	}
	// The old id is dead on the server, not only forgotten by the browser.
	replay := e.browser()
	replay.cookies["__Host-sb_session"] = &http.Cookie{Name: "__Host-sb_session", Value: old}
	if replay.session() != nil {
		t.Error("the session lives on after logout")
	}
	wantStatus(t, "after logout", replay.do("GET", "/api/v1/portal/profile", nil), 401, "unauthenticated")

	// Idle: 29 minutes keep it, 30 end it.
	b = e.signedIn(t)
	e.clock.Add(29 * time.Minute)
	if b.session() == nil {
		t.Fatal("ended before the idle time")
	}
	e.clock.Add(30 * time.Minute)
	if b.session() != nil {
		t.Error("alive after 30 idle minutes")
	}
	// Absolute: used every 20 minutes, it still ends after 12 hours.
	b = e.signedIn(t)
	for range 35 {
		e.clock.Add(20 * time.Minute)
		if b.session() == nil {
			t.Fatal("ended before 12 hours")
		}
	}
	e.clock.Add(20 * time.Minute)
	if b.session() != nil {
		t.Error("alive after 12 hours")
	}
}

// testServerError: with the database gone, the employee API answers 500
// with the portal body, and the session endpoint still answers 200 (with no
// user) as its contract says.
func (e *env) testServerError(t *testing.T) {
	b := e.signedIn(t)
	e.db.Close()
	r := b.do("GET", "/api/v1/portal/profile", nil)
	wantStatus(t, "profile without database", r, 500, "internal")
	if r.json(t)["message"] != "internal error" {
		t.Errorf("500 leaks detail: %s", r.body)
	}
	if r := b.do("GET", "/api/auth/session", nil); r.code != 200 || string(r.body) != `{"user":null}` {
		t.Errorf("session without database: %d %s", r.code, r.body)
	}
	// Logout cannot end a session it cannot reach: a real failure, 500.
	wantStatus(t, "logout without database", b.send("POST", "/api/auth/logout", nil), 500, "internal")
}
