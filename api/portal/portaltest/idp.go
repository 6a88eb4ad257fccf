// Package portaltest starts the real servers the portal's tests talk to on
// loopback: an OpenID Connect provider (npm oidc-provider, run by
// deploy/dev/portal/idp.mjs) and an SMTP catcher with a REST API (npm
// maildev). The portal is a relying party of its customers' identity
// providers and sends mail through their relays, so its tests use servers
// that speak the real protocols rather than fakes written against our own
// reading of them. deploy/dev/test-deps.sh installs node and the pinned npm
// packages into the user cache; the helpers fail the test, pointing to
// `make test-deps`, when they are missing.
package portaltest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// IdPOptions configures the test identity provider. A client with an empty
// ID is left out.
type IdPOptions struct {
	Web      WebClient
	Native   NativeClient
	Accounts []Account
	// Machines are clients of the client-credentials grant, and Resources
	// the resource servers (audiences) they get access tokens for.
	Machines  []MachineClient
	Resources []ResourceServer
	// Port is the loopback port to bind; 0 lets the kernel choose. A test
	// that restarts the IdP under the same issuer passes the port of the
	// first start.
	Port int
}

// MachineClient is a confidential client of the client-credentials grant
// (client_secret_basic): a machine client of the bridge.
type MachineClient struct {
	ID     string
	Secret string
}

// ResourceServer is an API the IdP issues JWT access tokens for (RFC 8707
// resource indicators, RFC 9068 tokens): Audience is the resource
// parameter and the tokens' aud, Scopes the scope values a client may ask
// for, TTL the tokens' lifetime (default 300 s).
type ResourceServer struct {
	Audience string
	Scopes   []string
	TTL      time.Duration
}

// WebClient is a confidential client: the portal's web back end, which
// receives the authorization code by form_post.
type WebClient struct {
	ID           string
	Secret       string
	RedirectURIs []string
	// AuthMethod is how the client authenticates at the token endpoint:
	// "client_secret_basic" (the default) or "client_secret_post". The IdP
	// accepts only the registered one, as real providers do.
	AuthMethod string
}

// NativeClient is a public client (token_endpoint_auth_method none,
// application_type native): the mobile app. Its redirect URIs are loopback
// ("http://127.0.0.1/callback", which matches any port, as RFC 8252 asks)
// or a reverse-domain custom scheme ("de.schedbridge.portal:/callback").
type NativeClient struct {
	ID           string
	RedirectURIs []string
}

// Account is a person who can sign in at the IdP.
type Account struct {
	Subject       string
	Email         string
	EmailVerified bool
	// NoEmailVerified leaves the email_verified claim out of the ID token,
	// as some providers never send it; EmailVerified is then ignored.
	NoEmailVerified bool
	Name            string
	// Groups is the groups claim (released with the profile scope), as an
	// enterprise provider asserts group memberships.
	Groups []string
}

// IdP is a running OpenID Connect provider. Clients must use PKCE (S256);
// the scopes are openid, email and profile, and ID tokens (RS256, signed
// with a key generated at start and published in the JWKS) carry sub,
// email, email_verified (unless an account leaves it out), name and, for accounts that have them, groups.
type IdP struct {
	// Issuer is the provider's issuer URL, http://127.0.0.1:<port>; its
	// discovery document is at Issuer + "/.well-known/openid-configuration".
	Issuer string
	// Port is the port of Issuer.
	Port int

	proc *process
}

// Stop stops the IdP before the test ends, to restart it (with a new
// signing key) or to make it unreachable.
func (p *IdP) Stop() { p.proc.stop() }

// StartIdP starts deploy/dev/portal/idp.mjs with o on a free loopback port
// and stops it when the test ends.
func StartIdP(tb testing.TB, o IdPOptions) *IdP {
	tb.Helper()
	node, modules := nodeModules(tb, "oidc-provider", OIDCProviderVersion)
	script := filepath.Join(repoRoot(tb), "deploy", "dev", "portal", "idp.mjs")
	if _, err := os.Stat(script); err != nil {
		tb.Fatalf("portaltest: %v", err)
	}
	dir := tb.TempDir()
	cfg, err := json.MarshalIndent(idpConfig(o), "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "idp.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		tb.Fatal(err)
	}
	// Port 0: idp.mjs binds a port the kernel chooses and names it in its
	// READY line, so no other process can take the port in between.
	p, err := startProcess(tb, "idp", node, dir, []string{"NODE_PATH=" + modules},
		script, "--port", strconv.Itoa(o.Port), "--config", cfgPath)
	if err != nil {
		tb.Fatalf("portaltest: %v", err)
	}
	deadline := time.After(startTimeout)
	for {
		select {
		case line := <-p.lines:
			if issuer, ok := strings.CutPrefix(line, "READY "); ok {
				idp := &IdP{Issuer: strings.TrimSpace(issuer), proc: p}
				if u, err := url.Parse(idp.Issuer); err == nil {
					idp.Port, _ = strconv.Atoi(u.Port())
				}
				return idp
			}
		case <-p.exited:
			tb.Fatalf("portaltest: idp %v: %s", errExited, p.output())
		case <-deadline:
			tb.Fatalf("portaltest: idp not ready within %v: %s", startTimeout, p.output())
		}
	}
}

// idpConfig is the JSON that idp.mjs reads: oidc-provider client metadata
// and the accounts.
func idpConfig(o IdPOptions) map[string]any {
	clients := []map[string]any{}
	if o.Web.ID != "" {
		method := o.Web.AuthMethod
		if method == "" {
			method = "client_secret_basic"
		}
		clients = append(clients, map[string]any{
			"client_id":                  o.Web.ID,
			"client_secret":              o.Web.Secret,
			"redirect_uris":              nonNil(o.Web.RedirectURIs),
			"token_endpoint_auth_method": method,
			"response_types":             []string{"code"},
			"grant_types":                []string{"authorization_code"},
		})
	}
	if o.Native.ID != "" {
		clients = append(clients, map[string]any{
			"client_id":                  o.Native.ID,
			"application_type":           "native",
			"token_endpoint_auth_method": "none",
			"redirect_uris":              nonNil(o.Native.RedirectURIs),
			"response_types":             []string{"code"},
			"grant_types":                []string{"authorization_code"},
		})
	}
	for _, m := range o.Machines {
		clients = append(clients, map[string]any{
			"client_id":                  m.ID,
			"client_secret":              m.Secret,
			"token_endpoint_auth_method": "client_secret_basic",
			"response_types":             []string{},
			"grant_types":                []string{"client_credentials"},
			"redirect_uris":              []string{},
		})
	}
	resources := map[string]any{}
	for _, r := range o.Resources {
		ttl := r.TTL
		if ttl == 0 {
			ttl = 300 * time.Second
		}
		resources[r.Audience] = map[string]any{"scope": strings.Join(r.Scopes, " "), "ttl": int(ttl.Seconds())}
	}
	accounts := []map[string]any{}
	for _, a := range o.Accounts {
		acc := map[string]any{"sub": a.Subject, "email": a.Email, "name": a.Name}
		if !a.NoEmailVerified {
			acc["email_verified"] = a.EmailVerified
		}
		if a.Groups != nil {
			acc["groups"] = a.Groups
		}
		accounts = append(accounts, acc)
	}
	return map[string]any{"clients": clients, "accounts": accounts, "resources": resources}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// LoginFormPost runs an authorization request of the web client
// (response_mode=form_post) as a browser would: it follows authorizeURL,
// signs in as login (an account's Subject or Email) and returns the form
// that the IdP's answer page would post to the client's redirect URI, its
// action and hidden fields (code, state, iss), without posting it: the
// caller posts them to its own callback. client must have a cookie jar
// (the IdP keeps its interaction in cookies); its CheckRedirect is not used.
// As in a browser, a jar that already holds a session at the IdP signs in
// that session's account without showing the form (and so ignores login)
// unless the request asks for prompt=login. An error answer from the IdP,
// or a login it does not know, fails the test.
func (p *IdP) LoginFormPost(tb testing.TB, client *http.Client, authorizeURL, login string) (action string, fields url.Values) {
	tb.Helper()
	end := p.authorize(tb, client, authorizeURL, login)
	if end.form == nil {
		tb.Fatalf("portaltest: authorization ended in a redirect to %s, not a form_post page", end.redirect)
	}
	if e := end.form.fields.Get("error"); e != "" {
		tb.Fatalf("portaltest: the IdP answered %s: %s", e, end.form.fields.Get("error_description"))
	}
	return end.form.action, end.form.fields
}

// LoginNative runs an authorization request of the native client
// (response_mode query, the default for code) as the app's browser tab
// would: it follows authorizeURL, signs in as login (an account's Subject
// or Email) and stops at the redirect to the app's redirect URI, without
// following it, returning the code and state from it. client must have a
// cookie jar; its CheckRedirect is not used. An error answer fails the
// test.
func (p *IdP) LoginNative(tb testing.TB, client *http.Client, authorizeURL, login string) (code, state string) {
	tb.Helper()
	end := p.authorize(tb, client, authorizeURL, login)
	if end.form != nil {
		tb.Fatalf("portaltest: authorization ended in a form posting to %s, not a redirect", end.form.action)
	}
	u, err := url.Parse(end.redirect)
	if err != nil {
		tb.Fatalf("portaltest: redirect %q: %v", end.redirect, err)
	}
	q := u.Query()
	if e := q.Get("error"); e != "" {
		tb.Fatalf("portaltest: the IdP answered %s: %s", e, q.Get("error_description"))
	}
	if q.Get("code") == "" {
		tb.Fatalf("portaltest: redirect %s carries no code", end.redirect)
	}
	return q.Get("code"), q.Get("state")
}

// htmlForm is a form found on a page.
type htmlForm struct {
	action string // absolute
	fields url.Values
}

// authorizeEnd is where an authorization request leaves the IdP: a
// redirect to another origin or a page with a form posting elsewhere.
type authorizeEnd struct {
	redirect string
	form     *htmlForm
}

// authorize walks the IdP's pages: redirects within the IdP are followed,
// the login form is filled in once, and the walk ends at the first redirect
// or form that leaves the IdP.
func (p *IdP) authorize(tb testing.TB, client *http.Client, authorizeURL, login string) authorizeEnd {
	tb.Helper()
	if client == nil || client.Jar == nil {
		tb.Fatalf("portaltest: the http.Client needs a cookie jar")
	}
	issuer, err := url.Parse(p.Issuer)
	if err != nil {
		tb.Fatal(err)
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	inIdP := func(u *url.URL) bool { return u.Scheme == issuer.Scheme && u.Host == issuer.Host }

	method, target, body := http.MethodGet, authorizeURL, url.Values(nil)
	loggedIn := false
	for step := 0; step < 20; step++ {
		u, err := url.Parse(target)
		if err != nil {
			tb.Fatalf("portaltest: %q: %v", target, err)
		}
		if !inIdP(u) {
			tb.Fatalf("portaltest: asked to fetch %s, which is not at the IdP %s", target, p.Issuer)
		}
		var resp *http.Response
		if method == http.MethodPost {
			resp, err = c.PostForm(target, body)
		} else {
			resp, err = c.Get(target)
		}
		if err != nil {
			tb.Fatalf("portaltest: %s %s: %v", method, target, err)
		}
		page, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			tb.Fatalf("portaltest: %s %s: %v", method, target, err)
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			loc, err := resp.Location()
			if err != nil {
				tb.Fatalf("portaltest: %s %s: redirect: %v", method, target, err)
			}
			if !inIdP(loc) {
				return authorizeEnd{redirect: loc.String()}
			}
			method, target, body = http.MethodGet, loc.String(), nil
			continue
		}
		forms, err := parseForms(page, resp.Request.URL)
		if err != nil {
			tb.Fatalf("portaltest: %s %s: %v", method, target, err)
		}
		if f := findForm(forms, func(f htmlForm) bool { _, ok := f.fields["login"]; return ok }); f != nil {
			if loggedIn {
				tb.Fatalf("portaltest: the IdP refused login %q: %s", login, pageText(page))
			}
			f.fields.Set("login", login)
			f.fields.Set("password", "any")
			method, target, body, loggedIn = http.MethodPost, f.action, f.fields, true
			continue
		}
		if f := findForm(forms, func(f htmlForm) bool {
			u, err := url.Parse(f.action)
			return err == nil && !inIdP(u)
		}); f != nil {
			return authorizeEnd{form: f}
		}
		tb.Fatalf("portaltest: %s %s answered %d: %s", method, target, resp.StatusCode, pageText(page))
	}
	tb.Fatalf("portaltest: the authorization request went through 20 pages without ending")
	return authorizeEnd{}
}

func findForm(forms []htmlForm, match func(htmlForm) bool) *htmlForm {
	for i := range forms {
		if match(forms[i]) {
			return &forms[i]
		}
	}
	return nil
}

// parseForms returns the forms on an HTML page with their input fields'
// names and values and their actions resolved against base.
func parseForms(page []byte, base *url.URL) ([]htmlForm, error) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil, err
	}
	var forms []htmlForm
	var walk func(n *html.Node, form *htmlForm)
	walk = func(n *html.Node, form *htmlForm) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "form":
				action, err := base.Parse(attr(n, "action"))
				if err != nil {
					action = base
				}
				forms = append(forms, htmlForm{action: action.String(), fields: url.Values{}})
				form = &forms[len(forms)-1]
				// Nested elements fill this form; forms do not nest in HTML.
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					walk(c, form)
				}
				return
			case "input":
				if form != nil && attr(n, "name") != "" {
					form.fields.Add(attr(n, "name"), attr(n, "value"))
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, form)
		}
	}
	walk(doc, nil)
	return forms, nil
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

// pageText is a page's visible text on one line, for failure messages.
func pageText(page []byte) string {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return string(page)
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.Data == "script" || n.Data == "style") {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return strings.Join(strings.Fields(b.String()), " ")
}

// ClientCredentials asks the IdP's token endpoint for an access token as a
// machine client does (RFC 6749 section 4.4, client_secret_basic, with an
// RFC 8707 resource). It returns the HTTP status and the token or the
// error the IdP answered.
func (p *IdP) ClientCredentials(tb testing.TB, clientID, secret, resource, scope string) (status int, token, errCode string) {
	tb.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope}}
	if resource != "" {
		form.Set("resource", resource)
	}
	req, err := http.NewRequest(http.MethodPost, p.Issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("portaltest: token request: %v", err)
	}
	defer res.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		Error       string `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		tb.Fatalf("portaltest: token answer: %v", err)
	}
	return res.StatusCode, out.AccessToken, out.Error
}
