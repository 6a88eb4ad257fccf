package portal

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/portal"
)

// The employee API is self-scoped: the employee is the caller's, resolved
// from the session by requireEmployee; no route takes an employee id.

func (h *Handler) employeeOf(c *gin.Context) (portal.Employee, bool) {
	who := callerOf(c)
	e, err := h.store.Employee(c.Request.Context(), who.user.EmployeeID)
	if err != nil {
		h.fail(c, err)
		return e, false
	}
	return e, true
}

type profileJSON struct {
	EmployeeID  string   `json:"employee_id"`
	Name        string   `json:"name"`
	Email       string   `json:"email"`
	Department  string   `json:"department"`
	Position    string   `json:"position"`
	EntryDate   string   `json:"entry_date"`
	State       string   `json:"state"`
	WeeklyHours float64  `json:"weekly_hours"`
	Leave       leaveSum `json:"leave"`
}

// leaveSum is the caller's leave of the current year: the entitlement, the
// working days of requested leave that fall into the year, and the rest.
type leaveSum struct {
	Year        int `json:"year"`
	Entitlement int `json:"entitlement_days"`
	Requested   int `json:"requested_days"`
	Remaining   int `json:"remaining_days"`
}

func (h *Handler) leaveSummary(e portal.Employee, reqs []portal.LeaveRequest) leaveSum {
	year := pipeline.DayOf(h.now()).Year
	first, last := pipeline.NewDay(year, time.January, 1), pipeline.NewDay(year, time.December, 31)
	s := leaveSum{Year: year, Entitlement: e.LeaveDaysPerYear}
	for _, r := range reqs {
		if r.Type != portal.Erholungsurlaub || !portal.Overlaps(r.Start, r.End, first, last) {
			continue
		}
		// A request within the year counts the working days stored with
		// it; only one that spans the turn of the year is counted again
		// for its part in this year.
		if !r.Start.Before(first) && !last.Before(r.End) {
			s.Requested += r.WorkingDays
			continue
		}
		from, to := r.Start, r.End
		if from.Before(first) {
			from = first
		}
		if last.Before(to) {
			to = last
		}
		s.Requested += portal.WorkingDays(from, to, e.State)
	}
	s.Remaining = s.Entitlement - s.Requested
	return s
}

func (h *Handler) getProfile(c *gin.Context) {
	e, ok := h.employeeOf(c)
	if !ok {
		return
	}
	reqs, err := h.store.LeaveRequests(c.Request.Context(), e.ID)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, profileJSON{
		EmployeeID: e.ID, Name: e.Name, Email: e.Email, Department: e.Department, Position: e.Position,
		EntryDate: dayString(e.EntryDate), State: e.State, WeeklyHours: e.WeeklyHours,
		Leave: h.leaveSummary(e, reqs),
	})
}

func dayString(d pipeline.Day) string {
	if d.IsZero() {
		return ""
	}
	return d.String()
}

type leaveJSON struct {
	ID          int64     `json:"id"`
	Type        string    `json:"type"`
	StartDate   string    `json:"start_date"`
	EndDate     string    `json:"end_date"`
	WorkingDays int       `json:"working_days"`
	Comment     string    `json:"comment"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
}

func leaveOut(r portal.LeaveRequest) leaveJSON {
	return leaveJSON{ID: r.ID, Type: string(r.Type), StartDate: r.Start.String(), EndDate: r.End.String(),
		WorkingDays: r.WorkingDays, Comment: r.Comment, Status: string(r.Status), CreatedAt: r.CreatedAt.UTC()}
}

// list answers the caller's records of one kind, each through out.
func list[T, J any](h *Handler, fetch func(Store, context.Context, string) ([]T, error), out func(T) J) gin.HandlerFunc {
	return func(c *gin.Context) {
		recs, err := fetch(h.store, c.Request.Context(), callerOf(c).user.EmployeeID)
		if err != nil {
			h.fail(c, err)
			return
		}
		js := make([]J, len(recs))
		for i, r := range recs {
			js[i] = out(r)
		}
		c.JSON(http.StatusOK, js)
	}
}

// maxComment caps free-text fields, in characters.
const maxComment = 500

func dayField(field, v string) (pipeline.Day, error) {
	if v == "" {
		return pipeline.Day{}, invalid(field, "is required (YYYY-MM-DD)")
	}
	d, err := pipeline.ParseDay(v)
	if err != nil {
		return d, invalid(field, "must be a date YYYY-MM-DD, got "+strconv.Quote(v))
	}
	return d, nil
}

func textField(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if n := utf8.RuneCountInString(v); n > maxComment {
		return "", invalid(field, "has "+strconv.Itoa(n)+" characters, at most "+strconv.Itoa(maxComment)+" are allowed")
	}
	return v, nil
}

// absenceFields checks the fields that leave requests and sick-leave
// reports share: the day range and the comment.
func absenceFields(start, end, comment string) (s, e pipeline.Day, text string, err error) {
	if s, err = dayField("start_date", start); err != nil {
		return
	}
	if e, err = dayField("end_date", end); err != nil {
		return
	}
	if err = portal.CheckRange(s, e); err != nil {
		err = invalid("end_date", pipeline.MessageOf(err))
		return
	}
	text, err = textField("comment", comment)
	return
}

func (h *Handler) createLeave(c *gin.Context) {
	var req struct {
		Type      string `json:"type"`
		StartDate string `json:"start_date"`
		EndDate   string `json:"end_date"`
		Comment   string `json:"comment"`
	}
	if err := decode(c, &req); err != nil {
		h.fail(c, err)
		return
	}
	if req.Type == "" {
		req.Type = string(portal.Erholungsurlaub)
	}
	typ, err := portal.ParseEnum("type", req.Type, portal.LeaveTypes)
	if err != nil {
		h.fail(c, invalid("type", pipeline.MessageOf(err)))
		return
	}
	start, end, comment, err := absenceFields(req.StartDate, req.EndDate, req.Comment)
	if err != nil {
		h.fail(c, err)
		return
	}
	e, ok := h.employeeOf(c)
	if !ok {
		return
	}
	days := portal.WorkingDays(start, end, e.State)
	if days == 0 {
		h.fail(c, invalid("end_date", "the range has no working day: only weekends and public holidays"))
		return
	}
	r, err := h.store.CreateLeaveRequest(c.Request.Context(), portal.LeaveRequest{
		EmployeeID: e.ID, Type: typ, Start: start, End: end, WorkingDays: days,
		Comment: comment, Status: portal.LeaveRequested, CreatedAt: h.now(),
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, leaveOut(r))
}

type sickJSON struct {
	ID          int64     `json:"id"`
	StartDate   string    `json:"start_date"`
	EndDate     string    `json:"end_date"`
	Certificate bool      `json:"certificate"`
	Comment     string    `json:"comment"`
	CreatedAt   time.Time `json:"created_at"`
}

func sickOut(r portal.SickLeave) sickJSON {
	return sickJSON{ID: r.ID, StartDate: r.Start.String(), EndDate: r.End.String(), Certificate: r.Certificate,
		Comment: r.Comment, CreatedAt: r.CreatedAt.UTC()}
}

func (h *Handler) createSick(c *gin.Context) {
	var req struct {
		StartDate   string `json:"start_date"`
		EndDate     string `json:"end_date"`
		Certificate bool   `json:"certificate"`
		Comment     string `json:"comment"`
	}
	if err := decode(c, &req); err != nil {
		h.fail(c, err)
		return
	}
	start, end, comment, err := absenceFields(req.StartDate, req.EndDate, req.Comment)
	if err != nil {
		h.fail(c, err)
		return
	}
	r, err := h.store.CreateSickLeave(c.Request.Context(), portal.SickLeave{
		EmployeeID: callerOf(c).user.EmployeeID, Start: start, End: end,
		Certificate: req.Certificate, Comment: comment, CreatedAt: h.now(),
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, sickOut(r))
}

type certJSON struct {
	ID        int64     `json:"id"`
	Type      string    `json:"type"`
	Purpose   string    `json:"purpose"`
	Language  string    `json:"language"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func certOut(r portal.Certificate) certJSON {
	return certJSON{ID: r.ID, Type: string(r.Type), Purpose: r.Purpose, Language: r.Language,
		Status: string(r.Status), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// Languages a certificate can be issued in.
var languages = []string{"de", "en"}

func (h *Handler) createCertificate(c *gin.Context) {
	var req struct {
		Type     string `json:"type"`
		Purpose  string `json:"purpose"`
		Language string `json:"language"`
	}
	if err := decode(c, &req); err != nil {
		h.fail(c, err)
		return
	}
	typ, err := portal.ParseEnum("type", req.Type, portal.CertificateTypes)
	if err != nil {
		h.fail(c, invalid("type", pipeline.MessageOf(err)))
		return
	}
	if req.Language == "" {
		req.Language = "de"
	}
	lang, err := portal.ParseEnum("language", req.Language, languages)
	if err != nil {
		h.fail(c, invalid("language", pipeline.MessageOf(err)))
		return
	}
	purpose, err := textField("purpose", req.Purpose)
	if err != nil {
		h.fail(c, err)
		return
	}
	now := h.now()
	r, err := h.store.CreateCertificate(c.Request.Context(), portal.Certificate{
		EmployeeID: callerOf(c).user.EmployeeID, Type: typ, Purpose: purpose, Language: lang,
		Status: portal.CertRequested, CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, certOut(r))
}

// getCertificate shows one of the caller's certificate requests; another
// employee's id is as unknown as one that does not exist (404).
func (h *Handler) getCertificate(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		h.fail(c, invalid("id", "must be a positive integer, got "+strconv.Quote(c.Param("id"))))
		return
	}
	r, err := h.store.Certificate(c.Request.Context(), callerOf(c).user.EmployeeID, id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, certOut(r))
}

type componentJSON struct {
	Name       string  `json:"name"`
	Interval   string  `json:"interval"`
	Amount     *string `json:"amount"`
	Masked     bool    `json:"masked"`
	MaskReason string  `json:"mask_reason,omitempty"`
}

type compensationJSON struct {
	Currency     string          `json:"currency"`
	Components   []componentJSON `json:"components"`
	MonthlyTotal *string         `json:"monthly_total"`
	YearlyTotal  *string         `json:"yearly_total"`
	Masked       bool            `json:"masked"`
	MaskReason   string          `json:"mask_reason,omitempty"`
}

func cents(v *int64) *string {
	if v == nil {
		return nil
	}
	s := portal.FormatCents(*v)
	return &s
}

// getCompensation answers the caller's compensation after the visibility
// rules of portal.View: masked amounts are null in the body itself.
func (h *Handler) getCompensation(c *gin.Context) {
	who := callerOf(c)
	comps, err := h.store.Compensation(c.Request.Context(), who.user.EmployeeID)
	if err != nil {
		h.fail(c, err)
		return
	}
	v := portal.View(comps, who.session.Method)
	out := compensationJSON{Currency: "EUR", Components: make([]componentJSON, len(v.Components)),
		MonthlyTotal: cents(v.MonthlyTotal), YearlyTotal: cents(v.YearlyTotal), Masked: v.Masked, MaskReason: string(v.MaskReason)}
	for i, cv := range v.Components {
		out.Components[i] = componentJSON{Name: cv.Name, Interval: string(cv.Interval), Amount: cents(cv.Amount),
			Masked: cv.Masked, MaskReason: string(cv.MaskReason)}
	}
	c.JSON(http.StatusOK, out)
}
