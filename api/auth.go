package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"github.com/schedbridge/schedbridge/pipeline"
)

const (
	ctxKey       = "schedbridge.key"
	ctxPortfolio = "schedbridge.portfolio"
	ctxAudit     = "schedbridge.audit"
	headerAPIKey = "X-API-Key"
)

// requireScope authenticates the X-API-Key header and checks that its scope
// is one of scopes. The key is taken from that header only: a key in the
// query, the body or a plain Authorization value is never looked at, so it
// cannot end up in access logs.
func (s *Server) requireScope(scopes ...pipeline.Scope) gin.HandlerFunc {
	wanted := strings.Join(stringsOf(scopes), " or ")
	return func(c *gin.Context) {
		values := c.Request.Header.Values(headerAPIKey)
		if len(values) == 0 {
			if a := c.GetHeader("Authorization"); strings.HasPrefix(strings.ToLower(a), "bearer ") {
				s.fail(c, pipeline.Errorf(pipeline.Unauthorized, "bearer token not accepted: no token issuer is registered; send the key in the X-API-Key header"))
				return
			}
			s.fail(c, pipeline.Errorf(pipeline.Unauthorized, "missing API key: send it in the X-API-Key header"))
			return
		}
		if len(values) > 1 {
			s.fail(c, pipeline.Errorf(pipeline.Unauthorized, "send exactly one X-API-Key header"))
			return
		}
		key, err := s.deps.Keys.KeyByHash(c.Request.Context(), pipeline.HashKey(values[0]))
		switch {
		case pipeline.KindOf(err) == pipeline.NotFound:
			s.fail(c, pipeline.Errorf(pipeline.Unauthorized, "invalid API key"))
			return
		case err != nil:
			s.fail(c, err)
			return
		case key.Revoked():
			s.fail(c, pipeline.Errorf(pipeline.Unauthorized, "API key %s has been revoked", key.ID))
			return
		}
		c.Set(ctxKey, key)
		if a := auditOf(c); a != nil {
			a.KeyID = key.ID
			a.PortfolioID = key.PortfolioID
		}
		if !slices.Contains(scopes, key.Scope) {
			s.fail(c, pipeline.Errorf(pipeline.Forbidden, "this endpoint needs a %s key; key %s has scope %s", wanted, key.ID, key.Scope))
			return
		}
		if key.PortfolioID != "" {
			p, err := s.deps.Portfolios.Portfolio(c.Request.Context(), key.PortfolioID)
			if err != nil {
				s.fail(c, fmt.Errorf("portfolio of key %s: %w", key.ID, err))
				return
			}
			c.Set(ctxPortfolio, p)
		}
		c.Next()
	}
}

func portfolioOf(c *gin.Context) pipeline.Portfolio {
	return c.MustGet(ctxPortfolio).(pipeline.Portfolio)
}

func (s *Server) limiter(keyID string) *rate.Limiter {
	s.limMu.Lock()
	defer s.limMu.Unlock()
	l, ok := s.limiters[keyID]
	if !ok {
		l = rate.NewLimiter(rate.Limit(s.cfg.RatePerSecond), s.cfg.RateBurst)
		s.limiters[keyID] = l
	}
	return l
}

// rateLimit applies a token bucket per API key; it runs after authentication
// so that one client's burst never throttles another.
func (s *Server) rateLimit(c *gin.Context) {
	if s.cfg.RatePerSecond <= 0 {
		c.Next()
		return
	}
	key := c.MustGet(ctxKey).(pipeline.APIKey)
	now := s.now()
	r := s.limiter(key.ID).ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		secs := max(1, int(math.Ceil(d.Seconds())))
		c.Header("Retry-After", strconv.Itoa(secs))
		s.fail(c, pipeline.Errorf(pipeline.RateLimited, "rate limit of %g requests per second exceeded; retry after %d s", s.cfg.RatePerSecond, secs))
		return
	}
	c.Next()
}

// audit records every request to the data endpoints, accepted or not.
// Accepted submissions are written by the staging transaction itself; this
// middleware writes the rest once the handler has answered, among them a
// submission whose transaction was rolled back because its client went away
// before the commit (the entry keeps its id 0 then).
func (s *Server) audit(c *gin.Context) {
	a := &pipeline.AuditEntry{ReceivedAt: s.now().UTC(), Endpoint: c.Request.Method + " " + c.FullPath()}
	c.Set(ctxAudit, a)
	c.Next()
	a.StatusCode = c.Writer.Status()
	if a.Outcome == "" {
		a.Outcome = outcomeOf[a.StatusCode]
		if a.Outcome == "" {
			a.Outcome = strconv.Itoa(a.StatusCode)
		}
	}
	s.dataReqs.WithLabelValues(a.Endpoint, a.Outcome).Inc()
	if a.ID != 0 {
		return
	}
	// The request's context is done when the client has gone away or its
	// body timed out, and the trail must hold that request too: the entry
	// is written on a context without the cancellation, bounded by a
	// timeout of its own so that a stuck database cannot hold the request.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), auditTimeout)
	defer cancel()
	if err := s.deps.Audit.RecordAudit(ctx, a); err != nil {
		s.log.ErrorContext(ctx, "record audit entry", "endpoint", a.Endpoint, "err", err)
	}
}

// auditTimeout bounds the write of an audit entry after the answer.
const auditTimeout = 5 * time.Second

func auditOf(c *gin.Context) *pipeline.AuditEntry {
	if v, ok := c.Get(ctxAudit); ok {
		return v.(*pipeline.AuditEntry)
	}
	return nil
}

func setAuditDetail(c *gin.Context, err error) {
	if a := auditOf(c); a != nil && a.Detail == "" {
		if a.Detail = firstMessage(err); a.Detail == "" {
			a.Detail = pipeline.MessageOf(err)
		}
	}
}

// readBody reads the whole body of a submission under the configured limit.
func (s *Server) readBody(c *gin.Context) ([]byte, error) {
	return readLimited(c, s.cfg.MaxBodyBytes, "split the submission")
}

// readLimited reads the whole body under limit; advice tells the client what
// to do about a larger one. MaxBytesReader also catches chunked bodies that
// announce no length.
//
// A body that stops arriving fails in one of two ways. When the server's read
// timeout passes first, the read fails with os.ErrDeadlineExceeded: a client
// too slow to send, TooSlow (408; the connection is closed after the answer).
// When the client closes its connection first, net/http has cancelled the
// request's context by the time the read returns; the cancellation is passed
// on for fail to report as the client's going away (499), not as a malformed
// body.
func readLimited(c *gin.Context, limit int64, advice string) ([]byte, error) {
	tooLarge := pipeline.Errorf(pipeline.TooLarge, "request body exceeds the limit of %d bytes; %s", limit, advice)
	if c.Request.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	var mbe *http.MaxBytesError
	ctx := c.Request.Context()
	switch {
	case err == nil:
		return body, nil
	case errors.As(err, &mbe):
		return nil, tooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, &pipeline.Error{Kind: pipeline.TooSlow, Err: err,
			Message: "request body not received within the server's read timeout; send it faster or in smaller parts"}
	case ctx.Err() != nil:
		return nil, fmt.Errorf("read request body: %v: %w", err, context.Cause(ctx))
	}
	return nil, pipeline.Errorf(pipeline.Invalid, "read request body: %v", err)
}
