package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Trades are staged like forecasts: one versioned key per portfolio and
// delivery day whose body is the canonical JSON of the whole set, so that an
// import replaces the set as a whole and an identical import is unchanged.
var tradeTable = stagingTable{"trade_versions", []string{"delivery_day"}, []string{"body"}, false}

func tradeItems(set pipeline.TradeSet, portfolio string, canonical []byte) ([]stageItem, error) {
	if set.Portfolio != "" && set.Portfolio != portfolio {
		return nil, pipeline.Errorf(pipeline.Invalid, "trade set of portfolio %s staged for %s", set.Portfolio, portfolio)
	}
	if set.Day.IsZero() {
		return nil, pipeline.Errorf(pipeline.Invalid, "trade set of %s: delivery day is required", portfolio)
	}
	if !json.Valid(canonical) {
		return nil, pipeline.Errorf(pipeline.Invalid, "trade set of %s for %s: canonical body is not JSON", portfolio, set.Day)
	}
	return []stageItem{{
		key: []string{set.Day.String()}, hash: contentHash(canonical), payload: []any{string(canonical)},
	}}, nil
}

// StageTrades stores a trade set as the new current version of its
// portfolio's delivery day unless it is identical to the current one, with
// the audit entry in the same transaction. canonical is the set's canonical
// JSON ({"delivery_day": ..., "trades": [...]}), kept as the version's body;
// equal bodies are equal content.
func (db *DB) StageTrades(ctx context.Context, a *pipeline.AuditEntry, set pipeline.TradeSet, canonical []byte) (pipeline.StageResult, error) {
	items, err := tradeItems(set, a.PortfolioID, canonical)
	if err != nil {
		return pipeline.StageResult{}, err
	}
	return db.stageAndAudit(ctx, tradeTable, a, items)
}

// Trades stages the trade set of a trades file (one set per file).
func (s *BulkStage) Trades(ctx context.Context, set pipeline.TradeSet, canonical []byte) error {
	if s.table.name != tradeTable.name {
		return pipeline.Errorf(pipeline.Invalid, "trades staged into a bulk stage of %s", s.table.name)
	}
	items, err := tradeItems(set, s.portfolio, canonical)
	if err != nil {
		return err
	}
	return s.add(ctx, items)
}

// Trades returns the current trade set of a portfolio's delivery day and its
// version. An imported empty set is a set (nothing procured); NotFound means
// no set was ever imported for the day.
func (db *DB) Trades(ctx context.Context, portfolio string, day pipeline.Day) (pipeline.TradeSet, int, error) {
	var version int
	var body string
	err := db.bun.NewSelect().Table(tradeTable.name).Column("version", "body").
		Where("portfolio_id = ?", portfolio).Where("delivery_day = ?", day.String()).Where("superseded_at IS NULL").
		Scan(ctx, &version, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return pipeline.TradeSet{}, 0, pipeline.Errorf(pipeline.NotFound, "no trades imported for %s", day)
	}
	if err != nil {
		return pipeline.TradeSet{}, 0, fmt.Errorf("get trades %s %s: %w", portfolio, day, err)
	}
	var set pipeline.TradeSet
	if err := json.Unmarshal([]byte(body), &set); err != nil {
		return pipeline.TradeSet{}, 0, fmt.Errorf("decode trades %s %s v%d: %w", portfolio, day, version, err)
	}
	// The body names no portfolio: the key does.
	set.Portfolio, set.Day = portfolio, day
	if set.Trades == nil {
		set.Trades = []pipeline.Trade{}
	}
	return set, version, nil
}
