package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
)

type tokenIssuerRow struct {
	bun.BaseModel `bun:"table:token_issuers"`

	URL       string     `bun:"url,pk"`
	Audience  string     `bun:"audience"`
	JWKSURI   string     `bun:"jwks_uri"`
	CreatedAt time.Time  `bun:"created_at"`
	UpdatedAt time.Time  `bun:"updated_at"`
	RemovedAt *time.Time `bun:"removed_at"`
}

func (r tokenIssuerRow) domain() pipeline.TokenIssuer {
	return pipeline.TokenIssuer{URL: r.URL, Audience: r.Audience, JWKSURI: r.JWKSURI,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), RemovedAt: utcPtr(r.RemovedAt)}
}

type tokenClientRow struct {
	bun.BaseModel `bun:"table:token_clients"`

	ID          string     `bun:"id,pk"`
	Issuer      string     `bun:"issuer"`
	ClientID    string     `bun:"client_id"`
	Scope       string     `bun:"scope"`
	PortfolioID *string    `bun:"portfolio_id"`
	Label       string     `bun:"label"`
	CreatedAt   time.Time  `bun:"created_at"`
	RevokedAt   *time.Time `bun:"revoked_at"`
}

func (r tokenClientRow) domain() pipeline.TokenClient {
	return pipeline.TokenClient{ID: r.ID, Issuer: r.Issuer, ClientID: r.ClientID, Scope: pipeline.Scope(r.Scope),
		PortfolioID: deref(r.PortfolioID), Label: r.Label, CreatedAt: r.CreatedAt.UTC(), RevokedAt: utcPtr(r.RevokedAt)}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// PutTokenIssuer registers an issuer, or updates the audience and JWKS URI
// of a registered one; an issuer removed before is trusted again (its
// clients stay revoked). The URL must have passed pipeline.CheckIssuerURL.
func (db *DB) PutTokenIssuer(ctx context.Context, iss pipeline.TokenIssuer, now time.Time) (pipeline.TokenIssuer, error) {
	if err := pipeline.CheckIssuerURL(iss.URL); err != nil {
		return pipeline.TokenIssuer{}, err
	}
	if iss.Audience == "" {
		return pipeline.TokenIssuer{}, pipeline.Errorf(pipeline.Invalid, "issuer %s: the audience must not be empty", iss.URL)
	}
	row := tokenIssuerRow{URL: iss.URL, Audience: iss.Audience, JWKSURI: iss.JWKSURI, CreatedAt: now.UTC(), UpdatedAt: now.UTC()}
	_, err := db.bun.NewInsert().Model(&row).
		On("CONFLICT (url) DO UPDATE").
		Set("audience = EXCLUDED.audience").Set("jwks_uri = EXCLUDED.jwks_uri").
		Set("updated_at = EXCLUDED.updated_at").Set("removed_at = NULL").
		Exec(ctx)
	if err != nil {
		return pipeline.TokenIssuer{}, fmt.Errorf("put issuer %s: %w", iss.URL, err)
	}
	return db.TokenIssuer(ctx, iss.URL)
}

// TokenIssuer finds an issuer, removed or not, by its exact URL.
func (db *DB) TokenIssuer(ctx context.Context, url string) (pipeline.TokenIssuer, error) {
	return getOne[tokenIssuerRow](ctx, db, "issuer "+url, "url", url, "issuer "+url+" is not registered")
}

// TokenIssuers lists every issuer, removed ones included, oldest first.
func (db *DB) TokenIssuers(ctx context.Context) ([]pipeline.TokenIssuer, error) {
	return listAll[tokenIssuerRow](ctx, db, "issuers", "created_at", "url")
}

// listAll reads every row of a registry table in the order given and turns
// the rows into domain values.
func listAll[R interface{ domain() T }, T any](ctx context.Context, db *DB, what string, order ...string) ([]T, error) {
	var rows []R
	if err := db.bun.NewSelect().Model(&rows).Order(order...).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// getOne reads the one row whose column equals value and turns it into its
// domain value. No row is a NotFound error that says notFound; what names
// the row in any other error.
func getOne[R interface{ domain() T }, T any](ctx context.Context, db *DB, what, column string, value any, notFound string) (T, error) {
	var row R
	err := db.bun.NewSelect().Model(&row).Where("? = ?", bun.Ident(column), value).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		var zero T
		return zero, pipeline.Errorf(pipeline.NotFound, "%s", notFound)
	}
	if err != nil {
		var zero T
		return zero, fmt.Errorf("get %s: %w", what, err)
	}
	return row.domain(), nil
}

// RemoveTokenIssuer stops trusting an issuer and revokes its clients in one
// transaction, so that no token of it is accepted from the next request
// on. Removing twice keeps the first time.
func (db *DB) RemoveTokenIssuer(ctx context.Context, url string, now time.Time) error {
	if _, err := db.TokenIssuer(ctx, url); err != nil {
		return err
	}
	return db.bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewUpdate().Model((*tokenClientRow)(nil)).Set("revoked_at = ?", now.UTC()).
			Where("issuer = ?", url).Where("revoked_at IS NULL").Exec(ctx); err != nil {
			return fmt.Errorf("revoke clients of issuer %s: %w", url, err)
		}
		if _, err := tx.NewUpdate().Model((*tokenIssuerRow)(nil)).Set("removed_at = ?", now.UTC()).
			Where("url = ?", url).Where("removed_at IS NULL").Exec(ctx); err != nil {
			return fmt.Errorf("remove issuer %s: %w", url, err)
		}
		return nil
	})
}

// CreateTokenClient registers a client of a registered issuer. Data and
// report clients belong to a portfolio, as keys of those scopes do; a
// client id has at most one active registration per issuer.
func (db *DB) CreateTokenClient(ctx context.Context, c pipeline.TokenClient) error {
	if c.ClientID == "" {
		return pipeline.Errorf(pipeline.Invalid, "the client id must not be empty")
	}
	if c.Scope.NeedsPortfolio() && c.PortfolioID == "" {
		return pipeline.Errorf(pipeline.Invalid, "a %s client belongs to a portfolio: pass --portfolio", c.Scope)
	}
	if !c.Scope.NeedsPortfolio() && c.PortfolioID != "" {
		return pipeline.Errorf(pipeline.Invalid, "a %s client does not belong to a portfolio", c.Scope)
	}
	iss, err := db.TokenIssuer(ctx, c.Issuer)
	if err != nil {
		return err
	}
	if iss.Removed() {
		return pipeline.Errorf(pipeline.Invalid, "issuer %s has been removed; add it again first", c.Issuer)
	}
	row := tokenClientRow{ID: c.ID, Issuer: c.Issuer, ClientID: c.ClientID, Scope: string(c.Scope),
		Label: c.Label, CreatedAt: c.CreatedAt.UTC()}
	if c.PortfolioID != "" {
		if _, err := db.Portfolio(ctx, c.PortfolioID); err != nil {
			return err
		}
		row.PortfolioID = &c.PortfolioID
	}
	// The partial unique index on active registrations decides, also
	// between two commands racing.
	_, err = db.bun.NewInsert().Model(&row).Exec(ctx)
	switch {
	case isUniqueViolation(err):
		return pipeline.Errorf(pipeline.Conflict, "client %s of issuer %s is registered already; revoke it first", c.ClientID, c.Issuer)
	case err != nil:
		return fmt.Errorf("create client %s: %w", c.ClientID, err)
	}
	return nil
}

// ActiveTokenClient finds the active registration of a client id of an
// issuer. A revoked registration is reported as such, so that the caller
// can say why a token is refused.
func (db *DB) ActiveTokenClient(ctx context.Context, issuer, clientID string) (pipeline.TokenClient, error) {
	var rows []tokenClientRow
	// The active registration decides if there is one, else the most
	// recently created. The CASE puts the active one first on both
	// backends: SQLite sorts NULLs first, PostgreSQL last.
	err := db.bun.NewSelect().Model(&rows).Where("issuer = ?", issuer).Where("client_id = ?", clientID).
		OrderExpr("CASE WHEN revoked_at IS NULL THEN 0 ELSE 1 END, created_at DESC").Limit(1).Scan(ctx)
	if err != nil {
		return pipeline.TokenClient{}, fmt.Errorf("look up client %s: %w", clientID, err)
	}
	if len(rows) == 0 {
		return pipeline.TokenClient{}, pipeline.Errorf(pipeline.NotFound, "client %s of issuer %s is not registered", clientID, issuer)
	}
	return rows[0].domain(), nil
}

// TokenClients lists every registration, revoked ones included, oldest
// first.
func (db *DB) TokenClients(ctx context.Context) ([]pipeline.TokenClient, error) {
	return listAll[tokenClientRow](ctx, db, "clients", "created_at", "id")
}

// RevokeTokenClient revokes the active registration of a client id of an
// issuer; the next request with its tokens is refused. Revoking twice keeps
// the first time.
func (db *DB) RevokeTokenClient(ctx context.Context, issuer, clientID string, now time.Time) error {
	res, err := db.bun.NewUpdate().Model((*tokenClientRow)(nil)).Set("revoked_at = ?", now.UTC()).
		Where("issuer = ?", issuer).Where("client_id = ?", clientID).Where("revoked_at IS NULL").Exec(ctx)
	if err != nil {
		return fmt.Errorf("revoke client %s: %w", clientID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := db.ActiveTokenClient(ctx, issuer, clientID); err != nil {
			return err
		}
	}
	return nil
}
