package sqldb

import (
	"context"
	"strings"
)

// ExplainScheduleStats returns SQLite's query plan of ScheduleStats, one
// line per step.
func ExplainScheduleStats(ctx context.Context, db *DB) (string, error) {
	rows, err := db.bun.DB.QueryContext(ctx, "EXPLAIN QUERY PLAN "+db.scheduleStatsQuery().String())
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return "", err
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "\n"), rows.Err()
}
