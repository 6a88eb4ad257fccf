// Package bearer verifies the OAuth 2.0 access tokens that machine clients
// send to the bridge instead of an API key: JWTs after RFC 9068, issued by
// a registered authorization server and signed with one of its published
// keys.
//
// The library is github.com/lestrrat-go/jwx/v3. The portal's sign-in uses
// coreos/go-oidc for ID tokens, but go-oidc's key set refetches the JWKS on
// every signature it cannot verify, so a stream of forged tokens with
// made-up key ids would become a stream of requests to the issuer; jwx's
// jwk.Cache keeps the keys, refreshes them in the background, and lets the
// verifier decide when a refresh for an unknown kid is allowed. jwx checks
// the signature, exp, nbf, iat (with skew), iss, aud and required claims;
// this package adds what RFC 9068 asks beyond that (the typ header, the
// asymmetric algorithm allow-list) in one place, Verify.
//
// The package knows no gin: the API maps its errors (the pipeline error
// vocabulary) to RFC 6750 answers.
package bearer

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"golang.org/x/time/rate"

	"github.com/schedbridge/schedbridge/pipeline"
)

// MaxSkew is the clock skew allowed between the issuer and us for exp, nbf
// and iat, as the issue of machine clients fixes it.
const MaxSkew = 60 * time.Second

// Issuers finds registered issuers by the exact iss value.
type Issuers interface {
	TokenIssuer(ctx context.Context, url string) (pipeline.TokenIssuer, error)
}

// Config tunes a Verifier; zero values pick the defaults.
type Config struct {
	// Now is the clock of the claim checks and of the refresh limit.
	Now func() time.Time
	// HTTPClient fetches the key sets; its timeout bounds a fetch.
	HTTPClient *http.Client
	// RefreshEvery is the least time between two fetches of one issuer's
	// keys that a token with an unknown kid may cause (default 30 s); the
	// background refresh follows the key set's Cache-Control between
	// MinRefresh and MaxRefresh.
	RefreshEvery time.Duration
	// FetchTimeout bounds the fetch a request waits for (default 5 s).
	FetchTimeout time.Duration
	// MinRefresh and MaxRefresh bound the background refresh of cached key
	// sets (defaults 5 minutes and 1 hour).
	MinRefresh, MaxRefresh time.Duration
	// Remember is how many verified tokens are remembered until they
	// expire (default 10,000); a negative value remembers none.
	Remember int
	// IssuerTTL is how long a registered issuer's row is reused before it
	// is read again (default 10 s; negative: read on every token). A
	// changed audience reaches a replica within it; a removal needs no
	// wait, because it revokes the issuer's clients, whose registrations
	// the API reads on every request.
	IssuerTTL time.Duration
	Logger    *slog.Logger
}

// Token is what the API needs of a verified access token.
type Token struct {
	Issuer   string
	Subject  string
	ClientID string
	ID       string // jti
	Scopes   []string
	Expiry   time.Time
}

// HasScope reports whether the token's scope claim holds the value.
func (t Token) HasScope(v string) bool { return slices.Contains(t.Scopes, v) }

// Verifier checks access tokens against the registered issuers and their
// cached key sets.
type Verifier struct {
	issuers Issuers
	cfg     Config
	cache   *jwk.Cache
	log     *slog.Logger

	mu      sync.Mutex
	sources map[string]*keySource // per JWKS URI

	// verified remembers tokens that passed every check, by the SHA-256
	// of the token, until they expire: a machine client sends the same
	// token for its whole lifetime, and the signature and claim checks
	// cost more than the rest of a small request (docs/benchmarks.md).
	// Revocation is unaffected, because the API reads the client's
	// registration on every request; removing an issuer revokes its
	// clients.
	verified *lru.Cache[[sha256.Size]byte, Token]

	// issuerRows holds registered issuers read within IssuerTTL. Only
	// found issuers are kept, so the map is as small as the registry,
	// whatever iss values strangers send.
	issuerRows map[string]issuerRow
}

type issuerRow struct {
	iss  pipeline.TokenIssuer
	read time.Time
}

// New starts the key cache; it lives until ctx ends or Close is called.
func New(ctx context.Context, issuers Issuers, cfg Config) (*Verifier, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = 30 * time.Second
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 5 * time.Second
	}
	if cfg.MinRefresh <= 0 {
		cfg.MinRefresh = 5 * time.Minute
	}
	if cfg.MaxRefresh <= 0 {
		cfg.MaxRefresh = time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Remember == 0 {
		cfg.Remember = 10000
	}
	if cfg.IssuerTTL == 0 {
		cfg.IssuerTTL = 10 * time.Second
	}
	v := &Verifier{issuers: issuers, cfg: cfg, log: cfg.Logger, sources: map[string]*keySource{}, issuerRows: map[string]issuerRow{}}
	if cfg.Remember > 0 {
		var err error
		if v.verified, err = lru.New[[sha256.Size]byte, Token](cfg.Remember); err != nil {
			return nil, fmt.Errorf("token memory: %w", err)
		}
	}
	cache, err := jwk.NewCache(ctx, httprc.NewClient())
	if err != nil {
		return nil, fmt.Errorf("start key cache: %w", err)
	}
	v.cache = cache
	return v, nil
}

// Close stops the key cache's workers.
func (v *Verifier) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return v.cache.Shutdown(ctx)
}

// acceptedAlgs are the asymmetric algorithms RFC 9068 tokens may use here:
// never "none", never an HMAC, whose "key" a client could take from the
// published JWKS.
var acceptedAlgs = map[string]jwa.SignatureAlgorithm{
	"RS256": jwa.RS256(), "PS256": jwa.PS256(), "ES256": jwa.ES256(), "EdDSA": jwa.EdDSA(),
}

// requiredClaims are the claims RFC 9068 section 2.2 requires, plus jti.
var requiredClaims = []string{"iss", "exp", "aud", "sub", "client_id", "iat", "jti"}

// invalid is the error of a token that is refused; rule names the check
// that failed and never contains the token.
func invalid(format string, args ...any) error {
	return pipeline.Errorf(pipeline.Unauthorized, "invalid bearer token: "+format, args...)
}

// Verify checks raw (the token without "Bearer ") and returns its claims.
// Errors are pipeline errors: Unauthorized for a token that is malformed,
// expired, foreign or unregistered; Unavailable when the issuer's keys
// cannot be fetched and none are cached.
func (v *Verifier) Verify(ctx context.Context, raw string) (Token, error) {
	if v.verified == nil {
		return v.verify(ctx, raw)
	}
	sum := sha256.Sum256([]byte(raw))
	if tok, ok := v.verified.Get(sum); ok {
		if !v.cfg.Now().After(tok.Expiry.Add(MaxSkew)) {
			return tok, nil
		}
		v.verified.Remove(sum)
		return Token{}, invalid("the token has expired (exp, %s of skew allowed)", MaxSkew)
	}
	tok, err := v.verify(ctx, raw)
	if err == nil {
		v.verified.Add(sum, tok)
	}
	return tok, err
}

// verify runs every check of a token not seen before.
func (v *Verifier) verify(ctx context.Context, raw string) (Token, error) {
	// Compact serialisation only: three base64url parts. jws.Parse would
	// also take the JSON serialisation, which no access token uses.
	if strings.Count(raw, ".") != 2 {
		return Token{}, invalid("not a JWT in compact serialisation")
	}
	msg, err := jws.ParseString(raw)
	if err != nil || len(msg.Signatures()) != 1 {
		return Token{}, invalid("malformed JWT")
	}
	hdr := msg.Signatures()[0].ProtectedHeaders()
	algHdr, _ := hdr.Algorithm()
	alg, ok := acceptedAlgs[algHdr.String()]
	if !ok {
		return Token{}, invalid("algorithm %q is not accepted; use RS256, PS256, ES256 or EdDSA", pipeline.Clip(algHdr.String()))
	}
	typ, _ := hdr.Type()
	if t := strings.ToLower(typ); t != "at+jwt" && t != "application/at+jwt" {
		return Token{}, invalid("header typ %q is not at+jwt (RFC 9068)", pipeline.Clip(typ))
	}
	// The issuer decides which keys and audience apply, so it is read
	// before the signature is checked; nothing else of the unverified
	// payload is used.
	var unverified struct {
		Iss string          `json:"iss"`
		Exp json.RawMessage `json:"exp"`
		Nbf json.RawMessage `json:"nbf"`
		Iat json.RawMessage `json:"iat"`
	}
	if err := json.Unmarshal(msg.Payload(), &unverified); err != nil {
		return Token{}, invalid("payload is not a JSON object of claims")
	}
	// RFC 7519 makes the time claims JSON numbers. jwx also reads a string
	// of digits or an RFC 3339 time, and its pedantic switch is global and
	// still takes the digits; an issuer that sends strings is refused here,
	// before its keys are looked at.
	for _, c := range []struct {
		name string
		raw  json.RawMessage
	}{{"exp", unverified.Exp}, {"nbf", unverified.Nbf}, {"iat", unverified.Iat}} {
		if len(c.raw) > 0 && !isNumber(c.raw) {
			return Token{}, invalid("claim %q must be a JSON number of seconds (RFC 7519 NumericDate)", c.name)
		}
	}
	if unverified.Iss == "" {
		return Token{}, invalid(`required claim "iss" is missing`)
	}
	iss, err := v.issuer(ctx, unverified.Iss)
	switch {
	case pipeline.KindOf(err) == pipeline.NotFound:
		return Token{}, invalid("issuer %q is not registered", pipeline.Clip(unverified.Iss))
	case err != nil:
		return Token{}, fmt.Errorf("look up issuer: %w", err)
	case iss.Removed():
		return Token{}, invalid("issuer %q has been removed", pipeline.Clip(unverified.Iss))
	}
	kid, _ := hdr.KeyID()
	key, err := v.key(ctx, iss, kid, alg)
	if err != nil {
		return Token{}, err
	}
	opts := []jwt.ParseOption{
		jwt.WithKey(alg, key),
		jwt.WithValidate(true),
		jwt.WithClock(jwt.ClockFunc(v.cfg.Now)),
		jwt.WithAcceptableSkew(MaxSkew),
		jwt.WithIssuer(iss.URL),
		jwt.WithAudience(iss.Audience),
	}
	for _, c := range requiredClaims {
		opts = append(opts, jwt.WithRequiredClaim(c))
	}
	tok, err := jwt.Parse([]byte(raw), opts...)
	if err != nil {
		return Token{}, ruleOf(err, iss)
	}
	out := Token{Issuer: iss.URL}
	out.Subject, _ = tok.Subject()
	out.ID, _ = tok.JwtID()
	out.Expiry, _ = tok.Expiration()
	var clientID, scope string
	if err := tok.Get("client_id", &clientID); err != nil || clientID == "" {
		return Token{}, invalid(`claim "client_id" must be a non-empty string`)
	}
	out.ClientID = clientID
	if tok.Has("scope") {
		if err := tok.Get("scope", &scope); err != nil {
			return Token{}, invalid(`claim "scope" must be a space-separated string`)
		}
		out.Scopes = strings.Fields(scope)
	}
	return out, nil
}

// issuer reads a registered issuer, reusing a row read within IssuerTTL:
// the row is one query of a token's first request, as much as the rest of
// the checks (docs/benchmarks.md).
func (v *Verifier) issuer(ctx context.Context, url string) (pipeline.TokenIssuer, error) {
	now := v.cfg.Now()
	v.mu.Lock()
	row, ok := v.issuerRows[url]
	v.mu.Unlock()
	if ok && now.Sub(row.read) < v.cfg.IssuerTTL {
		return row.iss, nil
	}
	iss, err := v.issuers.TokenIssuer(ctx, url)
	if err != nil {
		return iss, err
	}
	if v.cfg.IssuerTTL > 0 {
		v.mu.Lock()
		v.issuerRows[url] = issuerRow{iss: iss, read: now}
		v.mu.Unlock()
	}
	return iss, nil
}

// ruleOf names the claim check that refused a token.
func ruleOf(err error, iss pipeline.TokenIssuer) error {
	switch {
	case errors.Is(err, jwt.TokenExpiredError()):
		return invalid("the token has expired (exp, %s of skew allowed)", MaxSkew)
	case errors.Is(err, jwt.TokenNotYetValidError()):
		return invalid("the token is not valid yet (nbf, %s of skew allowed)", MaxSkew)
	case errors.Is(err, jwt.InvalidIssuedAtError()):
		return invalid("the token was issued in the future (iat, %s of skew allowed)", MaxSkew)
	case errors.Is(err, jwt.InvalidAudienceError()):
		return invalid("audience (aud) does not contain %q", iss.Audience)
	case errors.Is(err, jwt.InvalidIssuerError()):
		return invalid("issuer (iss) is not %q", iss.URL)
	case errors.Is(err, jwt.MissingRequiredClaimError()):
		return invalid("a required claim is missing (%s are required)", strings.Join(requiredClaims, ", "))
	case errors.Is(err, jws.VerifyError()):
		return invalid("the signature does not verify with the issuer's key")
	}
	return invalid("the token does not validate")
}

// key finds the verification key of kid in the issuer's key set. The set
// is fetched on first use and refreshed, within the issuer's budget, when a
// token names a kid it does not hold: that is how key rotation at the
// issuer reaches us without a restart.
func (v *Verifier) key(ctx context.Context, iss pipeline.TokenIssuer, kid string, alg jwa.SignatureAlgorithm) (jwk.Key, error) {
	set, err := v.keySet(ctx, iss)
	if err != nil {
		return nil, err
	}
	if k, ok := pick(set, kid, alg); ok {
		return k, nil
	}
	// A key the set holds under the kid, but for another algorithm or
	// another use, is no matter of rotation: a fetch would find the same
	// key, and would spend the refresh budget that a real rotation needs.
	if k, ok := set.LookupKeyID(kid); ok && kid != "" {
		if a, ok := k.Algorithm(); ok && a.String() != alg.String() {
			return nil, invalid("key id %q is published for algorithm %s, and the token is signed with %s", pipeline.Clip(kid), a.String(), alg.String())
		}
		return nil, invalid("key id %q is not published for signatures", pipeline.Clip(kid))
	}
	fresh, err := v.fetch(ctx, iss, func(set jwk.Set) bool { _, ok := pick(set, kid, alg); return ok })
	if err == nil {
		if k, ok := pick(fresh, kid, alg); ok {
			return k, nil
		}
	}
	return nil, invalid("key id %q is not in the issuer's key set", pipeline.Clip(kid))
}

// pick chooses the key a token names. Without a kid, the set must hold
// exactly one key usable with alg. A key whose own alg differs from the
// token's is not used, so that an RSA key published for RS256 cannot be
// made to verify another algorithm's signature.
func pick(set jwk.Set, kid string, alg jwa.SignatureAlgorithm) (jwk.Key, bool) {
	usable := func(k jwk.Key) bool {
		if a, ok := k.Algorithm(); ok && a.String() != alg.String() {
			return false
		}
		if u, ok := k.KeyUsage(); ok && u != "sig" {
			return false
		}
		return true
	}
	if kid != "" {
		k, ok := set.LookupKeyID(kid)
		return k, ok && usable(k)
	}
	var found jwk.Key
	for i := range set.Len() {
		k, _ := set.Key(i)
		if usable(k) {
			if found != nil {
				return nil, false
			}
			found = k
		}
	}
	return found, found != nil
}

// isNumber reports whether raw, a value of a payload that decoded as
// JSON, is a number: only numbers begin with a minus or a digit.
func isNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// keySet returns the cached key set of an issuer, fetching it on first
// use. When no set has ever been fetched and a fetch fails now, the answer
// is Unavailable: the token may be good, the client should retry.
func (v *Verifier) keySet(ctx context.Context, iss pipeline.TokenIssuer) (jwk.Set, error) {
	if set, err := v.cache.Lookup(ctx, iss.JWKSURI); err == nil {
		return set, nil
	}
	set, err := v.fetch(ctx, iss, func(jwk.Set) bool { return true })
	if err != nil {
		return nil, pipeline.Errorf(pipeline.Unavailable, "the keys of issuer %s cannot be fetched right now; retry later", iss.URL)
	}
	return set, nil
}

// fetch gets the issuer's key set from its JWKS URI, registering the URI
// with the cache the first time, at most once per RefreshEvery per issuer.
// Requests arriving while a fetch is under way wait for it instead of
// starting their own, and take its set if enough tells it will do.
func (v *Verifier) fetch(ctx context.Context, iss pipeline.TokenIssuer, enough func(jwk.Set) bool) (jwk.Set, error) {
	s := v.source(iss.JWKSURI)
	s.fetch.Lock()
	defer s.fetch.Unlock()
	if set, err := v.cache.Lookup(ctx, iss.JWKSURI); err == nil && enough(set) {
		return set, nil
	}
	if !s.budget.AllowN(v.cfg.Now(), 1) {
		return nil, errors.New("the refresh budget of the issuer's keys is spent")
	}
	fctx, cancel := context.WithTimeout(ctx, v.cfg.FetchTimeout)
	defer cancel()
	if !v.cache.IsRegistered(fctx, iss.JWKSURI) {
		// Registered without waiting: the refresh below reports a failed
		// fetch at once, where waiting for readiness would hold the request
		// until the timeout.
		err := v.cache.Register(fctx, iss.JWKSURI,
			jwk.WithWaitReady(false),
			jwk.WithHTTPClient(v.cfg.HTTPClient),
			jwk.WithHttprcResourceOption(httprc.WithMinInterval(v.cfg.MinRefresh)),
			jwk.WithHttprcResourceOption(httprc.WithMaxInterval(v.cfg.MaxRefresh)),
		)
		if err != nil {
			return nil, fmt.Errorf("register the keys of issuer %s: %w", iss.URL, err)
		}
	}
	set, err := v.cache.Refresh(fctx, iss.JWKSURI)
	if err != nil {
		v.log.WarnContext(ctx, "bearer: fetch of the issuer's keys failed", "issuer", iss.URL, "jwks_uri", iss.JWKSURI, "err", err)
		return nil, err
	}
	return set, nil
}

// keySource is the fetch state of one JWKS URI.
type keySource struct {
	fetch  sync.Mutex    // one fetch at a time
	budget *rate.Limiter // one fetch per RefreshEvery, on the injected clock
}

func (v *Verifier) source(jwksURI string) *keySource {
	v.mu.Lock()
	defer v.mu.Unlock()
	s, ok := v.sources[jwksURI]
	if !ok {
		s = &keySource{budget: rate.NewLimiter(rate.Every(v.cfg.RefreshEvery), 1)}
		v.sources[jwksURI] = s
	}
	return s
}

// Discover reads an issuer's OpenID Connect discovery document and returns
// its JWKS URI. The document must name the issuer exactly as registered,
// as OpenID Connect Discovery section 4.3 demands, so that a typo or a
// proxy's rewrite is caught when the issuer is added, not at the first
// token.
func Discover(ctx context.Context, client *http.Client, issuer string) (string, error) {
	if err := pipeline.CheckIssuerURL(issuer); err != nil {
		return "", err
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	u := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", pipeline.Errorf(pipeline.Invalid, "issuer %s: %v", issuer, err)
	}
	req.Header.Set("Accept", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return "", pipeline.Errorf(pipeline.Unavailable, "discovery of issuer %s: %v", issuer, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", pipeline.Errorf(pipeline.Invalid, "discovery of issuer %s: GET %s answered %s", issuer, u, res.Status)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&doc); err != nil {
		return "", pipeline.Errorf(pipeline.Invalid, "discovery of issuer %s: %v", issuer, err)
	}
	if doc.Issuer != issuer {
		return "", pipeline.Errorf(pipeline.Invalid, "discovery of issuer %s: the document names the issuer %q; register exactly that URL", issuer, doc.Issuer)
	}
	ju, err := url.Parse(doc.JWKSURI)
	if err != nil || doc.JWKSURI == "" {
		return "", pipeline.Errorf(pipeline.Invalid, "discovery of issuer %s: no usable jwks_uri", issuer)
	}
	if ju.Scheme != "https" && (ju.Scheme != "http" || !pipeline.IsLoopbackHost(ju.Hostname())) {
		return "", pipeline.Errorf(pipeline.Invalid, "discovery of issuer %s: jwks_uri %s is not https", issuer, doc.JWKSURI)
	}
	return doc.JWKSURI, nil
}
