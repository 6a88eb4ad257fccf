package portal

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/portal"
)

const ctxCaller = "portal.caller"

// caller is the signed-in session and its user.
type caller struct {
	session portal.Session
	user    portal.User
}

func callerOf(c *gin.Context) *caller {
	v, ok := c.Get(ctxCaller)
	if !ok {
		return nil
	}
	return v.(*caller)
}

// touchEvery limits the writes of last use to one per minute per session;
// the idle expiry is therefore exact to a minute.
const touchEvery = time.Minute

// loadSession resolves the session cookie. A cookie that names no live
// session is treated as absent (and removed); the request goes on
// unauthenticated, and the routes decide whether that is a 401.
func (h *Handler) loadSession(c *gin.Context) {
	tok := h.cookie(c, sessionCookie)
	if tok == "" {
		c.Next()
		return
	}
	who, err := h.resolve(c, tok)
	if err != nil {
		// GET /api/auth/session answers 200 by contract, so a failing
		// database makes the caller anonymous there (and is logged);
		// everywhere else it is the 500 it is.
		if c.FullPath() != "/api/auth/session" {
			h.fail(c, err)
			return
		}
		h.log.ErrorContext(c.Request.Context(), "portal: reading the session failed", slog.Any("err", err))
	}
	if who != nil {
		c.Set(ctxCaller, who)
	}
	c.Next()
}

// resolve finds the live session of a session token: nil when there is
// none, and then the cookie is removed.
func (h *Handler) resolve(c *gin.Context, tok string) (*caller, error) {
	who, err := h.liveSession(c.Request.Context(), tok, true)
	if err == nil && who == nil {
		h.clearSession(c)
	}
	return who, err
}

// liveSession finds the live session of a session token and its user: nil
// when there is none, and an expired one is deleted. touch records the use
// (at most once a minute), which keeps the session from its idle expiry.
func (h *Handler) liveSession(ctx context.Context, tok string, touch bool) (*caller, error) {
	now := h.now()
	s, err := h.store.Session(ctx, hash(tok))
	switch {
	case pipeline.KindOf(err) == pipeline.NotFound:
		return nil, nil
	case err != nil:
		return nil, err
	}
	if !s.Alive(now, h.cfg.SessionIdle) {
		if err := h.store.DeleteSession(ctx, s.IDHash); err != nil {
			return nil, err
		}
		return nil, nil
	}
	u, err := h.store.UserByID(ctx, s.UserID)
	if err != nil {
		return nil, err
	}
	if touch && now.Sub(s.LastSeenAt) >= touchEvery {
		if err := h.store.TouchSession(ctx, s.IDHash, now); err != nil {
			return nil, err
		}
		s.LastSeenAt = now
	}
	return &caller{session: s, user: u}, nil
}

func (h *Handler) clearSession(c *gin.Context) {
	h.setCookie(c, sessionCookie, "", -1, http.SameSiteLaxMode, true)
}

// ensureCSRF gives an anonymous caller a CSRF cookie, so that the first
// state-changing request (a magic-link request, the native code exchange)
// can carry the header. A signed-in caller's token is bound to its session.
func (h *Handler) ensureCSRF(c *gin.Context) error {
	if h.cookie(c, csrfCookie) != "" {
		return nil
	}
	tok, err := h.token()
	if err != nil {
		return err
	}
	h.setCSRF(c, tok)
	return nil
}

// setCSRF writes the CSRF cookie: readable by the page's script, which
// copies it into the header (double submit), and SameSite Lax.
func (h *Handler) setCSRF(c *gin.Context, tok string) {
	h.setCookie(c, csrfCookie, tok, int(h.cfg.SessionAbsolute.Seconds()), http.SameSiteLaxMode, false)
}

// csrf refuses state-changing requests whose CSRF header does not match the
// CSRF cookie, and for a signed-in caller also the token bound to the
// session at login, so that a cookie planted by a sibling host is useless.
// A request from another origin is refused as well. Logout without a live
// session has nothing to protect and passes.
func (h *Handler) csrf(c *gin.Context) {
	switch c.Request.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		c.Next()
		return
	}
	who := callerOf(c)
	if who == nil && c.FullPath() == "/api/auth/logout" {
		c.Next()
		return
	}
	if err := h.checkCSRF(c, who); err != nil {
		h.fail(c, err)
		return
	}
	c.Next()
}

// checkCSRF applies the rules of csrf to one request: the same origin, and
// the header equal to the cookie and, for a signed-in caller, to the token
// bound to the session. A refusal is Forbidden, and logged without the token.
func (h *Handler) checkCSRF(c *gin.Context, who *caller) error {
	why := ""
	header, cookie := c.GetHeader(CSRFHeader), h.cookie(c, csrfCookie)
	switch o := c.GetHeader("Origin"); {
	case o != "" && h.origin != "" && o != h.origin:
		why = "request from another origin"
	case header == "" || !equal(header, cookie):
		why = "missing or mismatching CSRF token: send the " + CSRFHeader + " header with the value of the CSRF cookie"
	case who != nil && !equal(hash(header), who.session.CSRFHash):
		why = "the CSRF token does not belong to this session"
	default:
		return nil
	}
	h.log.WarnContext(c.Request.Context(), "portal: CSRF refusal", slog.String("route", c.FullPath()), slog.String("why", why))
	return pipeline.Errorf(pipeline.Forbidden, "%s", why)
}

// login starts a new session for u: new session id and CSRF token, the
// request's previous session (if any) deleted in the same transaction, so
// that an id known before login is never the one signed in (no fixation).
// operator records whether the provider asserted an operator group at this
// sign-in (see Config.OperatorGroups).
func (h *Handler) login(c *gin.Context, u portal.User, method portal.Method, client portal.Client, operator bool) (portal.Session, error) {
	id, err := h.token()
	if err != nil {
		return portal.Session{}, err
	}
	csrfTok, err := h.token()
	if err != nil {
		return portal.Session{}, err
	}
	now := h.now()
	s := portal.Session{
		IDHash: hash(id), CSRFHash: hash(csrfTok), UserID: u.ID, Method: method, Client: client,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(h.cfg.SessionAbsolute), OperatorClaim: operator,
	}
	replaces := ""
	if old := h.cookie(c, sessionCookie); old != "" {
		replaces = hash(old)
	}
	if err := h.store.CreateSession(c.Request.Context(), s, replaces); err != nil {
		return portal.Session{}, err
	}
	h.setCookie(c, sessionCookie, id, int(h.cfg.SessionAbsolute.Seconds()), http.SameSiteLaxMode, true)
	h.setCSRF(c, csrfTok)
	h.log.InfoContext(c.Request.Context(), "portal: signed in", slog.String("user", u.ID),
		slog.String("method", string(method)), slog.String("client", string(client)))
	c.Set(ctxCaller, &caller{session: s, user: u})
	return s, nil
}

// clientOf is the client a request says it comes from.
func clientOf(c *gin.Context) portal.Client {
	if c.GetHeader(ClientHeader) == string(portal.ClientMobile) {
		return portal.ClientMobile
	}
	return portal.ClientWeb
}

// requireSession answers 401 without a live session, and 403 when the
// mobile client presents a magic-link session (web portal only).
func (h *Handler) requireSession(c *gin.Context) *caller {
	who := callerOf(c)
	if who == nil {
		h.fail(c, pipeline.Errorf(pipeline.Unauthorized, "not signed in"))
		return nil
	}
	if clientOf(c) == portal.ClientMobile && who.session.Method != portal.MethodSSO {
		h.fail(c, pipeline.Errorf(pipeline.Forbidden, "the mobile client accepts single sign-on sessions only"))
		return nil
	}
	return who
}

// requireEmployee guards the employee API: 401 unauthenticated, 404 when
// the caller has no linked employee record.
func (h *Handler) requireEmployee(c *gin.Context) {
	who := h.requireSession(c)
	if who == nil {
		return
	}
	if who.user.EmployeeID == "" {
		h.fail(c, pipeline.Errorf(pipeline.NotFound, "no employee record is linked to this account"))
		return
	}
	c.Next()
}
