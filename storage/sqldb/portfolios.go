package sqldb

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
)

type portfolioRow struct {
	bun.BaseModel `bun:"table:portfolios"`

	ID             string `bun:"id,pk"`
	Name           string `bun:"name"`
	ControlAreas   string `bun:"control_areas"`
	BalancingGroup string `bun:"balancing_group"`
	// ExchangeBalancingGroup is '' when the portfolio has none.
	ExchangeBalancingGroup string    `bun:"exchange_balancing_group"`
	CreatedAt              time.Time `bun:"created_at"`
	UpdatedAt              time.Time `bun:"updated_at"`
}

func (r portfolioRow) domain() pipeline.Portfolio {
	var areas []pipeline.ControlArea
	for _, s := range strings.Split(r.ControlAreas, ",") {
		if a, ok := pipeline.ParseControlArea(s); ok {
			areas = append(areas, a)
		}
	}
	return pipeline.Portfolio{
		ID: r.ID, Name: r.Name, ControlAreas: pipeline.NewAreaSet(areas...).Sorted(),
		BalancingGroup: r.BalancingGroup, ExchangeBalancingGroup: r.ExchangeBalancingGroup,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}

func joinAreas(areas []pipeline.ControlArea) string {
	s := make([]string, len(areas))
	for i, a := range areas {
		s[i] = string(a)
	}
	return strings.Join(s, ",")
}

// PutPortfolio creates the portfolio or updates its name, control areas and
// balancing groups. It reports whether the portfolio was created.
func (db *DB) PutPortfolio(ctx context.Context, p pipeline.Portfolio, now time.Time) (bool, error) {
	if err := p.Validate(); err != nil {
		return false, err
	}
	row := portfolioRow{
		ID: p.ID, Name: p.Name, ControlAreas: joinAreas(pipeline.NewAreaSet(p.ControlAreas...).Sorted()),
		BalancingGroup: p.BalancingGroup, ExchangeBalancingGroup: p.ExchangeBalancingGroup,
		CreatedAt: now.UTC(), UpdatedAt: now.UTC(),
	}
	created := false
	err := db.inTx(ctx, func(tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*portfolioRow)(nil)).Where("id = ?", p.ID).Count(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			created = true
			_, err = tx.NewInsert().Model(&row).Exec(ctx)
			return err
		}
		_, err = tx.NewUpdate().Model(&row).Column("name", "control_areas", "balancing_group", "exchange_balancing_group", "updated_at").
			WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("put portfolio %s: %w", p.ID, err)
	}
	return created, nil
}

// Portfolio returns one portfolio.
func (db *DB) Portfolio(ctx context.Context, id string) (pipeline.Portfolio, error) {
	return getOne[portfolioRow](ctx, db, "portfolio "+id, "id", id, "portfolio "+id+" not found")
}

// Portfolios lists all portfolios by id.
func (db *DB) Portfolios(ctx context.Context) ([]pipeline.Portfolio, error) {
	var rows []portfolioRow
	if err := db.bun.NewSelect().Model(&rows).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list portfolios: %w", err)
	}
	out := make([]pipeline.Portfolio, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}
