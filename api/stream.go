package api

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// streamBatch is how many events one read of the stream takes; a client far
// behind catches up in batches of it without a pause.
const streamBatch = 500

// streamEvents serves the console feed as server-sent events: each event
// with its id as the SSE id, its kind as the SSE event and its JSON as data.
//
// The stream reads the events table, not this process's memory, so any
// replica serves it and a client that reconnects to another one after a
// restart resumes with Last-Event-ID (or the last_event_id parameter, for
// a first connection that cannot set headers) where it stopped: ids only
// grow, and every event after the one named is sent, once. Between events
// it sends a comment at least every StreamHeartbeat. It ends when the server
// drains, so that a rolling restart is not held up; the client reconnects.
func (s *Server) streamEvents(c *gin.Context) {
	var problems []ingest.Problem
	q := pipeline.EventQuery{Kind: c.Query("kind"), Portfolio: c.Query("portfolio"), Limit: streamBatch}
	q.AfterID = queryInt(c, "last_event_id", 0, 0, 1<<62, &problems)
	if raw := c.GetHeader("Last-Event-ID"); raw != "" {
		id, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if err != nil || id < 0 {
			problems = append(problems, ingest.Problem{Type: "int_parsing", Loc: []string{"header", "Last-Event-ID"}, Input: raw,
				Msg: "Input should be a valid integer, unable to parse string as an integer", Ctx: map[string]any{}})
		}
		q.AfterID = id
	}
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	ctx := c.Request.Context()
	if err := s.knownPortfolio(c, q.Portfolio); err != nil {
		s.fail(c, err)
		return
	}
	rc := http.NewResponseController(c.Writer)
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	// nginx buffers answers unless told not to; an event must not wait there.
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	// The first bytes tell the client how long to wait before it reconnects.
	fmt.Fprintf(c.Writer, "retry: %d\n\n", s.cfg.StreamPoll.Milliseconds()*2)

	poll := time.NewTicker(s.cfg.StreamPoll)
	defer poll.Stop()
	lastWrite := time.Now()
	c.Stream(func(w io.Writer) bool {
		if s.draining.Load() {
			return false
		}
		evs, err := s.deps.Events.Events(ctx, q)
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "event stream: read events", slog.Any("err", err))
			}
			return false // the client reconnects with the last id it got
		}
		// The write deadline set for the answer's first byte would cut a
		// long stream; each write moves it on instead.
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		for _, ev := range evs {
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.ID, ev.Kind, eventJSON(ev)); err != nil {
				return false
			}
			q.AfterID = ev.ID
			lastWrite = time.Now()
		}
		if len(evs) == streamBatch {
			return true // more are waiting
		}
		if time.Since(lastWrite) >= s.cfg.StreamHeartbeat {
			if _, err := io.WriteString(w, ": heartbeat\n\n"); err != nil {
				return false
			}
			lastWrite = time.Now()
		}
		select {
		case <-ctx.Done():
			return false
		case <-poll.C:
			return true
		}
	})
}

// eventJSON is an event's data line: the event as GET /v1/console/events
// shows it, on one line (JSON has no raw newlines outside strings).
func eventJSON(ev pipeline.Event) []byte {
	b, err := json.Marshal(ev)
	if err != nil {
		return []byte("{}")
	}
	return b
}
