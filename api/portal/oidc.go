package portal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/schedbridge/schedbridge/pipeline"
)

// OIDCConfig registers schedbridge at the identity provider: a confidential
// web client, whose redirect URI is the portal's callback, and optionally a
// public native client (the mobile app).
type OIDCConfig struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is <base_url>/portal/anmelden/sso/callback.
	RedirectURL string
	// NativeClientID and NativeRedirectURIs describe the mobile app; a code
	// exchanged for it must have been issued to one of these URIs.
	NativeClientID     string
	NativeRedirectURIs []string
	// GroupsClaim names the ID token claim that lists the person's groups
	// or roles (default "groups"), which the operators' console compares
	// with its operator groups. ExtraScopes are asked for beside openid,
	// email and profile, for providers that release that claim only for a
	// scope of its own.
	GroupsClaim string
	ExtraScopes []string
	// TrustEmailIssuer, when it is the Issuer, takes the e-mail address of an
	// ID token that carries no email_verified claim as verified: for a
	// provider that never sends the claim and only holds addresses it
	// assigned itself. Without it such an address counts as unverified, and
	// an unverified address neither creates nor links a portal user. An
	// explicit "email_verified": false is never trusted.
	TrustEmailIssuer string
	// HTTPClient talks to the provider; nil is http.DefaultClient.
	HTTPClient *http.Client
}

// OIDC is the relying party. It discovers the provider (issuer discovery)
// on first use and again after a failure, so that an unreachable provider
// does not keep the server from starting.
type OIDC struct {
	cfg    OIDCConfig
	origin string

	mu       sync.Mutex
	provider *oidc.Provider
}

// NewOIDC checks the configuration; the provider is contacted on first use.
func NewOIDC(cfg OIDCConfig) (*OIDC, error) {
	u, err := url.Parse(cfg.Issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("oidc issuer %q is not an http(s) URL", cfg.Issuer)
	}
	if cfg.ClientID == "" || cfg.RedirectURL == "" {
		return nil, errors.New("oidc: client id and redirect URL are required")
	}
	if cfg.TrustEmailIssuer != "" && cfg.TrustEmailIssuer != cfg.Issuer {
		return nil, fmt.Errorf("oidc: the issuer trusted without email_verified, %q, is not the issuer %q", cfg.TrustEmailIssuer, cfg.Issuer)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	return &OIDC{cfg: cfg, origin: u.Scheme + "://" + u.Host}, nil
}

func (o *OIDC) ctx(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, o.cfg.HTTPClient)
}

func (o *OIDC) discover(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	p, err := oidc.NewProvider(o.ctx(ctx), o.cfg.Issuer)
	if err != nil {
		return nil, &pipeline.Error{Kind: pipeline.Unavailable, Message: "the identity provider cannot be reached", Err: err}
	}
	var meta struct {
		ResponseModes []string `json:"response_modes_supported"`
	}
	if err := p.Claims(&meta); err != nil {
		return nil, fmt.Errorf("oidc discovery: %w", err)
	}
	// form_post keeps the code out of URLs; it is used where the provider
	// lists it. Without it the provider would answer in the query.
	if !slices.Contains(meta.ResponseModes, "form_post") {
		return nil, pipeline.Errorf(pipeline.Unavailable, "the identity provider does not support response_mode=form_post")
	}
	o.provider = p
	return p, nil
}

func (o *OIDC) web(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: o.cfg.RedirectURL, Scopes: append([]string{oidc.ScopeOpenID, "email", "profile"}, o.cfg.ExtraScopes...)}
}

// Origin is the provider's origin.
func (o *OIDC) Origin() string { return o.origin }

// AuthURL builds the web client's authorization request.
func (o *OIDC) AuthURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	p, err := o.discover(ctx)
	if err != nil {
		return "", err
	}
	return o.web(p).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("response_mode", "form_post")), nil
}

// Exchange redeems a web client's code.
func (o *OIDC) Exchange(ctx context.Context, code, verifier, nonce string) (Identity, error) {
	p, err := o.discover(ctx)
	if err != nil {
		return Identity{}, err
	}
	return o.exchange(ctx, p, o.web(p), code, verifier, nonce, o.cfg.ClientID)
}

// ExchangeNative redeems a code of the native client.
func (o *OIDC) ExchangeNative(ctx context.Context, code, verifier, redirectURI, nonce string) (Identity, error) {
	if o.cfg.NativeClientID == "" {
		return Identity{}, pipeline.Errorf(pipeline.NotFound, "no native client is registered on this server")
	}
	if !slices.Contains(o.cfg.NativeRedirectURIs, redirectURI) {
		return Identity{}, invalid("redirect_uri", "is not a redirect URI of the native client")
	}
	p, err := o.discover(ctx)
	if err != nil {
		return Identity{}, err
	}
	cfg := &oauth2.Config{ClientID: o.cfg.NativeClientID, Endpoint: p.Endpoint(), RedirectURL: redirectURI,
		Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
	cfg.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	return o.exchange(ctx, p, cfg, code, verifier, nonce, o.cfg.NativeClientID)
}

// exchange redeems the code with the PKCE verifier and verifies the ID token
// with the provider's JWKS: signature, issuer, audience, expiry and nonce.
func (o *OIDC) exchange(ctx context.Context, p *oidc.Provider, cfg *oauth2.Config, code, verifier, nonce, audience string) (Identity, error) {
	ctx = o.ctx(ctx)
	tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
			return Identity{}, &pipeline.Error{Kind: pipeline.Unauthorized, Message: "the identity provider refused the code", Err: err}
		}
		return Identity{}, &pipeline.Error{Kind: pipeline.Unavailable, Message: "the identity provider cannot be reached", Err: err}
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return Identity{}, pipeline.Errorf(pipeline.Unauthorized, "the identity provider returned no ID token")
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: audience}).Verify(ctx, raw)
	if err != nil {
		return Identity{}, &pipeline.Error{Kind: pipeline.Unauthorized, Message: "the ID token failed verification", Err: err}
	}
	if nonce != "" && idt.Nonce != nonce {
		return Identity{}, pipeline.Errorf(pipeline.Unauthorized, "the ID token carries another nonce")
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified *bool  `json:"email_verified"`
		Name          string `json:"name"`
	}
	var all map[string]json.RawMessage
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, pipeline.Errorf(pipeline.Unauthorized, "the ID token's claims cannot be read")
	}
	if err := idt.Claims(&all); err != nil {
		return Identity{}, pipeline.Errorf(pipeline.Unauthorized, "the ID token's claims cannot be read")
	}
	verified := claims.EmailVerified != nil && *claims.EmailVerified
	if claims.EmailVerified == nil && o.cfg.TrustEmailIssuer != "" && idt.Issuer == o.cfg.TrustEmailIssuer {
		verified = true
	}
	return Identity{Issuer: idt.Issuer, Subject: idt.Subject, Email: claims.Email,
		EmailVerified: verified, Name: claims.Name,
		Groups: groupsOf(all[o.cfg.GroupsClaim])}, nil
}

// groupsOf reads a groups claim. Providers send a JSON array of strings
// (Keycloak, Entra ID, oidc-provider) or, some of them, one string with the
// groups separated by spaces or commas; anything else asserts no group.
func groupsOf(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return strings.FieldsFunc(one, func(r rune) bool { return r == ' ' || r == ',' })
	}
	return nil
}
