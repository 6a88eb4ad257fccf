package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/schedbridge/schedbridge/pipeline/portal"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// The operator commands keep the operator list of the web console (see
// docs/operations.md, Operators of the web console). Addresses are checked
// before the database is opened, so that a mistyped one changes nothing.

// operatorAddedBy names the command line as the author of an entry, as
// runs started here are triggered by "cli": the CLI knows no person.
const operatorAddedBy = "cli"

func cmdOperatorAdd(a *app, fs *flag.FlagSet) action {
	return oneArg("EMAIL", func(ctx context.Context, email string) error {
		op, err := portal.NewOperator(email, a.now(), operatorAddedBy)
		if err != nil {
			return err
		}
		var created bool
		if err := a.withDB(ctx, func(db *sqldb.DB) (err error) {
			created, err = db.AddOperator(ctx, op)
			return err
		}); err != nil {
			return err
		}
		if !created {
			a.note(fmt.Sprintf("%s already was an operator; nothing changed", op.Email), "operator", op.Email, "created", false)
			return nil
		}
		a.note(fmt.Sprintf("operator %s added", op.Email), "operator", op.Email, "created", true)
		return nil
	})
}

func cmdOperatorRemove(a *app, fs *flag.FlagSet) action {
	return oneArg("EMAIL", func(ctx context.Context, email string) error {
		addr, err := portal.NormalizeEmail(email)
		if err != nil {
			return err
		}
		if err := a.withDB(ctx, func(db *sqldb.DB) error { return db.RemoveOperator(ctx, addr) }); err != nil {
			return err
		}
		a.note(fmt.Sprintf("operator %s removed", addr), "operator", addr)
		return nil
	})
}

func cmdOperatorList(a *app, fs *flag.FlagSet) action {
	return listCmd(a, fs, (*sqldb.DB).Operators,
		"EMAIL\tADDED\tADDED BY", func(o portal.Operator) []string {
			return []string{o.Email, o.AddedAt.Format(time.RFC3339), o.AddedBy}
		})
}
