package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/api/bearer"
	"github.com/schedbridge/schedbridge/api/portal"
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
//
// The credential that opened the stream is checked again before every
// batch of events is sent, at least every StreamRecheck between them, and
// at the exp of an access token: a key revoked, a token expired or its
// client's registration revoked, an operator signed out or taken off the
// list ends the stream, and the client's reconnect is refused at the door
// (401 or 403), which makes a browser's EventSource give up. A stream also
// ends after StreamMaxAge, so that no connection outlives a rule that the
// checks do not see; the client reconnects with the last id it got, and
// the events that waited are sent then.
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
	who := principalOf(c)
	opened := s.now()
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	// nginx buffers answers unless told not to; an event must not wait there.
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	// The first bytes tell the client how long to wait before it reconnects.
	fmt.Fprintf(c.Writer, "retry: %d\n\n", s.cfg.StreamPoll.Milliseconds()*2)

	rc := http.NewResponseController(c.Writer)
	poll, stop := s.cfg.StreamTick(s.cfg.StreamPoll)
	defer stop()
	checked := opened
	// The heartbeat is about the connection's silence as proxies see it,
	// so it counts wall time, like the write deadline; the rechecks and the
	// maximum age are rules of the service and follow its clock.
	lastWrite := time.Now()
	c.Stream(func(w io.Writer) bool {
		if s.draining.Load() {
			return false
		}
		now := s.now()
		if now.Sub(opened) >= s.cfg.StreamMaxAge {
			// Before the read: what waits goes to the reconnect, which
			// resumes after the last id sent here.
			_, _ = io.WriteString(w, ": maximum age reached; reconnect with Last-Event-ID\n\n")
			return false
		}
		evs, err := s.deps.Events.Events(ctx, q)
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "event stream: read events", slog.Any("err", err))
			}
			return false // the client reconnects with the last id it got
		}
		if len(evs) > 0 || now.Sub(checked) >= s.cfg.StreamRecheck || expired(who, now) {
			if err := s.recheck(c, who); err != nil {
				s.streamRefused(ctx, w, who, err)
				return false
			}
			checked = now
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
		// What was written goes out now, not after the wait.
		c.Writer.Flush()
		select {
		case <-ctx.Done():
			return false
		case <-poll:
			return true
		}
	})
}

// expired reports whether the access token of a principal is past its exp
// (and the skew the verifier allows), so that its stream checks it at once
// rather than at the next regular check.
func expired(p principal, now time.Time) bool {
	return !p.Expires.IsZero() && now.After(p.Expires.Add(bearer.MaxSkew))
}

// recheck finds the principal of an open stream again from the credential
// its request came with, by the rules the routes' middleware applied at its
// start, and refuses one that is gone: an API key revoked, an access token
// expired or its client's registration revoked, an operator's session
// signed out or expired, an operator taken off the list. The principal
// found must be the one the stream began with.
func (s *Server) recheck(c *gin.Context, was principal) error {
	var (
		p   principal
		err error
	)
	if was.Operator != "" {
		var st *portal.Staff
		switch st, err = s.deps.Portal.StaffAgain(c); {
		case err != nil:
		case st == nil:
			err = pipeline.Errorf(pipeline.Unauthorized, "the session of %s has ended", was)
		default:
			if _, err = s.asOperator(c.Request.Context(), st); err == nil {
				p = operatorPrincipal(st)
			}
		}
	} else {
		p, _, err = s.authenticate(c)
	}
	if err != nil {
		return err
	}
	if p.ID != was.ID || p.Scope != was.Scope || p.PortfolioID != was.PortfolioID {
		return pipeline.Errorf(pipeline.Forbidden, "the credential of %s now names %s", was, p)
	}
	return nil
}

// streamRefused ends a stream whose recheck failed, with a comment for the
// client and a log line: a credential gone is what the check is for; any
// other failure (the database) is a warning, and the client's reconnect
// tries again.
func (s *Server) streamRefused(ctx context.Context, w io.Writer, who principal, err error) {
	switch pipeline.KindOf(err) {
	case pipeline.Unauthorized, pipeline.Forbidden:
		s.log.InfoContext(ctx, "event stream ended: its credential is no longer valid", slog.String("principal", who.String()),
			slog.String("why", pipeline.MessageOf(err)))
		_, _ = io.WriteString(w, ": the credential is no longer valid\n\n")
	default:
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "event stream ended: its credential could not be checked", slog.String("principal", who.String()),
				slog.Any("err", err))
		}
		_, _ = io.WriteString(w, ": the credential could not be checked; reconnect\n\n")
	}
}

// wallTicker is the default Config.StreamTick, time.NewTicker.
func wallTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
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
