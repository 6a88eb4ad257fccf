package sqldb_test

import (
	"context"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// TestTokenRegistry is the contract of the machine-client registry on both
// backends: issuers are put, listed and removed (which revokes their
// clients at once), clients are registered once per issuer and revoked, and
// the audit trail names the issuer and client of a request.
func TestTokenRegistry(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB) {
		ctx := context.Background()
		seedPortfolio(t, db, "p1")
		const idp = "https://idp.example.com/realms/acme"
		iss := pipeline.TokenIssuer{URL: idp, Audience: "https://schedbridge.example.com", JWKSURI: idp + "/certs"}

		for _, bad := range []pipeline.TokenIssuer{
			{URL: "http://idp.example.com", Audience: "a", JWKSURI: "x"},
			{URL: idp, Audience: "", JWKSURI: "x"},
		} {
			if _, err := db.PutTokenIssuer(ctx, bad, t0); pipeline.KindOf(err) != pipeline.Invalid {
				t.Errorf("put %+v: %v", bad, err)
			}
		}
		got, err := db.PutTokenIssuer(ctx, iss, t0)
		if err != nil || got.URL != idp || got.Audience != iss.Audience || got.JWKSURI != iss.JWKSURI || !got.CreatedAt.Equal(t0) {
			t.Fatalf("put issuer = %+v, %v", got, err)
		}
		if _, err := db.TokenIssuer(ctx, idp+"/"); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("the URL is compared exactly: %v", err)
		}

		tests := []struct {
			name string
			c    pipeline.TokenClient
			kind pipeline.ErrorKind
		}{
			{"data client", pipeline.TokenClient{ID: "cli_1", Issuer: idp, ClientID: "trader", Scope: pipeline.ScopeData, PortfolioID: "p1"}, ""},
			{"process client", pipeline.TokenClient{ID: "cli_2", Issuer: idp, ClientID: "ops", Scope: pipeline.ScopeProcess}, ""},
			{"again while active", pipeline.TokenClient{ID: "cli_3", Issuer: idp, ClientID: "trader", Scope: pipeline.ScopeData, PortfolioID: "p1"}, pipeline.Conflict},
			{"data without portfolio", pipeline.TokenClient{ID: "cli_4", Issuer: idp, ClientID: "x", Scope: pipeline.ScopeData}, pipeline.Invalid},
			{"process with portfolio", pipeline.TokenClient{ID: "cli_5", Issuer: idp, ClientID: "y", Scope: pipeline.ScopeProcess, PortfolioID: "p1"}, pipeline.Invalid},
			{"unknown portfolio", pipeline.TokenClient{ID: "cli_6", Issuer: idp, ClientID: "z", Scope: pipeline.ScopeReport, PortfolioID: "nope"}, pipeline.NotFound},
			{"unknown issuer", pipeline.TokenClient{ID: "cli_7", Issuer: "https://other.example.com", ClientID: "z", Scope: pipeline.ScopeMobile}, pipeline.NotFound},
			{"empty client id", pipeline.TokenClient{ID: "cli_8", Issuer: idp, Scope: pipeline.ScopeMobile}, pipeline.Invalid},
		}
		for _, tc := range tests {
			tc.c.CreatedAt = t0
			err := db.CreateTokenClient(ctx, tc.c)
			if tc.kind == "" && err != nil || tc.kind != "" && pipeline.KindOf(err) != tc.kind {
				t.Errorf("%s: %v, want kind %q", tc.name, err, tc.kind)
			}
		}
		c, err := db.ActiveTokenClient(ctx, idp, "trader")
		if err != nil || c.ID != "cli_1" || c.Scope != pipeline.ScopeData || c.PortfolioID != "p1" || c.Revoked() {
			t.Fatalf("active client = %+v, %v", c, err)
		}
		if _, err := db.ActiveTokenClient(ctx, idp, "Trader"); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("client ids are compared exactly: %v", err)
		}

		// Revoke, re-register: the new registration is the one found.
		if err := db.RevokeTokenClient(ctx, idp, "trader", t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := db.RevokeTokenClient(ctx, idp, "trader", t0.Add(time.Hour)); err != nil {
			t.Errorf("revoking twice: %v", err)
		}
		if c, _ := db.ActiveTokenClient(ctx, idp, "trader"); !c.Revoked() || !c.RevokedAt.Equal(t0.Add(time.Minute)) {
			t.Errorf("revoked = %+v", c)
		}
		if err := db.RevokeTokenClient(ctx, idp, "nobody", t0); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("revoke unknown: %v", err)
		}
		if err := db.CreateTokenClient(ctx, pipeline.TokenClient{ID: "cli_9", Issuer: idp, ClientID: "trader",
			Scope: pipeline.ScopeReport, PortfolioID: "p1", CreatedAt: t0.Add(2 * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if c, _ := db.ActiveTokenClient(ctx, idp, "trader"); c.ID != "cli_9" || c.Revoked() {
			t.Errorf("after re-registration = %+v", c)
		}

		// Removing the issuer revokes every client at once; adding it
		// again trusts the issuer, not its old clients.
		if err := db.RemoveTokenIssuer(ctx, idp, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.TokenIssuer(ctx, idp); !got.Removed() {
			t.Errorf("removed issuer = %+v", got)
		}
		clients, err := db.TokenClients(ctx)
		if err != nil || len(clients) != 3 {
			t.Fatalf("clients = %+v, %v", clients, err)
		}
		for _, c := range clients {
			if !c.Revoked() {
				t.Errorf("client %s survived the removal of its issuer", c.ID)
			}
		}
		if err := db.CreateTokenClient(ctx, pipeline.TokenClient{ID: "cli_10", Issuer: idp, ClientID: "n",
			Scope: pipeline.ScopeProcess, CreatedAt: t0}); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("client of a removed issuer: %v", err)
		}
		if err := db.RemoveTokenIssuer(ctx, "https://never.example.com", t0); pipeline.KindOf(err) != pipeline.NotFound {
			t.Errorf("remove unknown issuer: %v", err)
		}
		iss.Audience = "api://schedbridge"
		if got, err := db.PutTokenIssuer(ctx, iss, t0.Add(2*time.Hour)); err != nil || got.Removed() ||
			got.Audience != "api://schedbridge" || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0.Add(2*time.Hour)) {
			t.Errorf("re-added issuer = %+v, %v", got, err)
		}
		if c, _ := db.ActiveTokenClient(ctx, idp, "ops"); !c.Revoked() {
			t.Errorf("re-adding the issuer revived client %+v", c)
		}
		issuers, err := db.TokenIssuers(ctx)
		if err != nil || len(issuers) != 1 {
			t.Errorf("issuers = %+v, %v", issuers, err)
		}

		// The audit trail keeps the issuer and client of a request.
		a := &pipeline.AuditEntry{ReceivedAt: t0, PortfolioID: "p1", Endpoint: "GET /v1/forecasts/:delivery_day",
			InputHash: "h1", Outcome: "ok", StatusCode: 200, Issuer: idp, ClientID: "trader"}
		if err := db.RecordAudit(ctx, a); err != nil {
			t.Fatal(err)
		}
		entries, err := db.AuditByHash(ctx, "p1", "h1")
		if err != nil || len(entries) != 1 || entries[0].Issuer != idp || entries[0].ClientID != "trader" || entries[0].KeyID != "" {
			t.Errorf("audit = %+v, %v", entries, err)
		}
	})
}
