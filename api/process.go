package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/inbox"
	"github.com/schedbridge/schedbridge/ingest/tradeset"
	"github.com/schedbridge/schedbridge/pipeline"
)

// InboxFiles reads the records of inbox files.
type InboxFiles interface {
	InboxFiles(ctx context.Context, q pipeline.InboxQuery) ([]pipeline.InboxFile, error)
	// InboxFile answers pipeline.NotFound for an unknown id.
	InboxFile(ctx context.Context, id int64) (pipeline.InboxFile, error)
}

// Waker starts an inbox scan early.
type Waker interface{ Wake() }

// Events reads the console feed.
type Events interface {
	Events(ctx context.Context, q pipeline.EventQuery) ([]pipeline.Event, error)
}

// queryInt reads an optional integer query parameter within [lo, hi], with
// FastAPI's problems for bad values.
func queryInt(c *gin.Context, name string, def, lo, hi int64, problems *[]ingest.Problem) int64 {
	raw, ok := c.GetQuery(name)
	if !ok {
		return def
	}
	loc := []string{"query", name}
	v, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	switch {
	case err != nil:
		*problems = append(*problems, ingest.Problem{Type: "int_parsing", Loc: loc,
			Msg: "Input should be a valid integer, unable to parse string as an integer", Input: raw, Ctx: map[string]any{}})
	case v < lo:
		*problems = append(*problems, ingest.Problem{Type: "greater_than_equal", Loc: loc,
			Msg: "Input should be greater than or equal to " + strconv.FormatInt(lo, 10), Input: raw, Ctx: map[string]any{"ge": lo}})
	case v > hi:
		*problems = append(*problems, ingest.Problem{Type: "less_than_equal", Loc: loc,
			Msg: "Input should be less than or equal to " + strconv.FormatInt(hi, 10), Input: raw, Ctx: map[string]any{"le": hi}})
	default:
		return v
	}
	return def
}

// listScope answers 422 for the query's problems and 404 for a portfolio
// that does not exist, and otherwise returns the portfolio to list ("" for
// all). Process keys are not bound to a portfolio (key creation refuses
// that), so every one sees all portfolios.
func (s *Server) listScope(c *gin.Context, problems []ingest.Problem) (string, bool) {
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return "", false
	}
	portfolio := c.Query("portfolio")
	if err := s.knownPortfolio(c, portfolio); err != nil {
		s.fail(c, err)
		return "", false
	}
	return portfolio, true
}

// InboxReport is the answer of GET /v1/process/inbox.
type InboxReport struct {
	Pending          []PendingFile  `json:"pending"`
	PendingTruncated bool           `json:"pending_truncated"`
	Processing       []InboxFileRow `json:"processing"`
	Processed        []InboxFileRow `json:"processed"`
	Rejected         []InboxFileRow `json:"rejected"`
}

// PendingFile is an object waiting in the inbox.
type PendingFile struct {
	pipeline.ObjectInfo
	Portfolio string `json:"portfolio,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Name      string `json:"name,omitempty"`
}

// InboxFileRow is a file record as the report shows it: the receipt of a
// processed file, or the reason and error count of a rejected one (the errors
// themselves are in the errors document next to the file).
type InboxFileRow struct {
	pipeline.InboxFile
	Receipt  json.RawMessage `json:"receipt,omitempty"`
	Document string          `json:"document,omitempty"`
	// Latest is the key of the newest result of uploads under the file's
	// key (inbox.LatestKey), which a supplier finds from the name alone.
	Latest     string `json:"latest,omitempty"`
	ErrorCount *int   `json:"error_count,omitempty"`
}

func inboxRow(f pipeline.InboxFile) InboxFileRow {
	r := InboxFileRow{InboxFile: f}
	switch f.State {
	case pipeline.InboxStaged, pipeline.InboxProcessed:
		r.Receipt, r.Document, r.Latest = f.Result, f.DestKey+".receipt.json", inbox.LatestKey(f.Key)
	case pipeline.InboxRejecting, pipeline.InboxRejected:
		var doc struct {
			ErrorCount int `json:"error_count"`
		}
		if json.Unmarshal(f.Result, &doc) == nil {
			r.ErrorCount = &doc.ErrorCount
		}
		r.Document, r.Latest = f.DestKey+".errors.json", inbox.LatestKey(f.Key)
	}
	return r
}

func (s *Server) getInbox(c *gin.Context) {
	var problems []ingest.Problem
	limit := int(queryInt(c, "limit", 100, 1, 1000, &problems))
	portfolio, ok := s.listScope(c, problems)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	rep := InboxReport{Pending: []PendingFile{}, Processing: []InboxFileRow{}, Processed: []InboxFileRow{}, Rejected: []InboxFileRow{}}
	open, err := s.deps.InboxFiles.InboxFiles(ctx, pipeline.InboxQuery{Portfolio: portfolio, Limit: 10000,
		States: []pipeline.InboxState{pipeline.InboxProcessing, pipeline.InboxStaged, pipeline.InboxRejecting}})
	if err != nil {
		s.fail(c, err)
		return
	}
	for _, f := range open {
		if len(rep.Processing) < limit {
			rep.Processing = append(rep.Processing, inboxRow(f))
		}
	}
	// The inbox desk leaves out what is claimed and what failed; a failed
	// file waits for an operator (GET /v1/console/inbox?state=failed).
	pending, more, err := s.deps.Inbox.Pending(ctx, portfolio, "", limit)
	if err != nil {
		s.fail(c, err)
		return
	}
	rep.PendingTruncated = more
	for _, o := range pending {
		pf := PendingFile{ObjectInfo: o}
		pf.Portfolio, pf.Kind, pf.Name = splitInboxKey(o.Key)
		rep.Pending = append(rep.Pending, pf)
	}
	for _, st := range []pipeline.InboxState{pipeline.InboxProcessed, pipeline.InboxRejected} {
		done, err := s.deps.InboxFiles.InboxFiles(ctx, pipeline.InboxQuery{Portfolio: portfolio, Limit: limit,
			States: []pipeline.InboxState{st}})
		if err != nil {
			s.fail(c, err)
			return
		}
		for _, f := range done {
			if st == pipeline.InboxProcessed {
				rep.Processed = append(rep.Processed, inboxRow(f))
			} else {
				rep.Rejected = append(rep.Rejected, inboxRow(f))
			}
		}
	}
	c.JSON(http.StatusOK, rep)
}

// queryTime reads an optional RFC 3339 date-time query parameter. A time
// without a zone is refused like pydantic's AwareDatetime refuses it, since
// the server could only guess which zone was meant.
func queryTime(c *gin.Context, name string, problems *[]ingest.Problem) (time.Time, bool) {
	raw, given := c.GetQuery(name)
	if !given {
		return time.Time{}, false
	}
	loc := []string{"query", name}
	if t, err := time.Parse(time.RFC3339Nano, raw); err == nil {
		return t, true
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", time.DateOnly} {
		if _, err := time.Parse(layout, raw); err == nil {
			*problems = append(*problems, ingest.Problem{Type: "timezone_aware", Loc: loc, Input: raw, Ctx: map[string]any{},
				Msg: "Input should have timezone info"})
			return time.Time{}, false
		}
	}
	// The date part is checked like a day so that its error names the first
	// wrong thing as pydantic's parser does; past it, the time or zone is wrong.
	reason := "invalid time or timezone, expected an RFC 3339 date-time such as 2026-11-24T00:00:00+01:00"
	var se *ingest.SchemaError
	if _, err := tradeset.QueryDay(name, raw[:min(len(raw), 10)], true); errors.As(err, &se) && len(se.Problems) > 0 {
		if text, ok := se.Problems[0].Ctx["error"].(string); ok {
			reason = text
		}
	}
	*problems = append(*problems, ingest.Problem{Type: "datetime_from_date_parsing", Loc: loc, Input: raw,
		Msg: "Input should be a valid datetime or date, " + reason, Ctx: map[string]any{"error": reason}})
	return time.Time{}, false
}

// getEvents pages through the console feed. Every parameter problem is
// listed in one 422 answer.
func (s *Server) getEvents(c *gin.Context) {
	var problems []ingest.Problem
	q := pipeline.EventQuery{Kind: c.Query("kind")}
	// after is the parameter's first name, kept for consoles that use it.
	q.AfterID = queryInt(c, "after", 0, 0, 1<<62, &problems)
	if _, given := c.GetQuery("after_id"); given {
		q.AfterID = queryInt(c, "after_id", 0, 0, 1<<62, &problems)
	}
	q.Limit = int(queryInt(c, "limit", 100, 1, 1000, &problems))
	from, fromOK := queryTime(c, "from", &problems)
	to, toOK := queryTime(c, "to", &problems)
	if fromOK && toOK && !from.Before(to) {
		problems = append(problems, ingest.Problem{Type: "value_error", Loc: []string{"query", "to"}, Input: c.Query("to"),
			Msg: "Value error, to must be after from", Ctx: map[string]any{"error": map[string]any{}}})
	}
	q.From, q.To = from, to
	if d, given := queryDay(c, "day", &problems); given {
		q.Day = &d
	}
	portfolio, ok := s.listScope(c, problems)
	if !ok {
		return
	}
	q.Portfolio = portfolio
	evs, err := s.deps.Events.Events(c.Request.Context(), q)
	if err != nil {
		s.fail(c, err)
		return
	}
	if evs == nil {
		evs = []pipeline.Event{}
	}
	s.cachedJSON(c, http.StatusOK, evs)
}

// maxEventBytes caps a bucket event notification. MinIO and versitygw post
// one event per request, a few KiB of JSON; a larger body is not one of them.
const maxEventBytes = 64 << 10

// postBucketEvents takes the S3 event notifications of MinIO or versitygw.
// They only wake the inbox scan early, so the body is read (to keep the
// sender's connection healthy) and dropped. The webhook is off (404) unless
// a token is configured, which the sender must present, or the operator
// opened it explicitly: anyone who reaches an open webhook can make the
// server list the bucket.
func (s *Server) postBucketEvents(c *gin.Context) {
	switch {
	case s.cfg.WebhookTokenHash != "":
		tok := strings.TrimSpace(strings.TrimPrefix(c.GetHeader("Authorization"), "Bearer "))
		if subtle.ConstantTimeCompare([]byte(pipeline.HashKey(tok)), []byte(s.cfg.WebhookTokenHash)) != 1 {
			s.fail(c, pipeline.Errorf(pipeline.Unauthorized, "missing or wrong webhook token"))
			return
		}
	case !s.cfg.WebhookOpen:
		s.fail(c, pipeline.Errorf(pipeline.NotFound, "bucket notifications are off: configure inbox.webhook_token"))
		return
	}
	if _, err := readLimited(c, maxEventBytes, "send one event per request"); err != nil {
		s.fail(c, err)
		return
	}
	if s.deps.Waker != nil {
		s.deps.Waker.Wake()
	}
	c.Status(http.StatusNoContent)
}
