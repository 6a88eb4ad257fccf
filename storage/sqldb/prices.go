package sqldb

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/price"
)

// Market prices are kept per kind and quarter-hour, keyed by the Unix second
// of the quarter-hour's UTC start (see the kalkulation migration for why not
// a timestamp).

// pricesUpsert is the tail of every price insert: a quarter-hour already
// stored is rewritten only when its values differ, so that re-importing a
// file counts and writes only what changed. The source and import time then
// name the import that brought the values in.
const pricesUpsert = " ON CONFLICT (kind, start_unix) DO UPDATE SET minutes = excluded.minutes, price = excluded.price, " +
	"price_long = excluded.price_long, source = excluded.source, imported_at = excluded.imported_at " +
	"WHERE market_prices.minutes <> excluded.minutes OR market_prices.price <> excluded.price " +
	"OR market_prices.price_long <> excluded.price_long"

// validPoints checks the points before anything is written: quarter-hour
// starts, each once, published intervals of 15 or 60 minutes and finite
// prices.
func validPoints(kind price.Kind, points []price.Point) error {
	if _, err := price.ParseKind(string(kind)); err != nil {
		return err
	}
	seen := make(map[int64]bool, len(points))
	for i, p := range points {
		s := p.Start.Unix()
		switch {
		case p.Start.IsZero() || p.Start.Nanosecond() != 0 || s%900 != 0:
			return pipeline.Errorf(pipeline.Invalid, "%s price %d: start %s is not the start of a quarter-hour", kind, i+1, p.Start)
		case p.Minutes != 15 && p.Minutes != 60:
			return pipeline.Errorf(pipeline.Invalid, "%s price %d (%s): interval of %d minutes (want 15 or 60)",
				kind, i+1, p.Start.UTC().Format(time.RFC3339), p.Minutes)
		case math.IsNaN(p.Price) || math.IsInf(p.Price, 0) || math.IsNaN(p.PriceLong) || math.IsInf(p.PriceLong, 0):
			return pipeline.Errorf(pipeline.Invalid, "%s price %d (%s) is not a finite number", kind, i+1, p.Start.UTC().Format(time.RFC3339))
		case seen[s]:
			return pipeline.Errorf(pipeline.Invalid, "%s price %d: quarter-hour %s is listed twice", kind, i+1, p.Start.UTC().Format(time.RFC3339))
		}
		seen[s] = true
	}
	return nil
}

// PutPrices stores quarter-hour prices (price.QuarterHours' output) of a
// kind, imported from source at now, in one transaction. A quarter-hour not
// stored yet is inserted; one stored with other values is overwritten; one
// stored with the same minutes and prices is left as it is. It returns the
// number of quarter-hours inserted or overwritten. Points that are not
// quarter-hour starts, repeat a start, or have no finite price are Invalid
// and nothing is written.
func (db *DB) PutPrices(ctx context.Context, kind price.Kind, points []price.Point, source string, now time.Time) (int, error) {
	if err := validPoints(kind, points); err != nil {
		return 0, err
	}
	if now.IsZero() {
		return 0, pipeline.Errorf(pipeline.Invalid, "%s prices: the import time is required", kind)
	}
	if len(points) == 0 {
		return 0, nil
	}
	var n int64
	err := db.inTx(ctx, func(tx bun.Tx) error {
		var err error
		if db.dialect == Postgres {
			n, err = db.putPricesPostgres(ctx, tx, kind, points, source, now)
		} else {
			n, err = db.putPricesSQLite(ctx, tx, kind, points, source, now)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store %d %s prices from %s: %w", len(points), kind, points[0].Start.UTC().Format(time.RFC3339), err)
	}
	return int(n), nil
}

// putPricesPostgres writes all points in one statement that unnests one
// array per column: one round trip and one plan for a year of prices.
func (db *DB) putPricesPostgres(ctx context.Context, tx bun.Tx, kind price.Kind, points []price.Point, source string, now time.Time) (int64, error) {
	starts := make([]int64, len(points))
	minutes := make([]int32, len(points))
	prices := make([]float64, len(points))
	long := make([]float64, len(points))
	for i, p := range points {
		starts[i], minutes[i], prices[i], long[i] = p.Start.Unix(), int32(p.Minutes), p.Price, p.PriceLong
	}
	r, err := db.txExec(ctx, tx, "INSERT INTO market_prices (kind, start_unix, minutes, price, price_long, source, imported_at) "+
		"SELECT ?::text, s, m, p, l, ?::text, ?::timestamptz FROM unnest(?::bigint[], ?::integer[], ?::float8[], ?::float8[]) AS u(s, m, p, l)"+pricesUpsert,
		string(kind), source, db.timeArg(now), starts, minutes, prices, long)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

// putPricesSQLite writes the points in chunks of a VALUES list whose rows
// carry only what differs per quarter-hour; the constant columns are bound
// once per statement. The chunk is the staging one (64 rows): the driver
// looks each parameter up in the argument list, so binding a statement takes
// time quadratic in its parameters, and a year took 40% more CPU in chunks
// of 128 rows, about the same in chunks of 32.
func (db *DB) putPricesSQLite(ctx context.Context, tx bun.Tx, kind price.Kind, points []price.Point, source string, now time.Time) (int64, error) {
	stmts := stmtCache{}
	defer func() {
		for _, s := range stmts {
			s.Close()
		}
	}()
	imported := db.timeArg(now)
	var total int64
	for start := 0; start < len(points); start += sqliteInsertChunk {
		part := points[start:min(start+sqliteInsertChunk, len(points))]
		var q strings.Builder
		// WHERE true keeps SQLite from reading ON CONFLICT as a join
		// constraint of the SELECT (its documented parsing ambiguity).
		q.WriteString("INSERT INTO market_prices (kind, start_unix, minutes, price, price_long, source, imported_at) " +
			"SELECT ?, column1, column2, column3, column4, ?, ? FROM (VALUES ")
		args := make([]any, 0, 3+4*len(part))
		args = append(args, string(kind), source, imported)
		for i, p := range part {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?)")
			args = append(args, p.Start.Unix(), p.Minutes, p.Price, p.PriceLong)
		}
		q.WriteString(") WHERE true" + pricesUpsert)
		s, err := stmts.stmt(ctx, db, tx, q.String())
		if err != nil {
			return 0, err
		}
		r, err := s.ExecContext(ctx, args...)
		if err != nil {
			return 0, err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// Prices returns the stored quarter-hour prices of a kind whose start is in
// [from, to), ordered by start, with Start in UTC.
func (db *DB) Prices(ctx context.Context, kind price.Kind, from, to time.Time) ([]price.Point, error) {
	if _, err := price.ParseKind(string(kind)); err != nil {
		return nil, err
	}
	rows, err := db.bun.DB.QueryContext(ctx, db.rebind("SELECT start_unix, minutes, price, price_long FROM market_prices "+
		"WHERE kind = ? AND start_unix >= ? AND start_unix < ? ORDER BY start_unix"), string(kind), ceilUnix(from), ceilUnix(to))
	if err != nil {
		return nil, fmt.Errorf("read %s prices: %w", kind, err)
	}
	defer rows.Close()
	out := []price.Point{}
	for rows.Next() {
		var p price.Point
		var s int64
		if err := rows.Scan(&s, &p.Minutes, &p.Price, &p.PriceLong); err != nil {
			return nil, fmt.Errorf("read %s prices: %w", kind, err)
		}
		p.Start = time.Unix(s, 0).UTC()
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s prices: %w", kind, err)
	}
	return out, nil
}

// ceilUnix is the first whole Unix second at or after t, so that a bound
// with a fraction of a second compares like the time itself.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}
