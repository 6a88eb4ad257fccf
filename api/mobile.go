package api

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/gin-contrib/gzip"
	"github.com/gin-gonic/gin"
	"golang.org/x/sync/errgroup"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/price"
)

// mobileRoutes registers the operators' app: device keys of the mobile
// scope (or mobile-scoped tokens), GET only. Answers are small, gzip when
// the app accepts it, and carry weak ETags for polling every minute. There
// is no write route: another method on these paths is 405.
func (s *Server) mobileRoutes(e *gin.Engine) {
	results := s.needs(s.deps.Results != nil, "the pipeline results")
	recorded := s.needs(s.deps.Recorded != nil, "the recorded state")
	g := e.Group("/v1/mobile", s.requireScope(pipeline.ScopeMobile), s.rateLimit, gzip.Gzip(gzip.DefaultCompression))
	g.GET("/summary", results, recorded, s.getMobileSummary)
	g.GET("/alerts", results, recorded, s.getMobileAlerts)
	g.GET("/schedules", results, s.getMobileSchedules)
}

// mobileDays are the days the app shows.
var mobileDays = []string{"today", "tomorrow"}

// mobileDay reads day=today|tomorrow (default tomorrow, the day operators
// work on before 14:30) by the server's clock in Europe/Berlin.
func (s *Server) mobileDay(c *gin.Context, problems *[]ingest.Problem) pipeline.Day {
	today := pipeline.DayOf(s.now())
	if queryEnum(c, "day", "tomorrow", mobileDays, problems) == "today" {
		return today
	}
	return today.AddDays(1)
}

// AreaSeries is one control area's day in the app, summed over the
// portfolios, per quarter-hour in MW with 3 decimals: the net forecast, the
// position procured (bought minus sold) and the open position. A series the
// last run did not publish is null.
type AreaSeries struct {
	ControlArea pipeline.ControlArea `json:"control_area"`
	ForecastMW  []float64            `json:"forecast_mw"`
	PositionMW  []float64            `json:"position_mw"`
	OpenMW      []float64            `json:"open_mw"`
}

// MobileStage is a stage's state in the app.
type MobileStage struct {
	Stage pipeline.Stage `json:"stage"`
	State string         `json:"state"`
}

// MobileTSO is where one portfolio's schedule for one TSO stands.
type MobileTSO struct {
	Portfolio   string                  `json:"portfolio"`
	ControlArea pipeline.ControlArea    `json:"control_area"`
	Version     int                     `json:"version"`
	State       pipeline.ScheduleStatus `json:"state"`
	SentAt      time.Time               `json:"sent_at"`
	AnswerKind  string                  `json:"answer_kind,omitempty"`
	AnswerAt    *time.Time              `json:"answer_at,omitempty"`
	Reasons     int                     `json:"reasons"`
}

// MobileSummary is the answer of GET /v1/mobile/summary.
type MobileSummary struct {
	Day          pipeline.Day  `json:"delivery_day"`
	QuarterHours int           `json:"quarter_hours"`
	Deadline     time.Time     `json:"deadline"`
	Chain        string        `json:"chain"`
	Stages       []MobileStage `json:"stages"`
	Areas        []AreaSeries  `json:"areas"`
	TSO          []MobileTSO   `json:"tso"`
}

func (s *Server) getMobileSummary(c *gin.Context) {
	var problems []ingest.Problem
	day := s.mobileDay(c, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	ctx := c.Request.Context()
	var (
		runs  []pipeline.Run
		areas []AreaSeries
		tso   []MobileTSO
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		runs, err = s.deps.Results.Runs(gctx, pipeline.RunQuery{Day: &day, Limit: 1000})
		return err
	})
	g.Go(func() (err error) { areas, err = s.areaSeriesOf(gctx, day); return err })
	g.Go(func() (err error) { tso, err = s.mobileTSO(gctx, day); return err })
	if err := g.Wait(); err != nil {
		s.fail(c, err)
		return
	}
	chain := chainState(runs)
	sum := MobileSummary{Day: day, QuarterHours: day.Intervals(), Deadline: day.TSODeadline(), Chain: chain.State,
		Areas: areas, TSO: tso}
	for _, st := range chain.Stages {
		sum.Stages = append(sum.Stages, MobileStage{Stage: st.Stage, State: st.State})
	}
	s.cachedJSON(c, http.StatusOK, sum)
}

// areaSeriesOf reads the day's published positions and open positions of
// all portfolios at once and sums them per control area (see areaSeries):
// the series of the app's summary and of the web console's Lage page.
func (s *Server) areaSeriesOf(ctx context.Context, day pipeline.Day) ([]AreaSeries, error) {
	var (
		pos  []pipeline.PositionRow
		open []pipeline.OpenPositionRow
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		_, pos, err = s.deps.Results.Positions(gctx, "", day)
		return unpublished(err)
	})
	g.Go(func() (err error) {
		_, open, err = s.deps.Results.OpenPosition(gctx, "", day)
		return unpublished(err)
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return areaSeries(day.Intervals(), pos, open), nil
}

// unpublished turns "nothing published for the day" into no error: the app
// shows the day without its series.
func unpublished(err error) error {
	if pipeline.KindOf(err) == pipeline.NotFound {
		return nil
	}
	return err
}

// areaSeries sums the read models over portfolios per control area, in the
// order of pipeline.ControlAreas; areas without any row are left out.
func areaSeries(n int, pos []pipeline.PositionRow, open []pipeline.OpenPositionRow) []AreaSeries {
	type sums struct{ forecast, position, open []float64 }
	by := map[pipeline.ControlArea]*sums{}
	get := func(a pipeline.ControlArea) *sums {
		if by[a] == nil {
			by[a] = &sums{}
		}
		return by[a]
	}
	add := func(dst *[]float64, qh int, v float64) {
		if *dst == nil {
			*dst = make([]float64, n)
		}
		if qh >= 0 && qh < n {
			(*dst)[qh] += v
		}
	}
	for _, r := range pos {
		add(&get(r.ControlArea).forecast, r.QH, r.NetMW)
	}
	for _, r := range open {
		a := get(r.ControlArea)
		add(&a.position, r.QH, r.BoughtMW-r.SoldMW)
		add(&a.open, r.QH, r.OpenMW)
	}
	out := []AreaSeries{}
	for _, a := range pipeline.ControlAreas {
		if s := by[a]; s != nil {
			out = append(out, AreaSeries{ControlArea: a, ForecastMW: round3(s.forecast), PositionMW: round3(s.position), OpenMW: round3(s.open)})
		}
	}
	return out
}

// round3 rounds MW to 1 kW, which is what the app shows and keeps the
// payload small.
func round3(v []float64) []float64 {
	for i := range v {
		v[i] = math.Round(v[i]*1000) / 1000
	}
	return v
}

// mobileTSO lists the latest version per portfolio and control area of the
// day, with the number of reasons of its latest answer.
func (s *Server) mobileTSO(ctx context.Context, day pipeline.Day) ([]MobileTSO, error) {
	threads, err := s.scheduleThreads(ctx, "", day)
	if err != nil {
		return nil, err
	}
	out := make([]MobileTSO, 0, len(threads))
	for _, t := range threads {
		m := t.Versions[0]
		row := MobileTSO{Portfolio: t.Portfolio, ControlArea: t.ControlArea, Version: m.Version, State: m.Status,
			SentAt: m.SentAt, AnswerKind: m.AnswerKind, AnswerAt: m.AnswerAt}
		if len(m.Answers) > 0 {
			row.Reasons = len(latestAnswer(m.Answers, m.ScheduleMessage).Reasons)
		}
		out = append(out, row)
	}
	return out, nil
}

func (s *Server) getMobileSchedules(c *gin.Context) {
	var problems []ingest.Problem
	day := s.mobileDay(c, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	tso, err := s.mobileTSO(c.Request.Context(), day)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.cachedJSON(c, http.StatusOK, gin.H{"delivery_day": day, "deadline": day.TSODeadline(), "schedules": tso})
}

// --- alerts ---

// Alert severities, in rising order.
const (
	severityWarning  = "warning"
	severityError    = "error"
	severityCritical = "critical"
)

// Alert is a warning or worse for the operator on duty. Alerts from the
// console feed have the event's id and time; the conditions that hold now
// (deadline at risk, missing prices, red partners) have none.
type Alert struct {
	ID        int64         `json:"id,omitempty"`
	At        *time.Time    `json:"at,omitempty"`
	Severity  string        `json:"severity"`
	Kind      string        `json:"kind"`
	Title     string        `json:"title"`
	Day       *pipeline.Day `json:"delivery_day,omitempty"`
	Portfolio string        `json:"portfolio,omitempty"`
	Subject   string        `json:"subject,omitempty"`
}

// MobileAlerts is the answer of GET /v1/mobile/alerts: the conditions that
// hold now (first page only), and the alerts of the feed, newest first,
// paged by cursor.
type MobileAlerts struct {
	Active     []Alert `json:"active"`
	Items      []Alert `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// alertKinds are the kinds of the console feed that are alerts.
var alertKinds = []string{"run.failed", "stage.retry", "inbox.rejected", "inbox.failed", "tso.answer"}

// alertOf makes an alert of an event, or reports that the event is none
// (a TSO answer that accepted the schedule).
func alertOf(ev pipeline.Event) (Alert, bool) {
	at := ev.At
	a := Alert{ID: ev.ID, At: &at, Kind: ev.Kind, Day: ev.DeliveryDay, Portfolio: ev.PortfolioID, Subject: ev.Subject}
	var d struct {
		Stage  string `json:"stage"`
		Error  string `json:"error"`
		Status string `json:"status"`
		Kind   string `json:"kind"`
		Area   string `json:"control_area"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	switch ev.Kind {
	case "run.failed":
		a.Severity, a.Kind, a.Title = severityError, "stage_failed", fmt.Sprintf("Stage %s failed: %s", d.Stage, d.Error)
	case "stage.retry":
		a.Severity, a.Kind, a.Title = severityWarning, "stage_retry", fmt.Sprintf("Stage %s failed, retrying: %s", d.Stage, d.Error)
	case "inbox.rejected":
		a.Severity, a.Kind, a.Title = severityWarning, "file_rejected", "File rejected: "+ev.Subject
	case "inbox.failed":
		a.Severity, a.Kind, a.Title = severityError, "file_failed", "File failed: "+ev.Subject
	case "tso.answer":
		switch pipeline.ScheduleStatus(d.Status) {
		case pipeline.ScheduleAnomaly:
			a.Severity, a.Kind, a.Title = severityWarning, "tso_anomaly", fmt.Sprintf("%s from %s: anomaly report", d.Kind, d.Area)
		case pipeline.ScheduleRejected:
			a.Severity, a.Kind, a.Title = severityError, "tso_rejected", fmt.Sprintf("%s from %s: schedule rejected", d.Kind, d.Area)
		default:
			return Alert{}, false
		}
	default:
		return Alert{}, false
	}
	return a, true
}

// alertScanPages bounds how many reads one page of alerts takes when most
// events read are accepted answers, which are no alerts.
const alertScanPages = 10

func (s *Server) getMobileAlerts(c *gin.Context) {
	var problems []ingest.Problem
	before := queryIDCursor(c, &problems)
	limit := int(queryInt(c, "limit", 50, 1, 200, &problems))
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	ctx := c.Request.Context()
	out := MobileAlerts{Active: []Alert{}, Items: []Alert{}}
	if before == 0 {
		active, err := s.activeAlerts(ctx)
		if err != nil {
			s.fail(c, err)
			return
		}
		out.Active = active
	}
	// A page reads events until it has limit alerts: most answers accept
	// their schedule and are no alert, so a read may yield fewer.
	next, more := before, true
	for i := 0; i < alertScanPages && more && len(out.Items) < limit; i++ {
		evs, err := s.deps.Recorded.Alerts(ctx, alertKinds, next, limit)
		if err != nil {
			s.fail(c, err)
			return
		}
		more = len(evs) == limit
		for j, ev := range evs {
			next = ev.ID
			if a, ok := alertOf(ev); ok {
				out.Items = append(out.Items, a)
			}
			if len(out.Items) == limit {
				more = more || j < len(evs)-1
				break
			}
		}
	}
	if more {
		cur := encodeCursor(strconv.FormatInt(next, 10))
		out.NextCursor = &cur
		c.Header("Link", "</v1/mobile/alerts?"+url.Values{"cursor": {cur}, "limit": {strconv.Itoa(limit)}}.Encode()+`>; rel="next"`)
	}
	s.cachedJSON(c, http.StatusOK, out)
}

// deadlineWarning is how long before the TSO deadline a day whose schedules
// have not gone out is at risk.
const deadlineWarning = 90 * time.Minute

// spotPublishedHour is when the day-ahead auction's prices are out (12:45
// Berlin, with a margin): spot prices missing after it are an alert.
const spotPublishedHour = 13

// activeAlerts are the conditions that hold now for tomorrow: the deadline
// at risk or missed, missing prices, red market partners.
func (s *Server) activeAlerts(ctx context.Context) ([]Alert, error) {
	now := s.now()
	today := pipeline.DayOf(now)
	tomorrow := today.AddDays(1)
	out := []Alert{}
	runs, err := s.deps.Results.Runs(ctx, pipeline.RunQuery{Day: &tomorrow, Stage: pipeline.StageSchedules, Status: pipeline.RunSucceeded, Limit: 1})
	if err != nil {
		return nil, err
	}
	if deadline := tomorrow.TSODeadline(); len(runs) == 0 && !now.Before(deadline.Add(-deadlineWarning)) {
		a := Alert{Severity: severityCritical, Kind: "deadline_at_risk", Day: &tomorrow,
			Title: "No schedules sent for " + tomorrow.String() + "; due at " + deadline.In(pipeline.Berlin).Format("15:04")}
		if !now.Before(deadline) {
			a.Title = "TSO deadline missed: no schedules sent for " + tomorrow.String()
		}
		out = append(out, a)
	}
	if s.deps.Marktdaten != nil {
		missing, err := s.missingPrices(ctx, tomorrow, pipeline.StageKalkulation.DefaultDay(today))
		if err != nil {
			return nil, err
		}
		published := time.Date(today.Year, today.Month, today.Dom, spotPublishedHour, 0, 0, 0, pipeline.Berlin)
		for _, m := range missing {
			if m.Missing == 0 || (m.Kind == price.Spot && now.Before(published)) {
				continue
			}
			day := m.Day
			out = append(out, Alert{Severity: severityWarning, Kind: "missing_prices", Day: &day,
				Title: fmt.Sprintf("%d of %d quarter-hours without %s price on %s", m.Missing, m.QuarterHours, m.Kind, m.Day)})
		}
	}
	if s.deps.Mako != nil {
		red, err := s.redPartners(ctx)
		if err != nil {
			return nil, err
		}
		if red > 0 {
			out = append(out, Alert{Severity: severityWarning, Kind: "red_partners", Title: fmt.Sprintf("%d market partners red", red)})
		}
	}
	slices.SortStableFunc(out, func(a, b Alert) int { return cmp.Compare(severityRank(b.Severity), severityRank(a.Severity)) })
	return out, nil
}

func severityRank(s string) int {
	return slices.Index([]string{severityWarning, severityError, severityCritical}, s)
}
