package pipeline

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"io"
	"time"
)

// Scope is what an API key entitles its holder to.
type Scope string

// Key scopes. Data and report keys belong to a portfolio.
const (
	ScopeData    Scope = "data"    // the public data endpoints of the portfolio
	ScopeProcess Scope = "process" // /v1/process and /v1/console
	ScopeReport  Scope = "report"  // read-only reports of the portfolio
	ScopeMobile  Scope = "mobile"  // /v1/mobile
)

// ParseScope accepts one of the four scopes.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopeData, ScopeProcess, ScopeReport, ScopeMobile:
		return Scope(s), nil
	}
	return "", Errorf(Invalid, "scope %q: want data, process, report or mobile", s)
}

// NeedsPortfolio reports whether keys of the scope must belong to a portfolio.
func (s Scope) NeedsPortfolio() bool { return s == ScopeData || s == ScopeReport }

// APIKey is the stored description of a key. The secret itself is never
// stored: only its SHA-256, which is enough for keys of 160 random bits.
type APIKey struct {
	ID          string     `json:"id"`
	Scope       Scope      `json:"scope"`
	PortfolioID string     `json:"portfolio,omitempty"`
	Label       string     `json:"label,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
	// LastUsedAt is when the key last authenticated a request, to within
	// KeyUseGranularity; nil for a key never used.
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
}

// KeyUseGranularity is how often a key's last use is written at most: once
// a minute is precise enough to find a lost device's key, and spares the
// database a write per request.
const KeyUseGranularity = time.Minute

// UseDue reports whether a request at now should record the key's use.
func (k APIKey) UseDue(now time.Time) bool {
	return k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) >= KeyUseGranularity
}

// Revoked reports whether the key has been revoked.
func (k APIKey) Revoked() bool { return k.RevokedAt != nil }

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewKey draws a key id and a secret from r (crypto/rand in production). The
// secret has a recognisable prefix so that secret scanners can find leaked keys.
func NewKey(r io.Reader) (id, secret string, err error) {
	var b [25]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", "", fmt.Errorf("draw key: %w", err)
	}
	id = "key_" + hex.EncodeToString(b[:5])
	secret = "sbk_" + keyEncoding.EncodeToString(b[5:])
	return id, secret, nil
}

// HashKey is the stored form of a secret. The header value is hashed byte for
// byte: a trailing newline or quote yields another hash and so no match.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
