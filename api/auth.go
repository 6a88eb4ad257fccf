package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"github.com/schedbridge/schedbridge/api/requestid"
	"github.com/schedbridge/schedbridge/pipeline"
)

const (
	ctxPrincipal = "schedbridge.principal"
	ctxPortfolio = "schedbridge.portfolio"
	ctxAudit     = "schedbridge.audit"
	headerAPIKey = "X-API-Key"
	// maxAuthorizationBytes caps the Authorization header. Access tokens
	// of the common providers stay far below it, also with many groups.
	maxAuthorizationBytes = 16 << 10
)

// principal is who sent a request: the holder of an API key, or a machine
// client that sent an access token of a registered issuer. Both are held to
// the same rules: scope, portfolio, rate limit and audit trail.
type principal struct {
	// ID is the key id or the id of the client's registration; rate limits
	// and stored records use it.
	ID          string
	Scope       pipeline.Scope
	PortfolioID string
	// Issuer and ClientID are set for token clients.
	Issuer, ClientID string
	// Operator is the e-mail address of an operator signed in to the web
	// console; such a principal has the process scope.
	Operator string
	// Expires is the exp of a token client's access token: a long request
	// (the event stream) ends by then. Zero for keys and operators, whose
	// credential has no time of its own that the request knows.
	Expires time.Time
}

func (p principal) isClient() bool { return p.Issuer != "" }

// String names the principal in messages, never with a secret.
func (p principal) String() string {
	if p.Operator != "" {
		return "operator " + p.Operator
	}
	if p.isClient() {
		return fmt.Sprintf("client %s of issuer %s", pipeline.Clip(p.ClientID), p.Issuer)
	}
	return "key " + p.ID
}

func principalOf(c *gin.Context) principal { return c.MustGet(ctxPrincipal).(principal) }

// Challenges of RFC 6750 section 3: a 401 without any credential carries
// the plain scheme, a refused token the invalid_token error, and a request
// that mixes or repeats credentials invalid_request (answered 401, as the
// contract has no 400 for credentials).
const (
	challengePlain        = "Bearer"
	challengeInvalidToken = `Bearer error="invalid_token"`
	challengeInvalidReq   = `Bearer error="invalid_request"`
)

// requireScope authenticates the request, by its X-API-Key header or by an
// "Authorization: Bearer" access token, and checks that the principal's
// scope is one of scopes. A key is taken from that header only: a key in
// the query, the body or a plain Authorization value is never looked at,
// so it cannot end up in access logs.
func (s *Server) requireScope(scopes ...pipeline.Scope) gin.HandlerFunc {
	wanted := strings.Join(stringsOf(scopes), " or ")
	return func(c *gin.Context) {
		var (
			p         principal
			challenge string
			err       error
		)
		// An operator of the web console was found by allowOperators.
		if v, ok := c.Get(ctxPrincipal); ok {
			p = v.(principal)
		} else {
			p, challenge, err = s.authenticate(c)
		}
		// The trail names whoever was found, also when the token then fails
		// on its scope claim.
		if a := auditOf(c); a != nil && p.ID != "" {
			switch {
			case p.Operator != "":
				a.Operator = p.Operator
			case !p.isClient():
				a.KeyID = p.ID
			}
			a.Issuer, a.ClientID, a.PortfolioID = p.Issuer, p.ClientID, p.PortfolioID
		}
		if err == nil && !slices.Contains(scopes, p.Scope) {
			if p.isClient() {
				challenge = insufficientScope(scopes...)
				err = pipeline.Errorf(pipeline.Forbidden, "this endpoint needs a %s client; %s is registered with scope %s", wanted, p, p.Scope)
			} else {
				err = pipeline.Errorf(pipeline.Forbidden, "this endpoint needs a %s key; key %s has scope %s", wanted, p.ID, p.Scope)
			}
		}
		if err != nil {
			if challenge != "" {
				c.Header("WWW-Authenticate", challenge)
			}
			s.fail(c, err)
			return
		}
		c.Set(ctxPrincipal, p)
		if p.PortfolioID != "" {
			pf, err := s.deps.Portfolios.Portfolio(c.Request.Context(), p.PortfolioID)
			if err != nil {
				s.fail(c, fmt.Errorf("portfolio of %s: %w", p, err))
				return
			}
			c.Set(ctxPortfolio, pf)
		}
		c.Next()
	}
}

// insufficientScope is the challenge of a 403 for a token: the scope values
// that would have been accepted.
func insufficientScope(scopes ...pipeline.Scope) string {
	vals := make([]string, len(scopes))
	for i, sc := range scopes {
		vals[i] = pipeline.TokenScopeValue(sc)
	}
	return fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s"`, strings.Join(vals, " "))
}

// authenticate finds the principal of a request. Exactly one credential
// is accepted: one X-API-Key header or one bearer token. A refusal comes
// with its RFC 6750 challenge; "" leaves fail's plain one.
func (s *Server) authenticate(c *gin.Context) (principal, string, error) {
	keys := c.Request.Header.Values(headerAPIKey)
	auths := c.Request.Header.Values("Authorization")
	switch {
	case len(keys) > 0 && len(auths) > 0:
		return principal{}, challengeInvalidReq, pipeline.Errorf(pipeline.Unauthorized, "send either an X-API-Key header or an Authorization: Bearer token, not both")
	case len(keys) > 1:
		return principal{}, challengeInvalidReq, pipeline.Errorf(pipeline.Unauthorized, "send exactly one X-API-Key header")
	case len(auths) > 1:
		return principal{}, challengeInvalidReq, pipeline.Errorf(pipeline.Unauthorized, "send exactly one Authorization header")
	case len(auths) == 1 && len(auths[0]) > maxAuthorizationBytes:
		// Refused before it is parsed: no access token comes near this
		// size, and the token's parts would be quoted in the refusal.
		return principal{}, challengeInvalidReq, pipeline.Errorf(pipeline.Unauthorized,
			"the Authorization header has %d bytes; at most %d are accepted", len(auths[0]), maxAuthorizationBytes)
	case len(auths) == 1:
		scheme, token, _ := strings.Cut(auths[0], " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return principal{}, "", pipeline.Errorf(pipeline.Unauthorized, "the Authorization header takes a bearer token only; send an API key in the X-API-Key header")
		}
		p, err := s.authenticateToken(c.Request.Context(), strings.TrimSpace(token))
		switch kind := pipeline.KindOf(err); {
		case kind == pipeline.Unauthorized:
			return p, challengeInvalidToken, err
		case kind == pipeline.Forbidden:
			return p, insufficientScope(p.Scope), err
		}
		return p, "", err
	case len(keys) == 0:
		return principal{}, "", pipeline.Errorf(pipeline.Unauthorized, "missing credential: send an API key in the X-API-Key header or an access token as Authorization: Bearer")
	}
	key, err := s.deps.Keys.KeyByHash(c.Request.Context(), pipeline.HashKey(keys[0]))
	switch {
	case pipeline.KindOf(err) == pipeline.NotFound:
		return principal{}, "", pipeline.Errorf(pipeline.Unauthorized, "invalid API key")
	case err != nil:
		return principal{}, "", err
	case key.Revoked():
		return principal{}, "", pipeline.Errorf(pipeline.Unauthorized, "API key %s has been revoked", key.ID)
	}
	// The last use shows in "key list", so that the key of a lost phone is
	// found. Failing to record it must not refuse the request.
	if now := s.now(); key.UseDue(now) {
		if err := s.deps.Keys.TouchKey(c.Request.Context(), key.ID, now); err != nil {
			s.log.WarnContext(c.Request.Context(), "record key use", slog.String("key", key.ID), slog.Any("err", err))
		}
	}
	return principal{ID: key.ID, Scope: key.Scope, PortfolioID: key.PortfolioID}, "", nil
}

// authenticateToken verifies an access token and finds its client's
// registration, which alone decides scope and portfolio. The token must
// also carry the registered scope's value in its scope claim, so that a
// client asks its issuer for exactly what it uses; that refusal (403)
// returns the principal, for the audit trail.
func (s *Server) authenticateToken(ctx context.Context, raw string) (principal, error) {
	switch {
	case s.deps.Tokens == nil || s.deps.TokenClients == nil:
		return principal{}, pipeline.Errorf(pipeline.Unauthorized, "invalid bearer token: this server accepts no access tokens; send the key in the X-API-Key header")
	case raw == "":
		return principal{}, pipeline.Errorf(pipeline.Unauthorized, "invalid bearer token: the token is empty")
	}
	tok, err := s.deps.Tokens.Verify(ctx, raw)
	if err != nil {
		return principal{}, err
	}
	reg, err := s.deps.TokenClients.ActiveTokenClient(ctx, tok.Issuer, tok.ClientID)
	switch {
	case pipeline.KindOf(err) == pipeline.NotFound:
		return principal{}, pipeline.Errorf(pipeline.Unauthorized, "invalid bearer token: client %s of issuer %s is not registered", pipeline.Clip(tok.ClientID), tok.Issuer)
	case err != nil:
		return principal{}, err
	case reg.Revoked():
		return principal{}, pipeline.Errorf(pipeline.Unauthorized, "invalid bearer token: the registration of client %s of issuer %s has been revoked", pipeline.Clip(tok.ClientID), tok.Issuer)
	}
	p := principal{ID: reg.ID, Scope: reg.Scope, PortfolioID: reg.PortfolioID, Issuer: reg.Issuer, ClientID: reg.ClientID,
		Expires: tok.Expiry}
	if want := pipeline.TokenScopeValue(reg.Scope); !tok.HasScope(want) {
		return p, pipeline.Errorf(pipeline.Forbidden, "the token's scope claim does not contain %s, the scope %s is registered with", want, p)
	}
	return p, nil
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

// rateLimit applies a token bucket per principal (key or token client); it
// runs after authentication so that one client's burst never throttles
// another.
func (s *Server) rateLimit(c *gin.Context) {
	if s.cfg.RatePerSecond <= 0 {
		c.Next()
		return
	}
	now := s.now()
	r := s.limiter(principalOf(c).ID).ReserveN(now, 1)
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
func (s *Server) audit(c *gin.Context) { s.record(c, true) }

// auditActions records the state-changing requests of the operators'
// routes (start, retry, inbox retry, Nachversand and the other market
// communication writes), accepted or not, with whoever sent them: key,
// token client or the operator signed in to the web console. Reads are
// not recorded.
func (s *Server) auditActions(c *gin.Context) {
	switch c.Request.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		c.Next()
		return
	}
	s.record(c, false)
}

// record writes the audit entry of the request once it has been answered;
// data requests are also counted by endpoint and outcome.
func (s *Server) record(c *gin.Context, data bool) {
	a := &pipeline.AuditEntry{ReceivedAt: s.now().UTC(), Endpoint: c.Request.Method + " " + c.FullPath(),
		RequestID: requestid.From(c.Request.Context())}
	c.Set(ctxAudit, a)
	c.Next()
	a.StatusCode = c.Writer.Status()
	if a.Outcome == "" {
		a.Outcome = outcomeOf[a.StatusCode]
		if a.Outcome == "" {
			a.Outcome = strconv.Itoa(a.StatusCode)
		}
	}
	if data {
		s.dataReqs.WithLabelValues(a.Endpoint, a.Outcome).Inc()
	}
	if a.ID != 0 || s.deps.Audit == nil {
		return
	}
	if s.refusals != nil && isRefusal(a.StatusCode) {
		switch v, limit, until := s.refusals.take(c.Request.RemoteAddr, s.now()); v {
		case countRefusal:
			s.unrecorded.Inc()
			return
		case recordLast:
			a.Detail += fmt.Sprintf(" [limit of %s met: further refusals until %s are answered but not recorded one by one]",
				limit, until.UTC().Format(time.RFC3339))
		}
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
