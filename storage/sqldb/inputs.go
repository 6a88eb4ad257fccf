package sqldb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/schedbridge/schedbridge/pipeline"
)

// The pipeline's inputs: the current versions of the staged master data,
// metered values and profiles of a portfolio, read in the order the forecast
// stage walks them.

// DefaultLocationBatch is the batch size CurrentLocations uses when it is
// given none.
const DefaultLocationBatch = 1000

// meteredPage is how many metered entries one query of MeteredHistory reads.
const meteredPage = 5000

// CurrentLocations streams the current master data of every market location
// of the portfolio in malo order, batch locations per call of fn. Each batch
// is one query that starts after the last malo of the one before (keyset
// pagination), so a million locations stream in the memory of one batch and
// no read transaction stays open while fn works. A location staged anew while
// the stream runs is seen in whichever version is current when its batch is
// read. fn owns the batch it is given.
func (db *DB) CurrentLocations(ctx context.Context, portfolio string, batch int, fn func([]pipeline.Location) error) error {
	if batch <= 0 {
		batch = DefaultLocationBatch
	}
	q := db.rebind("SELECT malo, slices FROM location_versions WHERE portfolio_id = ? AND superseded_at IS NULL AND malo > ? " +
		"ORDER BY malo LIMIT ?")
	dec := newSliceDecoder()
	after := ""
	for {
		locs, err := db.locationPage(ctx, q, portfolio, after, batch, dec)
		if err != nil {
			return fmt.Errorf("current locations of %s after %q: %w", portfolio, after, err)
		}
		if len(locs) == 0 {
			return nil
		}
		if err := fn(locs); err != nil {
			return err
		}
		if len(locs) < batch {
			return nil
		}
		after = locs[len(locs)-1].Malo
	}
}

func (db *DB) locationPage(ctx context.Context, q, portfolio, after string, batch int, dec *sliceDecoder) ([]pipeline.Location, error) {
	rows, err := db.bun.DB.QueryContext(ctx, q, portfolio, after, batch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	locs := make([]pipeline.Location, 0, batch)
	dec.startBatch(batch)
	var malo string
	var raw sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&malo, &raw); err != nil {
			return nil, err
		}
		slices, err := dec.decode(raw)
		if err != nil {
			return nil, fmt.Errorf("decode slices of %s: %w", malo, err)
		}
		locs = append(locs, pipeline.Location{Malo: malo, Slices: slices})
	}
	return locs, rows.Err()
}

// MeteredHistory calls fn with every current metered entry of the portfolio
// on any of the days, in malo and day order. It reads in pages that each
// start after the last (malo, day) read, like CurrentLocations, so that no
// query stays open while fn works.
func (db *DB) MeteredHistory(ctx context.Context, portfolio string, days []pipeline.Day, fn func(pipeline.MeteredEntry) error) error {
	if len(days) == 0 {
		return nil
	}
	dayArgs := make([]any, len(days))
	for i, d := range days {
		dayArgs[i] = d.String()
	}
	// "malo >= ? AND (malo > ? OR day > ?)" is the keyset condition written
	// so that both planners use its first term as a range of the index of
	// current rows (portfolio_id, malo, day); a row value or a plain OR would
	// make SQLite scan the portfolio's index from the start on every page.
	q := db.rebind(fmt.Sprintf("SELECT malo, day, unit, vals_packed FROM metered_versions WHERE portfolio_id = ? "+
		"AND superseded_at IS NULL AND day IN (%s) AND malo >= ? AND (malo > ? OR day > ?) ORDER BY malo, day LIMIT ?",
		placeholders(len(days))))
	afterMalo, afterDay := "", ""
	for {
		args := append(append([]any{portfolio}, dayArgs...), afterMalo, afterMalo, afterDay, meteredPage)
		page, err := db.meteredPage(ctx, q, args)
		if err != nil {
			return fmt.Errorf("metered history of %s after %s/%s: %w", portfolio, afterMalo, afterDay, err)
		}
		for _, e := range page {
			if err := fn(e); err != nil {
				return err
			}
		}
		if len(page) < meteredPage {
			return nil
		}
		last := page[len(page)-1]
		afterMalo, afterDay = last.Malo, last.Day.String()
	}
}

func (db *DB) meteredPage(ctx context.Context, q string, args []any) ([]pipeline.MeteredEntry, error) {
	rows, err := db.bun.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// A market location has one entry per history day, and the days and
	// units repeat on every location: the strings of the row before are
	// reused when the bytes are the same, days are parsed once, and the
	// values of a page share blocks. BenchmarkMeteredHistory: 144,000 ->
	// 130,000 allocations and 30.8 -> 28.2 MB per 16,000 entries; the rest
	// of the allocations are the driver's, and the time is SQLite's (its
	// page reads, about 40% in pread).
	out := make([]pipeline.MeteredEntry, 0, meteredPage)
	var malo, day, unit sql.RawBytes
	var raw sql.RawBytes
	var vals []float64
	days := map[string]pipeline.Day{}
	var prev pipeline.MeteredEntry
	for rows.Next() {
		if err := rows.Scan(&malo, &day, &unit, &raw); err != nil {
			return nil, err
		}
		e := pipeline.MeteredEntry{Malo: prev.Malo, Unit: prev.Unit}
		if string(malo) != e.Malo {
			e.Malo = string(malo)
		}
		if string(unit) != string(e.Unit) {
			e.Unit = pipeline.Unit(unit)
		}
		var ok bool
		if e.Day, ok = days[string(day)]; !ok {
			if e.Day, err = pipeline.ParseDay(string(day)); err != nil {
				return nil, fmt.Errorf("metered %s: stored %w", e.Malo, err)
			}
			days[string(day)] = e.Day
		}
		n, err := seriesLen(raw)
		if err != nil {
			return nil, fmt.Errorf("metered %s %s: %w", e.Malo, day, err)
		}
		if cap(vals)-len(vals) < n || vals == nil {
			vals = make([]float64, 0, max(n, valuesBlock))
		}
		e.Values = vals[len(vals) : len(vals)+n : len(vals)+n]
		vals = vals[:len(vals)+n]
		if err := decodeSeriesInto(e.Values, raw); err != nil {
			return nil, fmt.Errorf("metered %s %s: %w", e.Malo, day, err)
		}
		out = append(out, e)
		prev = e
	}
	return out, rows.Err()
}

// valuesBlock is the number of values allocated at once for the entries of
// a page of MeteredHistory: 512 days of 96 quarter-hours.
const valuesBlock = 512 * 96

// ProfilesForDay returns the current rolled-out profiles of the portfolio on
// the day, ordered by MGA and profile.
func (db *DB) ProfilesForDay(ctx context.Context, portfolio string, day pipeline.Day) ([]pipeline.ProfileEntry, error) {
	rows, err := db.bun.DB.QueryContext(ctx, db.rebind("SELECT mga, profile, vals_packed FROM profile_versions "+
		"WHERE portfolio_id = ? AND day = ? AND superseded_at IS NULL ORDER BY mga, profile"), portfolio, day.String())
	if err != nil {
		return nil, fmt.Errorf("profiles of %s on %s: %w", portfolio, day, err)
	}
	defer rows.Close()
	var out []pipeline.ProfileEntry
	var mga, profile string
	var raw sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&mga, &profile, &raw); err != nil {
			return nil, fmt.Errorf("profiles of %s on %s: %w", portfolio, day, err)
		}
		vals, err := decodeSeries(raw)
		if err != nil {
			return nil, fmt.Errorf("profile %s/%s on %s: %w", mga, profile, day, err)
		}
		out = append(out, pipeline.ProfileEntry{Day: day, MGA: mga, Profile: profile, ValuesKWh: vals})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("profiles of %s on %s: %w", portfolio, day, err)
	}
	return out, nil
}
