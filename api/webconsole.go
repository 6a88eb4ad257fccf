package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/api/consoleweb"
	"github.com/schedbridge/schedbridge/api/consoleweb/chart"
	"github.com/schedbridge/schedbridge/api/portal"
	"github.com/schedbridge/schedbridge/api/webpage"
	"github.com/schedbridge/schedbridge/pipeline"
)

// The operators' web console under /console/: German pages rendered on the
// server from api/consoleweb. Staff sign in through the portal's single
// sign-on (same flow, cookies, expiry and sign-out); only operators get in.
// The pages read through the same adapters as the console API; their
// actions post to the console API with the session cookie, the CSRF header
// and an idempotency key, so every state change goes through one set of
// rules and lands in the audit trail with the operator's name.

// OperatorList is the operator list kept with `schedbridge operator`.
type OperatorList interface {
	IsOperator(ctx context.Context, email string) (bool, error)
}

// EventCursor names the newest event, where a page's live stream starts.
type EventCursor interface {
	LastEventID(ctx context.Context) (int64, error)
}

const ctxStaff = "console.staff"

// consoleStart is the console's start page.
const consoleStart = portal.ConsolePrefix + "lage"

// consolePath reports whether path belongs to the web console.
func consolePath(path string) bool {
	return path == "/console" || strings.HasPrefix(path, portal.ConsolePrefix)
}

func (s *Server) webConsoleRoutes(e *gin.Engine) {
	if s.deps.Portal == nil {
		return // the console signs in through the portal
	}
	// The Lage page is the console's start; /console and /console/ lead
	// there, so that bookmarks of the bare prefix and the sign-in's return
	// path work.
	toLage := func(c *gin.Context) { c.Redirect(http.StatusSeeOther, consoleStart) }
	e.GET("/console", toLage)
	e.GET("/console/", toLage)
	e.GET("/console/static/*file", gin.WrapH(http.StripPrefix("/console/static/", consoleweb.Static())))
	g := e.Group("/console", s.consolePageHeaders, dropEmptyQuery, s.consoleCSRFCookie)
	g.GET("/anmelden", s.consoleSignIn)
	p := g.Group("", s.requireOperatorPage)
	p.GET("/lage", s.consolePage("lage", "Lage", s.situationData))
	p.GET("/laeufe", s.consolePage("laeufe", "Läufe", s.runsData))
	p.GET("/laeufe/:id", s.consolePage("lauf", "Lauf", s.runData))
	p.GET("/eingang", s.consolePage("eingang", "Eingang", s.inboxData))
	p.GET("/eingang/:id/beleg", s.inboxReceipt)
	p.GET("/fahrplaene", s.consolePage("fahrplaene", "Fahrpläne", s.schedulesData))
	p.GET("/marktpartner", s.consolePage("marktpartner", "Marktpartner", s.partnersData))
	p.GET("/antworten", s.consolePage("antworten", "Antworten", s.repliesData))
	p.GET("/kalkulation", s.consolePage("kalkulation", "Kalkulation", s.calculationData))
	p.GET("/kalkulation.csv", s.calculationCSV)
}

// consolePageHeaders sets the pages' security headers, the portal's (see
// webpage.SetPageHeaders): the charts are SVG styled by class, so the strict
// Content-Security-Policy holds here too.
func (s *Server) consolePageHeaders(c *gin.Context) {
	webpage.SetPageHeaders(c.Writer.Header())
	c.Next()
}

// dropEmptyQuery removes the empty parameters of a page's query: an HTML
// form sends a filter left at "alle" as "stage=", which a person means as
// no filter, while the console API (and the page's parsing, shared with it)
// refuses an empty value.
func dropEmptyQuery(c *gin.Context) {
	q := c.Request.URL.Query()
	changed := false
	for k, vs := range q {
		if slices.Contains(vs, "") {
			kept := slices.DeleteFunc(vs, func(v string) bool { return v == "" })
			if len(kept) == 0 {
				q.Del(k)
			} else {
				q[k] = kept
			}
			changed = true
		}
	}
	if changed {
		c.Request.URL.RawQuery = q.Encode()
	}
	c.Next()
}

// consoleCSRFCookie hands every visitor the portal's CSRF cookie, which the
// pages' script copies into the header of the actions.
func (s *Server) consoleCSRFCookie(c *gin.Context) {
	if err := s.deps.Portal.EnsureCSRF(c); err != nil {
		s.consoleError(c, err)
		return
	}
	c.Next()
}

// operatorOf finds the operator signed in to the request's session: nil
// without a session; pipeline.Forbidden for a person who is not an
// operator, or who signed in by magic link (the console takes single
// sign-on only). An operator is named by the provider's operator group at
// sign-in, or by the operator list.
func (s *Server) operatorOf(c *gin.Context) (*portal.Staff, error) {
	st, err := s.deps.Portal.StaffOf(c)
	if err != nil || st == nil {
		return nil, err
	}
	return s.asOperator(c.Request.Context(), st)
}

// asOperator decides whether a signed-in person is an operator (see
// operatorOf).
func (s *Server) asOperator(ctx context.Context, st *portal.Staff) (*portal.Staff, error) {
	if !st.SSO {
		return st, pipeline.Errorf(pipeline.Forbidden, "the operators' console takes single sign-on sessions only")
	}
	if st.OperatorClaim {
		return st, nil
	}
	if s.deps.Operators != nil {
		ok, err := s.deps.Operators.IsOperator(ctx, st.Email)
		// An account without a usable address cannot be on the list.
		if pipeline.KindOf(err) == pipeline.Invalid {
			ok, err = false, nil
		}
		if err != nil {
			return nil, fmt.Errorf("operator list: %w", err)
		}
		if ok {
			return st, nil
		}
	}
	return st, pipeline.Errorf(pipeline.Forbidden, "%s is not an operator of the console", st.Email)
}

// allowOperators lets the web console's pages call the console API with
// the session cookie: a request without an API key or bearer token whose
// session belongs to an operator is served as that operator, with the
// process scope; its state-changing requests must pass the portal's CSRF
// check. A request with a key or token is left to requireScope, and so is
// one without any credential (401).
func (s *Server) allowOperators(c *gin.Context) {
	if s.deps.Portal == nil || len(c.Request.Header.Values(headerAPIKey)) > 0 || len(c.Request.Header.Values("Authorization")) > 0 {
		c.Next()
		return
	}
	st, err := s.operatorOf(c)
	if st == nil && err == nil {
		c.Next()
		return
	}
	// The trail names the person, also when the request is refused.
	if a := auditOf(c); a != nil && st != nil {
		a.Operator = st.Email
	}
	if err == nil {
		switch c.Request.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			err = s.deps.Portal.CheckCSRF(c)
		}
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Set(ctxPrincipal, operatorPrincipal(st))
	c.Next()
}

// operatorPrincipal is the principal of an operator signed in to the web
// console: the process scope, bound to no portfolio.
func operatorPrincipal(st *portal.Staff) principal {
	return principal{ID: "operator:" + st.Email, Scope: pipeline.ScopeProcess, Operator: st.Email}
}

// requireOperatorPage guards the pages: without a session the browser goes
// to the sign-in page, and a person who is not an operator gets the 403 page.
func (s *Server) requireOperatorPage(c *gin.Context) {
	st, err := s.operatorOf(c)
	switch {
	case err != nil && st != nil && pipeline.KindOf(err) == pipeline.Forbidden:
		s.log.InfoContext(c.Request.Context(), "console: refused a signed-in person", slog.String("user", st.UserID),
			slog.String("why", pipeline.MessageOf(err)))
		s.renderConsole(c, http.StatusForbidden, "verboten", s.consoleBase(c, "Kein Zugang", "", nil),
			consoleweb.Forbidden{Email: st.Email, MagicLink: !st.SSO})
		c.Abort()
	case err != nil:
		s.consoleError(c, err)
	case st == nil:
		c.Redirect(http.StatusSeeOther, portal.ConsolePrefix+"anmelden")
		c.Abort()
	default:
		c.Set(ctxStaff, st)
		c.Next()
	}
}

func (s *Server) consoleSignIn(c *gin.Context) {
	if st, err := s.operatorOf(c); err == nil && st != nil {
		c.Redirect(http.StatusSeeOther, consoleStart)
		return
	}
	p := s.consoleBase(c, "Anmelden", "", nil)
	p.Error = portal.SignInMessage(c.Query("fehler"))
	if c.Query("abgemeldet") == "1" {
		p.Notice = "Sie wurden abgemeldet."
	}
	s.renderConsole(c, http.StatusOK, "anmelden", p, consoleweb.SignIn{SSOURL: "/portal/anmelden/sso?weiter=" + portal.ConsolePrefix})
}

func (s *Server) consoleBase(c *gin.Context, title, nav string, st *portal.Staff) consoleweb.Page {
	p := consoleweb.Page{Title: title, Nav: nav, CSRFCookie: s.deps.Portal.CSRFCookieName(), CSRFHeader: portal.CSRFHeader}
	if st != nil {
		p.User = &consoleweb.User{Name: st.Name, Email: st.Email}
	}
	return p
}

func (s *Server) renderConsole(c *gin.Context, status int, name string, p consoleweb.Page, data any) {
	p.Data = data
	var buf bytes.Buffer
	if err := consoleweb.Render(&buf, name, p); err != nil {
		s.log.ErrorContext(c.Request.Context(), "console: rendering a page failed", slog.String("page", name), slog.Any("err", err))
		c.Data(http.StatusInternalServerError, "text/plain; charset=utf-8", []byte("Interner Fehler"))
		return
	}
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// consoleErrorTexts are what the error page says per kind; the details go
// to the log only.
var consoleErrorTexts = map[pipeline.ErrorKind]string{
	pipeline.Invalid:     "Die Angaben in der Adresse sind ungültig: ",
	pipeline.NotFound:    "Nicht gefunden: ",
	pipeline.Unavailable: "Ein benötigter Dienst ist gerade nicht verfügbar. Bitte versuchen Sie es gleich erneut.",
}

// consoleError answers a page that failed with the error page: a bad query
// parameter is the operator's to fix and says which; a server error says
// only that it happened.
func (s *Server) consoleError(c *gin.Context, err error) {
	err = pipeline.Attribute(c.Request.Context(), err)
	kind := pipeline.KindOf(err)
	status := statusOf[kind]
	p := s.consoleBase(c, "Fehler", "", staffOf(c))
	switch kind {
	case pipeline.Invalid, pipeline.NotFound:
		p.Error = consoleErrorTexts[kind] + pipeline.MessageOf(err)
	case pipeline.Unavailable:
		p.Error = consoleErrorTexts[kind]
		s.log.WarnContext(c.Request.Context(), "console page unavailable", slog.String("route", c.FullPath()), slog.Any("err", err))
	default:
		status = http.StatusInternalServerError
		p.Error = "Die Seite konnte nicht geladen werden. Bitte versuchen Sie es später erneut."
		s.log.ErrorContext(c.Request.Context(), "console page failed", slog.String("route", c.FullPath()), slog.Any("err", err))
	}
	s.renderConsole(c, status, "fehler", p, nil)
	c.Abort()
}

// consoleNotFound answers an unknown path under /console/ with the error page.
func (s *Server) consoleNotFound(c *gin.Context) {
	webpage.SetPageHeaders(c.Writer.Header())
	s.consoleError(c, pipeline.Errorf(pipeline.NotFound, "%s", c.Request.URL.Path))
}

func staffOf(c *gin.Context) *portal.Staff {
	if v, ok := c.Get(ctxStaff); ok {
		return v.(*portal.Staff)
	}
	return nil
}

// consolePage serves a page of a signed-in operator; data builds the page's
// own part. The page opens the event stream after the newest event.
func (s *Server) consolePage(name, title string, data func(*gin.Context) (any, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := s.consoleBase(c, title, name, staffOf(c))
		// The stream starts after the newest event before the page's data
		// is read, so that an event that lands meanwhile refreshes the page
		// rather than being missed.
		if s.deps.Events != nil && s.deps.EventCursor != nil {
			var err error
			p.Live = true
			if p.LiveAfter, err = s.deps.EventCursor.LastEventID(c.Request.Context()); err != nil {
				s.consoleError(c, err)
				return
			}
		}
		d, err := data(c)
		if err != nil {
			s.consoleError(c, err)
			return
		}
		s.renderConsole(c, http.StatusOK, name, p, d)
	}
}

// actionKey is the idempotency key rendered into an action's form: random,
// so that each rendering of a button is one action, however often it is
// clicked or its answer is lost.
func actionKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// German formats of the pages.

func timeDE(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.In(pipeline.Berlin).Format("02.01.2006 15:04:05")
}

func timePtrDE(t *time.Time) string {
	if t == nil {
		return ""
	}
	return timeDE(*t)
}

var weekdaysDE = [...]string{"So", "Mo", "Di", "Mi", "Do", "Fr", "Sa"}

func dayLongDE(d pipeline.Day) string {
	return fmt.Sprintf("%s, %02d.%02d.%04d", weekdaysDE[d.Start().Weekday()], d.Dom, int(d.Month), d.Year)
}

func dayShortDE(d pipeline.Day) string {
	return fmt.Sprintf("%02d.%02d.%04d", d.Dom, int(d.Month), d.Year)
}

func durationDE(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return chart.FormatDecimal(d.Seconds(), 1) + " s"
	default:
		return fmt.Sprintf("%d min %02d s", int(d.Minutes()), int(d.Seconds())%60)
	}
}

// countdownDE is the time to the deadline as the page's script counts it
// down: days once it is two days or more away.
func countdownDE(left time.Duration) string {
	a := left.Abs().Round(time.Second)
	text := fmt.Sprintf("%d h %02d min %02d s", int(a.Hours()), int(a.Minutes())%60, int(a.Seconds())%60)
	if a >= 48*time.Hour {
		text = fmt.Sprintf("%d d %02d h", int(a.Hours())/24, int(a.Hours())%24)
	}
	if left < 0 {
		return "abgelaufen seit " + text
	}
	return "noch " + text
}
