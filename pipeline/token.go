package pipeline

import (
	"net"
	"net/url"
	"strings"
	"time"
)

// TokenIssuer is an OAuth 2.0 authorization server whose JWT access tokens
// (RFC 9068) the bridge accepts from machine clients. Its URL is the exact
// value of the tokens' iss claim; the JWKS URI comes from its discovery
// document when it is registered.
type TokenIssuer struct {
	URL       string     `json:"url"`
	Audience  string     `json:"audience"`
	JWKSURI   string     `json:"jwks_uri"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	RemovedAt *time.Time `json:"removed_at,omitempty"`
}

// Removed reports whether the issuer is no longer trusted.
func (i TokenIssuer) Removed() bool { return i.RemovedAt != nil }

// TokenClient is the registration of one OAuth client of a registered
// issuer. The scope and the portfolio are ours, never the token's: a token
// only proves which client it was issued to.
type TokenClient struct {
	ID          string     `json:"id"`
	Issuer      string     `json:"issuer"`
	ClientID    string     `json:"client_id"`
	Scope       Scope      `json:"scope"`
	PortfolioID string     `json:"portfolio,omitempty"`
	Label       string     `json:"label,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
}

// Revoked reports whether the registration has been revoked.
func (c TokenClient) Revoked() bool { return c.RevokedAt != nil }

// TokenScopeValue is the value the scope claim of a client's access tokens
// must contain for its registered scope, for example "schedbridge:data".
func TokenScopeValue(s Scope) string { return "schedbridge:" + string(s) }

// CheckIssuerURL accepts the URL of a token issuer: https, or plain http on
// a loopback address only (tests and local development), without query or
// fragment, because the URL must be compared byte for byte with the iss
// claim of every token.
func CheckIssuerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return Errorf(Invalid, "issuer %q: want an absolute https:// URL", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(raw, "?") || strings.HasSuffix(raw, "#") {
		return Errorf(Invalid, "issuer %q: an issuer URL has no query or fragment", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if IsLoopbackHost(u.Hostname()) {
			return nil
		}
		return Errorf(Invalid, "issuer %q: plain http is accepted on loopback addresses only; use https://", raw)
	}
	return Errorf(Invalid, "issuer %q: want an https:// URL", raw)
}

// IsLoopbackHost reports whether host (without port) names the local
// machine: localhost or a loopback IP address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
