package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net/http"
	"time"

	"github.com/schedbridge/schedbridge/api/bearer"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// The issuer commands register the OAuth 2.0 authorization servers whose
// access tokens the bridge accepts (see README, Machine clients).

func cmdIssuerAdd(a *app, fs *flag.FlagSet) action {
	aud := fs.String("audience", "", "the value our tokens' aud claim must contain (required)")
	return func(ctx context.Context, pos []string) error {
		if len(pos) != 1 {
			return usagef("want exactly one issuer URL")
		}
		if *aud == "" {
			return usagef("--audience is required")
		}
		// Discovery runs now, so that a wrong URL is reported to the person
		// typing it, not to the first machine client.
		dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		jwks, err := bearer.Discover(dctx, &http.Client{Timeout: 10 * time.Second}, pos[0])
		if err != nil {
			return err
		}
		var iss pipeline.TokenIssuer
		err = a.withDB(ctx, func(db *sqldb.DB) (err error) {
			iss, err = db.PutTokenIssuer(ctx, pipeline.TokenIssuer{URL: pos[0], Audience: *aud, JWKSURI: jwks}, a.now())
			return err
		})
		if err != nil {
			return err
		}
		a.note(fmt.Sprintf("issuer %s registered (audience %s, keys %s)", iss.URL, iss.Audience, iss.JWKSURI),
			"issuer", iss.URL, "audience", iss.Audience, "jwks_uri", iss.JWKSURI)
		return nil
	}
}

func cmdIssuerList(a *app, fs *flag.FlagSet) action {
	return listCmd(a, fs, (*sqldb.DB).TokenIssuers,
		"URL\tAUDIENCE\tJWKS URI\tCREATED\tREMOVED", func(i pipeline.TokenIssuer) []string {
			return []string{i.URL, i.Audience, i.JWKSURI, i.CreatedAt.Format(time.RFC3339), timeOrDash(i.RemovedAt)}
		})
}

func cmdIssuerRemove(a *app, fs *flag.FlagSet) action {
	return func(ctx context.Context, pos []string) error {
		if len(pos) != 1 {
			return usagef("want exactly one issuer URL")
		}
		if err := a.withDB(ctx, func(db *sqldb.DB) error { return db.RemoveTokenIssuer(ctx, pos[0], a.now()) }); err != nil {
			return err
		}
		a.note(fmt.Sprintf("issuer %s removed; its clients are revoked", pos[0]), "issuer", pos[0])
		return nil
	}
}

// The client commands register machine clients of registered issuers with
// their scope and portfolio.

func cmdClientAdd(a *app, fs *flag.FlagSet) action {
	issuer := fs.String("issuer", "", "URL of a registered issuer (required)")
	clientID := fs.String("client-id", "", "the client_id claim of the client's tokens (required)")
	ent := entitlementFlags(fs, "client")
	return func(ctx context.Context, pos []string) error {
		sc, err := ent.parse(pos)
		if err != nil {
			return err
		}
		if *issuer == "" || *clientID == "" {
			return usagef("--issuer and --client-id are required")
		}
		var b [5]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		c := pipeline.TokenClient{ID: "cli_" + hex.EncodeToString(b[:]), Issuer: *issuer, ClientID: *clientID,
			Scope: sc, PortfolioID: *ent.portfolio, Label: *ent.label, CreatedAt: a.now().UTC()}
		if err := a.withDB(ctx, func(db *sqldb.DB) error {
			if c.PortfolioID != "" {
				if err := knownPortfolio(ctx, db, c.PortfolioID); err != nil {
					return err
				}
			}
			return db.CreateTokenClient(ctx, c)
		}); err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, c.ID)
		a.note(fmt.Sprintf("client %s of %s registered as %s (scope %s); its tokens need %s in their scope claim",
			c.ClientID, c.Issuer, c.ID, sc, pipeline.TokenScopeValue(sc)),
			"client", c.ID, "client_id", c.ClientID, "issuer", c.Issuer, "scope", string(sc))
		return nil
	}
}

func cmdClientList(a *app, fs *flag.FlagSet) action {
	return listCmd(a, fs, (*sqldb.DB).TokenClients,
		"ID\tISSUER\tCLIENT ID\tSCOPE\tPORTFOLIO\tLABEL\tCREATED\tREVOKED", func(c pipeline.TokenClient) []string {
			return []string{c.ID, c.Issuer, c.ClientID, string(c.Scope), orDash(c.PortfolioID), orDash(c.Label),
				c.CreatedAt.Format(time.RFC3339), timeOrDash(c.RevokedAt)}
		})
}

func cmdClientRevoke(a *app, fs *flag.FlagSet) action {
	issuer := fs.String("issuer", "", "URL of the client's issuer (required)")
	clientID := fs.String("client-id", "", "the client id (required)")
	return noArgs(func(ctx context.Context) error {
		if *issuer == "" || *clientID == "" {
			return usagef("want --issuer URL --client-id ID")
		}
		if err := a.withDB(ctx, func(db *sqldb.DB) error { return db.RevokeTokenClient(ctx, *issuer, *clientID, a.now()) }); err != nil {
			return err
		}
		a.note(fmt.Sprintf("client %s of %s revoked", *clientID, *issuer), "client_id", *clientID, "issuer", *issuer)
		return nil
	})
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
