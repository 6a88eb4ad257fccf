package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/api/bearer"
	"github.com/schedbridge/schedbridge/api/portal/portaltest"
	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// meteredBody builds a metered-data body of n market locations x 96 values
// for 2026-11-20; variant changes every value so that consecutive bodies
// replace each other instead of answering unchanged.
func meteredBody(n, variant int) []byte {
	var b bytes.Buffer
	b.Grow(n * 900)
	b.WriteString(`{"entries":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"malo":"%011d","day":"2026-11-20","unit":"KWH","values":[`, 10000000000+i)
		for q := range 96 {
			if q > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(float64((i+q+variant)%977)/8, 'f', -1, 64))
		}
		b.WriteString("]}")
	}
	b.WriteString("]}")
	return b.Bytes()
}

// BenchmarkMeteredData10k submits 10,000 entries x 96 values end to end:
// HTTP handler, authentication, decoding, validation, hashing and the staging
// transaction with its audit entry, on each backend. Every iteration replaces
// all 10,000 current versions.
func BenchmarkMeteredData10k(b *testing.B) {
	bodies := [][]byte{meteredBody(10000, 0), meteredBody(10000, 1)}
	for _, d := range sqltest.Backends {
		b.Run(string(d), func(b *testing.B) {
			f := newFixture(b, d, api.Config{})
			b.SetBytes(int64(len(bodies[0])))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest("POST", "/v1/metered-data", bytes.NewReader(bodies[i%2]))
				req.Header.Set("X-API-Key", f.keys["data1"])
				rec := httptest.NewRecorder()
				f.srv.Handler().ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d: %.300s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// BenchmarkForecastSmall is one small forecast submission (96 values) per
// iteration, each a new version, through the handler on each backend.
func BenchmarkForecastSmall(b *testing.B) {
	for _, d := range sqltest.Backends {
		b.Run(string(d), func(b *testing.B) {
			f := newFixture(b, d, api.Config{})
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest("POST", "/v1/forecasts", bytes.NewReader(forecast("2026-11-23", 96, float64(i), "")))
				req.Header.Set("X-API-Key", f.keys["data1"])
				rec := httptest.NewRecorder()
				f.srv.Handler().ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// BenchmarkAuthentication compares one request authenticated by an access
// token (signature check with the cached keys of the issuer, claim checks,
// the lookups of issuer and client registration) with the same request
// authenticated by an API key, on each backend. The route is the cheapest
// authenticated one, the console's event feed, so that the difference is
// the authentication.
func BenchmarkAuthentication(b *testing.B) {
	idp := portaltest.StartIdP(b, portaltest.IdPOptions{
		Machines:  []portaltest.MachineClient{{ID: "ops", Secret: "secret-ops"}},
		Resources: []portaltest.ResourceServer{{Audience: audience, Scopes: allScopes}},
	})
	status, tok, code := idp.ClientCredentials(b, "ops", "secret-ops", audience, "schedbridge:process")
	if status != 200 {
		b.Fatalf("token: %d %s", status, code)
	}
	for _, d := range sqltest.Backends {
		f := newFixture(b, d, api.Config{})
		ctx := context.Background()
		jwks, err := bearer.Discover(ctx, nil, idp.Issuer)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.db.PutTokenIssuer(ctx, pipeline.TokenIssuer{URL: idp.Issuer, Audience: audience, JWKSURI: jwks}, now); err != nil {
			b.Fatal(err)
		}
		if err := f.db.CreateTokenClient(ctx, pipeline.TokenClient{ID: "cli_ops", Issuer: idp.Issuer, ClientID: "ops",
			Scope: pipeline.ScopeProcess, CreatedAt: now}); err != nil {
			b.Fatal(err)
		}
		iat, err := tokenIssuedAt(tok)
		if err != nil {
			b.Fatal(err)
		}
		clk := clocktest.New(iat.Add(time.Second))
		srv := bearerServer(b, f, clk, api.Config{}, 0)
		// Without the memory of verified tokens, every request runs the
		// signature and claim checks: the first request of each token.
		forgetful := bearerServer(b, f, clk, api.Config{}, -1)
		for _, cred := range []struct {
			name, header, value string
			srv                 *api.Server
		}{
			{"key", "X-API-Key", f.keys["process"], srv},
			{"bearer", "Authorization", "Bearer " + tok, srv},
			{"bearer-first-use", "Authorization", "Bearer " + tok, forgetful},
		} {
			srv := cred.srv
			b.Run(string(d)+"/"+cred.name, func(b *testing.B) {
				req := f.request("GET", "/v1/console/events", nil, cred.header, cred.value)
				if r := serve(srv, req); r.code != 200 { // warms the key cache
					b.Fatalf("%d %s", r.code, r.body)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if r := serve(srv, f.request("GET", "/v1/console/events", nil, cred.header, cred.value)); r.code != 200 {
						b.Fatalf("%d %s", r.code, r.body)
					}
				}
			})
		}
	}
}
