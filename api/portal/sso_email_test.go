package portal_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	portalapi "github.com/schedbridge/schedbridge/api/portal"
	"github.com/schedbridge/schedbridge/api/portal/portaltest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// TestSSOUnverifiedEmail: an address the identity provider has not verified
// neither creates nor links a portal user, so that nobody at the provider
// can take the address of an operator or of an employee HR registered. The
// sign-in ends on the SSO error page (the app gets 403), nothing is stored,
// and the attempt is in the log and the audit trail. A provider that sends
// no email_verified claim is refused too, unless its issuer is the one
// trusted without the claim; an explicit false is refused even then.
func TestSSOUnverifiedEmail(t *testing.T) {
	backends := []sqldb.Dialect{sqldb.SQLite, sqldb.Postgres}
	strict, trusting := map[sqldb.Dialect]net.Listener{}, map[sqldb.Dialect]net.Listener{}
	var redirects []string
	for _, d := range backends {
		strict[d], trusting[d] = listen(t), listen(t)
		for _, ln := range []net.Listener{strict[d], trusting[d]} {
			redirects = append(redirects, "http://"+ln.Addr().String()+"/portal/anmelden/sso/callback")
		}
	}
	idp := portaltest.StartIdP(t, portaltest.IdPOptions{
		Web:    portaltest.WebClient{ID: webClient, Secret: webSecret, RedirectURIs: redirects},
		Native: portaltest.NativeClient{ID: nativeClient, RedirectURIs: []string{nativeURI}},
		Accounts: []portaltest.Account{
			// Someone at the provider asserts the operator's address unverified.
			{Subject: "sub-mallory", Email: "olga@firma.test", EmailVerified: false, Name: "Mallory"},
			// The operator herself, whose provider verified her address.
			{Subject: "sub-olga", Email: "olga@firma.test", EmailVerified: true, Name: "Olga Disponentin"},
			{Subject: "sub-nils", Email: "nils@firma.test", NoEmailVerified: true, Name: "Nils Ohneclaim"},
			{Subject: "sub-fake-anna", Email: "Anna@firma.test", EmailVerified: false, Name: "Nicht Anna"},
		},
	})
	mail := portaltest.StartMailDev(t)
	for _, d := range backends {
		t.Run(string(d), func(t *testing.T) {
			e := newEnv(t, d, strict[d], idp, mail, true)
			ctx := context.Background()
			refused := func(t *testing.T, e *env, login, email string) {
				t.Helper()
				b := e.browser()
				r := b.ssoLogin(login)
				if r.code != http.StatusSeeOther || r.header.Get("Location") != "/portal/anmelden?fehler=sso_email" {
					t.Fatalf("%s: %d %q, want the sign-in page with fehler=sso_email", login, r.code, r.header.Get("Location"))
				}
				if b.sessionCookie() != "" || b.session() != nil {
					t.Errorf("%s: a session was opened", login)
				}
				if page := b.do("GET", "/portal/anmelden?fehler=sso_email", nil); !strings.Contains(string(page.body), "keine bestätigte E-Mail-Adresse") {
					t.Errorf("%s: the sign-in page does not explain the refusal: %s", login, page.body)
				}
				if u, err := e.db.UserByEmail(ctx, email); err == nil && u.SSOSubject == login {
					t.Errorf("%s: the subject was stored with %s", login, email)
				}
				trail, err := e.db.RecentAudit(ctx, 1)
				if err != nil || len(trail) != 1 || trail[0].Outcome != "sso_unverified_email" ||
					trail[0].Endpoint != "POST /portal/anmelden/sso/callback" || trail[0].StatusCode != http.StatusSeeOther ||
					!strings.Contains(trail[0].Detail, email) || !strings.Contains(trail[0].Detail, login) {
					t.Errorf("%s: audit trail %+v, %v", login, trail, err)
				}
				if !strings.Contains(e.logs.String(), `"subject":"`+login+`"`) {
					t.Errorf("%s: the refusal is not logged", login)
				}
			}

			t.Run("operator address unverified", func(t *testing.T) {
				refused(t, e, "sub-mallory", "olga@firma.test")
				if _, err := e.db.UserByEmail(ctx, "olga@firma.test"); pipeline.KindOf(err) != pipeline.NotFound {
					t.Fatalf("a user with the unverified address was created: %v", err)
				}
				// The owner of the address is not locked out.
				b := e.browser()
				if r := b.ssoLogin("sub-olga"); r.code != http.StatusSeeOther || r.header.Get("Location") != "/portal/" {
					t.Fatalf("the verified owner: %d %q", r.code, r.header.Get("Location"))
				}
				if u := b.session(); u["email"] != "olga@firma.test" || u["name"] != "Olga Disponentin" {
					t.Errorf("the verified owner's session %v", u)
				}
			})
			t.Run("registered address unverified", func(t *testing.T) {
				refused(t, e, "sub-fake-anna", "anna@firma.test")
				if u, err := e.db.UserByEmail(ctx, "anna@firma.test"); err != nil || u.SSOSubject != "sub-anna" {
					t.Errorf("Anna's user %+v, %v", u, err)
				}
			})
			t.Run("no email_verified claim", func(t *testing.T) {
				refused(t, e, "sub-nils", "nils@firma.test")
				if _, err := e.db.UserByEmail(ctx, "nils@firma.test"); pipeline.KindOf(err) != pipeline.NotFound {
					t.Errorf("a user was created without email_verified: %v", err)
				}
			})
			t.Run("mobile", func(t *testing.T) {
				app := e.browser()
				app.header.Set(portalapi.ClientHeader, "mobile")
				verifier := "mobile-verifier-0123456789-abcdefghijklmnopqrstuvwxyz"
				authURL := e.idp.Issuer + "/auth?" + url.Values{
					"client_id": {nativeClient}, "redirect_uri": {nativeURI}, "response_type": {"code"}, "scope": {"openid email profile"},
					"state": {"app-state-123456"}, "code_challenge": {s256(verifier)}, "code_challenge_method": {"S256"},
				}.Encode()
				code, _ := e.idp.LoginNative(t, idpClient(t), authURL, "sub-nils")
				e.secrets.add(code)
				r := app.send("POST", "/api/auth/sso/native", map[string]string{"code": code, "code_verifier": verifier, "redirect_uri": nativeURI})
				wantStatus(t, "native exchange", r, http.StatusForbidden, "forbidden")
				if trail, err := e.db.RecentAudit(ctx, 1); err != nil || len(trail) != 1 || trail[0].Outcome != "sso_unverified_email" ||
					trail[0].Endpoint != "POST /api/auth/sso/native" || trail[0].StatusCode != http.StatusForbidden {
					t.Errorf("audit trail %+v, %v", trail, err)
				}
			})
			t.Run("trusted issuer", func(t *testing.T) {
				te := newEnv(t, d, trusting[d], idp, mail, true, func(c *portalapi.OIDCConfig) { c.TrustEmailIssuer = idp.Issuer })
				b := te.browser()
				if r := b.ssoLogin("sub-nils"); r.code != http.StatusSeeOther || r.header.Get("Location") != "/portal/" {
					t.Fatalf("no claim, trusted issuer: %d %q", r.code, r.header.Get("Location"))
				}
				if u := b.session(); u["email"] != "nils@firma.test" {
					t.Errorf("session %v", u)
				}
				// An explicit false is refused also from the trusted issuer.
				refused(t, te, "sub-mallory", "olga@firma.test")
			})
		})
	}
}

// TestTrustEmailIssuerMustBeTheIssuer: the issuer trusted without
// email_verified must be the configured one, so that a change of provider
// does not carry the trust over.
func TestTrustEmailIssuerMustBeTheIssuer(t *testing.T) {
	_, err := portalapi.NewOIDC(portalapi.OIDCConfig{Issuer: "https://login.firma.test", ClientID: "c",
		RedirectURL: "https://portal.firma.test/portal/anmelden/sso/callback", TrustEmailIssuer: "https://other.test"})
	if err == nil {
		t.Fatal("a foreign trusted issuer was accepted")
	}
}
