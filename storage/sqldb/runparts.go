package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
)

// runPartRow is a lake file that a job of a run staged for the run's commit.
type runPartRow struct {
	bun.BaseModel `bun:"table:run_parts"`

	RunID    int64     `bun:"run_id,pk"`
	Dataset  string    `bun:"dataset"`
	Job      string    `bun:"job"`
	Key      string    `bun:"object_key,pk"`
	Rows     int64     `bun:"row_count"`
	Bytes    int64     `bun:"byte_count"`
	Footer   []byte    `bun:"footer"`
	StagedAt time.Time `bun:"staged_at"`
}

// RecordRunParts records the lake files that the job of run runID staged
// (job "" for a run of one job), replacing the parts that an earlier attempt
// of the same job recorded. The run must be running: a run that finished, or
// that the leader failed as stale, takes no more parts.
func (db *DB) RecordRunParts(ctx context.Context, runID int64, job string, parts []pipeline.RunPart, now time.Time) error {
	for _, p := range parts {
		if p.Dataset == "" || p.Key == "" || p.Rows < 0 || p.Bytes < 0 || p.Job != job {
			return pipeline.Errorf(pipeline.Invalid, "run %d: part %q of %q is incomplete or of another job", runID, p.Key, p.Dataset)
		}
	}
	err := db.inTx(ctx, func(tx bun.Tx) error {
		var status string
		err := tx.NewSelect().Model((*runRow)(nil)).Column("status").Where("id = ?", runID).Scan(ctx, &status)
		if errors.Is(err, sql.ErrNoRows) {
			return pipeline.Errorf(pipeline.NotFound, "run %d not found", runID)
		} else if err != nil {
			return err
		}
		if status != string(pipeline.RunRunning) {
			return pipeline.Errorf(pipeline.Conflict, "run %d is %s already, not running", runID, status)
		}
		if _, err := tx.NewDelete().Model((*runPartRow)(nil)).Where("run_id = ?", runID).Where("job = ?", job).Exec(ctx); err != nil {
			return err
		}
		if len(parts) == 0 {
			return nil
		}
		rows := make([]runPartRow, len(parts))
		for i, p := range parts {
			rows[i] = runPartRow{RunID: runID, Dataset: p.Dataset, Job: job, Key: p.Key, Rows: p.Rows, Bytes: p.Bytes,
				Footer: p.Footer, StagedAt: now.UTC()}
		}
		_, err = tx.NewInsert().Model(&rows).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the parts of run %d: %w", runID, err)
	}
	return nil
}

// RunParts returns the lake files that the jobs of run runID staged, by
// dataset, job and key.
func (db *DB) RunParts(ctx context.Context, runID int64) ([]pipeline.RunPart, error) {
	var rows []runPartRow
	err := db.conn(ctx).NewSelect().Model(&rows).Where("run_id = ?", runID).Order("dataset", "job", "object_key").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("parts of run %d: %w", runID, err)
	}
	out := make([]pipeline.RunPart, len(rows))
	for i, r := range rows {
		out[i] = pipeline.RunPart{Dataset: r.Dataset, Job: r.Job, Key: r.Key, Rows: r.Rows, Bytes: r.Bytes, Footer: r.Footer}
	}
	return out, nil
}

// DropRunPartFooters forgets the Parquet footers recorded with run runID's
// parts. The run's commit calls it in its transaction: once the catalog has
// registered the files, their statistics live in the table's manifests, and
// a footer (about 100 KB for a million-row file) would only grow the table
// with every run.
func (db *DB) DropRunPartFooters(ctx context.Context, runID int64) error {
	_, err := db.conn(ctx).NewUpdate().Model((*runPartRow)(nil)).Set("footer = NULL").Where("run_id = ?", runID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("drop the footers of run %d: %w", runID, err)
	}
	return nil
}
