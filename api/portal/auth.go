package portal

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/api/requestid"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/portal"
)

// userJSON is the session user of GET /api/auth/session.
type userJSON struct {
	ID               string    `json:"id"`
	Name             string    `json:"name"`
	Email            string    `json:"email"`
	LoginMethod      string    `json:"login_method"`
	Client           string    `json:"client"`
	Roles            []string  `json:"roles"`
	EmployeeLinked   bool      `json:"employee_linked"`
	SessionExpiresAt time.Time `json:"session_expires_at"`
}

// rolesOf are the stored roles, or the role that follows from the link to
// an employee record when HR set none.
func rolesOf(u portal.User) []string {
	if len(u.Roles) > 0 {
		return u.Roles
	}
	if u.EmployeeID != "" {
		return []string{portal.RoleEmployee}
	}
	return []string{}
}

func (h *Handler) userBody(who *caller) gin.H {
	// The session ends at the earlier of its absolute end and its idle end.
	end := who.session.LastSeenAt.Add(h.cfg.SessionIdle)
	if who.session.ExpiresAt.Before(end) {
		end = who.session.ExpiresAt
	}
	return gin.H{"user": userJSON{
		ID: who.user.ID, Name: who.user.Name, Email: who.user.Email,
		LoginMethod: string(who.session.Method), Client: string(who.session.Client),
		Roles: rolesOf(who.user), EmployeeLinked: who.user.EmployeeID != "",
		SessionExpiresAt: end.UTC(),
	}}
}

// getSession always answers 200: the user, or null. It also hands an
// anonymous caller its CSRF cookie.
func (h *Handler) getSession(c *gin.Context) {
	if err := h.ensureCSRF(c); err != nil {
		h.fail(c, err)
		return
	}
	who := callerOf(c)
	if who == nil {
		c.JSON(http.StatusOK, gin.H{"user": nil})
		return
	}
	c.JSON(http.StatusOK, h.userBody(who))
}

// logout ends the session server-side and clears the cookies. Without a
// live session there is nothing to end, and the answer is the same.
func (h *Handler) logout(c *gin.Context) {
	if who := callerOf(c); who != nil {
		if err := h.store.DeleteSession(c.Request.Context(), who.session.IDHash); err != nil {
			h.fail(c, err)
			return
		}
		h.log.InfoContext(c.Request.Context(), "portal: signed out", slog.String("user", who.user.ID))
	}
	h.clearSession(c)
	h.setCookie(c, csrfCookie, "", -1, http.SameSiteLaxMode, false)
	c.JSON(http.StatusOK, gin.H{"success": true})
}

// maxBody caps portal request bodies; larger ones are malformed (400).
const maxBody = 64 << 10

// decode reads a JSON object strictly: unknown fields, trailing data and
// oversized bodies are 400 with the field named where there is one.
func decode(c *gin.Context, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return pipeline.Errorf(pipeline.Invalid, "body larger than %d bytes", maxBody)
		}
		return pipeline.Errorf(pipeline.Invalid, "reading body: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return invalid(te.Field, "must be a "+te.Type.String())
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return invalid(f, "unknown field")
		}
		return pipeline.Errorf(pipeline.Invalid, "body is not a JSON object: %v", err)
	}
	if dec.More() {
		return pipeline.Errorf(pipeline.Invalid, "body has data after the JSON object")
	}
	return nil
}

// magicLinkBody reads the body of a magic-link route into req after the
// routes' common refusals: 404 without a mail server, 403 for the mobile
// client, which signs in through SSO only. False when it answered.
func (h *Handler) magicLinkBody(c *gin.Context, req any) bool {
	var err error
	switch {
	case h.mail == nil:
		err = pipeline.Errorf(pipeline.NotFound, "magic links are not configured on this server")
	case clientOf(c) == portal.ClientMobile:
		err = pipeline.Errorf(pipeline.Forbidden, "magic links are for the web portal; the mobile client signs in with single sign-on")
	default:
		err = decode(c, req)
	}
	if err != nil {
		h.fail(c, err)
		return false
	}
	return true
}

// requestMagicLink sends a sign-in link to an address HR registered for
// magic links. The answer is the same whether or not a mail goes out, and the
// mail is sent in the background, so that neither the body nor the timing
// tells which addresses exist.
func (h *Handler) requestMagicLink(c *gin.Context) {
	var req struct {
		Email string `json:"email"`
	}
	if !h.magicLinkBody(c, &req) {
		return
	}
	email, err := portal.NormalizeEmail(req.Email)
	if err != nil {
		h.fail(c, invalid("email", pipeline.MessageOf(err)))
		return
	}
	if err := h.issueMagicLink(c.Request.Context(), email); err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"success": true})
}

func (h *Handler) issueMagicLink(ctx context.Context, email string) error {
	u, err := h.store.UserByEmail(ctx, email)
	switch {
	case pipeline.KindOf(err) == pipeline.NotFound:
		h.log.InfoContext(ctx, "portal: magic link for an unknown address not sent")
		return nil
	case err != nil:
		return err
	case !u.MagicLink:
		h.log.InfoContext(ctx, "portal: magic link not allowed for this user", slog.String("user", u.ID))
		return nil
	}
	now := h.now()
	n, err := h.store.MagicLinksSince(ctx, email, now.Add(-time.Hour))
	if err != nil {
		return err
	}
	if n >= h.cfg.MagicLinksPerHour {
		h.log.WarnContext(ctx, "portal: magic-link limit reached, not sent", slog.String("user", u.ID), slog.Int("last_hour", n))
		return nil
	}
	code, err := h.token()
	if err != nil {
		return err
	}
	m := portal.MagicLink{Hash: hash(code), UserID: u.ID, Email: email, CreatedAt: now, ExpiresAt: now.Add(h.cfg.MagicLinkTTL)}
	if err := h.store.CreateMagicLink(ctx, m); err != nil {
		return err
	}
	// The code travels in the fragment, which browsers never send to a
	// server: the landing page reads it and posts it.
	link := strings.TrimRight(h.cfg.BaseURL, "/") + "/portal/anmelden/link#code=" + code
	h.mailing.Add(1)
	go func() {
		defer h.mailing.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := h.mail.SendMagicLink(sctx, email, u.Name, link, m.ExpiresAt); err != nil {
			h.log.ErrorContext(sctx, "portal: sending the magic link failed", slog.String("user", u.ID), slog.Any("err", err))
			return
		}
		h.log.InfoContext(sctx, "portal: magic link sent", slog.String("user", u.ID))
	}()
	return nil
}

// redeemMagicLink signs in with a code from a magic link: single use, within
// its lifetime, web only.
func (h *Handler) redeemMagicLink(c *gin.Context) {
	var req struct {
		Code string `json:"code"`
	}
	if !h.magicLinkBody(c, &req) {
		return
	}
	if !validToken(req.Code) {
		h.fail(c, invalid("code", "is not a sign-in code"))
		return
	}
	ctx := c.Request.Context()
	m, err := h.store.RedeemMagicLink(ctx, hash(req.Code), h.now())
	if pipeline.KindOf(err) == pipeline.NotFound {
		h.fail(c, pipeline.Errorf(pipeline.Unauthorized, "the sign-in link is unknown, expired or already used"))
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	u, err := h.store.UserByID(ctx, m.UserID)
	if err != nil {
		h.fail(c, err)
		return
	}
	if !u.MagicLink {
		h.fail(c, pipeline.Errorf(pipeline.Forbidden, "magic links are no longer allowed for this account"))
		return
	}
	if _, err := h.login(c, u, portal.MethodMagicLink, portal.ClientWeb, false); err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, h.userBody(callerOf(c)))
}

// nativeExchange is the mobile client's way in: it ran the authorization
// code flow with PKCE itself and hands over the code, its verifier and the
// redirect URI; the server redeems them at the identity provider, verifies
// the ID token and opens a mobile session.
func (h *Handler) nativeExchange(c *gin.Context) {
	if h.sso == nil {
		h.fail(c, pipeline.Errorf(pipeline.NotFound, "single sign-on is not configured on this server"))
		return
	}
	var req struct {
		Code         string `json:"code"`
		CodeVerifier string `json:"code_verifier"`
		RedirectURI  string `json:"redirect_uri"`
		Nonce        string `json:"nonce"`
	}
	if err := decode(c, &req); err != nil {
		h.fail(c, err)
		return
	}
	switch {
	case req.Code == "" || len(req.Code) > 2048:
		h.fail(c, invalid("code", "is required (at most 2048 characters)"))
		return
	case !validVerifier(req.CodeVerifier):
		h.fail(c, invalid("code_verifier", "must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636)"))
		return
	case req.RedirectURI == "":
		h.fail(c, invalid("redirect_uri", "is required"))
		return
	}
	ctx := c.Request.Context()
	id, err := h.sso.ExchangeNative(ctx, req.Code, req.CodeVerifier, req.RedirectURI, req.Nonce)
	if err != nil {
		h.fail(c, err)
		return
	}
	u, err := h.ssoUser(ctx, id)
	if err != nil {
		h.fail(c, err)
		if errors.Is(err, errUnverified) {
			h.auditUnverified(c, id, err)
		}
		return
	}
	if _, err := h.login(c, u, portal.MethodSSO, portal.ClientMobile, false); err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, h.userBody(callerOf(c)))
}

func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for _, r := range v {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~", r)) {
			return false
		}
	}
	return true
}

// errUnverified marks the refusal of an identity whose e-mail address the
// provider has not verified.
var errUnverified = errors.New("unverified e-mail address")

// ssoUser finds the user of a verified identity: by issuer and subject; else,
// once, by an e-mail address the provider verified, linking the subject to
// the user HR registered; else a new user without an employee record.
//
// An address the provider has not verified neither links nor creates a
// user: anyone at the provider could assert it, and the stored address is
// what the operator list and HR's records are matched on. Such a sign-in is
// refused (pipeline.Forbidden wrapping errUnverified) before anything is
// stored. A user already linked to the subject is found without the check:
// the subject, not the address, identifies them.
func (h *Handler) ssoUser(ctx context.Context, id Identity) (portal.User, error) {
	u, err := h.store.UserBySSO(ctx, id.Issuer, id.Subject)
	if err == nil || pipeline.KindOf(err) != pipeline.NotFound {
		return u, err
	}
	email, err := portal.NormalizeEmail(id.Email)
	if err != nil {
		return portal.User{}, pipeline.Errorf(pipeline.Forbidden, "the identity provider asserted no usable e-mail address")
	}
	if !id.EmailVerified {
		return portal.User{}, &pipeline.Error{Kind: pipeline.Forbidden, Err: errUnverified,
			Message: "the identity provider has not verified the e-mail address " + email + "; verify it there and sign in again"}
	}
	now := h.now()
	u, err = h.store.UserByEmail(ctx, email)
	switch {
	case err == nil && u.SSOSubject == "":
		if err := h.store.LinkSSO(ctx, u.ID, id.Issuer, id.Subject, now); err != nil {
			return portal.User{}, err
		}
		u.SSOIssuer, u.SSOSubject = id.Issuer, id.Subject
		return u, nil
	case err == nil:
		return portal.User{}, pipeline.Errorf(pipeline.Forbidden, "an account with this e-mail address exists but is not linked to this company account; ask HR to link it")
	case pipeline.KindOf(err) != pipeline.NotFound:
		return portal.User{}, err
	}
	idb := make([]byte, 10)
	if _, err := io.ReadFull(h.cfg.Rand, idb); err != nil {
		return portal.User{}, pipeline.Errorf(pipeline.Internal, "random id: %v", err)
	}
	u = portal.User{
		ID: "u_" + hex.EncodeToString(idb), Email: email, Name: id.Name,
		SSOIssuer: id.Issuer, SSOSubject: id.Subject, CreatedAt: now, UpdatedAt: now,
	}
	if u.Name == "" {
		u.Name = email
	}
	if err := h.store.CreateUser(ctx, u); err != nil {
		return portal.User{}, err
	}
	return u, nil
}

// auditUnverified records a sign-in refused for an unverified address once
// it has been answered: a warning in the log and an entry in the audit
// trail with the answer's status, the asserted address and the subject, so
// that an attempt to take over a listed address is seen.
func (h *Handler) auditUnverified(c *gin.Context, id Identity, err error) {
	ctx := c.Request.Context()
	subject := pipeline.Clip(id.Subject)
	h.log.WarnContext(ctx, "portal: SSO sign-in refused, e-mail address not verified by the identity provider",
		slog.String("issuer", id.Issuer), slog.String("subject", subject), slog.String("email", pipeline.Clip(id.Email)))
	if h.cfg.Audit == nil {
		return
	}
	a := &pipeline.AuditEntry{ReceivedAt: h.now().UTC(), Endpoint: c.Request.Method + " " + c.FullPath(),
		Outcome: "sso_unverified_email", StatusCode: c.Writer.Status(), RequestID: requestid.From(ctx),
		Detail: fmt.Sprintf("single sign-on refused: %s (issuer %s, subject %q)", pipeline.MessageOf(err), id.Issuer, subject)}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := h.cfg.Audit.RecordAudit(actx, a); err != nil {
		h.log.ErrorContext(actx, "portal: recording the refused sign-in in the audit trail failed", slog.Any("err", err))
	}
}
