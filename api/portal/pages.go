package portal

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/api/portal/web"
	"github.com/schedbridge/schedbridge/api/webpage"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/portal"
)

// The web portal: German pages rendered on the server from api/portal/web.
// The pages read through the same store as the API; their forms post JSON to
// the API with the CSRF header, so every state change goes through one set
// of rules.

func (h *Handler) pageRoutes(e *gin.Engine) {
	e.GET("/portal", func(c *gin.Context) { c.Redirect(http.StatusSeeOther, "/portal/") })
	static := http.StripPrefix("/portal/static/", web.Static())
	e.GET("/portal/static/*file", gin.WrapH(static))
	p := e.Group("/portal", h.pageHeaders, h.loadSession, h.pageCSRF)
	p.GET("/anmelden", h.signInPage)
	p.GET("/anmelden/link", h.linkPage)
	p.GET("/anmelden/sso", h.ssoStart)
	p.POST("/anmelden/sso/callback", h.ssoCallback)
	p.GET("/", h.page("uebersicht", "Übersicht", h.overviewData))
	p.GET("/urlaub", h.page("urlaub", "Urlaub", h.leaveData))
	p.GET("/krankmeldung", h.page("krankmeldung", "Krankmeldung", h.sickData))
	p.GET("/bescheinigungen", h.page("bescheinigungen", "Bescheinigungen", h.certData))
	p.GET("/verguetung", h.page("verguetung", "Vergütung", h.compData))
	p.GET("/abmelden", h.page("abmelden", "Abmelden", func(*gin.Context, *caller) (any, error) {
		return web.SignOut{LogoutAPI: "/api/auth/logout", Next: "/portal/anmelden?abgemeldet=1"}, nil
	}))
}

// pageHeaders sets the pages' security headers: a Content-Security-Policy
// that allows scripts and styles from this origin only (the pages have no
// inline script), no framing, no referrer, and no caching of personal data.
func (h *Handler) pageHeaders(c *gin.Context) {
	webpage.SetPageHeaders(c.Writer.Header())
	c.Next()
}

// pageCSRF hands every page visitor a CSRF cookie, which the pages' script
// sends back as the header on the API calls.
func (h *Handler) pageCSRF(c *gin.Context) {
	if err := h.ensureCSRF(c); err != nil {
		h.errorPage(c, err)
		return
	}
	c.Next()
}

func (h *Handler) basePage(c *gin.Context, title, nav string) web.Page {
	p := web.Page{Title: title, Nav: nav, CSRFCookie: h.cookieName(csrfCookie), CSRFHeader: CSRFHeader}
	if who := callerOf(c); who != nil {
		p.User = &web.User{Name: who.user.Name, Email: who.user.Email, LoginMethod: string(who.session.Method),
			Roles: rolesOf(who.user), HasEmployee: who.user.EmployeeID != ""}
	}
	if c.Query("gespeichert") == "1" {
		p.Notice = "Ihre Angaben wurden gespeichert."
	}
	return p
}

func (h *Handler) render(c *gin.Context, status int, name string, p web.Page) {
	var buf bytes.Buffer
	if err := web.Render(&buf, name, p); err != nil {
		h.log.ErrorContext(c.Request.Context(), "portal: rendering a page failed", slog.String("page", name), slog.Any("err", err))
		c.Data(http.StatusInternalServerError, "text/plain; charset=utf-8", []byte("Interner Fehler"))
		return
	}
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

func (h *Handler) errorPage(c *gin.Context, err error) {
	kind := pipeline.KindOf(pipeline.Attribute(c.Request.Context(), err))
	status := statusOf[kind]
	if status == 0 || status == http.StatusInternalServerError {
		status = http.StatusInternalServerError
		h.log.ErrorContext(c.Request.Context(), "portal page failed", slog.String("route", c.FullPath()), slog.Any("err", err))
	}
	p := h.basePage(c, "Fehler", "")
	p.Error = "Die Seite konnte nicht geladen werden. Bitte versuchen Sie es später erneut."
	h.render(c, status, "fehler", p)
	c.Abort()
}

// page serves a signed-in page: without a session the browser goes to the
// sign-in page. data builds the page's own part; nil data on employee pages
// means the caller has no employee record.
func (h *Handler) page(name, title string, data func(*gin.Context, *caller) (any, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		who := callerOf(c)
		if who == nil {
			c.Redirect(http.StatusSeeOther, "/portal/anmelden")
			return
		}
		p := h.basePage(c, title, name)
		d, err := data(c, who)
		if err != nil {
			h.errorPage(c, err)
			return
		}
		p.Data = d
		h.render(c, http.StatusOK, name, p)
	}
}

// signInMessages are the only texts a sign-in page shows for its fehler
// parameter, so the parameter cannot inject text.
var signInMessages = map[string]string{
	"sso":            "Die Anmeldung mit dem Firmenkonto ist fehlgeschlagen. Bitte versuchen Sie es erneut.",
	"sso_abgelaufen": "Die Anmeldung hat zu lange gedauert oder wurde bereits abgeschlossen. Bitte versuchen Sie es erneut.",
	"sso_konto":      "Ihr Firmenkonto ist keinem Portalzugang zugeordnet. Bitte wenden Sie sich an die Personalabteilung.",
	"sso_aus":        "Die Anmeldung mit dem Firmenkonto ist auf diesem Server nicht eingerichtet.",
	"sso_email":      "Ihr Firmenkonto hat keine bestätigte E-Mail-Adresse. Bitte bestätigen Sie die Adresse beim Anmeldedienst oder wenden Sie sich an die IT.",
}

// SignInMessage is the text a sign-in page (the portal's or the operators'
// console's) shows for the error code the SSO callback sent it back with;
// "" for any other value.
func SignInMessage(code string) string { return signInMessages[code] }

func (h *Handler) signInPage(c *gin.Context) {
	if callerOf(c) != nil {
		c.Redirect(http.StatusSeeOther, "/portal/")
		return
	}
	p := h.basePage(c, "Anmelden", "")
	p.Error = SignInMessage(c.Query("fehler"))
	if c.Query("abgemeldet") == "1" {
		p.Notice = "Sie wurden abgemeldet."
	}
	d := web.SignIn{}
	if h.sso != nil {
		d.SSOURL = "/portal/anmelden/sso"
	}
	if h.mail != nil {
		d.MagicLinkAPI = "/api/auth/magic-link"
	}
	p.Data = d
	h.render(c, http.StatusOK, "anmelden", p)
}

func (h *Handler) linkPage(c *gin.Context) {
	p := h.basePage(c, "Anmeldung", "")
	p.User = nil
	p.Data = web.MagicLanding{RedeemAPI: "/api/auth/magic-link/redeem", Next: "/portal/"}
	h.render(c, http.StatusOK, "link", p)
}

// ssoStart begins the web sign-in: a login flow with state, nonce and PKCE
// verifier is stored (hashed state), the browser gets a cookie that binds
// the flow to it, and goes to the identity provider. The Location carries
// the authorization request (client id, state, nonce, S256 challenge),
// none of which is a credential. The parameter weiter names the page to
// return to: a page of the portal (the default) or of the operators'
// console, which signs in through the same flow.
func (h *Handler) ssoStart(c *gin.Context) {
	next, ok := returnPath(c.Query("weiter"))
	if !ok {
		next = "/portal/"
	}
	if h.sso == nil {
		c.Redirect(http.StatusSeeOther, signInPath(next)+"?fehler=sso_aus")
		return
	}
	var toks [4]string
	for i := range toks {
		t, err := h.token()
		if err != nil {
			h.errorPage(c, err)
			return
		}
		toks[i] = t
	}
	state, nonce, verifier, browser := toks[0], toks[1], toks[2], toks[3]
	now := h.now()
	ctx := c.Request.Context()
	if err := h.store.CreateLoginFlow(ctx, portal.LoginFlow{
		StateHash: hash(state), BrowserHash: hash(browser), Verifier: verifier, Nonce: nonce, Next: next,
		CreatedAt: now, ExpiresAt: now.Add(h.cfg.LoginFlowTTL),
	}); err != nil {
		h.errorPage(c, err)
		return
	}
	authURL, err := h.sso.AuthURL(ctx, state, nonce, verifier)
	if err != nil {
		h.errorPage(c, err)
		return
	}
	h.setCookie(c, flowCookie, browser, int(h.cfg.LoginFlowTTL.Seconds()), h.flowSameSite(), true)
	c.Redirect(http.StatusSeeOther, authURL)
}

// ConsolePrefix is where the operators' console lives; its pages may be the
// end of a sign-in.
const ConsolePrefix = "/console/"

// returnPath accepts the pages a sign-in may return to: a path (never a
// URL, so the flow cannot be used to send a browser elsewhere) under
// /portal/ or /console/, without a query or fragment, whose characters are
// plain. Anything else is not a return path.
func returnPath(p string) (string, bool) {
	if len(p) > 200 || !(strings.HasPrefix(p, "/portal/") || strings.HasPrefix(p, ConsolePrefix)) ||
		strings.Contains(p, "//") || strings.Contains(p, "..") {
		return "", false
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '/' || r == '-' || r == '_') {
			return "", false
		}
	}
	return p, true
}

// signInPath is the sign-in page that a failed sign-in returns to: the
// console's for a console page, else the portal's.
func signInPath(next string) string {
	if strings.HasPrefix(next, ConsolePrefix) {
		return ConsolePrefix + "anmelden"
	}
	return "/portal/anmelden"
}

// flowSameSite is the SameSite mode of the flow cookie. The provider answers
// with a cross-site POST (form_post), on which browsers send SameSite=None
// cookies only; those need Secure, so the local-development mode falls back
// to Lax, which works when the provider runs on the same site.
func (h *Handler) flowSameSite() http.SameSite {
	if h.cfg.InsecureCookies {
		return http.SameSiteLaxMode
	}
	return http.SameSiteNoneMode
}

// maxLoggedError is the longest error code of an SSO callback that is
// logged. The codes of RFC 6749 have at most 25 characters, but anyone can
// post the callback, with a form of up to maxBody.
const maxLoggedError = 64

// ssoCallback receives the provider's form_post: code and state in the body,
// never in a URL. The state must name a stored flow of this browser; the
// code is exchanged with the flow's verifier and the ID token verified with
// the flow's nonce. It has no CSRF header by nature; the state and the flow
// cookie are its CSRF protection.
func (h *Handler) ssoCallback(c *gin.Context) {
	if h.sso == nil {
		c.Redirect(http.StatusSeeOther, "/portal/anmelden?fehler=sso_aus")
		return
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxBody)
	ctx := c.Request.Context()
	browser := h.cookie(c, flowCookie)
	h.setCookie(c, flowCookie, "", -1, h.flowSameSite(), true)
	signIn := "/portal/anmelden"
	back := func(code string, why string, attrs ...any) {
		h.log.WarnContext(ctx, "portal: SSO sign-in refused", append([]any{slog.String("why", why)}, attrs...)...)
		c.Redirect(http.StatusSeeOther, signIn+"?fehler="+code)
	}
	// The provider sends the state with an error too, so the flow (and the
	// page it returns to) is taken first; either way it is used up.
	state, code := c.PostForm("state"), c.PostForm("code")
	if !validToken(state) {
		back("sso", "callback without a well-formed state", slog.String("error", pipeline.ClipTo(c.PostForm("error"), maxLoggedError)))
		return
	}
	flow, err := h.store.TakeLoginFlow(ctx, hash(state), h.now())
	if pipeline.KindOf(err) == pipeline.NotFound {
		back("sso_abgelaufen", "unknown, used or expired state")
		return
	}
	if err != nil {
		h.errorPage(c, err)
		return
	}
	next, ok := returnPath(flow.Next)
	if !ok {
		next = "/portal/"
	}
	signIn = signInPath(next)
	if e := c.PostForm("error"); e != "" {
		back("sso", "provider answered an error", slog.String("error", pipeline.ClipTo(e, maxLoggedError)))
		return
	}
	if code == "" {
		back("sso", "callback without a code")
		return
	}
	if !equal(hash(browser), flow.BrowserHash) {
		back("sso", "the flow was started in another browser")
		return
	}
	id, err := h.sso.Exchange(ctx, code, flow.Verifier, flow.Nonce)
	if err != nil {
		back("sso", "code exchange or ID token verification failed", slog.Any("err", err))
		return
	}
	u, err := h.ssoUser(ctx, id)
	if errors.Is(err, errUnverified) {
		c.Redirect(http.StatusSeeOther, signIn+"?fehler=sso_email")
		h.auditUnverified(c, id, err)
		return
	}
	if pipeline.KindOf(err) == pipeline.Forbidden || pipeline.KindOf(err) == pipeline.Conflict {
		back("sso_konto", pipeline.MessageOf(err))
		return
	}
	if err != nil {
		h.errorPage(c, err)
		return
	}
	operator := slices.ContainsFunc(id.Groups, func(g string) bool { return slices.Contains(h.cfg.OperatorGroups, g) })
	if _, err := h.login(c, u, portal.MethodSSO, portal.ClientWeb, operator); err != nil {
		h.errorPage(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, next)
}

// German formats of the pages.
func dayDE(d pipeline.Day) string {
	if d.IsZero() {
		return ""
	}
	return fmt.Sprintf("%02d.%02d.%04d", d.Dom, int(d.Month), d.Year)
}

func euroDE(c int64) string {
	s := portal.FormatCents(c) // "-1234.56"
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte('.')
		}
		b.WriteRune(r)
	}
	out := b.String() + "," + frac + " €"
	if neg {
		out = "-" + out
	}
	return out
}

var leaveLabels = map[portal.LeaveType]string{
	portal.Erholungsurlaub: "Erholungsurlaub", portal.Sonderurlaub: "Sonderurlaub",
	portal.Unbezahlt: "Unbezahlter Urlaub", portal.Bildungsurlaub: "Bildungsurlaub",
}

var certLabels = map[portal.CertificateType]string{
	portal.Arbeitsbescheinigung: "Arbeitsbescheinigung", portal.Zwischenzeugnis: "Zwischenzeugnis",
	portal.Verdienstbescheinigung: "Verdienstbescheinigung", portal.Beschaeftigungsnachweis: "Beschäftigungsnachweis",
}

var certStatusLabels = map[portal.CertificateStatus]string{
	portal.CertRequested: "Beantragt", portal.CertInProgress: "In Bearbeitung",
	portal.CertIssued: "Ausgestellt", portal.CertRejected: "Abgelehnt",
}

var intervalLabels = map[portal.Interval]string{portal.Monthly: "monatlich", portal.Yearly: "jährlich", portal.Once: "einmalig"}

var languageLabels = map[string]string{"de": "Deutsch", "en": "Englisch"}

func (h *Handler) overviewData(c *gin.Context, who *caller) (any, error) {
	d := web.Overview{Year: pipeline.DayOf(h.now()).Year}
	if who.user.EmployeeID == "" {
		return d, nil
	}
	ctx := c.Request.Context()
	e, err := h.store.Employee(ctx, who.user.EmployeeID)
	if err != nil {
		return nil, err
	}
	reqs, err := h.store.LeaveRequests(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	sick, err := h.store.SickLeaves(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	certs, err := h.store.Certificates(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	sum := h.leaveSummary(e, reqs)
	d.Employee = &web.Employee{ID: e.ID, Name: e.Name, Email: e.Email, Department: e.Department, Position: e.Position,
		EntryDate: dayDE(e.EntryDate), State: e.State, WeeklyHours: strings.Replace(strconv.FormatFloat(e.WeeklyHours, 'f', -1, 64), ".", ",", 1)}
	d.LeaveDaysPerYear, d.LeaveDaysRequested, d.LeaveDaysRemaining = sum.Entitlement, sum.Requested, sum.Remaining
	for _, r := range reqs {
		if r.Status == portal.LeaveRequested {
			d.OpenLeave++
		}
	}
	d.SickReports = len(sick)
	for _, ct := range certs {
		if ct.Status == portal.CertRequested || ct.Status == portal.CertInProgress {
			d.OpenCertificates++
		}
	}
	return d, nil
}

func (h *Handler) leaveData(c *gin.Context, who *caller) (any, error) {
	if who.user.EmployeeID == "" {
		return nil, nil
	}
	reqs, err := h.store.LeaveRequests(c.Request.Context(), who.user.EmployeeID)
	if err != nil {
		return nil, err
	}
	d := web.Leave{API: "/api/v1/portal/leave-requests"}
	for _, t := range portal.LeaveTypes {
		d.Types = append(d.Types, web.Option{Value: string(t), Label: leaveLabels[t]})
	}
	for _, r := range reqs {
		d.Requests = append(d.Requests, web.LeaveRow{Type: leaveLabels[r.Type], Start: dayDE(r.Start), End: dayDE(r.End),
			Status: "Beantragt", Comment: r.Comment, WorkingDays: r.WorkingDays})
	}
	return d, nil
}

func (h *Handler) sickData(c *gin.Context, who *caller) (any, error) {
	if who.user.EmployeeID == "" {
		return nil, nil
	}
	rs, err := h.store.SickLeaves(c.Request.Context(), who.user.EmployeeID)
	if err != nil {
		return nil, err
	}
	d := web.Sick{API: "/api/v1/portal/sick-leave-reports"}
	for _, r := range rs {
		d.Reports = append(d.Reports, web.SickRow{Start: dayDE(r.Start), End: dayDE(r.End), Comment: r.Comment,
			Reported: dayDE(pipeline.DayOf(r.CreatedAt)), Certificate: r.Certificate})
	}
	return d, nil
}

func (h *Handler) certData(c *gin.Context, who *caller) (any, error) {
	if who.user.EmployeeID == "" {
		return nil, nil
	}
	rs, err := h.store.Certificates(c.Request.Context(), who.user.EmployeeID)
	if err != nil {
		return nil, err
	}
	d := web.Certificates{API: "/api/v1/portal/certificates"}
	for _, t := range portal.CertificateTypes {
		d.Types = append(d.Types, web.Option{Value: string(t), Label: certLabels[t]})
	}
	for _, l := range languages {
		d.Languages = append(d.Languages, web.Option{Value: l, Label: languageLabels[l]})
	}
	for _, r := range rs {
		d.Items = append(d.Items, web.CertRow{ID: r.ID, Type: certLabels[r.Type], Purpose: r.Purpose,
			Language: languageLabels[r.Language], Status: certStatusLabels[r.Status], Requested: dayDE(pipeline.DayOf(r.CreatedAt))})
	}
	return d, nil
}

// compData renders the compensation through the same portal.View as the
// API, so a value masked there never reaches the page either.
func (h *Handler) compData(c *gin.Context, who *caller) (any, error) {
	if who.user.EmployeeID == "" {
		return nil, nil
	}
	comps, err := h.store.Compensation(c.Request.Context(), who.user.EmployeeID)
	if err != nil {
		return nil, err
	}
	v := portal.View(comps, who.session.Method)
	d := web.Compensation{Masked: v.Masked}
	for _, cv := range v.Components {
		row := web.CompRow{Name: cv.Name, Interval: intervalLabels[cv.Interval], Masked: cv.Masked}
		if cv.Amount != nil {
			row.Amount = euroDE(*cv.Amount)
		}
		d.Rows = append(d.Rows, row)
	}
	if v.MonthlyTotal != nil {
		d.MonthlyTotal, d.YearlyTotal = euroDE(*v.MonthlyTotal), euroDE(*v.YearlyTotal)
	}
	switch v.MaskReason {
	case portal.ReasonMagicLink:
		d.MaskNote = "Bei einer Anmeldung per Link werden Beträge nicht angezeigt. Melden Sie sich mit Ihrem Firmenkonto an, um sie zu sehen."
	case portal.ReasonDerived, portal.ReasonHR:
		d.MaskNote = "Einzelne Beträge sind von der Personalabteilung verborgen; die Summen werden deshalb nicht angezeigt."
	}
	return d, nil
}
