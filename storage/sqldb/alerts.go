package sqldb

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Alerts pages through the events of the given kinds, newest first: up to
// limit events with an id below beforeID (0: from the newest). Each kind is
// read on its own over the index on (kind, id) and the reads are merged, so
// that a rare kind costs as little as a frequent one.
func (db *DB) Alerts(ctx context.Context, kinds []string, beforeID int64, limit int) ([]pipeline.Event, error) {
	limit = max(limit, 1)
	var all []eventRow
	for _, kind := range kinds {
		var rows []eventRow
		q := db.bun.NewSelect().Model(&rows).Where("kind = ?", kind).OrderExpr("id DESC").Limit(int64(limit))
		if beforeID > 0 {
			q = q.Where("id < ?", beforeID)
		}
		if err := q.Scan(ctx); err != nil {
			return nil, fmt.Errorf("list %s events: %w", kind, err)
		}
		all = append(all, rows...)
	}
	slices.SortFunc(all, func(a, b eventRow) int { return cmp.Compare(b.ID, a.ID) })
	if len(all) > limit {
		all = all[:limit]
	}
	out := make([]pipeline.Event, len(all))
	for i, r := range all {
		ev, err := r.domain()
		if err != nil {
			return nil, err
		}
		out[i] = ev
	}
	return out, nil
}

// domain is the event of a row.
func (r eventRow) domain() (pipeline.Event, error) {
	ev := pipeline.Event{ID: r.ID, At: r.At.UTC(), Kind: r.Kind, PortfolioID: r.PortfolioID, Subject: r.Subject, Data: json.RawMessage(r.Data)}
	if r.DeliveryDay != nil {
		d, err := pipeline.ParseDay(*r.DeliveryDay)
		if err != nil {
			return pipeline.Event{}, fmt.Errorf("event %d: stored %w", r.ID, err)
		}
		ev.DeliveryDay = &d
	}
	return ev, nil
}
