package portaltest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/smtp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

var testAccounts = []Account{
	{Subject: "u-alice", Email: "alice@example.test", EmailVerified: true, Name: "Alice Adler"},
	{Subject: "u-bob", Email: "bob@example.test", EmailVerified: false, Name: "Bob Brandt"},
}

const (
	webRedirect    = "http://127.0.0.1:8089/auth/callback"
	nativeScheme   = "de.schedbridge.portal:/callback"
	nativeLoopback = "http://127.0.0.1/callback"
)

func startTestIdP(t *testing.T) *IdP {
	t.Helper()
	return StartIdP(t, IdPOptions{
		Web:      WebClient{ID: "portal-web", Secret: "web-secret", RedirectURIs: []string{webRedirect}},
		Native:   NativeClient{ID: "portal-app", RedirectURIs: []string{nativeScheme, nativeLoopback}},
		Accounts: testAccounts,
	})
}

// browser is a fresh user agent: its own cookie jar, so no sign-in carries
// over from another flow.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 10 * time.Second}
}

func random(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

type idClaims struct {
	Subject       string `json:"sub"`
	Email         string `json:"email"`
	EmailVerified bool   `json:"email_verified"`
	Name          string `json:"name"`
	Nonce         string `json:"nonce"`
}

// verifyIDToken checks the token response's ID token against the IdP's
// published keys, as the portal does, and returns its claims.
func verifyIDToken(t *testing.T, ctx context.Context, provider *oidc.Provider, clientID string, tok *oauth2.Token) idClaims {
	t.Helper()
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		t.Fatalf("token response has no id_token")
	}
	idt, err := provider.Verifier(&oidc.Config{ClientID: clientID}).Verify(ctx, raw)
	if err != nil {
		t.Fatalf("verify ID token: %v", err)
	}
	var c idClaims
	if err := idt.Claims(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIdP(t *testing.T) {
	idp := startTestIdP(t)
	ctx := context.Background()

	t.Run("discovery", func(t *testing.T) {
		resp, err := http.Get(idp.Issuer + "/.well-known/openid-configuration")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var d struct {
			Issuer        string   `json:"issuer"`
			ResponseModes []string `json:"response_modes_supported"`
			PKCEMethods   []string `json:"code_challenge_methods_supported"`
			IDTokenAlgs   []string `json:"id_token_signing_alg_values_supported"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
			t.Fatal(err)
		}
		if d.Issuer != idp.Issuer {
			t.Errorf("issuer %q, want %q", d.Issuer, idp.Issuer)
		}
		if !slices.Contains(d.ResponseModes, "form_post") {
			t.Errorf("response_modes_supported %v lacks form_post", d.ResponseModes)
		}
		if !slices.Equal(d.PKCEMethods, []string{"S256"}) {
			t.Errorf("code_challenge_methods_supported %v, want only S256", d.PKCEMethods)
		}
		if !slices.Contains(d.IDTokenAlgs, "RS256") {
			t.Errorf("id_token_signing_alg_values_supported %v lacks RS256", d.IDTokenAlgs)
		}
	})

	provider, err := oidc.NewProvider(ctx, idp.Issuer)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("web form_post", func(t *testing.T) {
		cfg := oauth2.Config{
			ClientID: "portal-web", ClientSecret: "web-secret",
			Endpoint: provider.Endpoint(), RedirectURL: webRedirect,
			Scopes: []string{oidc.ScopeOpenID, "email", "profile"},
		}
		tests := []struct {
			name, login string
			want        Account
		}{
			{"by email, any case", "Alice@Example.TEST", testAccounts[0]},
			{"by subject", "u-bob", testAccounts[1]},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				verifier, state, nonce := oauth2.GenerateVerifier(), random(t), random(t)
				authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier),
					oauth2.SetAuthURLParam("response_mode", "form_post"), oidc.Nonce(nonce))
				action, fields := idp.LoginFormPost(t, browser(t), authURL, tc.login)
				if action != webRedirect {
					t.Errorf("form posts to %q, want %q", action, webRedirect)
				}
				if fields.Get("state") != state || fields.Get("iss") != idp.Issuer {
					t.Errorf("state %q iss %q, want %q %q", fields.Get("state"), fields.Get("iss"), state, idp.Issuer)
				}
				tok, err := cfg.Exchange(ctx, fields.Get("code"), oauth2.VerifierOption(verifier))
				if err != nil {
					t.Fatalf("exchange: %v", err)
				}
				c := verifyIDToken(t, ctx, provider, cfg.ClientID, tok)
				want := idClaims{Subject: tc.want.Subject, Email: tc.want.Email,
					EmailVerified: tc.want.EmailVerified, Name: tc.want.Name, Nonce: nonce}
				if c != want {
					t.Errorf("ID token claims %+v, want %+v", c, want)
				}
			})
		}
	})

	t.Run("web code needs the right verifier and secret", func(t *testing.T) {
		tests := []struct {
			name     string
			secret   string
			verifier func(real string) string
		}{
			{"wrong verifier", "web-secret", func(string) string { return oauth2.GenerateVerifier() }},
			{"no verifier", "web-secret", func(string) string { return "" }},
			{"wrong secret", "not-the-secret", func(v string) string { return v }},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				cfg := oauth2.Config{ClientID: "portal-web", ClientSecret: "web-secret",
					Endpoint: provider.Endpoint(), RedirectURL: webRedirect, Scopes: []string{oidc.ScopeOpenID}}
				verifier := oauth2.GenerateVerifier()
				authURL := cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier),
					oauth2.SetAuthURLParam("response_mode", "form_post"))
				_, fields := idp.LoginFormPost(t, browser(t), authURL, "u-alice")
				cfg.ClientSecret = tc.secret
				var opts []oauth2.AuthCodeOption
				if v := tc.verifier(verifier); v != "" {
					opts = append(opts, oauth2.VerifierOption(v))
				}
				_, err := cfg.Exchange(ctx, fields.Get("code"), opts...)
				var re *oauth2.RetrieveError
				if !errors.As(err, &re) {
					t.Fatalf("exchange: %v, want the IdP to refuse", err)
				}
				if re.ErrorCode != "invalid_grant" && re.ErrorCode != "invalid_client" {
					t.Errorf("exchange refused with %q, want invalid_grant or invalid_client", re.ErrorCode)
				}
			})
		}
	})

	t.Run("PKCE is required", func(t *testing.T) {
		cfg := oauth2.Config{ClientID: "portal-web", Endpoint: provider.Endpoint(),
			RedirectURL: webRedirect, Scopes: []string{oidc.ScopeOpenID}}
		authURL := cfg.AuthCodeURL("s", oauth2.SetAuthURLParam("response_mode", "form_post"))
		end := idp.authorize(t, browser(t), authURL, "u-alice")
		if end.form == nil || end.form.fields.Get("error") != "invalid_request" {
			t.Fatalf("authorization without code_challenge ended in %+v, want error invalid_request", end)
		}
	})

	t.Run("native", func(t *testing.T) {
		tests := []struct{ name, redirect string }{
			{"custom scheme", nativeScheme},
			// Registered without a port: native loopback redirects match any
			// port (RFC 8252, section 7.3).
			{"loopback on any port", "http://127.0.0.1:53682/callback"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				ep := provider.Endpoint()
				// A public client sends its client_id in the body and no secret.
				ep.AuthStyle = oauth2.AuthStyleInParams
				cfg := oauth2.Config{ClientID: "portal-app", Endpoint: ep, RedirectURL: tc.redirect,
					Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
				verifier, state, nonce := oauth2.GenerateVerifier(), random(t), random(t)
				authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))
				code, gotState := idp.LoginNative(t, browser(t), authURL, "bob@example.test")
				if gotState != state {
					t.Errorf("state %q, want %q", gotState, state)
				}
				tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
				if err != nil {
					t.Fatalf("exchange: %v", err)
				}
				c := verifyIDToken(t, ctx, provider, cfg.ClientID, tok)
				if c.Subject != "u-bob" || c.Email != "bob@example.test" || c.EmailVerified || c.Nonce != nonce {
					t.Errorf("ID token claims %+v, want u-bob, bob@example.test, unverified, nonce %s", c, nonce)
				}
			})
		}
	})
}

func TestMailDev(t *testing.T) {
	md := StartMailDev(t)
	msg := strings.ReplaceAll(`From: Schedbridge Portal <portal@schedbridge.test>
To: Alice <alice@example.test>
Cc: ops@example.test
Subject: Your sign-in link
X-Schedbridge-Kind: magic-link
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary=b1

--b1
Content-Type: text/plain; charset=utf-8

Open https://portal.example.test/l/abc
--b1
Content-Type: text/html; charset=utf-8

<p><a href="https://portal.example.test/l/abc">Sign in</a></p>
--b1--
`, "\n", "\r\n")
	rcpt := []string{"alice@example.test", "ops@example.test", "audit@example.test"}
	if err := smtp.SendMail(md.SMTPAddr, nil, "bounce@schedbridge.test", rcpt, []byte(msg)); err != nil {
		t.Fatalf("send: %v", err)
	}

	got := md.WaitMessage(t, "ALICE@example.test", 10*time.Second)
	if got.Subject != "Your sign-in link" || got.From != "portal@schedbridge.test" {
		t.Errorf("subject %q from %q", got.Subject, got.From)
	}
	if !slices.Equal(got.To, []string{"alice@example.test"}) || !slices.Equal(got.Cc, []string{"ops@example.test"}) {
		t.Errorf("to %v cc %v", got.To, got.Cc)
	}
	if !slices.Equal(got.Recipients, rcpt) {
		t.Errorf("envelope recipients %v, want %v", got.Recipients, rcpt)
	}
	if strings.TrimSpace(got.Text) != "Open https://portal.example.test/l/abc" || !strings.Contains(got.HTML, `href="https://portal.example.test/l/abc"`) {
		t.Errorf("text %q html %q", got.Text, got.HTML)
	}
	if v := got.Headers["x-schedbridge-kind"]; !slices.Equal(v, []string{"magic-link"}) {
		t.Errorf("header x-schedbridge-kind %v", v)
	}
	if src := string(md.Source(t, got.ID)); !strings.Contains(src, "X-Schedbridge-Kind: magic-link\r\n") {
		t.Errorf("source lacks the header:\n%s", src)
	}
	// The Bcc recipient appears only in the envelope.
	if bcc := md.WaitMessage(t, "audit@example.test", time.Second); bcc.ID != got.ID {
		t.Errorf("bcc recipient found mail %s, want %s", bcc.ID, got.ID)
	}

	if n := len(md.Messages(t)); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
	md.DeleteAll(t)
	if n := len(md.Messages(t)); n != 0 {
		t.Errorf("%d messages after DeleteAll, want 0", n)
	}
}
