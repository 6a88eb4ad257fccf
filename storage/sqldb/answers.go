package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/schedbridge/schedbridge/pipeline"
)

// MarkInboxStaged records that a claimed file was taken in without a bulk
// stage (a TSO answer): where it will be moved, its status and its receipt.
// It is MarkInboxRejected's counterpart: the file must still be processing
// and claimed by owner, else the error is a Conflict, so a processor whose
// lease ran out cannot finish a file its successor owns.
func (db *DB) MarkInboxStaged(ctx context.Context, id int64, owner, dest, status string, result []byte) error {
	res, err := db.bun.NewUpdate().Model((*inboxRow)(nil)).
		Set("state = ?", string(pipeline.InboxStaged)).Set("status = ?", status).Set("dest_key = ?", dest).
		Set("result = ?", string(result)).
		Where("id = ?", id).Where("owner = ?", owner).Where("state = ?", string(pipeline.InboxProcessing)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("mark inbox file %d staged: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errLostClaim(id)
	}
	return nil
}

// ScheduleByFileName returns the sent schedule message written under the
// file name (case-insensitive, since TSOs echo names as .xml or .XML). An
// ESS 2.3 anomaly report may carry only its header; its own file name, the
// schedule's name plus _ANO_<time>, is then all that ties it to a message.
func (db *DB) ScheduleByFileName(ctx context.Context, name string) (pipeline.ScheduleMessage, error) {
	var row scheduleRow
	err := db.bun.NewSelect().Model(&row).Where("UPPER(file_name) = UPPER(?)", name).OrderExpr("id DESC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return pipeline.ScheduleMessage{}, pipeline.Errorf(pipeline.NotFound, "no schedule message in file %s", name)
	}
	if err != nil {
		return pipeline.ScheduleMessage{}, fmt.Errorf("schedule message in file %s: %w", name, err)
	}
	return row.domain()
}
