package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// The third migration replaces the JSON text column vals of the metered and
// profile versions by vals_f64, the binary form of appendValues, and
// recomputes their content hashes over it. It is written in Go because
// neither SQL dialect can turn a JSON array into IEEE 754 bytes. The file
// name carries the migration's name (bun reads it from the caller's file).
func registerBinaryValues(ms *migrate.Migrations) {
	ms.MustRegister(
		func(ctx context.Context, db *bun.DB) error { return convertValues(ctx, db, true) },
		func(ctx context.Context, db *bun.DB) error { return convertValues(ctx, db, false) },
	)
}

// valueTable is a staging table with quarter-hour values; hashUnit says
// whether its content hash covers a unit column before the values.
type valueTable struct {
	name     string
	hashUnit bool
}

var valueTables = []valueTable{{meteredTable.name, true}, {profileTable.name, false}}

// convertValues moves every row's values from the JSON column to the binary
// one (toBinary) or back, in one transaction, so a failure leaves the schema
// as it was.
func convertValues(ctx context.Context, db *bun.DB, toBinary bool) error {
	pg := db.Dialect().Name() == dialect.PG
	from, to := "vals", "vals_f64"
	addType, dflt := "BLOB", "x''"
	if pg {
		addType, dflt = "BYTEA", "''::bytea"
	}
	if !toBinary {
		from, to = to, from
		addType, dflt = "TEXT", "''"
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, t := range valueTables {
			// SQLite adds a NOT NULL column only with a default; every row gets
			// its real value below, and PostgreSQL drops the default after.
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s NOT NULL DEFAULT %s",
				t.name, to, addType, dflt)); err != nil {
				return fmt.Errorf("add %s.%s: %w", t.name, to, err)
			}
			if err := convertRows(ctx, tx, t, from, to, toBinary); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", t.name, from)); err != nil {
				return fmt.Errorf("drop %s.%s: %w", t.name, from, err)
			}
			if pg {
				if _, err := tx.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT", t.name, to)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// convertRows rewrites the values and content hash of every row of t, a page
// of ids at a time so that a large table is never held in memory.
func convertRows(ctx context.Context, tx bun.Tx, t valueTable, from, to string, toBinary bool) error {
	unitCol := "''"
	if t.hashUnit {
		unitCol = "unit"
	}
	after := int64(0)
	for {
		type row struct {
			id   int64
			unit string
			vals []byte
		}
		var page []row
		rows, err := tx.QueryContext(ctx, fmt.Sprintf("SELECT id, %s, %s FROM %s WHERE id > ? ORDER BY id LIMIT 1000",
			unitCol, from, t.name), after)
		if err != nil {
			return fmt.Errorf("read %s: %w", t.name, err)
		}
		for rows.Next() {
			var r row
			var raw sql.RawBytes
			if err := rows.Scan(&r.id, &r.unit, &raw); err != nil {
				rows.Close()
				return err
			}
			r.vals = append([]byte(nil), raw...)
			page = append(page, r)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		for _, r := range page {
			stored, arg, err := convertValue(r.vals, toBinary)
			if err != nil {
				return fmt.Errorf("convert %s row %d: %w", t.name, r.id, err)
			}
			hash := contentHash(stored)
			if t.hashUnit {
				hash = contentHash([]byte(r.unit), stored)
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET %s = ?, content_hash = ? WHERE id = ?", t.name, to),
				arg, hash, r.id); err != nil {
				return fmt.Errorf("convert %s row %d: %w", t.name, r.id, err)
			}
		}
		after = page[len(page)-1].id
	}
}

// convertValue turns one row's values into the other form. It returns the
// bytes the content hash covers and the argument to store: bytes for the
// binary column, a string for the text one.
func convertValue(b []byte, toBinary bool) ([]byte, any, error) {
	if toBinary {
		var vals []float64
		if err := json.Unmarshal(b, &vals); err != nil {
			return nil, nil, err
		}
		out := appendValues(nil, vals)
		return out, out, nil
	}
	vals, err := decodeValues(b)
	if err != nil {
		return nil, nil, err
	}
	out, err := json.Marshal(vals)
	return out, string(out), err
}
