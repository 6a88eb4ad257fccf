package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/schedbridge/schedbridge/api/bearer"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// issuer registers the OAuth 2.0 authorization servers whose access tokens
// the bridge accepts (see README, Machine clients).
func (a *app) issuer(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("issuer: want add, list or remove")
	}
	switch args[0] {
	case "add":
		fs := newFlagSet("issuer add", a.stderr)
		aud := fs.String("audience", "", "the value our tokens' aud claim must contain (required)")
		pos, err := parseInterspersed(fs, args[1:])
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usagef("issuer add: want exactly one issuer URL")
		}
		if *aud == "" {
			return usagef("issuer add: --audience is required")
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
		fmt.Fprintf(a.stderr, "issuer %s registered (audience %s, keys %s)\n", iss.URL, iss.Audience, iss.JWKSURI)
		return nil
	case "list":
		return listCmd(ctx, a, "issuer list", args[1:], (*sqldb.DB).TokenIssuers,
			"URL\tAUDIENCE\tJWKS URI\tCREATED\tREMOVED", func(i pipeline.TokenIssuer) []string {
				return []string{i.URL, i.Audience, i.JWKSURI, i.CreatedAt.Format(time.RFC3339), timeOrDash(i.RemovedAt)}
			})
	case "remove":
		if len(args) != 2 {
			return usagef("issuer remove: want exactly one issuer URL")
		}
		if err := a.withDB(ctx, func(db *sqldb.DB) error { return db.RemoveTokenIssuer(ctx, args[1], a.now()) }); err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "issuer %s removed; its clients are revoked\n", args[1])
		return nil
	}
	return usagef("issuer: unknown subcommand %q", args[0])
}

// client registers machine clients of registered issuers with their scope
// and portfolio.
func (a *app) client(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("client: want add, list or revoke")
	}
	switch args[0] {
	case "add":
		fs := newFlagSet("client add", a.stderr)
		issuer := fs.String("issuer", "", "URL of a registered issuer (required)")
		clientID := fs.String("client-id", "", "the client_id claim of the client's tokens (required)")
		ent := entitlementFlags(fs, "client")
		sc, err := ent.parse(fs, args[1:])
		if err != nil {
			return err
		}
		if *issuer == "" || *clientID == "" {
			return usagef("client add: --issuer and --client-id are required")
		}
		var b [5]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		c := pipeline.TokenClient{ID: "cli_" + hex.EncodeToString(b[:]), Issuer: *issuer, ClientID: *clientID,
			Scope: sc, PortfolioID: *ent.portfolio, Label: *ent.label, CreatedAt: a.now().UTC()}
		if err := a.withDB(ctx, func(db *sqldb.DB) error { return db.CreateTokenClient(ctx, c) }); err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, c.ID)
		fmt.Fprintf(a.stderr, "client %s of %s registered as %s (scope %s); its tokens need %q in their scope claim\n",
			c.ClientID, c.Issuer, c.ID, sc, pipeline.TokenScopeValue(sc))
		return nil
	case "list":
		return listCmd(ctx, a, "client list", args[1:], (*sqldb.DB).TokenClients,
			"ID\tISSUER\tCLIENT ID\tSCOPE\tPORTFOLIO\tLABEL\tCREATED\tREVOKED", func(c pipeline.TokenClient) []string {
				return []string{c.ID, c.Issuer, c.ClientID, string(c.Scope), orDash(c.PortfolioID), orDash(c.Label),
					c.CreatedAt.Format(time.RFC3339), timeOrDash(c.RevokedAt)}
			})
	case "revoke":
		fs := newFlagSet("client revoke", a.stderr)
		issuer := fs.String("issuer", "", "URL of the client's issuer (required)")
		clientID := fs.String("client-id", "", "the client id (required)")
		pos, err := parseInterspersed(fs, args[1:])
		if err != nil {
			return err
		}
		if len(pos) != 0 || *issuer == "" || *clientID == "" {
			return usagef("client revoke: want --issuer URL --client-id ID")
		}
		if err := a.withDB(ctx, func(db *sqldb.DB) error { return db.RevokeTokenClient(ctx, *issuer, *clientID, a.now()) }); err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "client %s of %s revoked\n", *clientID, *issuer)
		return nil
	}
	return usagef("client: unknown subcommand %q", args[0])
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
