package sqldb

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
)

// The queries of this file sum up recorded state for the metrics, which
// every replica reads at scrape time: they aggregate in the database and
// return a handful of rows, whatever the size of the tables.

// ScheduleStats counts the schedule messages sent to the TSOs (every
// recorded version is a message that went out) and groups them by the
// status their latest answer left them in. ByStatus has every status of the
// vocabulary, zeros included, so that a reader tells "none" from "not
// reported".
func (db *DB) ScheduleStats(ctx context.Context) (pipeline.ScheduleStats, error) {
	var rows []struct {
		Status string `bun:"status"`
		N      int64  `bun:"n"`
	}
	if err := db.scheduleStatsQuery().Scan(ctx, &rows); err != nil {
		return pipeline.ScheduleStats{}, fmt.Errorf("schedule statistics: %w", busyAsUnavailable(err))
	}
	out := pipeline.ScheduleStats{ByStatus: map[pipeline.ScheduleStatus]int64{}}
	for _, s := range scheduleStatuses {
		out.ByStatus[s] = 0
	}
	for _, r := range rows {
		out.Sent += r.N
		out.ByStatus[pipeline.ScheduleStatus(r.Status)] += r.N
	}
	return out, nil
}

// scheduleStatsQuery counts the messages per status; the index
// schedule_messages_status (migration 20261128000003) covers it.
func (db *DB) scheduleStatsQuery() *bun.SelectQuery {
	return db.bun.NewSelect().TableExpr("schedule_messages").ColumnExpr("status").ColumnExpr("COUNT(*) AS n").
		GroupExpr("status")
}

// scheduleStatuses is the vocabulary of a schedule message's status, in the
// order a message moves through it.
var scheduleStatuses = []pipeline.ScheduleStatus{
	pipeline.ScheduleSubmitted, pipeline.ScheduleAcknowledged, pipeline.ScheduleRejected,
	pipeline.ScheduleAnomaly, pipeline.ScheduleConfirmed,
}
