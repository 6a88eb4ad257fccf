package api_test

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/api/bearer"
	"github.com/schedbridge/schedbridge/api/portal/portaltest"
	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// The resource servers the test IdPs issue tokens for: ours, and another
// API of the same company.
const (
	audience      = "https://schedbridge.test/v1"
	otherAudience = "https://billing.test/api"
)

var allScopes = []string{"schedbridge:data", "schedbridge:process", "schedbridge:report", "schedbridge:mobile"}

// machineIdP starts an OpenID Connect provider (npm oidc-provider) that
// issues RFC 9068 access tokens by client credentials to the test's
// machine clients.
func machineIdP(t *testing.T, port int) *portaltest.IdP {
	t.Helper()
	var machines []portaltest.MachineClient
	for _, id := range []string{"trader", "trader2", "ops", "reporter", "app", "stranger", "revoked"} {
		machines = append(machines, portaltest.MachineClient{ID: id, Secret: "secret-" + id})
	}
	return portaltest.StartIdP(t, portaltest.IdPOptions{
		Machines: machines, Port: port,
		Resources: []portaltest.ResourceServer{
			{Audience: audience, Scopes: allScopes, TTL: 5 * time.Minute},
			{Audience: otherAudience, Scopes: allScopes, TTL: 5 * time.Minute},
		},
	})
}

// tokenOf gets an access token of a machine client for resource.
func tokenOf(t *testing.T, idp *portaltest.IdP, client, resource, scope string) string {
	t.Helper()
	status, tok, code := idp.ClientCredentials(t, client, "secret-"+client, resource, scope)
	if status != http.StatusOK || tok == "" {
		t.Fatalf("token of %s for %s (%s): %d %s", client, resource, scope, status, code)
	}
	return tok
}

// issuedAt reads the iat of a token without verifying it: the tests' clock
// starts there, so that nothing depends on the wall time of the run.
func issuedAt(t *testing.T, tok string) time.Time {
	t.Helper()
	iat, err := tokenIssuedAt(tok)
	if err != nil {
		t.Fatal(err)
	}
	return iat
}

func tokenIssuedAt(tok string) (time.Time, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}, fmt.Errorf("not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, err
	}
	var c struct {
		Iat int64 `json:"iat"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return time.Time{}, err
	}
	return time.Unix(c.Iat, 0).UTC(), nil
}

// registerIssuer registers idp with our audience, by discovery as the
// CLI does.
func registerIssuer(t *testing.T, db *sqldb.DB, idp *portaltest.IdP) {
	t.Helper()
	ctx := context.Background()
	jwks, err := bearer.Discover(ctx, nil, idp.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.PutTokenIssuer(ctx, pipeline.TokenIssuer{URL: idp.Issuer, Audience: audience, JWKSURI: jwks}, now); err != nil {
		t.Fatal(err)
	}
}

func registerClients(t *testing.T, db *sqldb.DB, issuer string) {
	t.Helper()
	ctx := context.Background()
	for i, c := range []pipeline.TokenClient{
		{ClientID: "trader", Scope: pipeline.ScopeData, PortfolioID: "p1"},
		{ClientID: "trader2", Scope: pipeline.ScopeData, PortfolioID: "p2"},
		{ClientID: "ops", Scope: pipeline.ScopeProcess},
		{ClientID: "reporter", Scope: pipeline.ScopeReport, PortfolioID: "p1"},
		{ClientID: "app", Scope: pipeline.ScopeMobile},
		{ClientID: "revoked", Scope: pipeline.ScopeData, PortfolioID: "p1"},
	} {
		c.ID, c.Issuer, c.CreatedAt = fmt.Sprintf("cli_%d", i), issuer, now
		if err := db.CreateTokenClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}

// bearerServer wires a server that accepts tokens, with the verifier on
// clk; remember is the verifier's Remember (0 for the default).
func bearerServer(t testing.TB, f *fixture, clk *clocktest.Clock, cfg api.Config, remember int) *api.Server {
	t.Helper()
	v, err := bearer.New(context.Background(), f.db, bearer.Config{Now: clk.Now, Remember: remember,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	cfg.Now = func() time.Time { return now }
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return api.New(cfg, api.Deps{Keys: f.db, Portfolios: f.db, Staging: f.db, Audit: f.db, DB: f.db,
		Events: f.db, Trades: f.db, Tokens: v, TokenClients: f.db})
}

// TestBearerTokens runs every rule of machine-client tokens against real
// tokens of a real authorization server, on both backends.
func TestBearerTokens(t *testing.T) {
	idp := machineIdP(t, 0)
	second := machineIdP(t, 0) // a second issuer, never registered
	tok := map[string]string{}
	for _, c := range []struct{ client, scope string }{
		{"trader", "schedbridge:data"}, {"trader2", "schedbridge:data"}, {"ops", "schedbridge:process"},
		{"reporter", "schedbridge:report"}, {"app", "schedbridge:mobile"}, {"stranger", "schedbridge:data"},
		{"revoked", "schedbridge:data"},
	} {
		tok[c.client] = tokenOf(t, idp, c.client, audience, c.scope)
	}
	tok["no scope value"] = tokenOf(t, idp, "trader", audience, "schedbridge:process")
	tok["wrong audience"] = tokenOf(t, idp, "trader", otherAudience, "schedbridge:data")
	tok["second issuer"] = tokenOf(t, second, "trader", audience, "schedbridge:data")
	tok["HS256"] = hs256WithPublicKey(t, idp, tok["trader"])
	tok["alg none"] = algNone(t, tok["trader"])
	iat := issuedAt(t, tok["trader"])

	eachBackend(t, api.Config{}, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		registerIssuer(t, f.db, idp)
		registerClients(t, f.db, idp.Issuer)
		if err := f.db.RevokeTokenClient(ctx, idp.Issuer, "revoked", now); err != nil {
			t.Fatal(err)
		}
		clk := clocktest.New(iat.Add(time.Second))
		f.srv = bearerServer(t, f, clk, api.Config{}, 0)
		with := func(token, method, path string, body []byte) response {
			return f.do(method, path, body, "Authorization", "Bearer "+token)
		}
		const day = "2026-11-23"
		tests := []struct {
			name, token, method, path string
			body                      []byte
			want                      int
			challenge                 string // WWW-Authenticate
			detail                    string // part of the detail
		}{
			// A good token of each scope.
			{"data token posts", tok["trader"], "POST", "/v1/forecasts", forecast(day, 96, 2, ""), 200, "", ""},
			{"data token reads back", tok["trader"], "GET", "/v1/forecasts/" + day, nil, 200, "", ""},
			{"process token", tok["ops"], "GET", "/v1/console/events", nil, 200, "", ""},
			{"report token", tok["reporter"], "GET", "/v1/process/trades?day=" + day, nil, 404, "", "no trades"},
			{"mobile token is authenticated", tok["app"], "GET", "/v1/forecasts/" + day, nil, 403,
				`Bearer error="insufficient_scope", scope="schedbridge:data"`, "is registered with scope mobile"},
			// Scope of the registration, not of the token.
			{"data token on process route", tok["trader"], "GET", "/v1/console/events", nil, 403,
				`Bearer error="insufficient_scope", scope="schedbridge:process"`, "needs a process client"},
			{"token without the scope value", tok["no scope value"], "GET", "/v1/forecasts/" + day, nil, 403,
				`Bearer error="insufficient_scope", scope="schedbridge:data"`, "does not contain schedbridge:data"},
			// Portfolio isolation.
			{"other portfolio's data client", tok["trader2"], "GET", "/v1/forecasts/" + day, nil, 404, "", ""},
			{"report client names another portfolio", tok["reporter"], "GET", "/v1/process/trades?day=" + day + "&portfolio=p2", nil, 403,
				"", "may read portfolio p1 only"},
			// Refused tokens.
			{"wrong audience", tok["wrong audience"], "GET", "/v1/forecasts/" + day, nil, 401, `Bearer error="invalid_token"`, "audience"},
			{"unregistered client", tok["stranger"], "GET", "/v1/forecasts/" + day, nil, 401, `Bearer error="invalid_token"`, "client stranger of issuer " + idp.Issuer + " is not registered"},
			{"revoked client", tok["revoked"], "GET", "/v1/forecasts/" + day, nil, 401, `Bearer error="invalid_token"`, "has been revoked"},
			{"second issuer", tok["second issuer"], "GET", "/v1/forecasts/" + day, nil, 401, `Bearer error="invalid_token"`, "is not registered"},
			{"HS256 with the public key", tok["HS256"], "GET", "/v1/forecasts/" + day, nil, 401, `Bearer error="invalid_token"`, `algorithm "HS256" is not accepted`},
			{"alg none", tok["alg none"], "GET", "/v1/forecasts/" + day, nil, 401, `Bearer error="invalid_token"`, `algorithm "none" is not accepted`},
			{"garbage", "not-a-token", "GET", "/v1/forecasts/" + day, nil, 401, `Bearer error="invalid_token"`, "compact serialisation"},
		}
		for _, tc := range tests {
			r := with(tc.token, tc.method, tc.path, tc.body)
			if r.code != tc.want {
				t.Errorf("%s: %d, want %d: %s", tc.name, r.code, tc.want, r.body)
				continue
			}
			if got := r.header.Get("WWW-Authenticate"); got != tc.challenge {
				t.Errorf("%s: WWW-Authenticate %q, want %q", tc.name, got, tc.challenge)
			}
			if tc.detail != "" {
				if detail, _ := r.json(t)["detail"].(string); !strings.Contains(detail, tc.detail) {
					t.Errorf("%s: detail %q, want it to name %q", tc.name, detail, tc.detail)
				}
			}
			if strings.Contains(string(r.body), tc.token) {
				t.Errorf("%s: the body echoes the token", tc.name)
			}
		}
		// A key and a token together: 401, whatever each is worth alone.
		if r := f.do("GET", "/v1/forecasts/"+day, nil, "X-API-Key", f.keys["data1"], "Authorization", "Bearer "+tok["trader"]); r.code != 401 {
			t.Errorf("key and token: %d %s", r.code, r.body)
		}
		// What the token client staged, the portfolio's key reads: one
		// staging area.
		if r := f.as("data1", "GET", "/v1/forecasts/"+day, nil); r.code != 200 || r.json(t)["portfolio"] != "p1" {
			t.Errorf("key reads the token client's forecast: %d %s", r.code, r.body)
		}
		// The audit trail names issuer and client, never a key.
		entries, err := f.db.RecentAudit(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		var posted *pipeline.AuditEntry
		for i := range entries {
			if entries[i].Endpoint == "POST /v1/forecasts" {
				posted = &entries[i]
			}
		}
		if posted == nil || posted.Issuer != idp.Issuer || posted.ClientID != "trader" || posted.KeyID != "" ||
			posted.PortfolioID != "p1" || posted.Outcome != "created" {
			t.Errorf("audit of the token's submission: %+v", posted)
		}
		// Refused tokens are in the trail too: every 401 of the table on a
		// data route, and the key-and-token request.
		want401, got401 := 1, 0
		for _, tc := range tests {
			if tc.want == 401 && strings.HasPrefix(tc.path, "/v1/forecasts") {
				want401++
			}
		}
		for _, e := range entries {
			if e.StatusCode == 401 {
				got401++
			}
		}
		if got401 != want401 {
			t.Errorf("audit entries of refused tokens: %d, want %d", got401, want401)
		}

		// Expiry: 5 minutes of lifetime plus 60 s of skew.
		clk.Set(iat.Add(5*time.Minute + 59*time.Second))
		if r := with(tok["trader"], "GET", "/v1/forecasts/"+day, nil); r.code != 200 {
			t.Errorf("within the skew: %d %s", r.code, r.body)
		}
		clk.Set(iat.Add(6*time.Minute + 2*time.Second))
		if r := with(tok["trader"], "GET", "/v1/forecasts/"+day, nil); r.code != 401 ||
			r.header.Get("WWW-Authenticate") != `Bearer error="invalid_token"` || !strings.Contains(string(r.body), "has expired") {
			t.Errorf("expired: %d %q %s", r.code, r.header.Get("WWW-Authenticate"), r.body)
		}

		// Revocation from the CLI takes effect on the next request.
		clk.Set(iat.Add(time.Second))
		if err := f.db.RevokeTokenClient(ctx, idp.Issuer, "ops", now); err != nil {
			t.Fatal(err)
		}
		if r := with(tok["ops"], "GET", "/v1/console/events", nil); r.code != 401 {
			t.Errorf("ops after revocation: %d %s", r.code, r.body)
		}

		// The rate limit is per principal: one client's burst does not
		// throttle another, and a token client is limited like a key.
		limited := bearerServer(t, f, clk, api.Config{RatePerSecond: 1, RateBurst: 2}, 0)
		codes := []int{}
		for range 3 {
			req := f.request("GET", "/v1/forecasts/"+day, nil, "Authorization", "Bearer "+tok["trader"])
			codes = append(codes, serve(limited, req).code)
		}
		other := serve(limited, f.request("GET", "/v1/forecasts/"+day, nil, "Authorization", "Bearer "+tok["trader2"])).code
		if fmt.Sprint(codes) != "[200 200 429]" || other != 404 {
			t.Errorf("rate limit: %v, other client %d", codes, other)
		}
	})
}

// registeredIdP is a machine IdP registered on SQLite with the test's
// clients, and a data token of "trader".
func registeredIdP(t *testing.T) (*portaltest.IdP, *fixture, string) {
	t.Helper()
	idp := machineIdP(t, 0)
	f := newFixture(t, sqldb.SQLite, api.Config{})
	registerIssuer(t, f.db, idp)
	registerClients(t, f.db, idp.Issuer)
	return idp, f, tokenOf(t, idp, "trader", audience, "schedbridge:data")
}

// TestBearerKeyRotation: the issuer restarts with a new signing key; its new
// tokens are accepted without restarting us, after one refresh of the key
// set that the unknown kid triggers.
func TestBearerKeyRotation(t *testing.T) {
	idp, f, old := registeredIdP(t)
	iat := issuedAt(t, old)
	clk := clocktest.New(iat.Add(time.Second))
	f.srv = bearerServer(t, f, clk, api.Config{}, 0)
	get := func(tok string) response {
		return f.do("GET", "/v1/master-data/01234567890", nil, "Authorization", "Bearer "+tok)
	}
	if r := get(old); r.code != 404 {
		t.Fatalf("first token: %d %s", r.code, r.body)
	}

	idp.Stop()
	restarted := machineIdP(t, idp.Port)
	if restarted.Issuer != idp.Issuer {
		t.Fatalf("restarted as %s, want %s", restarted.Issuer, idp.Issuer)
	}
	fresh := tokenOf(t, restarted, "trader", audience, "schedbridge:data")
	// The refresh budget is one fetch per 30 s per issuer: the fetch of the
	// first request used it.
	if r := get(fresh); r.code != 401 || !strings.Contains(string(r.body), "is not in the issuer's key set") {
		t.Errorf("new key within the refresh interval: %d %s", r.code, r.body)
	}
	clk.Set(iat.Add(40 * time.Second))
	if r := get(fresh); r.code != 404 {
		t.Errorf("new key after the interval: %d %s", r.code, r.body)
	}
	// A token verified before the rotation is remembered until it expires;
	// a server that has not seen it checks it against the current key set,
	// which no longer holds the retired key.
	if r := get(old); r.code != 404 {
		t.Errorf("remembered token of the retired key: %d %s", r.code, r.body)
	}
	f.srv = bearerServer(t, f, clk, api.Config{}, 0)
	if r := get(old); r.code != 401 || !strings.Contains(string(r.body), "is not in the issuer's key set") {
		t.Errorf("unseen token of the retired key: %d %s", r.code, r.body)
	}
}

// TestBearerKeysUnavailable: a registered issuer whose keys cannot be
// fetched, with none cached, gives 503 with Retry-After; the token may be
// good, so the client should retry rather than give up.
func TestBearerKeysUnavailable(t *testing.T) {
	idp, f, tok := registeredIdP(t)
	idp.Stop()
	clk := clocktest.New(issuedAt(t, tok).Add(time.Second))
	f.srv = bearerServer(t, f, clk, api.Config{}, 0)
	r := f.do("GET", "/v1/master-data/01234567890", nil, "Authorization", "Bearer "+tok)
	if r.code != 503 || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "cannot be fetched") {
		t.Errorf("issuer down: %d %q %s", r.code, r.header.Get("Retry-After"), r.body)
	}
}

// hs256WithPublicKey re-signs a real token's claims with HS256, using the
// issuer's published RSA key (PEM) as the HMAC secret: the classic
// algorithm-confusion attack on verifiers that let the token pick the
// algorithm.
func hs256WithPublicKey(t *testing.T, idp *portaltest.IdP, real string) string {
	t.Helper()
	jwksURI, err := bearer.Discover(context.Background(), nil, idp.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	set, err := jwk.Fetch(context.Background(), jwksURI)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := set.Key(0)
	var pub rsa.PublicKey
	if err := jwk.Export(k, &pub); err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&pub)
	secret, err := jwk.Import(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := k.KeyID()
	hdr := jws.NewHeaders()
	_ = hdr.Set(jws.TypeKey, "at+jwt")
	_ = hdr.Set(jws.KeyIDKey, kid)
	out, err := jws.Sign(payloadOf(t, real), jws.WithKey(jwa.HS256(), secret, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// algNone is a real token's claims with "alg": "none" and no signature.
func algNone(t *testing.T, real string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none","typ":"at+jwt"}`)) + "." + enc.EncodeToString(payloadOf(t, real)) + "."
}

func payloadOf(t *testing.T, tok string) []byte {
	t.Helper()
	p, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	return p
}
