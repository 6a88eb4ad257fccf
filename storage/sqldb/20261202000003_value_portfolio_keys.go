package sqldb

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// This migration drops, on PostgreSQL, the foreign keys from the metered
// and profile versions to their portfolio. PostgreSQL checks such a key per
// row, with a query and a row lock on the portfolio, after the statement:
// for a bulk file streamed in one COPY that was 5.3 s of the 15 s the server
// spent on the inbox benchmark's 1,000,000 days (docs/benchmarks.md, issue
// 20). Writers of these tables lock the portfolio row instead, once per
// transaction (DB.lockPortfolios), which guarantees what the key did: the
// portfolio exists and stays until the commit. Portfolios are never deleted,
// and their id never changes.
//
// SQLite keeps its keys: its check is one probe of the portfolios' primary
// key in the same process, and dropping a key there means copying the table.
// Written in Go because only one dialect changes.
func registerValuePortfolioKeys(ms *migrate.Migrations) {
	ms.MustRegister(
		func(ctx context.Context, db *bun.DB) error { return valuePortfolioKeys(ctx, db, false) },
		func(ctx context.Context, db *bun.DB) error { return valuePortfolioKeys(ctx, db, true) },
	)
}

func valuePortfolioKeys(ctx context.Context, db *bun.DB, add bool) error {
	if db.Dialect().Name() != dialect.PG {
		return nil
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, t := range valueTables {
			q := fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT %s_portfolio_id_fkey", t.name, t.name)
			if add {
				q = fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s_portfolio_id_fkey FOREIGN KEY (portfolio_id) REFERENCES portfolios (id)",
					t.name, t.name)
			}
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
}
