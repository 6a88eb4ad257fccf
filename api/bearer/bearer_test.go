package bearer_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/schedbridge/schedbridge/api/bearer"
	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/pipeline"
)

var t0 = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

// issuer is a key set served over HTTP, as an authorization server
// publishes it; keys can be rotated and the server made to fail.
type issuer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	private []jwk.Key
	fetches atomic.Int64
	down    atomic.Bool
}

func newIssuer(t *testing.T) *issuer {
	is := &issuer{}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		is.fetches.Add(1)
		if is.down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		is.mu.Lock()
		defer is.mu.Unlock()
		set := jwk.NewSet()
		for _, k := range is.private {
			pub, err := k.PublicKey()
			if err != nil {
				t.Error(err)
			}
			_ = set.AddKey(pub)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

// addKey generates a key for alg, publishes it and returns it.
func (is *issuer) addKey(t *testing.T, alg jwa.SignatureAlgorithm, kid string) jwk.Key {
	t.Helper()
	var raw any
	var err error
	switch alg.String() {
	case "RS256", "PS256":
		raw, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		raw, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "EdDSA":
		_, raw, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	k, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	_ = k.Set(jwk.KeyIDKey, kid)
	_ = k.Set(jwk.AlgorithmKey, alg)
	_ = k.Set(jwk.KeyUsageKey, "sig")
	is.mu.Lock()
	is.private = append(is.private, k)
	is.mu.Unlock()
	return k
}

func (is *issuer) url() string { return is.srv.URL }

// registry is the issuers the verifier trusts.
type registry map[string]pipeline.TokenIssuer

func (r registry) TokenIssuer(_ context.Context, url string) (pipeline.TokenIssuer, error) {
	if i, ok := r[url]; ok {
		return i, nil
	}
	return pipeline.TokenIssuer{}, pipeline.Errorf(pipeline.NotFound, "issuer %s is not registered", url)
}

const audience = "https://schedbridge.test/v1"

// claims are the RFC 9068 claims of a good token at t0.
func claims(iss string) map[string]any {
	return map[string]any{
		"iss": iss, "aud": []string{audience, "other"}, "sub": "trader", "client_id": "trader",
		"iat": t0.Unix(), "nbf": t0.Unix(), "exp": t0.Add(5 * time.Minute).Unix(), "jti": "j1",
		"scope": "openid schedbridge:data",
	}
}

// sign builds a compact JWS of c with key under alg and typ.
func sign(t *testing.T, c map[string]any, alg jwa.SignatureAlgorithm, key jwk.Key, typ string) string {
	t.Helper()
	payload, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	hdr := jws.NewHeaders()
	if typ != "" {
		_ = hdr.Set(jws.TypeKey, typ)
	}
	out, err := jws.Sign(payload, jws.WithKey(alg, key, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// forge builds a token with a free header and an HMAC or empty signature,
// as an attacker would.
func forge(t *testing.T, header map[string]any, c map[string]any, secret []byte) string {
	t.Helper()
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(header)
	p, _ := json.Marshal(c)
	input := enc.EncodeToString(h) + "." + enc.EncodeToString(p)
	if secret == nil {
		return input + "."
	}
	key, err := jwk.Import(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := jws.Sign([]byte(p), jws.WithKey(jwa.HS256(), key, jws.WithProtectedHeaders(hdrOf(t, header))))
	if err != nil {
		t.Fatal(err)
	}
	return string(sig)
}

func hdrOf(t *testing.T, m map[string]any) jws.Headers {
	h := jws.NewHeaders()
	for k, v := range m {
		if k == "alg" {
			continue
		}
		if err := h.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// newVerifier is a verifier of reg on the clock c; cfg sets the rest.
func newVerifier(t *testing.T, reg bearer.Issuers, c *clocktest.Clock, cfg bearer.Config) *bearer.Verifier {
	t.Helper()
	cfg.Now, cfg.Logger = c.Now, slog.New(slog.NewTextHandler(io.Discard, nil))
	v, err := bearer.New(context.Background(), reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	return v
}

func TestVerify(t *testing.T) {
	is := newIssuer(t)
	rsKey := is.addKey(t, jwa.RS256(), "rs")
	psKey := is.addKey(t, jwa.PS256(), "ps")
	esKey := is.addKey(t, jwa.ES256(), "es")
	edKey := is.addKey(t, jwa.EdDSA(), "ed")
	other := newIssuer(t)
	otherKey := other.addKey(t, jwa.RS256(), "rs")
	reg := registry{is.url(): {URL: is.url(), Audience: audience, JWKSURI: is.url() + "/jwks"}}

	rsPub, _ := rsKey.PublicKey()
	var rsRaw rsa.PublicKey
	if err := jwk.Export(rsPub, &rsRaw); err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&rsRaw)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})

	with := func(k string, v any) map[string]any {
		c := claims(is.url())
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	tests := []struct {
		name    string
		token   func() string
		advance time.Duration
		rule    string // "" for a good token
	}{
		{"RS256", func() string { return sign(t, claims(is.url()), jwa.RS256(), rsKey, "at+jwt") }, 0, ""},
		{"PS256", func() string { return sign(t, claims(is.url()), jwa.PS256(), psKey, "at+jwt") }, 0, ""},
		{"ES256", func() string { return sign(t, claims(is.url()), jwa.ES256(), esKey, "application/at+jwt") }, 0, ""},
		{"EdDSA", func() string { return sign(t, claims(is.url()), jwa.EdDSA(), edKey, "at+JWT") }, 0, ""},
		{"typ JWT", func() string { return sign(t, claims(is.url()), jwa.RS256(), rsKey, "JWT") }, 0, `typ "JWT" is not at+jwt`},
		{"no typ", func() string { return sign(t, claims(is.url()), jwa.RS256(), rsKey, "") }, 0, `typ "" is not at+jwt`},
		{"expired within skew", func() string { return sign(t, claims(is.url()), jwa.RS256(), rsKey, "at+jwt") }, 5*time.Minute + 59*time.Second, ""},
		{"expired", func() string { return sign(t, claims(is.url()), jwa.RS256(), rsKey, "at+jwt") }, 5*time.Minute + 61*time.Second, "has expired"},
		{"nbf ahead within skew", func() string { return sign(t, with("nbf", t0.Add(time.Minute).Unix()), jwa.RS256(), rsKey, "at+jwt") }, 0, ""},
		{"nbf ahead", func() string { return sign(t, with("nbf", t0.Add(2*time.Minute).Unix()), jwa.RS256(), rsKey, "at+jwt") }, 0, "not valid yet"},
		{"iat ahead", func() string { return sign(t, with("iat", t0.Add(2*time.Minute).Unix()), jwa.RS256(), rsKey, "at+jwt") }, 0, "issued in the future"},
		{"wrong audience", func() string { return sign(t, with("aud", "https://elsewhere"), jwa.RS256(), rsKey, "at+jwt") }, 0, "audience"},
		{"missing jti", func() string { return sign(t, with("jti", nil), jwa.RS256(), rsKey, "at+jwt") }, 0, "required claim is missing"},
		{"missing sub", func() string { return sign(t, with("sub", nil), jwa.RS256(), rsKey, "at+jwt") }, 0, "required claim is missing"},
		{"missing client_id", func() string { return sign(t, with("client_id", nil), jwa.RS256(), rsKey, "at+jwt") }, 0, "required claim is missing"},
		{"missing iat", func() string { return sign(t, with("iat", nil), jwa.RS256(), rsKey, "at+jwt") }, 0, "required claim is missing"},
		{"missing exp", func() string { return sign(t, with("exp", nil), jwa.RS256(), rsKey, "at+jwt") }, 0, "required claim is missing"},
		{"missing aud", func() string { return sign(t, with("aud", nil), jwa.RS256(), rsKey, "at+jwt") }, 0, "" + "audience"},
		{"exp as a string", func() string {
			return sign(t, with("exp", strconv.FormatInt(t0.Add(5*time.Minute).Unix(), 10)), jwa.RS256(), rsKey, "at+jwt")
		}, 0, `"exp" must be a JSON number`},
		{"nbf as an RFC 3339 time", func() string { return sign(t, with("nbf", t0.Format(time.RFC3339)), jwa.RS256(), rsKey, "at+jwt") }, 0, `"nbf" must be a JSON number`},
		{"iat as a string", func() string {
			return sign(t, with("iat", strconv.FormatInt(t0.Unix(), 10)), jwa.RS256(), rsKey, "at+jwt")
		}, 0, `"iat" must be a JSON number`},
		{"exp null", func() string { return sign(t, with("exp", json.RawMessage("null")), jwa.RS256(), rsKey, "at+jwt") }, 0, `"exp" must be a JSON number`},
		{"fractional exp", func() string {
			return sign(t, with("exp", float64(t0.Add(5*time.Minute).Unix())+0.5), jwa.RS256(), rsKey, "at+jwt")
		}, 0, ""},
		{"missing iss", func() string { return sign(t, with("iss", nil), jwa.RS256(), rsKey, "at+jwt") }, 0, `"iss" is missing`},
		{"unregistered issuer", func() string { return sign(t, claims(other.url()), jwa.RS256(), otherKey, "at+jwt") }, 0, "is not registered"},
		{"foreign key, same kid", func() string { return sign(t, claims(is.url()), jwa.RS256(), otherKey, "at+jwt") }, 0, "signature does not verify"},
		{"key of another alg", func() string {
			return sign(t, claims(is.url()), jwa.PS256(), relabel(t, rsKey, "ps", jwa.PS256()), "at+jwt")
		}, 0, "signature does not verify"},
		{"alg none", func() string {
			return forge(t, map[string]any{"alg": "none", "typ": "at+jwt", "kid": "rs"}, claims(is.url()), nil)
		}, 0, `algorithm "none" is not accepted`},
		{"HS256 with the public key as secret", func() string {
			return forge(t, map[string]any{"alg": "HS256", "typ": "at+jwt", "kid": "rs"}, claims(is.url()), pubPEM)
		}, 0, `algorithm "HS256" is not accepted`},
		{"not a JWT", func() string { return "abc" }, 0, "compact serialisation"},
		{"garbage parts", func() string { return "a.b.c" }, 0, "malformed"},
		{"payload not JSON", func() string {
			enc := base64.RawURLEncoding
			return enc.EncodeToString([]byte(`{"alg":"RS256","typ":"at+jwt","kid":"rs"}`)) + "." +
				enc.EncodeToString([]byte("not-json")) + "." + enc.EncodeToString([]byte("sig"))
		}, 0, "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := clocktest.New(t0.Add(tc.advance))
			v := newVerifier(t, reg, c, bearer.Config{})
			raw := tc.token()
			tok, err := v.Verify(context.Background(), raw)
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("want a good token, got %v", err)
				}
				if tok.Issuer != is.url() || tok.ClientID != "trader" || tok.Subject != "trader" || tok.ID != "j1" ||
					!tok.HasScope("schedbridge:data") || tok.HasScope("schedbridge:process") {
					t.Errorf("claims: %+v", tok)
				}
				return
			}
			if pipeline.KindOf(err) != pipeline.Unauthorized || !strings.Contains(err.Error(), tc.rule) {
				t.Fatalf("want Unauthorized naming %q, got %v", tc.rule, err)
			}
			if strings.Contains(err.Error(), raw) {
				t.Errorf("the error echoes the token: %v", err)
			}
		})
	}
}

// relabel is a copy of a private key published under another kid, and
// under another alg when alg is not nil: a key the issuer's set does not
// hold under that name.
func relabel(t *testing.T, k jwk.Key, kid string, alg jwa.SignatureAlgorithm) jwk.Key {
	t.Helper()
	c, err := k.Clone()
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Set(jwk.KeyIDKey, kid)
	if alg != (jwa.SignatureAlgorithm{}) {
		_ = c.Set(jwk.AlgorithmKey, alg)
	}
	return c
}

// single is an issuer with one key, registered in a registry that counts
// its lookups, and a verifier on a clock at t0.
type single struct {
	is  *issuer
	key jwk.Key
	reg *countingRegistry
	c   *clocktest.Clock
	v   *bearer.Verifier
}

func oneKey(t *testing.T, alg jwa.SignatureAlgorithm, cfg bearer.Config) single {
	is := newIssuer(t)
	k := is.addKey(t, alg, "k1")
	reg := &countingRegistry{registry: registry{is.url(): {URL: is.url(), Audience: audience, JWKSURI: is.url() + "/jwks"}}}
	c := clocktest.New(t0)
	return single{is: is, key: k, reg: reg, c: c, v: newVerifier(t, reg, c, cfg)}
}

// TestKeyRotation: a token signed with a key the cached set does not hold
// makes the verifier fetch the set again, but at most once per refresh
// interval, so forged kids cannot turn into a flood of fetches.
func TestKeyRotation(t *testing.T) {
	f := oneKey(t, jwa.RS256(), bearer.Config{})
	is, k1, c, v := f.is, f.key, f.c, f.v
	ctx := context.Background()
	if _, err := v.Verify(ctx, sign(t, claims(is.url()), jwa.RS256(), k1, "at+jwt")); err != nil {
		t.Fatal(err)
	}
	first := is.fetches.Load()
	if first < 1 {
		t.Fatalf("fetches: %d", first)
	}
	// Forged kids within the interval: no fetch.
	for range 20 {
		forged := sign(t, claims(is.url()), jwa.RS256(), relabel(t, k1, "made-up", jwa.SignatureAlgorithm{}), "at+jwt")
		if _, err := v.Verify(ctx, forged); pipeline.KindOf(err) != pipeline.Unauthorized || !strings.Contains(err.Error(), `key id "made-up"`) {
			t.Fatalf("forged kid: %v", err)
		}
	}
	afterForged := is.fetches.Load()
	if afterForged > first+1 {
		t.Errorf("forged kids caused %d fetches, want at most one", afterForged-first)
	}

	// Rotation: the issuer publishes k2 and signs with it. Within the
	// interval of the last refresh the token is refused; after it, the set
	// is fetched again and the token accepted, without a restart.
	k2 := is.addKey(t, jwa.RS256(), "k2")
	c.Add(31 * time.Second)
	if _, err := v.Verify(ctx, sign(t, claims(is.url()), jwa.RS256(), k2, "at+jwt")); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	// k1 still verifies from the refreshed set, without another fetch.
	n := is.fetches.Load()
	if _, err := v.Verify(ctx, sign(t, claims(is.url()), jwa.RS256(), k1, "at+jwt")); err != nil {
		t.Fatal(err)
	}
	if is.fetches.Load() != n {
		t.Errorf("a known kid caused a fetch")
	}
}

// TestKeysUnavailable: when the issuer's keys cannot be fetched and none
// are cached, the answer is Unavailable (503, retry), not Unauthorized;
// once fetched, an outage of the issuer does not matter.
func TestKeysUnavailable(t *testing.T) {
	f := oneKey(t, jwa.ES256(), bearer.Config{})
	is, k, c, v := f.is, f.key, f.c, f.v
	ctx := context.Background()
	tok := sign(t, claims(is.url()), jwa.ES256(), k, "at+jwt")
	is.down.Store(true)
	if _, err := v.Verify(ctx, tok); pipeline.KindOf(err) != pipeline.Unavailable {
		t.Fatalf("issuer down, nothing cached: %v", err)
	}
	// Within the refresh interval no new fetch is tried. The first try
	// also registered the key set with the cache, whose own first fetch
	// runs in the background and may land after Verify returned (seen
	// under the race detector: fetches 1 -> 2 during the second try); it
	// is waited for, so that the count shows the second try's fetches alone.
	settleFetches(is, 2)
	n := is.fetches.Load()
	if _, err := v.Verify(ctx, tok); pipeline.KindOf(err) != pipeline.Unavailable || is.fetches.Load() != n {
		t.Fatalf("second try: %v, fetches %d -> %d", err, n, is.fetches.Load())
	}
	is.down.Store(false)
	c.Add(31 * time.Second)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("issuer back: %v", err)
	}
	is.down.Store(true)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("issuer down, keys cached: %v", err)
	}
}

// settleFetches waits until the issuer has served want fetches of its key
// set, or for at most five seconds (a cache that folded its background fetch
// into the request's would never get there).
func settleFetches(is *issuer, want int64) {
	deadline := time.Now().Add(5 * time.Second)
	for is.fetches.Load() < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAlgorithmMismatch: a token whose kid names a key published for
// another algorithm is refused as such, without a fetch of the key set, so
// that it spends none of the refresh budget a real rotation needs.
func TestAlgorithmMismatch(t *testing.T) {
	f := oneKey(t, jwa.RS256(), bearer.Config{})
	is, k1, c, v := f.is, f.key, f.c, f.v
	ctx := context.Background()
	if _, err := v.Verify(ctx, sign(t, claims(is.url()), jwa.RS256(), k1, "at+jwt")); err != nil {
		t.Fatal(err)
	}
	c.Add(31 * time.Second) // the refresh budget is full again
	ps := sign(t, claims(is.url()), jwa.PS256(), relabel(t, k1, "k1", jwa.PS256()), "at+jwt")
	_, err := v.Verify(ctx, ps)
	if pipeline.KindOf(err) != pipeline.Unauthorized || !strings.Contains(err.Error(), `key id "k1" is published for algorithm RS256, and the token is signed with PS256`) {
		t.Fatalf("PS256 with an RS256 key: %v", err)
	}
	// The budget is intact, so the mismatch fetched nothing: a key rotated
	// in now is fetched at once. (The fetch count itself is no proof: the
	// key cache's first background fetch may land at any time.)
	k2 := is.addKey(t, jwa.RS256(), "k2")
	if _, err := v.Verify(ctx, sign(t, claims(is.url()), jwa.RS256(), k2, "at+jwt")); err != nil {
		t.Fatalf("rotated key after the mismatch: %v", err)
	}
}

// TestQuotedValuesCapped: a refusal quotes what the client sent (issuer,
// key id, typ) at most pipeline.MaxQuoted bytes of it, so that neither
// the answer nor the audit trail grows with the header. (An unknown alg
// does not get that far: jws refuses it as malformed.)
func TestQuotedValuesCapped(t *testing.T) {
	f := oneKey(t, jwa.RS256(), bearer.Config{})
	is, k1, v := f.is, f.key, f.v
	long := strings.Repeat("ä", 100_000)
	for _, tc := range []struct {
		name  string
		token string
	}{
		{"iss", sign(t, claims("https://"+long), jwa.RS256(), k1, "at+jwt")},
		{"kid", sign(t, claims(is.url()), jwa.RS256(), relabel(t, k1, long, jwa.SignatureAlgorithm{}), "at+jwt")},
		{"typ", sign(t, claims(is.url()), jwa.RS256(), k1, long)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), tc.token)
			msg := pipeline.MessageOf(err)
			if pipeline.KindOf(err) != pipeline.Unauthorized || len(msg) > 400 || !strings.Contains(msg, "ää…") {
				t.Fatalf("%d bytes: %.300s", len(msg), msg)
			}
		})
	}
}

// countingRegistry counts issuer lookups.
type countingRegistry struct {
	registry
	n atomic.Int64
}

func (r *countingRegistry) TokenIssuer(ctx context.Context, url string) (pipeline.TokenIssuer, error) {
	r.n.Add(1)
	return r.registry.TokenIssuer(ctx, url)
}

// TestRemember: a token that passed is remembered until it expires, so
// its checks run once; after exp (plus skew) it is refused like any
// expired token, remembered or not.
func TestRemember(t *testing.T) {
	// Every check reads the issuer's row here, so that the count of
	// lookups is the count of tokens checked.
	f := oneKey(t, jwa.RS256(), bearer.Config{IssuerTTL: -1})
	is, k, reg, c, v := f.is, f.key, f.reg, f.c, f.v
	ctx := context.Background()
	tok := sign(t, claims(is.url()), jwa.RS256(), k, "at+jwt")
	for range 3 {
		if got, err := v.Verify(ctx, tok); err != nil || got.ClientID != "trader" {
			t.Fatalf("verify: %+v, %v", got, err)
		}
	}
	if n := reg.n.Load(); n != 1 {
		t.Errorf("issuer lookups: %d, want 1", n)
	}
	// A token refused is not remembered: every try is checked.
	bad := sign(t, setClaim(claims(is.url()), "aud", "https://elsewhere"), jwa.RS256(), k, "at+jwt")
	for range 2 {
		if _, err := v.Verify(ctx, bad); pipeline.KindOf(err) != pipeline.Unauthorized {
			t.Fatalf("bad token: %v", err)
		}
	}
	if n := reg.n.Load(); n != 3 {
		t.Errorf("issuer lookups after two refusals: %d, want 3", n)
	}
	c.Add(5*time.Minute + 61*time.Second)
	if _, err := v.Verify(ctx, tok); pipeline.KindOf(err) != pipeline.Unauthorized || !strings.Contains(err.Error(), "has expired") {
		t.Errorf("remembered token after expiry: %v", err)
	}
}

func setClaim(c map[string]any, k string, v any) map[string]any {
	c[k] = v
	return c
}

// TestIssuerTTL: the issuer's row is reused for IssuerTTL (10 s by
// default), then read again, so that a changed audience reaches every
// replica within it.
func TestIssuerTTL(t *testing.T) {
	f := oneKey(t, jwa.RS256(), bearer.Config{Remember: -1})
	is, k, reg, c, v := f.is, f.key, f.reg, f.c, f.v
	ctx := context.Background()
	tok := sign(t, claims(is.url()), jwa.RS256(), k, "at+jwt")
	for range 3 {
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := reg.n.Load(); n != 1 {
		t.Errorf("lookups within the TTL: %d, want 1", n)
	}
	// The audience changes; after the TTL the token for the old one is
	// refused.
	reg.registry[is.url()] = pipeline.TokenIssuer{URL: is.url(), Audience: "https://new.example.com", JWKSURI: is.url() + "/jwks"}
	c.Add(11 * time.Second)
	if _, err := v.Verify(ctx, tok); pipeline.KindOf(err) != pipeline.Unauthorized || !strings.Contains(err.Error(), "audience") {
		t.Errorf("after the TTL: %v", err)
	}
	if n := reg.n.Load(); n != 2 {
		t.Errorf("lookups after the TTL: %d, want 2", n)
	}
}
