package sqldb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// valueTable is a staging table with quarter-hour values; hashUnit says
// whether its content hash covers a unit column before the values.
type valueTable struct {
	name     string
	hashUnit bool
}

var valueTables = []valueTable{{meteredTable.name, true}, {profileTable.name, false}}

// valueColumn names a values column and its SQLite type (BLOB or TEXT;
// PostgreSQL gets BYTEA for BLOB).
type valueColumn struct{ name, sqliteType string }

// valueConversion turns one row's stored values into the new column's form.
// It returns the argument to store and, when the content hash changes with
// the form, the bytes the new hash covers (nil keeps the hash).
type valueConversion func(old []byte) (hashed []byte, store any, err error)

// rewriteValues moves every row's values of the value tables from one column
// to a new one, in one transaction, so that a failure leaves the schema as
// it was. The migrations that change how values are stored share it.
func rewriteValues(ctx context.Context, db *bun.DB, from, to valueColumn, convert valueConversion) error {
	pg := db.Dialect().Name() == dialect.PG
	addType, dflt := to.sqliteType, "''"
	if to.sqliteType == "BLOB" {
		dflt = "x''"
		if pg {
			addType, dflt = "BYTEA", "''::bytea"
		}
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, t := range valueTables {
			// SQLite adds a NOT NULL column only with a default; every row gets
			// its real value below, and PostgreSQL drops the default after.
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s NOT NULL DEFAULT %s",
				t.name, to.name, addType, dflt)); err != nil {
				return fmt.Errorf("add %s.%s: %w", t.name, to.name, err)
			}
			if err := rewriteRows(ctx, tx, t, from.name, to.name, convert); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", t.name, from.name)); err != nil {
				return fmt.Errorf("drop %s.%s: %w", t.name, from.name, err)
			}
			if pg {
				if _, err := tx.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT", t.name, to.name)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// rewriteRows rewrites the values, and the content hash when it changes, of
// every row of t, a page of ids at a time so that a large table is never
// held in memory.
func rewriteRows(ctx context.Context, tx bun.Tx, t valueTable, from, to string, convert valueConversion) error {
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
			hashed, arg, err := convert(r.vals)
			if err != nil {
				return fmt.Errorf("convert %s row %d: %w", t.name, r.id, err)
			}
			q, args := fmt.Sprintf("UPDATE %s SET %s = ? WHERE id = ?", t.name, to), []any{arg, r.id}
			if hashed != nil {
				hash := contentHash(hashed)
				if t.hashUnit {
					hash = contentHash([]byte(r.unit), hashed)
				}
				q, args = fmt.Sprintf("UPDATE %s SET %s = ?, content_hash = ? WHERE id = ?", t.name, to), []any{arg, hash, r.id}
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return fmt.Errorf("convert %s row %d: %w", t.name, r.id, err)
			}
		}
		after = page[len(page)-1].id
	}
}
