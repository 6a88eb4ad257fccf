package sqldb

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/portal"
)

// This file keeps the operator list of the web console (see
// portal.Operator). Addresses are normalised with portal.NormalizeEmail on
// every way in, so that "Anna@Firma.de" on the command line and
// "anna@firma.de" in an ID token name the same operator.

type operatorRow struct {
	bun.BaseModel `bun:"table:operators"`

	Email   string    `bun:"email,pk"`
	AddedAt time.Time `bun:"added_at"`
	AddedBy string    `bun:"added_by"`
}

func (r operatorRow) domain() portal.Operator {
	return portal.Operator{Email: r.Email, AddedAt: r.AddedAt.UTC(), AddedBy: r.AddedBy}
}

// AddOperator puts an address on the operator list. It is idempotent: an
// address already listed keeps its first entry (time and author) and
// created is false. An invalid address, a zero time or an empty author is
// a pipeline.Invalid error and writes nothing.
func (db *DB) AddOperator(ctx context.Context, op portal.Operator) (created bool, err error) {
	op, err = portal.NewOperator(op.Email, op.AddedAt, op.AddedBy)
	if err != nil {
		return false, err
	}
	row := operatorRow{Email: op.Email, AddedAt: makoTime(op.AddedAt), AddedBy: op.AddedBy}
	// ON CONFLICT DO NOTHING decides in one statement, so that two
	// concurrent adds of one address both succeed and only one writes.
	res, err := db.bun.NewInsert().Model(&row).On("CONFLICT (email) DO NOTHING").Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("add operator %s: %w", op.Email, busyAsUnavailable(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("add operator %s: %w", op.Email, err)
	}
	return n == 1, nil
}

// RemoveOperator takes an address off the operator list. An address not
// on it is a pipeline.NotFound error, an invalid one pipeline.Invalid.
func (db *DB) RemoveOperator(ctx context.Context, email string) error {
	addr, err := portal.NormalizeEmail(email)
	if err != nil {
		return err
	}
	res, err := db.bun.NewDelete().Model((*operatorRow)(nil)).Where("email = ?", addr).Exec(ctx)
	if err != nil {
		return fmt.Errorf("remove operator %s: %w", addr, busyAsUnavailable(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return pipeline.Errorf(pipeline.NotFound, "%s is not an operator", addr)
	}
	return nil
}

// Operators lists the operator list by address.
func (db *DB) Operators(ctx context.Context) ([]portal.Operator, error) {
	return listAll[operatorRow](ctx, db, "operators", "email")
}

// IsOperator reports whether the address is on the operator list. The
// console asks on every page request, so it is one lookup by the primary
// key. An address that is not one is a pipeline.Invalid error.
func (db *DB) IsOperator(ctx context.Context, email string) (bool, error) {
	addr, err := portal.NormalizeEmail(email)
	if err != nil {
		return false, err
	}
	ok, err := db.isOperatorQuery(addr).Exists(ctx)
	if err != nil {
		return false, fmt.Errorf("look up operator %s: %w", addr, err)
	}
	return ok, nil
}

func (db *DB) isOperatorQuery(addr string) *bun.SelectQuery {
	return db.bun.NewSelect().Model((*operatorRow)(nil)).Column("email").Where("email = ?", addr)
}
