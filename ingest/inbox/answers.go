package inbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/fahrplan"
)

// TSO answers are the acknowledgements (ACK), anomaly reports (ANO) and
// confirmation reports (CNF) with which the TSOs answer the schedule
// messages this service sent. The AS4 gateway drops them into inbox/tso/,
// a folder without a portfolio: the answer names the message it answers,
// and that message names the portfolio. Each file is claimed like any
// other, parsed, correlated with the sent message and version, recorded on
// it, and moved to processed/tso/<delivery day>/ with a receipt; a file that
// is no answer, or answers nothing this service sent, goes to rejected/tso/
// with its errors document. Nothing is ever dropped.

// AnswerFolder is the inbox folder of TSO answers: inbox/tso/<name>. A
// two-segment key under it is an answer; inbox/tso/<kind>/<name> would
// still be a bulk file of a portfolio called tso.
const AnswerFolder = "tso"

// answerKind is the kind recorded for an answer file's claim.
const answerKind = "tso-answer"

// maxAnswerBytes bounds an answer file, which is read whole: a CNF that
// repeats every series of a large schedule has a few MB.
const maxAnswerBytes = 32 << 20

// AnswerParser reads a TSO answer file; fahrplan.ParseAnswer is the one.
type AnswerParser func(data []byte) (fahrplan.Answer, error)

// AnswerStore is what the inbox needs of the database for TSO answers.
type AnswerStore interface {
	// ScheduleByMessage returns the sent schedule message with the ESS
	// message identification and version, or a NotFound error.
	ScheduleByMessage(ctx context.Context, messageID string, version int) (pipeline.ScheduleMessage, error)
	// ScheduleByFileName returns the sent schedule message written under
	// the file name, or a NotFound error.
	ScheduleByFileName(ctx context.Context, name string) (pipeline.ScheduleMessage, error)
	// RecordScheduleAnswer records an answer on a sent message: its new
	// status, the answer's kind and time, the object key the answer file
	// is moved to and a detail text (the reasons). It must be idempotent:
	// a file whose processing was interrupted records its answer again.
	RecordScheduleAnswer(ctx context.Context, id int64, status pipeline.ScheduleStatus, kind string, at time.Time, key, detail string) error
	// MarkInboxStaged records that a claimed file was taken in without a
	// bulk stage: where it will be moved, its status and its receipt. It
	// is MarkInboxRejected's counterpart; the file must still be processing
	// and claimed by owner, else the error is a Conflict.
	MarkInboxStaged(ctx context.Context, id int64, owner, dest, status string, result []byte) error
}

// AnswerReceipt is the document written next to a processed TSO answer.
type AnswerReceipt struct {
	ID          int64                   `json:"id"`
	File        string                  `json:"file"`
	Dest        string                  `json:"dest"`
	Kind        string                  `json:"kind"` // tso-answer
	Size        int64                   `json:"size"`
	ETag        string                  `json:"etag"`
	Answer      string                  `json:"answer"` // ACK, ANO or CNF
	Format      string                  `json:"format"` // ESS or CIM
	MessageID   string                  `json:"message_id"`
	Version     int                     `json:"version"`
	Accepted    bool                    `json:"accepted"`
	Sender      string                  `json:"sender"`
	Receiver    string                  `json:"receiver"`
	Created     time.Time               `json:"created"`
	Reasons     []AnswerReason          `json:"reasons"`
	SeriesIDs   []string                `json:"series_ids,omitempty"`
	ScheduleID  int64                   `json:"schedule_id"`
	Portfolio   string                  `json:"portfolio"`
	ControlArea pipeline.ControlArea    `json:"control_area"`
	DeliveryDay pipeline.Day            `json:"delivery_day"`
	Status      pipeline.ScheduleStatus `json:"status"`
	Attempts    int                     `json:"attempts"`
	RecordedAt  time.Time               `json:"recorded_at"`
}

// AnswerReason is one reason of an answer; SeriesID names the time series
// it is about, empty for the message as a whole.
type AnswerReason struct {
	Code     string `json:"code"`
	Text     string `json:"text,omitempty"`
	SeriesID string `json:"series_id,omitempty"`
}

// answersEnabled tells whether the processor can take TSO answers in.
func (p *Processor) answersEnabled() bool {
	return p.cfg.ParseAnswer != nil && p.cfg.Answers != nil
}

// scheduleStatus is the status an answer gives the message it answers.
func scheduleStatus(a fahrplan.Answer) (pipeline.ScheduleStatus, error) {
	switch a.Kind {
	case fahrplan.KindACK:
		if a.Accepted {
			return pipeline.ScheduleAcknowledged, nil
		}
		return pipeline.ScheduleRejected, nil
	case fahrplan.KindANO:
		return pipeline.ScheduleAnomaly, nil
	case fahrplan.KindCNF:
		return pipeline.ScheduleConfirmed, nil
	}
	return "", pipeline.Errorf(pipeline.Invalid, "answer kind %q: want ACK, ANO or CNF", a.Kind)
}

// reasonsOf copies an answer's reasons, never nil so that documents show [].
func reasonsOf(a fahrplan.Answer) []AnswerReason {
	out := make([]AnswerReason, len(a.Reasons))
	for i, r := range a.Reasons {
		out[i] = AnswerReason{Code: r.Code, Text: r.Text, SeriesID: r.SeriesID}
	}
	return out
}

// reasonsDetail is the reasons as one line for the message's record.
func reasonsDetail(rs []AnswerReason) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = strings.TrimSpace(r.Code + " " + r.Text)
		if r.SeriesID != "" {
			parts[i] += " (series " + r.SeriesID + ")"
		}
	}
	return strings.Join(parts, "; ")
}

// scheduleFileOf is the schedule file an answer's file name answers (the
// schedule's name plus _ANO_<time> and the like), or "".
func scheduleFileOf(name string) string {
	fn, err := fahrplan.ParseFileName(name)
	if err != nil || !fn.IsAnswer() || fn.Version <= 0 {
		return ""
	}
	fn.Answer, fn.AnswerTime = "", time.Time{}
	return fn.String()
}

// processAnswer takes in a freshly claimed TSO answer.
func (p *Processor) processAnswer(ctx context.Context, f pipeline.InboxFile, l layout) (outcome, error) {
	if f.Size > maxAnswerBytes || f.Size > p.cfg.MaxFileBytes {
		return p.reject(ctx, f, l, rejectReason{reason: fmt.Sprintf(
			"file of %d bytes is too large for a TSO answer (at most %d bytes)", f.Size, min(maxAnswerBytes, p.cfg.MaxFileBytes))})
	}
	rc, err := p.bucket.GetIfMatch(ctx, f.Key, f.ETag)
	if gone(err) {
		return p.release(ctx, f)
	} else if err != nil {
		return outcomeFailed, fmt.Errorf("open %s: %w", f.Key, err)
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxAnswerBytes+1))
	rc.Close()
	if err != nil {
		return outcomeFailed, fmt.Errorf("read %s: %w", f.Key, err)
	}
	a, err := p.cfg.ParseAnswer(data)
	if err != nil {
		return p.reject(ctx, f, l, rejectReason{reason: "not a TSO answer (ACK, ANO or CNF in ESS or CIM XML): " + err.Error()})
	}
	status, err := scheduleStatus(a)
	if err != nil {
		return p.reject(ctx, f, l, rejectReason{reason: pipeline.MessageOf(err)})
	}
	var sched pipeline.ScheduleMessage
	if a.MessageID == "" {
		// An ESS 2.3 anomaly report may carry only its header: its file
		// name is then what names the schedule it answers.
		file := scheduleFileOf(l.name)
		if file == "" {
			return p.reject(ctx, f, l, rejectReason{reason: fmt.Sprintf(
				"the %s names no message it answers, and its file name names no schedule file", a.Kind)})
		}
		sched, err = p.cfg.Answers.ScheduleByFileName(ctx, file)
		if pipeline.KindOf(err) == pipeline.NotFound {
			return p.reject(ctx, f, l, rejectReason{reason: fmt.Sprintf(
				"the %s names no message it answers; by its file name it answers the schedule file %s, which this service did not send", a.Kind, file)})
		}
	} else {
		sched, err = p.cfg.Answers.ScheduleByMessage(ctx, a.MessageID, a.Version)
		if pipeline.KindOf(err) == pipeline.NotFound {
			return p.reject(ctx, f, l, rejectReason{reason: fmt.Sprintf(
				"the %s answers message %q version %d, which this service did not send", a.Kind, a.MessageID, a.Version)})
		}
	}
	if err != nil {
		return outcomeFailed, fmt.Errorf("correlate %s: %w", f.Key, err)
	}

	// Answers are filed by the delivery day they concern, which is what an
	// operator looks for them by.
	dest, err := p.freeKey(ctx, fmt.Sprintf("%s%s/%s/%s", ProcessedPrefix, AnswerFolder, sched.Day, l.name), f.ID)
	if err != nil {
		return outcomeFailed, err
	}
	now := p.cfg.Now()
	// The answer's own time orders the answers of a message, whatever the
	// order in which their files are processed.
	at := a.Created
	if at.IsZero() {
		at = now
	}
	reasons := reasonsOf(a)
	if err := p.cfg.Answers.RecordScheduleAnswer(ctx, sched.ID, status, a.Kind, at.UTC(), dest, reasonsDetail(reasons)); err != nil {
		return outcomeFailed, fmt.Errorf("record answer %s: %w", f.Key, err)
	}
	receipt, err := json.MarshalIndent(AnswerReceipt{
		ID: f.ID, File: f.Key, Dest: dest, Kind: answerKind, Size: f.Size, ETag: f.ETag,
		Answer: a.Kind, Format: a.Format, MessageID: a.MessageID, Version: a.Version, Accepted: a.Accepted,
		Sender: a.Sender, Receiver: a.Receiver, Created: a.Created.UTC(), Reasons: reasons, SeriesIDs: a.SeriesIDs,
		ScheduleID: sched.ID, Portfolio: sched.PortfolioID, ControlArea: sched.ControlArea, DeliveryDay: sched.Day,
		Status: status, Attempts: f.Attempts, RecordedAt: now.UTC(),
	}, "", "  ")
	if err != nil {
		return outcomeFailed, err
	}
	if err := p.cfg.Answers.MarkInboxStaged(ctx, f.ID, p.cfg.Owner, dest, string(status), receipt); err != nil {
		if pipeline.KindOf(err) == pipeline.Conflict {
			return outcomeBusy, nil // our lease ran out and another process owns the file now
		}
		return outcomeFailed, err
	}
	f.State, f.DestKey, f.Result, f.Status = pipeline.InboxStaged, dest, receipt, pipeline.Status(status)
	return p.finish(ctx, f, false)
}

// answerEvent is the console event of a processed answer, built from its
// receipt so that a finish resumed after a crash reports the same.
func answerEvent(f pipeline.InboxFile, at time.Time) (pipeline.Event, error) {
	var r AnswerReceipt
	if err := json.Unmarshal(f.Result, &r); err != nil {
		return pipeline.Event{}, fmt.Errorf("receipt of %s: %w", f.Key, err)
	}
	data, err := json.Marshal(map[string]any{
		"id": f.ID, "file": f.Key, "dest": f.DestKey,
		"kind": r.Answer, "format": r.Format, "message_id": r.MessageID, "version": r.Version,
		"status": r.Status, "accepted": r.Accepted, "reasons": r.Reasons,
		"schedule_id": r.ScheduleID, "control_area": r.ControlArea,
	})
	if err != nil {
		return pipeline.Event{}, err
	}
	day := r.DeliveryDay
	return pipeline.Event{At: at, Kind: "tso.answer", PortfolioID: r.Portfolio, Subject: f.Name, DeliveryDay: &day, Data: data}, nil
}
