package api

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/sync/errgroup"

	"github.com/schedbridge/schedbridge/api/consoleweb"
	"github.com/schedbridge/schedbridge/api/consoleweb/chart"
	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/inbox"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/kalkulation"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// The data of the console's pages. Each reads what the matching console
// API endpoint reads, through the same adapters, and formats it for people.

var stageLabels = map[pipeline.Stage]string{
	pipeline.StageForecast: "Prognose", pipeline.StageAggregate: "Aggregation",
	pipeline.StageOpenPosition: "Offene Position", pipeline.StageSchedules: "Fahrpläne",
	pipeline.StageKalkulation: "Kalkulation", pipeline.StageChain: "Kette",
}

func stageLabel(st pipeline.Stage) string {
	if l, ok := stageLabels[st]; ok {
		return l
	}
	return string(st)
}

var runBadges = map[string]consoleweb.Badge{
	string(pipeline.RunRunning):   {Label: "läuft", Class: "run"},
	string(pipeline.RunSucceeded): {Label: "erfolgreich", Class: "ok"},
	string(pipeline.RunFailed):    {Label: "fehlgeschlagen", Class: "bad"},
	stateNotRun:                   {Label: "nicht gelaufen", Class: "muted"},
	statePartial:                  {Label: "unvollständig", Class: "warn"},
}

func runBadge(state string) consoleweb.Badge {
	if b, ok := runBadges[state]; ok {
		return b
	}
	return consoleweb.Badge{Label: state, Class: "muted"}
}

var scheduleBadges = map[pipeline.ScheduleStatus]consoleweb.Badge{
	pipeline.ScheduleSubmitted:    {Label: "gesendet", Class: "run"},
	pipeline.ScheduleAcknowledged: {Label: "angenommen (ACK)", Class: "ok"},
	pipeline.ScheduleConfirmed:    {Label: "bestätigt (CNF)", Class: "ok"},
	pipeline.ScheduleAnomaly:      {Label: "Anomalie (ANO)", Class: "warn"},
	pipeline.ScheduleRejected:     {Label: "abgelehnt", Class: "bad"},
}

func scheduleBadge(st pipeline.ScheduleStatus) consoleweb.Badge {
	if b, ok := scheduleBadges[st]; ok {
		return b
	}
	return consoleweb.Badge{Label: string(st), Class: "muted"}
}

func reasonTexts(rs []inbox.AnswerReason) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		t := r.Code
		if r.Text != "" {
			t += ": " + r.Text
		}
		if r.SeriesID != "" {
			t += " (Zeitreihe " + r.SeriesID + ")"
		}
		out = append(out, t)
	}
	return out
}

// pageDay reads the day parameter of a page (default tomorrow), as the
// console API does; a malformed one is the operator's to fix.
func (s *Server) pageDay(c *gin.Context) (pipeline.Day, error) {
	var problems []ingest.Problem
	day := s.consoleDay(c, &problems)
	if len(problems) > 0 {
		return day, &ingest.SchemaError{Problems: problems}
	}
	return day, nil
}

// startAction is the button that starts stage for day.
func startAction(st pipeline.Stage, day pipeline.Day, label string) consoleweb.Action {
	body, _ := json.Marshal(map[string]string{"stage": string(st), "day": day.String()})
	return consoleweb.Action{Method: http.MethodPost, URL: "/v1/console/runs", Body: string(body), Key: actionKey(), Label: label}
}

// retryAction is the button that retries a failed run from its failed stage.
func retryAction(id int64) *consoleweb.Action {
	return &consoleweb.Action{Method: http.MethodPost, URL: "/v1/console/runs/" + strconv.FormatInt(id, 10) + "/retry",
		Body: "{}", Key: actionKey(), Label: "Wiederholen"}
}

// --- Lage ---

func (s *Server) situationData(c *gin.Context) (any, error) {
	day, err := s.pageDay(c)
	if err != nil {
		return nil, err
	}
	var (
		sum   ConsoleSummary
		areas []AreaSeries
	)
	g, gctx := errgroup.WithContext(c.Request.Context())
	g.Go(func() (err error) { sum, err = s.summary(gctx, day); return err })
	g.Go(func() (err error) { areas, err = s.areaSeriesOf(gctx, day); return err })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	left := sum.Deadline.Sub(s.now())
	d := consoleweb.Situation{
		Day: dayLongDE(day), DayISO: day.String(), PrevISO: day.AddDays(-1).String(), NextISO: day.AddDays(1).String(),
		QuarterHours: sum.QuarterHours, Deadline: timeDE(sum.Deadline)[:16] + " Uhr", DeadlineISO: sum.Deadline.UTC().Format(time.RFC3339),
		Countdown: countdownDE(left), Overdue: left < 0, Chain: runBadge(sum.Chain.State), RedPartners: sum.RedPartners,
		Start: startAction(pipeline.StageChain, day, "Kette starten"),
	}
	for _, st := range sum.Chain.Stages {
		row := consoleweb.StageRow{Stage: string(st.Stage), Label: stageLabel(st.Stage), State: runBadge(st.State),
			Attempt: st.Attempt, Started: timePtrDE(st.StartedAt), Ended: timePtrDE(st.FinishedAt), Error: st.Error}
		if st.RunID != nil {
			row.RunURL = "/console/laeufe/" + strconv.FormatInt(*st.RunID, 10)
			if st.State == string(pipeline.RunFailed) {
				row.Retry = retryAction(*st.RunID)
			}
		}
		if st.State != string(pipeline.RunRunning) && row.Retry == nil {
			a := startAction(st.Stage, day, "Starten")
			row.StartOne = &a
		}
		d.Stages = append(d.Stages, row)
	}
	if d.Areas, err = areaCharts(day, areas); err != nil {
		return nil, err
	}
	for _, p := range sum.Portfolios {
		for _, t := range p.Schedules {
			row := consoleweb.TSORow{Portfolio: p.Portfolio, Area: string(t.ControlArea), TSO: t.TSO, Version: t.Version,
				State: scheduleBadge(t.State), Answer: t.AnswerKind, AnswerAt: timePtrDE(t.AnswerAt), Reasons: reasonTexts(t.Reasons)}
			d.TSO = append(d.TSO, row)
		}
	}
	if in := sum.Inbox; in != nil {
		d.Inbox = &consoleweb.InboxCounts{Pending: in.Pending, PendingMore: in.PendingTruncated, Oldest: timePtrDE(in.OldestPending),
			Processing: in.Processing, Failed: in.Failed24h, Rejected: in.Rejected24h}
	}
	for _, m := range sum.Prices {
		if m.Missing > 0 {
			kind := "Spotpreise"
			if m.Kind != "spot" {
				kind = "reBAP"
			}
			d.Prices = append(d.Prices, consoleweb.PriceGap{Kind: kind, Day: dayShortDE(m.Day), Missing: m.Missing, Of: m.QuarterHours})
		}
	}
	return d, nil
}

// areaCharts draws each control area's forecast, position and open
// position on the day's local time axis, with the table alternative.
func areaCharts(day pipeline.Day, areas []AreaSeries) ([]consoleweb.AreaChart, error) {
	n := day.Intervals()
	starts := make([]time.Time, n)
	for i := range starts {
		starts[i] = day.Start().UTC().Add(time.Duration(i) * 15 * time.Minute)
	}
	labels, ticks := chart.QuarterHourAxis(starts, pipeline.Berlin)
	out := make([]consoleweb.AreaChart, 0, len(areas))
	for _, a := range areas {
		series := []chart.Series{
			{Name: "Prognose", Class: "s-forecast", Values: orNaN(a.ForecastMW, n)},
			{Name: "Position", Class: "s-position", Values: orNaN(a.PositionMW, n)},
			{Name: "Offene Position", Class: "s-open", Values: orNaN(a.OpenMW, n)},
		}
		id := "zone-" + strings.ToLower(string(a.ControlArea))
		svg, err := chart.Chart{ID: id + "-chart", Title: string(a.ControlArea) + ": Prognose, Position und offene Position",
			Desc: fmt.Sprintf("%d Viertelstunden am %s in MW", n, dayShortDE(day)), Unit: "MW", Points: n,
			XLabels: labels, Ticks: ticks, Series: series}.SVG()
		if err != nil {
			return nil, fmt.Errorf("chart of %s: %w", a.ControlArea, err)
		}
		ac := consoleweb.AreaChart{Area: string(a.ControlArea), ID: id, Chart: svg, Rows: make([]consoleweb.QHRow, n)}
		for i := range n {
			ac.Rows[i] = consoleweb.QHRow{Time: labels[i], Forecast: mwDE(series[0].Values[i]),
				Position: mwDE(series[1].Values[i]), Open: mwDE(series[2].Values[i])}
		}
		out = append(out, ac)
	}
	return out, nil
}

// orNaN is the series, or missing values where the area has none.
func orNaN(v []float64, n int) []float64 {
	if len(v) == n {
		return v
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

func mwDE(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return chart.FormatDecimal(v, 3)
}

// --- Läufe ---

var runStatusLabels = map[string]string{
	string(pipeline.RunRunning): "läuft", string(pipeline.RunSucceeded): "erfolgreich", string(pipeline.RunFailed): "fehlgeschlagen",
}

var triggerLabels = map[string]string{"cron": "Zeitplan", triggerAPI: "API", triggerConsole: "Leitstand", "cli": "Kommandozeile", "demo": "Demo"}

func options(values []string, label func(string) string, selected string) []consoleweb.Option {
	out := make([]consoleweb.Option, len(values))
	for i, v := range values {
		out[i] = consoleweb.Option{Value: v, Label: label(v), Selected: v == selected}
	}
	return out
}

func runRow(r pipeline.Run) consoleweb.RunRow {
	row := consoleweb.RunRow{ID: r.ID, URL: "/console/laeufe/" + strconv.FormatInt(r.ID, 10), Stage: stageLabel(r.Stage),
		Day: dayShortDE(r.Day), Status: runBadge(string(r.Status)), Trigger: triggerLabels[r.Trigger], Attempt: r.Attempt,
		Started: timeDE(r.StartedAt), Err: r.Error}
	if row.Trigger == "" {
		row.Trigger = r.Trigger
	}
	if sec := runSeconds(r); sec != nil {
		row.Duration = durationDE(time.Duration(*sec * float64(time.Second)))
	}
	if r.Status == pipeline.RunFailed {
		row.Retry = retryAction(r.ID)
	}
	return row
}

func (s *Server) runsData(c *gin.Context) (any, error) {
	var problems []ingest.Problem
	q, given := runsQuery(c, &problems)
	if len(problems) > 0 {
		return nil, &ingest.SchemaError{Problems: problems}
	}
	runs, next, err := s.runsPage(c.Request.Context(), q, 50)
	if err != nil {
		return nil, err
	}
	tomorrow := pipeline.DayOf(s.now()).AddDays(1)
	d := consoleweb.Runs{
		Stages:   options(runStageNames, func(v string) string { return stageLabel(pipeline.Stage(v)) }, string(q.Stage)),
		Statuses: options(runStatuses, func(v string) string { return runStatusLabels[v] }, string(q.Status)), Triggers: options(runTriggers, func(v string) string { return triggerLabels[v] }, q.Trigger),
		StartStages: options(stringsOf(append([]pipeline.Stage{pipeline.StageChain}, pipeline.AllStages...)),
			func(v string) string { return stageLabel(pipeline.Stage(v)) }, string(pipeline.StageChain)),
		StartDay: tomorrow.String(), StartKey: actionKey(),
	}
	if given {
		d.Day = q.Day.String()
	}
	for _, r := range runs {
		d.Rows = append(d.Rows, runRow(r))
	}
	if next != "" {
		qs := c.Request.URL.Query()
		qs.Set("cursor", next)
		d.NextURL = "/console/laeufe?" + qs.Encode()
	}
	return d, nil
}

func (s *Server) runData(c *gin.Context) (any, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return nil, pipeline.Errorf(pipeline.NotFound, "no run %q", c.Param("id"))
	}
	ctx := c.Request.Context()
	run, err := s.deps.Results.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	d := consoleweb.Run{RunRow: runRow(run)}
	if run.ParentID != nil {
		d.Parent = "/console/laeufe/" + strconv.FormatInt(*run.ParentID, 10)
	}
	if run.Stage == pipeline.StageChain {
		children, err := s.deps.Results.Runs(ctx, pipeline.RunQuery{ParentID: &run.ID, Limit: 1000})
		if err != nil {
			return nil, err
		}
		for _, sr := range stageRuns(children) {
			sa := consoleweb.StageAttempts{Label: stageLabel(sr.Stage), Status: runBadge(string(sr.Status))}
			for _, r := range sr.Attempts {
				row := runRow(r)
				row.Retry = nil // a chain is retried as a whole, from its failed stage
				sa.Attempts = append(sa.Attempts, row)
			}
			d.Stages = append(d.Stages, sa)
		}
	}
	if s.deps.RunLogs != nil {
		lines, err := s.deps.RunLogs.RunLog(ctx, run.ID, maxRunLog)
		if err != nil {
			return nil, err
		}
		for _, l := range lines {
			d.Log = append(d.Log, consoleweb.LogLine{Time: timeDE(l.At), Level: l.Level, Message: l.Message, Attrs: string(l.Attrs)})
		}
	}
	return d, nil
}

// --- Eingang ---

var inboxStateLabels = map[string]string{"pending": "wartend", "processing": "in Arbeit", "failed": "gescheitert", "rejected": "abgewiesen"}

var inboxBadges = map[string]consoleweb.Badge{
	"pending": {Label: "wartend", Class: "muted"}, "processing": {Label: "in Arbeit", Class: "run"},
	"failed": {Label: "gescheitert", Class: "bad"}, "rejected": {Label: "abgewiesen", Class: "bad"},
}

// maxShownProblems caps the findings a row shows; the receipt has them all
// (up to the processor's own cap).
const maxShownProblems = 20

func (s *Server) inboxData(c *gin.Context) (any, error) {
	if s.deps.Inbox == nil || s.deps.InboxFiles == nil {
		return nil, pipeline.Errorf(pipeline.Unavailable, "this server runs without the inbox")
	}
	var problems []ingest.Problem
	state := queryEnum(c, "state", "rejected", inboxStates, &problems)
	d := consoleweb.Inbox{State: state, States: options(inboxStates, func(v string) string { return inboxStateLabels[v] }, state)}
	p, err := s.inboxList(c, state, "", 100, &problems)
	switch {
	case len(problems) > 0:
		return nil, &ingest.SchemaError{Problems: problems}
	case err != nil:
		return nil, err
	}
	if p.next != "" {
		d.NextURL = "/console/eingang?" + url.Values{"state": {state}, "cursor": {p.next}}.Encode()
	}
	for _, o := range p.pending {
		cf := pendingFile(o)
		d.Rows = append(d.Rows, consoleweb.InboxRow{File: cf.File, Portfolio: cf.Portfolio, Kind: cf.Kind, Name: cf.Name,
			Size: sizeDE(cf.Size), State: inboxBadges["pending"], Time: timeDE(o.Modified)})
	}
	for _, f := range p.files {
		cf := consoleInboxFile(f)
		row := consoleweb.InboxRow{File: f.Key, Portfolio: cf.Portfolio, Kind: cf.Kind, Name: cf.Name, Size: sizeDE(f.Size),
			State: inboxBadges[cf.State], Attempts: f.Attempts, Time: timeDE(f.ClaimedAt), Reason: f.Reason}
		if f.FinishedAt != nil {
			row.Time = timeDE(*f.FinishedAt)
		}
		if row.Name == "" {
			row.Name = f.Key
		}
		if len(f.Result) > 0 {
			row.ReceiptURL = "/console/eingang/" + strconv.FormatInt(f.ID, 10) + "/beleg"
		}
		if f.State == pipeline.InboxRejected {
			var doc inbox.Errors
			if json.Unmarshal(f.Result, &doc) == nil {
				for i, p := range doc.Errors {
					if i == maxShownProblems {
						break
					}
					fp := consoleweb.FileProblem{Column: p.Column, Message: p.Msg}
					switch {
					case p.Line > 0:
						fp.Line = strconv.Itoa(p.Line)
					case p.Row > 0:
						fp.Line = "Zeile " + strconv.Itoa(p.Row)
					}
					row.Problems = append(row.Problems, fp)
				}
				row.MoreProblems = max(doc.ErrorCount, len(doc.Errors)) - len(row.Problems)
			}
		}
		if state == "failed" || state == "rejected" {
			body, _ := json.Marshal(map[string]int64{"id": f.ID})
			row.Retry = &consoleweb.Action{Method: http.MethodPost, URL: "/v1/console/inbox/retry", Body: string(body), Key: actionKey(),
				Label: "Erneut verarbeiten"}
		}
		d.Rows = append(d.Rows, row)
	}
	return d, nil
}

// inboxReceipt serves the receipt (or the errors document) recorded with a
// file, as JSON to download.
func (s *Server) inboxReceipt(c *gin.Context) {
	if s.deps.InboxFiles == nil {
		s.consoleError(c, pipeline.Errorf(pipeline.Unavailable, "this server runs without the inbox"))
		return
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		s.consoleError(c, pipeline.Errorf(pipeline.NotFound, "no inbox file %q", c.Param("id")))
		return
	}
	f, err := s.deps.InboxFiles.InboxFile(c.Request.Context(), id)
	if err == nil && len(f.Result) == 0 {
		err = pipeline.Errorf(pipeline.NotFound, "no receipt for inbox file %d", id)
	}
	if err != nil {
		s.consoleError(c, err)
		return
	}
	c.Header("Content-Disposition", fmt.Sprintf(`inline; filename="beleg-%d.json"`, id))
	c.Data(http.StatusOK, "application/json; charset=utf-8", f.Result)
}

func sizeDE(n int64) string {
	switch {
	case n >= 1<<20:
		return chart.FormatDecimal(float64(n)/(1<<20), 1) + " MiB"
	case n >= 1<<10:
		return chart.FormatDecimal(float64(n)/(1<<10), 1) + " KiB"
	default:
		return strconv.FormatInt(n, 10) + " B"
	}
}

// --- Fahrpläne ---

func (s *Server) schedulesData(c *gin.Context) (any, error) {
	day, err := s.pageDay(c)
	if err != nil {
		return nil, err
	}
	if s.deps.Events == nil {
		return nil, pipeline.Errorf(pipeline.Unavailable, "this server runs without the console feed")
	}
	threads, err := s.scheduleThreads(c.Request.Context(), "", day)
	if err != nil {
		return nil, err
	}
	d := consoleweb.Schedules{Day: dayLongDE(day), DayISO: day.String(), PrevISO: day.AddDays(-1).String(),
		NextISO: day.AddDays(1).String(), Deadline: timeDE(day.TSODeadline())[:16] + " Uhr"}
	for _, t := range threads {
		th := consoleweb.Thread{Portfolio: t.Portfolio, Area: string(t.ControlArea), TSO: t.TSO, Status: scheduleBadge(t.Status)}
		for _, v := range t.Versions {
			sv := consoleweb.ScheduleVersion{Version: v.Version, MessageID: v.MessageID, Sent: timeDE(v.SentAt), Status: scheduleBadge(v.Status)}
			for _, a := range v.Answers {
				sv.Answers = append(sv.Answers, consoleweb.Answer{Kind: a.Kind, At: timeDE(a.At), Status: scheduleBadge(a.Status),
					File: a.File, Reasons: reasonTexts(a.Reasons)})
			}
			th.Versions = append(th.Versions, sv)
		}
		d.Threads = append(d.Threads, th)
	}
	return d, nil
}

// --- Marktpartner und Antworten ---

var partnerBadges = map[mako.Status]consoleweb.Badge{
	mako.Red: {Label: "rot", Class: "bad"}, mako.Yellow: {Label: "gelb", Class: "warn"},
	mako.Green: {Label: "grün", Class: "ok"}, mako.Grey: {Label: "grau", Class: "muted"},
}

var streamLabels = map[mako.Stream]string{
	mako.PartinOut: "PARTIN an VNB", mako.AckIn: "Bestätigung vom VNB", mako.PartinIn: "PARTIN vom VNB",
	mako.ZuordnungOut: "Zuordnungsermächtigung",
}

func streamLabel(st mako.Stream) string {
	if l, ok := streamLabels[st]; ok {
		return l
	}
	return string(st)
}

func (s *Server) partnersData(c *gin.Context) (any, error) {
	if s.deps.Mako == nil {
		return nil, pipeline.Errorf(pipeline.Unavailable, "this server runs without the market communication")
	}
	var problems []ingest.Problem
	ordnung := queryEnum(c, "ordnung", mako.OrderStatus, orderings, &problems)
	if len(problems) > 0 {
		return nil, &ingest.SchemaError{Problems: problems}
	}
	ctx := c.Request.Context()
	var (
		ov    mako.Overview
		queue []mako.Vormerkung
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { ov, err = s.deps.Mako.Overview(gctx, 365, ordnung); return err })
	g.Go(func() (err error) { queue, err = s.deps.Mako.Vormerkungen(gctx); return err })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	d := consoleweb.Partners{Kontakt: ordnung == mako.OrderKontakt, Stand: timeDE(ov.Stand)}
	if d.Kontakt {
		d.ToggleURL, d.ToggleLabel = "/console/marktpartner", "Nach Status ordnen (rote zuerst)"
	} else {
		d.ToggleURL, d.ToggleLabel = "/console/marktpartner?ordnung=kontakt", "Nach letztem Kontakt ordnen"
	}
	for _, st := range []mako.Status{mako.Red, mako.Yellow, mako.Green, mako.Grey} {
		d.Counts = append(d.Counts, consoleweb.Count{Badge: partnerBadges[st], N: ov.Counts[st]})
	}
	for _, grp := range ov.Groups {
		pg := consoleweb.PartnerGroup{Area: grp.ControlArea}
		for _, r := range grp.Partners {
			row := consoleweb.PartnerRow{MPID: r.MPID, Name: r.Name, Status: partnerBadges[r.Status], Reasons: r.Reasons,
				LastContact: timePtrDE(r.LetzterKontaktAt)}
			if r.LetzterKontakt != nil {
				row.LastContact += " (" + *r.LetzterKontakt + ")"
			}
			open := make([]string, len(r.Open))
			for i, st := range r.Open {
				open[i] = streamLabel(st)
			}
			row.Open = strings.Join(open, ", ")
			pg.Rows = append(pg.Rows, row)
		}
		d.Groups = append(d.Groups, pg)
	}
	for _, v := range queue {
		d.Queue = append(d.Queue, consoleweb.QueueRow{MPID: v.MPID, Name: v.Name, Stream: streamLabel(v.Stream), Reason: v.Reason,
			Noted: timeDE(v.NotedAt), Delete: consoleweb.Action{Method: http.MethodDelete,
				URL: "/v1/process/nachversand/vormerkungen/" + url.PathEscape(v.Key()), Key: actionKey(), Label: "Löschen",
				Confirm: "Vormerkung für " + v.Name + " (" + streamLabel(v.Stream) + ") löschen?"}})
	}
	return d, nil
}

var verdictBadges = map[mako.Bewertung]consoleweb.Badge{
	mako.BewertungAbgelehnt: {Label: "abgelehnt", Class: "bad"}, mako.BewertungBestaetigt: {Label: "bestätigt", Class: "ok"},
	mako.BewertungOffen: {Label: "offen", Class: "warn"}, mako.BewertungOhneBezug: {Label: "ohne Bezug", Class: "warn"},
	mako.BewertungOhneReferenz: {Label: "ohne Referenz", Class: "muted"},
}

func (s *Server) repliesData(c *gin.Context) (any, error) {
	if s.deps.Mako == nil {
		return nil, pipeline.Errorf(pipeline.Unavailable, "this server runs without the market communication")
	}
	var problems []ingest.Problem
	tage := int(queryInt(c, "tage", 7, 1, 90, &problems))
	if len(problems) > 0 {
		return nil, &ingest.SchemaError{Problems: problems}
	}
	r, err := s.deps.Mako.Reconcile(c.Request.Context(), tage)
	if err != nil {
		return nil, err
	}
	d := consoleweb.Replies{Days: r.LookbackDays}
	for _, a := range r.Antworten {
		row := consoleweb.ReplyRow{Date: a.Date, Sender: a.Sender, Subject: a.Subject, Partner: strings.TrimSpace(a.Name + " " + a.MPID),
			Verdict: verdictBadges[a.Bewertung], Open: strings.Join(a.Offen, ", ")}
		if t, err := time.Parse(time.RFC3339, a.Date); err == nil {
			row.Date = timeDE(t)
		}
		if row.Verdict.Label == "" {
			row.Verdict = consoleweb.Badge{Label: string(a.Bewertung), Class: "muted"}
		}
		for _, z := range a.Zitiert {
			text := z.Referenz + ": nicht gefunden"
			if z.Gefunden {
				text = strings.TrimSpace(fmt.Sprintf("%s: %s %s %s", z.Referenz, z.EDIType, z.Richtung, z.Date))
			}
			row.Citations = append(row.Citations, text)
		}
		d.Rows = append(d.Rows, row)
	}
	return d, nil
}

// --- Kalkulation ---

func (s *Server) calculation(c *gin.Context) (pipeline.Day, pipeline.Day, kalkulation.Result, error) {
	if s.deps.Calculator == nil {
		return pipeline.Day{}, pipeline.Day{}, kalkulation.Result{}, pipeline.Errorf(pipeline.Unavailable, "this server runs without the period calculation")
	}
	var problems []ingest.Problem
	von, bis := s.period(c, &problems)
	if len(problems) > 0 {
		return von, bis, kalkulation.Result{}, &ingest.SchemaError{Problems: problems}
	}
	res, err := s.deps.Calculator.Kalkulation(c.Request.Context(), "", von, bis)
	return von, bis, res, err
}

func euroOrMissing(v *float64, decimals int) string {
	if v == nil {
		return "fehlt"
	}
	return chart.FormatDecimal(*v, decimals)
}

func calcRow(day string, f kalkulation.Figures) consoleweb.CalcRow {
	return consoleweb.CalcRow{Day: day, Customers: chart.FormatDecimal(f.KundenmengeKWh, 3), Balancing: euroOrMissing(f.AusgleichsenergieEUR, 2),
		Cost: euroOrMissing(f.GesamtkostenEUR, 2), Surcharge: euroOrMissing(f.AufschlagCtKWh, 4),
		MissingSpot: f.FehlendeSpotpreise, MissingReBAP: f.FehlendeReBAP}
}

func valueOrNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

func (s *Server) calculationData(c *gin.Context) (any, error) {
	von, bis, res, err := s.calculation(c)
	if err != nil {
		return nil, err
	}
	d := consoleweb.Calculation{Von: von.String(), Bis: bis.String(), Complete: res.Vollstaendig, Notes: res.Hinweise,
		CSVURL: "/console/kalkulation.csv?" + url.Values{"von": {von.String()}, "bis": {bis.String()}}.Encode(),
		Sum:    calcRow("Summe", res.Summe)}
	n := len(res.Tage)
	labels := make([]string, n)
	cost, balancing, surcharge := make([]float64, n), make([]float64, n), make([]float64, n)
	for i, t := range res.Tage {
		labels[i] = dayShortDE(t.Tag)
		cost[i], balancing[i] = valueOrNaN(t.GesamtkostenEUR), valueOrNaN(t.AusgleichsenergieEUR)
		surcharge[i] = valueOrNaN(t.AufschlagCtKWh)
		d.Rows = append(d.Rows, calcRow(dayShortDE(t.Tag), t.Figures))
	}
	if n > 0 {
		step := max(1, n/8)
		var ticks []chart.Tick
		for i := 0; i < n; i += step {
			ticks = append(ticks, chart.Tick{Index: i, Label: labels[i][:6]})
		}
		if d.Chart, err = (chart.Chart{ID: "kalkulation-chart", Title: "Gesamtkosten und Ausgleichsenergie je Tag",
			Desc: fmt.Sprintf("%d Tage vom %s bis %s in Euro", n, dayShortDE(von), dayShortDE(bis)), Unit: "€", Points: n,
			XLabels: labels, Ticks: ticks, CenterTicks: true, Decimals: 2, Bars: true, Series: []chart.Series{
				{Name: "Gesamtkosten", Class: "s-cost", Values: cost},
				{Name: "Ausgleichsenergie", Class: "s-balancing", Values: balancing},
			}}).SVG(); err != nil {
			return nil, fmt.Errorf("chart of the calculation: %w", err)
		}
		if d.Surcharge, err = (chart.Chart{ID: "aufschlag-chart", Title: "Aufschlag je Tag",
			Desc: fmt.Sprintf("%d Tage vom %s bis %s in Cent je kWh", n, dayShortDE(von), dayShortDE(bis)), Unit: "ct/kWh", Points: n,
			XLabels: labels, Ticks: ticks, CenterTicks: true, Decimals: 4,
			Series: []chart.Series{{Name: "Aufschlag", Class: "s-surcharge", Values: surcharge}}}).SVG(); err != nil {
			return nil, fmt.Errorf("chart of the surcharge: %w", err)
		}
	}
	return d, nil
}

// calculationCSV is the table of the Kalkulation page as CSV for German
// spreadsheets: semicolons, decimal commas, and a byte-order mark so that
// the umlauts of the header are read as UTF-8.
func (s *Server) calculationCSV(c *gin.Context) {
	von, bis, res, err := s.calculation(c)
	if err != nil {
		s.consoleError(c, err)
		return
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", fmt.Sprintf(`attachment; filename="kalkulation-%s-%s.csv"`, von, bis))
	c.Status(http.StatusOK)
	_, _ = c.Writer.WriteString("\ufeff")
	w := csv.NewWriter(c.Writer)
	w.Comma = ';'
	_ = w.Write([]string{"Tag", "Kundenmenge (kWh)", "Ausgleichsenergie (kWh)", "Ausgleichsenergie (EUR)", "Gesamtkosten (EUR)",
		"Aufschlag (ct/kWh)", "Fehlende Spotpreise", "Fehlende reBAP"})
	row := func(day string, f kalkulation.Figures) []string {
		return []string{day, chart.FormatDecimal(f.KundenmengeKWh, 3), chart.FormatDecimal(f.AusgleichsenergieKWh, 3), euroOrMissing(f.AusgleichsenergieEUR, 2),
			euroOrMissing(f.GesamtkostenEUR, 2), euroOrMissing(f.AufschlagCtKWh, 4), strconv.Itoa(f.FehlendeSpotpreise), strconv.Itoa(f.FehlendeReBAP)}
	}
	for _, t := range res.Tage {
		_ = w.Write(row(t.Tag.String(), t.Figures))
	}
	_ = w.Write(row("Summe", res.Summe))
	w.Flush()
}
