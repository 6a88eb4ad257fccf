package portal

import (
	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/pipeline/portal"
)

// Staff is a person signed in to the portal, as the operators' console sees
// them: the console shares the portal's sign-in, sessions, CSRF tokens,
// expiry and sign-out, and decides on its own who of them is an operator.
type Staff struct {
	UserID string
	Email  string
	Name   string
	// SSO is true for a single sign-on session (not a magic link).
	SSO bool
	// OperatorClaim is true when the provider asserted one of the operator
	// groups at this session's sign-in.
	OperatorClaim bool
}

// StaffOf resolves the session cookie of a request outside the portal's own
// routes, with the portal's rules: an unknown or expired session is no
// session (and its cookie is removed), and a live one is touched at most
// once a minute. Nil means not signed in.
func (h *Handler) StaffOf(c *gin.Context) (*Staff, error) {
	who := callerOf(c)
	if who == nil {
		tok := h.cookie(c, sessionCookie)
		if tok == "" {
			return nil, nil
		}
		var err error
		if who, err = h.resolve(c, tok); err != nil || who == nil {
			return nil, err
		}
		c.Set(ctxCaller, who)
	}
	return staffOf(who), nil
}

// StaffAgain resolves the session cookie of a request afresh, not from what
// the request found at its start: a long request (the console's event
// stream) asks it to learn whether the session has ended since, signed out
// or expired. It records no use of the session, so that an open page on its
// own does not keep the session from its idle expiry. Nil means the session
// is gone.
func (h *Handler) StaffAgain(c *gin.Context) (*Staff, error) {
	tok := h.cookie(c, sessionCookie)
	if tok == "" {
		return nil, nil
	}
	who, err := h.liveSession(c.Request.Context(), tok, false)
	if err != nil || who == nil {
		return nil, err
	}
	return staffOf(who), nil
}

// staffOf is what the API learns of a live session's caller.
func staffOf(who *caller) *Staff {
	return &Staff{UserID: who.user.ID, Email: who.user.Email, Name: who.user.Name,
		SSO:           who.session.Method == portal.MethodSSO && who.session.Client == portal.ClientWeb,
		OperatorClaim: who.session.OperatorClaim}
}

// CheckCSRF applies the portal's CSRF rules to a state-changing request of
// a signed-in person (call StaffOf first): the same origin, and the
// X-CSRF-Token header equal to the CSRF cookie and to the token bound to
// the session at sign-in. A refusal is a pipeline.Forbidden error.
func (h *Handler) CheckCSRF(c *gin.Context) error { return h.checkCSRF(c, callerOf(c)) }

// EnsureCSRF hands a visitor without one a CSRF cookie (see ensureCSRF).
func (h *Handler) EnsureCSRF(c *gin.Context) error { return h.ensureCSRF(c) }

// CSRFCookieName is the CSRF cookie's name, which a page's script reads to
// copy the token into the CSRF header.
func (h *Handler) CSRFCookieName() string { return h.cookieName(csrfCookie) }
