package main

import (
	"context"
	"log/slog"

	"github.com/schedbridge/schedbridge/pipeline"
)

// portfolioLister is what the startup check reads: the stored portfolios.
type portfolioLister interface {
	Portfolios(ctx context.Context) ([]pipeline.Portfolio, error)
}

// checkStoredPortfolios logs an error line for every EIC of a stored
// portfolio that fails the check portfolio put applies today. Portfolios
// stored before the check existed may hold a typo that the schedules stage
// would only find when it builds their schedules; serve, migrate and the
// runs of the schedules stage or the chain report them at startup instead,
// so that the operator can fix them with portfolio put before the chain
// runs. They are reported, not refused: the other portfolios and every
// other stage still work. Unlike Portfolio.ValidateEICs, which stops at the
// first, it reports every bad field, and returns how many it reported.
func checkStoredPortfolios(ctx context.Context, src portfolioLister, log *slog.Logger) (int, error) {
	ps, err := src.Portfolios(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range ps {
		for _, f := range p.EICFields() {
			if err := pipeline.ValidateEIC(f.Value, pipeline.EICParty); err != nil {
				n++
				log.ErrorContext(ctx, "stored portfolio has an invalid EIC: its schedules will fail until it is fixed with `schedbridge portfolio put`",
					"portfolio", p.ID, "field", f.Name, "value", f.Value, "err", err)
			}
		}
	}
	return n, nil
}

// checkStored runs the startup checks of stored data for serve, migrate and
// run schedules|chain. A failure to read is logged, not fatal: the checks
// report, they do not guard.
func (a *app) checkStored(ctx context.Context, src portfolioLister) {
	if _, err := checkStoredPortfolios(ctx, src, a.log); err != nil {
		a.log.WarnContext(ctx, "startup check of the stored portfolios failed", "err", err)
	}
}
