// Package portal serves the employees' self-service portal: the session API
// under /api/auth, the self-scoped employee API under /api/v1/portal and the
// server-rendered pages under /portal. Sessions are cookies whose ids, like
// the CSRF tokens and magic-link codes, are stored only as SHA-256 hashes;
// no token or session id ever travels in a URL or a Location header.
package portal

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Config tunes the portal. Zero durations pick the documented defaults.
type Config struct {
	// BaseURL is the public origin of the portal (scheme, host, port), used
	// for magic links, the SSO redirect URI and the Origin check.
	BaseURL string
	// InsecureCookies drops the Secure flag and the __Host- prefix of the
	// cookies, for local development over plain http only; the binary refuses
	// it when the deployment is marked as production.
	InsecureCookies bool
	// SessionIdle ends a session not used for this long (default 30 min);
	// SessionAbsolute ends every session this long after login (default 12 h).
	SessionIdle     time.Duration
	SessionAbsolute time.Duration
	// MagicLinkTTL is how long a magic link can be used (default 15 min);
	// MagicLinksPerHour caps the links sent to one address (default 5).
	MagicLinkTTL      time.Duration
	MagicLinksPerHour int
	// LoginFlowTTL is how long an SSO sign-in may take (default 10 min).
	LoginFlowTTL time.Duration
	// OperatorGroups are the groups of the provider's groups claim that make
	// a person an operator of the web console (any one of them suffices).
	// Empty, only the operator list kept with `schedbridge operator` does.
	OperatorGroups []string
	// Audit receives the refused single sign-ons (an unverified e-mail
	// address) for the audit trail; nil leaves them in the log only.
	Audit Auditor
	// Now is the clock and Rand the source of ids and tokens; tests inject them.
	Now    func() time.Time
	Rand   io.Reader
	Logger *slog.Logger
}

// Identity is what the identity provider asserted in a verified ID token.
type Identity struct {
	Issuer  string
	Subject string
	Email   string
	// EmailVerified is true when the provider asserted "email_verified":
	// true, or sent no such claim and is trusted without it
	// (OIDCConfig.TrustEmailIssuer). Only a verified address creates or
	// links a user.
	EmailVerified bool
	Name          string
	// Groups are the values of the provider's groups (or roles) claim.
	Groups []string
}

// SSO is the OpenID Connect relying party: the authorization request of the
// web client, and the code exchanges of the web and the native client, each
// ending with a verified ID token.
type SSO interface {
	// AuthURL is the authorization request for the web client with PKCE
	// (S256 of verifier), nonce and response_mode=form_post.
	AuthURL(ctx context.Context, state, nonce, verifier string) (string, error)
	Exchange(ctx context.Context, code, verifier, nonce string) (Identity, error)
	// ExchangeNative redeems a code that the native (mobile) client obtained
	// with its own PKCE verifier at redirectURI; nonce is checked when given.
	ExchangeNative(ctx context.Context, code, verifier, redirectURI, nonce string) (Identity, error)
	// Origin is the identity provider's origin, allowed as a form target.
	Origin() string
}

// Auditor records an entry of the audit trail.
type Auditor interface {
	RecordAudit(ctx context.Context, a *pipeline.AuditEntry) error
}

// Mailer delivers magic links.
type Mailer interface {
	SendMagicLink(ctx context.Context, to, name, link string, expires time.Time) error
}

// Cookie and header names. The __Host- prefix binds the cookies to this host
// and path / and needs Secure, so the insecure local-development mode uses
// the bare names.
const (
	sessionCookie = "sb_session"
	csrfCookie    = "sb_csrf"
	flowCookie    = "sb_login"
	hostPrefix    = "__Host-"
	// CSRFHeader carries the CSRF token on state-changing requests.
	CSRFHeader = "X-CSRF-Token"
	// ClientHeader names the client; the mobile app sends "mobile".
	ClientHeader = "X-Portal-Client"
)

// Handler serves the portal routes.
type Handler struct {
	cfg    Config
	store  Store
	sso    SSO
	mail   Mailer
	log    *slog.Logger
	now    func() time.Time
	origin string
	// mailing tracks magic-link mails being sent in the background, so that
	// Close can wait for them.
	mailing sync.WaitGroup
}

// New builds the portal. sso nil switches single sign-on off (its routes
// answer 404 and the sign-in page shows no button); mailer nil switches
// magic links off (their routes answer 404).
func New(cfg Config, store Store, sso SSO, mailer Mailer) *Handler {
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 30 * time.Minute
	}
	if cfg.SessionAbsolute <= 0 {
		cfg.SessionAbsolute = 12 * time.Hour
	}
	if cfg.MagicLinkTTL <= 0 {
		cfg.MagicLinkTTL = 15 * time.Minute
	}
	if cfg.MagicLinksPerHour <= 0 {
		cfg.MagicLinksPerHour = 5
	}
	if cfg.LoginFlowTTL <= 0 {
		cfg.LoginFlowTTL = 10 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &Handler{cfg: cfg, store: store, sso: sso, mail: mailer, log: cfg.Logger, now: cfg.Now}
	if u, err := url.Parse(cfg.BaseURL); err == nil && u.Host != "" {
		h.origin = u.Scheme + "://" + u.Host
	}
	return h
}

// Close waits for magic-link mails still being sent.
func (h *Handler) Close() { h.mailing.Wait() }

// Register mounts the session API, the employee API and the pages.
func (h *Handler) Register(e *gin.Engine) {
	api := e.Group("/api", h.secureHeaders, h.loadSession, h.csrf)
	api.GET("/auth/session", h.getSession)
	api.POST("/auth/logout", h.logout)
	api.POST("/auth/magic-link", h.requestMagicLink)
	api.POST("/auth/magic-link/redeem", h.redeemMagicLink)
	api.POST("/auth/sso/native", h.nativeExchange)

	emp := api.Group("/v1/portal", h.requireEmployee)
	emp.GET("/profile", h.getProfile)
	emp.GET("/leave-requests", list(h, Store.LeaveRequests, leaveOut))
	emp.POST("/leave-requests", h.createLeave)
	emp.GET("/sick-leave-reports", list(h, Store.SickLeaves, sickOut))
	emp.POST("/sick-leave-reports", h.createSick)
	emp.GET("/certificates", list(h, Store.Certificates, certOut))
	emp.POST("/certificates", h.createCertificate)
	emp.GET("/certificates/:id", h.getCertificate)
	emp.GET("/compensation", h.getCompensation)

	h.pageRoutes(e)
}

// Owns reports whether path belongs to the portal, whose error bodies and
// status codes differ from the bridge's.
func Owns(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/api" || strings.HasPrefix(path, "/portal/") || path == "/portal"
}

// NotFound answers an unknown portal path or method.
func NotFound(c *gin.Context) {
	fail(c, nil, pipeline.Errorf(pipeline.NotFound, "no such portal resource: %s %s", c.Request.Method, c.Request.URL.Path))
}

// Internal answers a recovered panic on a portal path.
func Internal(c *gin.Context) {
	c.AbortWithStatusJSON(http.StatusInternalServerError, errorBody{Error: codeOf[pipeline.Internal], Message: "internal error"})
}

func (h *Handler) cookieName(base string) string {
	if h.cfg.InsecureCookies {
		return base
	}
	return hostPrefix + base
}

// setCookie writes a cookie with the portal's attributes: Path /, Secure
// unless the local-development mode is on, the given SameSite and HttpOnly.
func (h *Handler) setCookie(c *gin.Context, base, value string, maxAge int, sameSite http.SameSite, httpOnly bool) {
	http.SetCookie(c.Writer, &http.Cookie{
		Name: h.cookieName(base), Value: value, Path: "/", MaxAge: maxAge,
		Secure: !h.cfg.InsecureCookies, HttpOnly: httpOnly, SameSite: sameSite,
	})
}

func (h *Handler) cookie(c *gin.Context, base string) string {
	v, err := c.Cookie(h.cookieName(base))
	if err != nil {
		return ""
	}
	return v
}

// token returns 32 random bytes, base64url without padding: the form of
// session ids, CSRF tokens, magic-link codes, states and nonces.
func (h *Handler) token() (string, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(h.cfg.Rand, b); err != nil {
		return "", pipeline.Errorf(pipeline.Internal, "random token: %v", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// hash is how tokens are stored: hex SHA-256. The tokens carry 256 bits of
// randomness, so an unsalted fast hash is enough to make a stolen table
// useless.
func hash(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

func equal(a, b string) bool {
	return a != "" && len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// validToken reports whether s has the shape of a token, so that malformed
// input is refused as 400 before any lookup.
func validToken(s string) bool {
	if len(s) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}

// secureHeaders keeps API answers out of caches and frames.
func (h *Handler) secureHeaders(c *gin.Context) {
	hd := c.Writer.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	c.Next()
}
