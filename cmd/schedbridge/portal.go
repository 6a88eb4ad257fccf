package main

import (
	"context"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"time"

	portalapi "github.com/schedbridge/schedbridge/api/portal"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// PortalConfig configures the employees' portal that serve runs.
type PortalConfig struct {
	Enabled bool `yaml:"enabled" check:"free"`
	// BaseURL is the portal's public origin (magic links, the SSO redirect
	// URI, the Origin check); default http://localhost:<port of addr>.
	BaseURL string `yaml:"base_url" check:"custom"`
	// InsecureCookies drops the Secure flag for local development over plain
	// http; refused when the environment is production.
	InsecureCookies   bool          `yaml:"insecure_cookies" check:"custom"`
	SessionIdle       time.Duration `yaml:"session_idle" check:"positive"`
	SessionAbsolute   time.Duration `yaml:"session_absolute" check:"custom"`
	MagicLinkTTL      time.Duration `yaml:"magic_link_ttl" check:"positive"`
	MagicLinksPerHour int           `yaml:"magic_links_per_hour" check:"positive"`
	OIDC              PortalOIDC    `yaml:"oidc"`
	SMTP              PortalSMTP    `yaml:"smtp"`
}

// PortalOIDC registers the portal at the identity provider; no issuer, no SSO.
type PortalOIDC struct {
	Issuer             string   `yaml:"issuer" check:"custom"`
	ClientID           string   `yaml:"client_id" check:"custom"`
	ClientSecret       string   `yaml:"client_secret" secret:"true" check:"free"`
	NativeClientID     string   `yaml:"native_client_id" check:"free"`
	NativeRedirectURIs []string `yaml:"native_redirect_uris" check:"custom"`
	// GroupsClaim names the ID token claim with the person's groups (default
	// "groups"), and ExtraScopes are asked for beside openid, email and
	// profile where the provider releases that claim only for a scope.
	GroupsClaim string   `yaml:"groups_claim" check:"free"`
	ExtraScopes []string `yaml:"extra_scopes" check:"free"`
	// EmailTrustedIssuer, set to the issuer, takes the addresses of ID
	// tokens without an email_verified claim as verified, for a provider
	// that never sends the claim. Without it such sign-ins are refused.
	EmailTrustedIssuer string `yaml:"email_trusted_issuer" check:"custom"`
}

// PortalSMTP is the mail server of the magic links; no address, no magic links.
type PortalSMTP struct {
	Addr     string `yaml:"addr" check:"custom"`
	From     string `yaml:"from" check:"custom"`
	Username string `yaml:"username" check:"free"`
	Password string `yaml:"password" secret:"true" check:"free"`
	Security string `yaml:"security" check:"oneof=starttls|tls|none"` // starttls (default), tls, none
}

// checkPortal validates the portal settings. The insecure cookie mode is a
// local-development setting: a deployment marked as production refuses it.
func (c *Config) checkPortal() error {
	p := &c.Portal
	if p.InsecureCookies && c.Environment == "production" {
		return fmt.Errorf("%s is a local-development setting and is refused in production; set environment: development (SCHEDBRIDGE_ENVIRONMENT=development) on a developer machine, or remove it", keyName("portal.insecure_cookies"))
	}
	if p.SessionIdle > p.SessionAbsolute {
		return fmt.Errorf("%s %s exceeds %s %s", keyName("portal.session_idle"), p.SessionIdle, keyName("portal.session_absolute"), p.SessionAbsolute)
	}
	if p.BaseURL == "" {
		_, port, err := net.SplitHostPort(c.Addr)
		if err != nil {
			return fmt.Errorf("portal.base_url is not set and addr %q has no port: %w", c.Addr, err)
		}
		p.BaseURL = "http://localhost:" + port
	}
	u, err := url.Parse(p.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("%s %q: want an origin such as https://portal.example.de", keyName("portal.base_url"), p.BaseURL)
	}
	if iss := p.OIDC.Issuer; iss != "" {
		if u, err := url.Parse(iss); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s %q: want an http(s) URL such as https://login.example.de/realms/staff", keyName("portal.oidc.issuer"), iss)
		}
		if p.OIDC.ClientID == "" {
			return fmt.Errorf("%s: an issuer needs %s", keyName("portal.oidc.issuer"), keyName("portal.oidc.client_id"))
		}
	}
	// The trust names the issuer, so that it ends with a change of provider
	// rather than passing silently to the next one.
	if t := p.OIDC.EmailTrustedIssuer; t != "" && t != p.OIDC.Issuer {
		return fmt.Errorf("%s %q is not %s %q; it trusts the addresses of that issuer only",
			keyName("portal.oidc.email_trusted_issuer"), t, keyName("portal.oidc.issuer"), p.OIDC.Issuer)
	}
	for _, r := range p.OIDC.NativeRedirectURIs {
		if u, err := url.Parse(r); err != nil || u.Scheme == "" {
			return fmt.Errorf("%s %q: want a URI with a scheme, such as de.example.portal:/callback", keyName("portal.oidc.native_redirect_uris"), r)
		}
	}
	if p.SMTP.Addr != "" {
		if err := checkHostPort("portal.smtp.addr", p.SMTP.Addr, false); err != nil {
			return err
		}
		if _, err := mail.ParseAddress(p.SMTP.From); err != nil {
			return fmt.Errorf("%s %q: want a sender address such as \"Portal <portal@example.de>\"", keyName("portal.smtp.from"), p.SMTP.From)
		}
	}
	return nil
}

// newPortal builds the portal on db, or nil when it is switched off.
func (a *app) newPortal(db *sqldb.DB) (*portalapi.Handler, error) {
	p := a.cfg.Portal
	if !p.Enabled {
		return nil, nil
	}
	base := p.BaseURL
	var sso portalapi.SSO
	if p.OIDC.Issuer != "" {
		o, err := portalapi.NewOIDC(portalapi.OIDCConfig{
			Issuer: p.OIDC.Issuer, ClientID: p.OIDC.ClientID, ClientSecret: p.OIDC.ClientSecret,
			RedirectURL:    base + "/portal/anmelden/sso/callback",
			NativeClientID: p.OIDC.NativeClientID, NativeRedirectURIs: p.OIDC.NativeRedirectURIs,
			GroupsClaim: p.OIDC.GroupsClaim, ExtraScopes: p.OIDC.ExtraScopes, TrustEmailIssuer: p.OIDC.EmailTrustedIssuer,
		})
		if err != nil {
			return nil, pipeline.Errorf(pipeline.Invalid, "portal: %v", err)
		}
		sso = o
	}
	var mailer portalapi.Mailer
	if p.SMTP.Addr != "" {
		m, err := portalapi.NewSMTP(portalapi.SMTPConfig{Addr: p.SMTP.Addr, From: p.SMTP.From,
			Username: p.SMTP.Username, Password: p.SMTP.Password, Security: p.SMTP.Security, Now: a.now})
		if err != nil {
			return nil, pipeline.Errorf(pipeline.Invalid, "portal: %v", err)
		}
		mailer = m
	}
	if p.InsecureCookies {
		a.log.Warn("portal: cookies without the Secure flag (local development only)")
	}
	a.log.Info("portal enabled", "base_url", base, "sso", sso != nil, "magic_links", mailer != nil)
	return portalapi.New(portalapi.Config{
		BaseURL: base, InsecureCookies: p.InsecureCookies, SessionIdle: p.SessionIdle, SessionAbsolute: p.SessionAbsolute,
		MagicLinkTTL: p.MagicLinkTTL, MagicLinksPerHour: p.MagicLinksPerHour, Now: a.now, Logger: a.log,
		OperatorGroups: a.cfg.Console.OperatorGroups, Audit: db,
	}, db, sso, mailer), nil
}

// sweepPortal deletes expired sessions, magic links and login flows every
// ten minutes until ctx ends; lookups refuse them anyway, this keeps the
// tables small.
func (a *app) sweepPortal(ctx context.Context, db *sqldb.DB) {
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		now := a.now()
		if n, err := db.DeleteExpired(ctx, now, now.Add(-a.cfg.Portal.SessionIdle)); err != nil {
			a.log.Warn("portal: sweeping expired sessions failed", "err", err)
		} else if n > 0 {
			a.log.Info("portal: expired sessions swept", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
