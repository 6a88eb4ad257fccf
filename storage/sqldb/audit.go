package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
)

type auditRow struct {
	bun.BaseModel `bun:"table:audit_entries"`

	ID          int64     `bun:"id,pk,autoincrement"`
	ReceivedAt  time.Time `bun:"received_at"`
	KeyID       *string   `bun:"key_id"`
	Issuer      *string   `bun:"token_issuer"`
	ClientID    *string   `bun:"token_client_id"`
	PortfolioID *string   `bun:"portfolio_id"`
	Endpoint    string    `bun:"endpoint"`
	InputHash   *string   `bun:"input_hash"`
	Outcome     string    `bun:"outcome"`
	StatusCode  int       `bun:"status_code"`
	Counts      *string   `bun:"counts"`
	Detail      *string   `bun:"detail"`
	RequestID   *string   `bun:"request_id"`
	Operator    *string   `bun:"operator"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func auditRowOf(a *pipeline.AuditEntry) (auditRow, error) {
	row := auditRow{
		ReceivedAt: a.ReceivedAt.UTC(), KeyID: nullable(a.KeyID), PortfolioID: nullable(a.PortfolioID),
		Issuer: nullable(a.Issuer), ClientID: nullable(a.ClientID),
		Endpoint: a.Endpoint, InputHash: nullable(a.InputHash), Outcome: a.Outcome,
		StatusCode: a.StatusCode, Detail: nullable(a.Detail), RequestID: nullable(a.RequestID),
		Operator: nullable(a.Operator),
	}
	if len(a.Counts) > 0 {
		b, err := json.Marshal(a.Counts)
		if err != nil {
			return row, err
		}
		row.Counts = nullable(string(b))
	}
	return row, nil
}

// args are the values of insertAuditCols in their order.
func (db *DB) auditArgs(row auditRow) []any {
	return []any{db.timeArg(row.ReceivedAt), row.KeyID, row.Issuer, row.ClientID, row.PortfolioID, row.Endpoint,
		row.InputHash, row.Outcome, row.StatusCode, row.Counts, row.Detail, row.RequestID, row.Operator}
}

const insertAuditCols = "received_at, key_id, token_issuer, token_client_id, portfolio_id, " +
	"endpoint, input_hash, outcome, status_code, counts, detail, request_id, operator"

func (db *DB) insertAudit(ctx context.Context, conn bun.IDB, a *pipeline.AuditEntry) error {
	row, err := auditRowOf(a)
	if err != nil {
		return err
	}
	// One statement text with placeholders, so that PostgreSQL parses and
	// plans it once per connection: bun writes the values into the text,
	// which made every entry a statement of its own that pgx prepared (one
	// more round trip per request) and that pushed the others out of pgx's
	// statement cache.
	var q interface {
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
	switch c := conn.(type) {
	case bun.Tx:
		q = c.Tx
	case *bun.DB:
		q = c.DB
	default:
		if _, err := conn.NewInsert().Model(&row).Returning("id").Exec(ctx); err != nil {
			return fmt.Errorf("insert audit entry: %w", err)
		}
		a.ID = row.ID
		return nil
	}
	err = q.QueryRowContext(ctx, db.rebind("INSERT INTO audit_entries ("+insertAuditCols+") VALUES ("+
		placeholders(strings.Count(insertAuditCols, ",")+1)+") RETURNING id"), db.auditArgs(row)...).Scan(&a.ID)
	if err != nil {
		return fmt.Errorf("insert audit entry: %w", err)
	}
	return nil
}

// insertAudits stores several entries in one statement and sets their ids.
// The ids come from the identity column's sequence, row by row in the
// order of the VALUES list, so the ascending ids are the entries' in order.
func (db *DB) insertAudits(ctx context.Context, tx bun.Tx, entries []*pipeline.AuditEntry) error {
	n := strings.Count(insertAuditCols, ",") + 1
	var q strings.Builder
	q.WriteString("INSERT INTO audit_entries (" + insertAuditCols + ") VALUES ")
	args := make([]any, 0, len(entries)*n)
	for i, a := range entries {
		row, err := auditRowOf(a)
		if err != nil {
			return err
		}
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(" + placeholders(n) + ")")
		args = append(args, db.auditArgs(row)...)
	}
	q.WriteString(" RETURNING id")
	rows, err := tx.Tx.QueryContext(ctx, db.rebind(q.String()), args...)
	if err != nil {
		return fmt.Errorf("insert audit entries: %w", err)
	}
	defer rows.Close()
	ids := make([]int64, 0, len(entries))
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("insert audit entries: %w", err)
	}
	if len(ids) != len(entries) {
		return fmt.Errorf("insert audit entries: %d ids for %d entries", len(ids), len(entries))
	}
	slices.Sort(ids)
	for i, a := range entries {
		a.ID = ids[i]
	}
	return nil
}

// RecordAudit stores the audit entry of a request that staged nothing:
// rejected, unauthorised or validate_only requests.
func (db *DB) RecordAudit(ctx context.Context, a *pipeline.AuditEntry) error {
	return db.insertAudit(ctx, db.bun, a)
}

// AuditByHash returns the audit entries of a portfolio with the input hash,
// oldest first.
func (db *DB) AuditByHash(ctx context.Context, portfolio, hash string) ([]pipeline.AuditEntry, error) {
	var rows []auditRow
	err := db.bun.NewSelect().Model(&rows).Where("portfolio_id = ?", portfolio).Where("input_hash = ?", hash).
		Order("id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit by hash: %w", err)
	}
	if len(rows) == 0 {
		return nil, pipeline.Errorf(pipeline.NotFound, "no submission %s", hash)
	}
	return auditEntries(rows)
}

// RecentAudit returns the newest audit entries of all portfolios, newest
// first, including requests refused before a portfolio was known.
func (db *DB) RecentAudit(ctx context.Context, limit int) ([]pipeline.AuditEntry, error) {
	var rows []auditRow
	if err := db.bun.NewSelect().Model(&rows).Order("id DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("recent audit: %w", err)
	}
	return auditEntries(rows)
}

func auditEntries(rows []auditRow) ([]pipeline.AuditEntry, error) {
	out := make([]pipeline.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = pipeline.AuditEntry{
			ID: r.ID, ReceivedAt: r.ReceivedAt.UTC(), KeyID: deref(r.KeyID), PortfolioID: deref(r.PortfolioID),
			Issuer: deref(r.Issuer), ClientID: deref(r.ClientID),
			Endpoint: r.Endpoint, InputHash: deref(r.InputHash), Outcome: r.Outcome, StatusCode: r.StatusCode,
			Detail: deref(r.Detail), RequestID: deref(r.RequestID), Operator: deref(r.Operator),
		}
		if r.Counts != nil {
			if err := json.Unmarshal([]byte(*r.Counts), &out[i].Counts); err != nil {
				return nil, fmt.Errorf("decode audit counts %d: %w", r.ID, err)
			}
		}
	}
	return out, nil
}
