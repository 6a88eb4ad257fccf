package sqldb

import (
	"context"
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
