package main

import (
	"context"
	"flag"
	"strconv"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// cmdAuditList prints the newest entries of the audit trail.
func cmdAuditList(a *app, fs *flag.FlagSet) action {
	limit := fs.Int("limit", 50, "how many entries, newest first (1 to 10000)")
	list := listCmd(a, fs, func(db *sqldb.DB, ctx context.Context) ([]pipeline.AuditEntry, error) {
		return db.RecentAudit(ctx, *limit)
	}, "ID\tRECEIVED\tENDPOINT\tSTATUS\tOUTCOME\tKEY\tCLIENT\tOPERATOR\tREQUEST ID", func(e pipeline.AuditEntry) []string {
		return []string{strconv.FormatInt(e.ID, 10), e.ReceivedAt.Format(time.RFC3339), e.Endpoint, strconv.Itoa(e.StatusCode),
			e.Outcome, orDash(e.KeyID), orDash(e.ClientID), orDash(e.Operator), orDash(e.RequestID)}
	})
	return func(ctx context.Context, args []string) error {
		if *limit < 1 || *limit > 10000 {
			return usagef("--limit must be between 1 and 10000")
		}
		return list(ctx, args)
	}
}
