package sqldb

import (
	"context"
	"time"
)

// MakoContact is one row of a partner's contact history.
type MakoContact struct {
	Email     string
	ValidFrom time.Time
	ValidTo   *time.Time
}

// MakoContactHistory lists a partner's contacts, current and ended, by
// address and start.
func MakoContactHistory(ctx context.Context, db *DB, mpid string) ([]MakoContact, error) {
	var rows []makoContactRow
	if err := db.bun.NewRaw("SELECT id, mp_id, email, valid_from, valid_to FROM mako_contacts WHERE mp_id = ? ORDER BY email, valid_from",
		mpid).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	out := make([]MakoContact, len(rows))
	for i, r := range rows {
		out[i] = MakoContact{Email: r.Email, ValidFrom: r.ValidFrom.UTC(), ValidTo: r.ValidTo}
		if r.ValidTo != nil {
			t := r.ValidTo.UTC()
			out[i].ValidTo = &t
		}
	}
	return out, nil
}
