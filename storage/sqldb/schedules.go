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

type scheduleRow struct {
	bun.BaseModel `bun:"table:schedule_messages"`

	ID           int64      `bun:"id,pk,autoincrement"`
	PortfolioID  string     `bun:"portfolio_id"`
	DeliveryDay  string     `bun:"delivery_day"`
	ControlArea  string     `bun:"control_area"`
	MessageID    string     `bun:"message_id"`
	Version      int        `bun:"version"`
	FileName     string     `bun:"file_name"`
	ObjectKey    string     `bun:"object_key"`
	ContentHash  string     `bun:"content_hash"`
	Sender       string     `bun:"sender"`
	Receiver     string     `bun:"receiver"`
	RunID        int64      `bun:"run_id"`
	Status       string     `bun:"status"`
	SentAt       time.Time  `bun:"sent_at"`
	AnswerKind   string     `bun:"answer_kind"`
	AnswerAt     *time.Time `bun:"answer_at"`
	AnswerKey    string     `bun:"answer_key"`
	AnswerDetail string     `bun:"answer_detail"`
	// BoughtMW and SoldMW hold the message's quantities (appendValues);
	// NULL for messages recorded before the columns existed.
	BoughtMW []byte `bun:"bought_mw"`
	SoldMW   []byte `bun:"sold_mw"`
}

// quantityBytes is the stored form of a message's quantities: NULL for nil,
// so that "not recorded" stays apart from an empty series.
func quantityBytes(vals []float64) []byte {
	if vals == nil {
		return nil
	}
	return appendValues(make([]byte, 0, 8*len(vals)), vals)
}

// quantities decodes a stored quantity column; NULL is nil.
func quantities(b []byte) ([]float64, error) {
	if b == nil {
		return nil, nil
	}
	return decodeValues(b)
}

func (r scheduleRow) domain() (pipeline.ScheduleMessage, error) {
	day, err := pipeline.ParseDay(r.DeliveryDay)
	if err != nil {
		return pipeline.ScheduleMessage{}, fmt.Errorf("schedule message %d: stored %w", r.ID, err)
	}
	m := pipeline.ScheduleMessage{
		ID: r.ID, PortfolioID: r.PortfolioID, Day: day, ControlArea: pipeline.ControlArea(r.ControlArea),
		MessageID: r.MessageID, Version: r.Version, FileName: r.FileName, ObjectKey: r.ObjectKey,
		ContentHash: r.ContentHash, Sender: r.Sender, Receiver: r.Receiver, RunID: r.RunID,
		Status: pipeline.ScheduleStatus(r.Status), SentAt: r.SentAt.UTC(), AnswerKind: r.AnswerKind,
		AnswerKey: r.AnswerKey, AnswerDetail: r.AnswerDetail,
	}
	if r.AnswerAt != nil {
		t := r.AnswerAt.UTC()
		m.AnswerAt = &t
	}
	if m.BoughtMW, err = quantities(r.BoughtMW); err != nil {
		return pipeline.ScheduleMessage{}, fmt.Errorf("schedule message %d: bought quantities: %w", r.ID, err)
	}
	if m.SoldMW, err = quantities(r.SoldMW); err != nil {
		return pipeline.ScheduleMessage{}, fmt.Errorf("schedule message %d: sold quantities: %w", r.ID, err)
	}
	return m, nil
}

func scheduleRows(rows []scheduleRow) ([]pipeline.ScheduleMessage, error) {
	out := make([]pipeline.ScheduleMessage, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = r.domain(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RecordSchedule records a schedule message version for its portfolio,
// delivery day and control area, or finds that it need not be sent.
//
// m.Document, when set, is the document that goes to the TSO: it is stored
// with the version, which then waits for delivery (UndeliveredSchedules)
// until MarkScheduleDelivered. Within InTx the version is recorded in the
// transaction of its run's commit, so it exists exactly when the run
// committed. A version recorded without a document has nothing to deliver:
// its caller delivers it. (The document and delivered_at columns are
// written by statements of their own, so that the version's row stays what
// it was before them.)
//
// m.ContentHash must cover everything that decides what the TSO receives
// except what depends on the version: not the version number, the file name
// or object key that carry it, nor the document's creation time. When the
// latest recorded version has the same hash, nothing is written and the
// latest version is returned with false: a re-run of an unchanged day sends
// nothing new. Otherwise m is recorded as the next version (1 for the first)
// with status submitted and no answer, and returned with true. m.BoughtMW
// and m.SoldMW, the message's quantities, are stored with the version (nil
// stays nil); an unchanged re-run keeps the latest version's.
//
// The document names its version, so the caller builds it before this call:
// it asks LatestSchedule, builds the document, file name and object key for
// version latest+1, and passes that version in m.Version. If another writer
// recorded that version in the meantime, the result is a Conflict and
// nothing is written, so a recorded file name always carries its row's
// version; the caller starts over from LatestSchedule. m.Version 0 takes
// whatever version is next, for callers whose names do not carry it.
// Versions are unique per portfolio, day and area (a unique index); on
// PostgreSQL writers of one key also queue on an advisory lock.
func (db *DB) RecordSchedule(ctx context.Context, m pipeline.ScheduleMessage) (pipeline.ScheduleMessage, bool, error) {
	if _, ok := pipeline.ParseControlArea(string(m.ControlArea)); !ok {
		return m, false, pipeline.Errorf(pipeline.Invalid, "schedule: unknown control area %q", m.ControlArea)
	}
	switch {
	case m.PortfolioID == "" || m.Day.IsZero() || m.MessageID == "" || m.ContentHash == "":
		return m, false, pipeline.Errorf(pipeline.Invalid, "schedule: portfolio, delivery day, message id and content hash are required")
	case m.SentAt.IsZero():
		return m, false, pipeline.Errorf(pipeline.Invalid, "schedule %s: sent time is required", m.MessageID)
	case m.Version < 0:
		return m, false, pipeline.Errorf(pipeline.Invalid, "schedule %s: version %d", m.MessageID, m.Version)
	}
	var out pipeline.ScheduleMessage
	created := false
	err := db.inTx(ctx, func(tx bun.Tx) error {
		if db.dialect == Postgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
				"schedule/"+m.PortfolioID+"/"+m.Day.String()+"/"+string(m.ControlArea)); err != nil {
				return err
			}
		}
		latest, err := latestSchedule(ctx, tx, m.PortfolioID, m.Day, m.ControlArea)
		next := 1
		switch {
		case err == nil && latest.ContentHash == m.ContentHash:
			out = latest
			return nil
		case err == nil:
			next = latest.Version + 1
		case pipeline.KindOf(err) != pipeline.NotFound:
			return err
		}
		if m.Version != 0 && m.Version != next {
			return pipeline.Errorf(pipeline.Conflict, "schedule %s %s %s: version %d is not the next (%d); another run recorded one meanwhile",
				m.PortfolioID, m.Day, m.ControlArea, m.Version, next)
		}
		row := scheduleRow{
			PortfolioID: m.PortfolioID, DeliveryDay: m.Day.String(), ControlArea: string(m.ControlArea),
			MessageID: m.MessageID, Version: next, FileName: m.FileName, ObjectKey: m.ObjectKey,
			ContentHash: m.ContentHash, Sender: m.Sender, Receiver: m.Receiver, RunID: m.RunID,
			Status: string(pipeline.ScheduleSubmitted), SentAt: m.SentAt.UTC(),
			BoughtMW: quantityBytes(m.BoughtMW), SoldMW: quantityBytes(m.SoldMW),
		}
		if _, err := tx.NewInsert().Model(&row).Returning("id").Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return &pipeline.Error{Kind: pipeline.Conflict, Err: err, Message: fmt.Sprintf(
					"schedule %s version %d was recorded concurrently", m.MessageID, next)}
			}
			return err
		}
		if m.Document != nil {
			if _, err := tx.NewUpdate().Table("schedule_messages").Set("document = ?", m.Document).
				Where("id = ?", row.ID).Exec(ctx); err != nil {
				return err
			}
		}
		out, err = row.domain()
		created = err == nil
		return err
	})
	if err != nil {
		return m, false, fmt.Errorf("record schedule %s %s %s: %w", m.PortfolioID, m.Day, m.ControlArea, err)
	}
	return out, created, nil
}

func latestSchedule(ctx context.Context, conn bun.IDB, portfolio string, day pipeline.Day, area pipeline.ControlArea) (pipeline.ScheduleMessage, error) {
	var row scheduleRow
	err := conn.NewSelect().Model(&row).Where("portfolio_id = ?", portfolio).Where("delivery_day = ?", day.String()).
		Where("control_area = ?", string(area)).Order("version DESC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return pipeline.ScheduleMessage{}, pipeline.Errorf(pipeline.NotFound, "no schedule for %s %s in %s", portfolio, day, area)
	}
	if err != nil {
		return pipeline.ScheduleMessage{}, fmt.Errorf("latest schedule %s %s %s: %w", portfolio, day, area, err)
	}
	return row.domain()
}

// LatestSchedule returns the highest recorded version of the schedule of a
// portfolio, delivery day and control area.
func (db *DB) LatestSchedule(ctx context.Context, portfolio string, day pipeline.Day, area pipeline.ControlArea) (pipeline.ScheduleMessage, error) {
	return latestSchedule(ctx, db.bun, portfolio, day, area)
}

// Schedules lists every recorded version of the schedules of a delivery day,
// of one portfolio or of all (""), by portfolio and control area, newest
// version first.
func (db *DB) Schedules(ctx context.Context, portfolio string, day pipeline.Day) ([]pipeline.ScheduleMessage, error) {
	var rows []scheduleRow
	q := db.bun.NewSelect().Model(&rows).Where("delivery_day = ?", day.String()).
		Order("portfolio_id", "control_area").OrderExpr("version DESC")
	if portfolio != "" {
		q = q.Where("portfolio_id = ?", portfolio)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list schedules of %s: %w", day, err)
	}
	return scheduleRows(rows)
}

// SubmittedSchedules returns, per portfolio and control area of a delivery
// day, the latest version of the schedule that the TSO has not rejected,
// with its quantities, ordered by portfolio and control area. A version the
// TSO rejected was not taken into the balancing, so the version before it
// stands. BoughtMW and SoldMW are nil for messages recorded before the
// quantities were kept; the caller reads those from the stored document.
func (db *DB) SubmittedSchedules(ctx context.Context, day pipeline.Day) ([]pipeline.ScheduleMessage, error) {
	var rows []scheduleRow
	rejected := string(pipeline.ScheduleRejected)
	// bun names the model's table schedule_row in the outer query.
	err := db.bun.NewSelect().Model(&rows).Where("delivery_day = ?", day.String()).Where("status <> ?", rejected).
		Where("version = (SELECT MAX(o.version) FROM schedule_messages o WHERE o.portfolio_id = schedule_row.portfolio_id "+
			"AND o.delivery_day = schedule_row.delivery_day AND o.control_area = schedule_row.control_area AND o.status <> ?)", rejected).
		Order("portfolio_id", "control_area").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("submitted schedules of %s: %w", day, err)
	}
	return scheduleRows(rows)
}

// ScheduleByMessage finds a recorded schedule by the message identification
// and version that a TSO answer refers to.
func (db *DB) ScheduleByMessage(ctx context.Context, messageID string, version int) (pipeline.ScheduleMessage, error) {
	var row scheduleRow
	err := db.bun.NewSelect().Model(&row).Where("message_id = ?", messageID).Where("version = ?", version).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return pipeline.ScheduleMessage{}, pipeline.Errorf(pipeline.NotFound, "no schedule message %s version %d", messageID, version)
	}
	if err != nil {
		return pipeline.ScheduleMessage{}, fmt.Errorf("schedule message %s v%d: %w", messageID, version, err)
	}
	return row.domain()
}

// answerRank orders the schedule states for answers: a message's status only
// moves up, confirmed > anomaly = rejected > acknowledged > submitted. A CNF
// is the TSO's final word on a version, so a late ACK of the same version
// does not undo it; an ANO or a negative ACK outranks a positive ACK, which
// only says the message was readable.
var answerRank = map[pipeline.ScheduleStatus]int{
	pipeline.ScheduleSubmitted:    0,
	pipeline.ScheduleAcknowledged: 1,
	pipeline.ScheduleAnomaly:      2,
	pipeline.ScheduleRejected:     2,
	pipeline.ScheduleConfirmed:    3,
}

// RecordScheduleAnswer records a TSO answer (kind ACK, ANO or CNF; key is
// the object key of the answer file, detail a summary) on the schedule
// version id it answers, and only on that version: an answer to an older
// version than the latest does not touch the latest. The answer replaces the
// version's status and answer fields when its status ranks higher than the
// current one (see answerRank), or ranks the same and is not older than the
// answer recorded; otherwise it is ignored without error, so answers may
// arrive in any order and any number of times.
func (db *DB) RecordScheduleAnswer(ctx context.Context, id int64, status pipeline.ScheduleStatus, kind string,
	at time.Time, key, detail string) error {
	rank, ok := answerRank[status]
	if !ok || status == pipeline.ScheduleSubmitted {
		return pipeline.Errorf(pipeline.Invalid, "schedule answer: status %q (want acknowledged, rejected, anomaly or confirmed)", status)
	}
	if at.IsZero() {
		return pipeline.Errorf(pipeline.Invalid, "schedule answer %s: time is required", kind)
	}
	err := db.inTx(ctx, func(tx bun.Tx) error {
		var row scheduleRow
		q := tx.NewSelect().Model(&row).Where("id = ?", id)
		if db.dialect == Postgres {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); errors.Is(err, sql.ErrNoRows) {
			return pipeline.Errorf(pipeline.NotFound, "schedule message %d not found", id)
		} else if err != nil {
			return err
		}
		cur := answerRank[pipeline.ScheduleStatus(row.Status)]
		if rank < cur || (rank == cur && row.AnswerAt != nil && at.Before(*row.AnswerAt)) {
			return nil
		}
		_, err := tx.NewUpdate().Model((*scheduleRow)(nil)).Set("status = ?", string(status)).
			Set("answer_kind = ?", kind).Set("answer_at = ?", at.UTC()).Set("answer_key = ?", key).
			Set("answer_detail = ?", detail).Where("id = ?", id).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("record %s answer for schedule %d: %w", kind, id, err)
	}
	return nil
}

// isUniqueViolation reports whether err is a unique constraint violation:
// PostgreSQL's SQLSTATE 23505 or SQLite's SQLITE_CONSTRAINT_UNIQUE and
// SQLITE_CONSTRAINT_PRIMARYKEY.
func isUniqueViolation(err error) bool {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		return pg.SQLState() == "23505"
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		c := coded.Code()
		return c == 2067 || c == 1555
	}
	return false
}

// UndeliveredSchedules returns, oldest first, up to limit recorded schedule
// versions whose documents have not reached the outbox yet, with their
// documents: the versions that committed runs recorded and that a crash,
// or a failing outbox, kept from being delivered.
func (db *DB) UndeliveredSchedules(ctx context.Context, limit int) ([]pipeline.ScheduleMessage, error) {
	var rows []struct {
		scheduleRow `bun:",extend"`
		Document    []byte `bun:"document"`
	}
	err := db.bun.NewSelect().Model(&rows).Where("document IS NOT NULL").Where("delivered_at IS NULL").
		Order("id").Limit(int64(max(limit, 1))).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("undelivered schedules: %w", err)
	}
	out := make([]pipeline.ScheduleMessage, len(rows))
	for i, r := range rows {
		m, err := r.scheduleRow.domain()
		if err != nil {
			return nil, err
		}
		m.Document = r.Document
		out[i] = m
	}
	return out, nil
}

// MarkScheduleDelivered records that the document of schedule version id is
// in the outbox since at, and reports whether this call recorded it: a
// version delivered already keeps its first time, and false tells a second
// deliverer (another replica) that it was not first.
func (db *DB) MarkScheduleDelivered(ctx context.Context, id int64, at time.Time) (bool, error) {
	res, err := db.bun.NewUpdate().Table("schedule_messages").Set("delivered_at = ?", at.UTC()).
		Where("id = ?", id).Where("delivered_at IS NULL").Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("mark schedule %d delivered: %w", id, busyAsUnavailable(err))
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return true, nil
	}
	exists, err := db.bun.NewSelect().Model((*scheduleRow)(nil)).Where("id = ?", id).Exists(ctx)
	if err != nil {
		return false, fmt.Errorf("mark schedule %d delivered: %w", id, err)
	}
	if !exists {
		return false, pipeline.Errorf(pipeline.NotFound, "schedule %d not found", id)
	}
	return false, nil
}
