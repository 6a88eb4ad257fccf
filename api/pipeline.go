package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/tradeset"
	"github.com/schedbridge/schedbridge/pipeline"
)

// Runner runs the stages of the day-ahead chain now, synchronously. A run that
// failed is returned finished (status failed) together with a non-nil error
// whose kind says why; a zero run with an error means no run was recorded.
type Runner interface {
	RunStage(ctx context.Context, stage pipeline.Stage, day pipeline.Day, trigger string) (pipeline.Run, error)
	Orchestrate(ctx context.Context, day pipeline.Day, trigger string) (pipeline.Run, error)
}

// Results reads what complete runs published, and the run records.
// Positions, OpenPosition and Schedules take "" as the portfolio for all.
type Results interface {
	Positions(ctx context.Context, portfolio string, day pipeline.Day) (int64, []pipeline.PositionRow, error)
	OpenPosition(ctx context.Context, portfolio string, day pipeline.Day) (int64, []pipeline.OpenPositionRow, error)
	Schedules(ctx context.Context, portfolio string, day pipeline.Day) ([]pipeline.ScheduleMessage, error)
	Runs(ctx context.Context, q pipeline.RunQuery) ([]pipeline.Run, error)
	Run(ctx context.Context, id int64) (pipeline.Run, error)
}

// TradeStore stores a portfolio's procured trades of a day, as a whole set,
// with the audit entry of the import, and reads the current set back.
type TradeStore interface {
	StageTrades(ctx context.Context, a *pipeline.AuditEntry, set pipeline.TradeSet, canonical []byte) (pipeline.StageResult, error)
	Trades(ctx context.Context, portfolio string, day pipeline.Day) (pipeline.TradeSet, int, error)
}

// triggerAPI marks runs started through the API in their record.
const triggerAPI = "api"

// pipelineRoutes registers the pipeline's endpoints under /v1/process.
//
// Days: the commands (POST stages, orchestrate) default to tomorrow in
// Europe/Berlin, the day the day-ahead cron works on; everything that reads
// or stores data of a day (results, trades) needs the day named, so that a
// request sent just before midnight never reads another day than meant.
func (s *Server) pipelineRoutes(e *gin.Engine) {
	d := s.deps
	results := s.needs(d.Results != nil, "the pipeline results")
	runner := s.needs(d.Runner != nil, "the pipeline runner")
	trades := s.needs(d.Trades != nil, "the trade store")

	// The published results of one portfolio are also its report key's to
	// read; run records span all portfolios, so they stay with process keys.
	read := e.Group("/v1/process", s.requireScope(pipeline.ScopeProcess, pipeline.ScopeReport), s.rateLimit)
	read.GET("/positions", results, s.getPositions)
	read.GET("/open-position", results, s.getOpenPosition)
	read.GET("/schedules", results, s.getSchedules)

	proc := e.Group("/v1/process", s.requireScope(pipeline.ScopeProcess), s.rateLimit)
	proc.GET("/runs", results, s.getRuns)
	proc.GET("/runs/:id", results, s.getRun)
	proc.POST("/stages/:stage", runner, s.postStage)
	proc.POST("/orchestrate", runner, results, s.postOrchestrate)

	// Trades are submitted data of one portfolio like forecasts, so their
	// requests are in the audit trail, refused ones included.
	e.PUT("/v1/process/trades", s.audit, s.requireScope(pipeline.ScopeProcess), s.rateLimit, trades, s.putTrades)
	e.GET("/v1/process/trades", s.audit, s.requireScope(pipeline.ScopeProcess, pipeline.ScopeReport), s.rateLimit, trades, s.getTrades)
}

// --- parameters ---

// stringsOf lists the values of a string enum, for its problems and docs.
func stringsOf[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// queryEnum reads an optional query parameter whose value must be one of
// allowed; it returns def when the parameter is absent, and def with a
// problem when the value is not allowed.
func queryEnum(c *gin.Context, name, def string, allowed []string, problems *[]ingest.Problem) string {
	raw, given := c.GetQuery(name)
	switch {
	case !given:
		return def
	case !slices.Contains(allowed, raw):
		*problems = append(*problems, enumProblem([]string{"query", name}, raw, allowed))
		return def
	}
	return raw
}

// stageNames are the values of the {stage} path parameter.
var stageNames = stringsOf(pipeline.AllStages)

// enumProblem is pydantic's problem for a value outside an Enum, as FastAPI
// reports it for an Enum-typed parameter.
func enumProblem(loc []string, input string, allowed []string) ingest.Problem {
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = "'" + a + "'"
	}
	expected := quoted[0]
	if n := len(quoted); n > 1 {
		expected = strings.Join(quoted[:n-1], ", ") + " or " + quoted[n-1]
	}
	return ingest.Problem{Type: "enum", Loc: loc, Msg: "Input should be " + expected, Input: input,
		Ctx: map[string]any{"expected": expected}}
}

func missingProblem(loc []string) ingest.Problem {
	return ingest.Problem{Type: "missing", Loc: loc, Msg: "Field required", Input: nil, Ctx: map[string]any{}}
}

// addProblems appends the problems of a *ingest.SchemaError.
func addProblems(problems *[]ingest.Problem, err error) {
	var se *ingest.SchemaError
	if errors.As(err, &se) {
		*problems = append(*problems, se.Problems...)
	}
}

// queryDay reads an optional YYYY-MM-DD query parameter; a malformed one is
// a problem with pydantic's date types. given reports whether it was sent.
func queryDay(c *gin.Context, name string, problems *[]ingest.Problem) (day pipeline.Day, given bool) {
	raw, given := c.GetQuery(name)
	if !given {
		return pipeline.Day{}, false
	}
	d, err := tradeset.QueryDay(name, raw, true)
	if err != nil {
		addProblems(problems, err)
		return pipeline.Day{}, true
	}
	return d, true
}

// requiredDay reads a day that must be given.
func requiredDay(c *gin.Context, name string, problems *[]ingest.Problem) pipeline.Day {
	d, given := queryDay(c, name, problems)
	if !given {
		*problems = append(*problems, missingProblem([]string{"query", name}))
	}
	return d
}

// commandDay reads the day of a command; when not given, the stage's
// default day by the server's clock in Europe/Berlin (tomorrow, yesterday
// for kalkulation).
func (s *Server) commandDay(c *gin.Context, stage pipeline.Stage, problems *[]ingest.Problem) pipeline.Day {
	d, given := queryDay(c, "day", problems)
	if !given {
		return stage.DefaultDay(pipeline.DayOf(s.now()))
	}
	return d
}

// scopedPortfolio resolves the portfolio a request is about. A report key
// reads its own portfolio only: the parameter defaults to it and naming
// another is forbidden. A process key belongs to no portfolio: the parameter
// filters ("" for all) and, where one portfolio is meant (required), must be
// given.
func scopedPortfolio(c *gin.Context, required bool, problems *[]ingest.Problem) (string, error) {
	p := principalOf(c)
	raw, given := c.GetQuery("portfolio")
	if p.PortfolioID != "" {
		if given && raw != p.PortfolioID {
			return "", pipeline.Errorf(pipeline.Forbidden, "%s may read portfolio %s only", p, p.PortfolioID)
		}
		return p.PortfolioID, nil
	}
	switch {
	case required && !given:
		*problems = append(*problems, missingProblem([]string{"query", "portfolio"}))
	case required && raw == "":
		*problems = append(*problems, ingest.Problem{Type: "string_too_short", Loc: []string{"query", "portfolio"},
			Msg: "String should have at least 1 character", Input: raw, Ctx: map[string]any{"min_length": 1}})
	}
	return raw, nil
}

// knownPortfolio refuses a portfolio that a request names and that does not
// exist (404), so that a mistyped filter is told apart from a portfolio
// with nothing to show. "" (all portfolios) and the portfolio of the
// caller's own key, found when it was authenticated, pass unread.
func (s *Server) knownPortfolio(c *gin.Context, id string) error {
	if id == "" {
		return nil
	}
	if v, ok := c.Get(ctxPortfolio); ok && v.(pipeline.Portfolio).ID == id {
		return nil
	}
	_, err := s.deps.Portfolios.Portfolio(c.Request.Context(), id)
	return notFoundAs(err, "portfolio %s does not exist", id)
}

// resultParams are the parameters of the result reads.
type resultParams struct {
	portfolio string // "" for all
	day       pipeline.Day
}

// of names the portfolio filter in messages.
func (p resultParams) of() string {
	if p.portfolio == "" {
		return ""
	}
	return " of portfolio " + p.portfolio
}

// resultQuery reads portfolio and day of a result read: first whether the
// key may read the portfolio (403), then every parameter problem (422),
// then whether the portfolio exists (404).
func (s *Server) resultQuery(c *gin.Context, portfolioRequired bool) (resultParams, bool) {
	var problems []ingest.Problem
	portfolio, err := scopedPortfolio(c, portfolioRequired, &problems)
	if err != nil {
		s.fail(c, err)
		return resultParams{}, false
	}
	day := requiredDay(c, "day", &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return resultParams{}, false
	}
	if err := s.knownPortfolio(c, portfolio); err != nil {
		s.fail(c, err)
		return resultParams{}, false
	}
	return resultParams{portfolio, day}, true
}

// notFoundAs turns a store's NotFound into the caller's message and
// passes other errors on.
func notFoundAs(err error, format string, args ...any) error {
	if pipeline.KindOf(err) == pipeline.NotFound {
		return &pipeline.Error{Kind: pipeline.NotFound, Message: fmt.Sprintf(format, args...), Err: err}
	}
	return err
}

// --- positions and open position ---

// mwhPerMW is the energy of one quarter-hour at 1 MW.
const mwhPerMW = 0.25

// energy sums quarter-hour powers into MWh, rounded to 1 kWh so that float
// noise of the sum does not reach the caller.
func energy(mw []float64) float64 {
	sum := 0.0
	for _, v := range mw {
		sum += v * mwhPerMW
	}
	return math.Round(sum*1000) / 1000
}

// PositionsReport is the answer of GET /v1/process/positions: what the last
// complete aggregate run published, per portfolio and control area.
type PositionsReport struct {
	DeliveryDay pipeline.Day   `json:"delivery_day"`
	RunID       int64          `json:"run_id"`
	Portfolio   string         `json:"portfolio,omitempty"`
	Intervals   int            `json:"intervals"`
	Areas       []PositionArea `json:"areas"`
}

// PositionArea is the position of one portfolio in one control area.
type PositionArea struct {
	Portfolio   string               `json:"portfolio"`
	ControlArea pipeline.ControlArea `json:"control_area"`
	// Source is "submitted" when a supplier's forecast covered the area,
	// "generated" when generated forecasts were summed, and "mixed" should
	// the quarter-hours disagree.
	Source string          `json:"source"`
	Totals PositionTotals  `json:"totals"`
	Series []PositionPoint `json:"series"`
}

// PositionTotals is the day's energy of a position.
type PositionTotals struct {
	ConsumptionMWh float64 `json:"consumption_mwh"`
	ProductionMWh  float64 `json:"production_mwh"`
	NetMWh         float64 `json:"net_mwh"`
}

// PositionPoint is one quarter-hour of a position.
type PositionPoint struct {
	QH            int       `json:"qh_index"`
	TS            time.Time `json:"ts_utc"`
	ConsumptionMW float64   `json:"consumption_mw"`
	ProductionMW  float64   `json:"production_mw"`
	NetMW         float64   `json:"net_mw"`
}

// OpenPositionReport is the answer of GET /v1/process/open-position.
type OpenPositionReport struct {
	DeliveryDay pipeline.Day       `json:"delivery_day"`
	RunID       int64              `json:"run_id"`
	Portfolio   string             `json:"portfolio,omitempty"`
	Intervals   int                `json:"intervals"`
	Areas       []OpenPositionArea `json:"areas"`
}

// OpenPositionArea is the open position of one portfolio in one control area.
type OpenPositionArea struct {
	Portfolio   string               `json:"portfolio"`
	ControlArea pipeline.ControlArea `json:"control_area"`
	Totals      OpenPositionTotals   `json:"totals"`
	Series      []OpenPositionPoint  `json:"series"`
}

// OpenPositionTotals is the day's energy of an open position.
type OpenPositionTotals struct {
	NetMWh    float64 `json:"net_mwh"`
	BoughtMWh float64 `json:"bought_mwh"`
	SoldMWh   float64 `json:"sold_mwh"`
	OpenMWh   float64 `json:"open_mwh"`
}

// OpenPositionPoint is one quarter-hour of an open position; open_mw > 0 is
// still to buy, < 0 to sell.
type OpenPositionPoint struct {
	QH       int       `json:"qh_index"`
	TS       time.Time `json:"ts_utc"`
	NetMW    float64   `json:"net_mw"`
	BoughtMW float64   `json:"bought_mw"`
	SoldMW   float64   `json:"sold_mw"`
	OpenMW   float64   `json:"open_mw"`
}

// byArea sorts rows by portfolio, control area and quarter-hour and calls fn
// once per portfolio and area with that group's rows.
func byArea[R any](rows []R, key func(R) (string, pipeline.ControlArea, int), fn func(portfolio string, area pipeline.ControlArea, group []R)) {
	slices.SortStableFunc(rows, func(a, b R) int {
		pa, aa, qa := key(a)
		pb, ab, qb := key(b)
		return cmp.Or(cmp.Compare(pa, pb), cmp.Compare(aa, ab), cmp.Compare(qa, qb))
	})
	for start := 0; start < len(rows); {
		p, a, _ := key(rows[start])
		end := start + 1
		for end < len(rows) {
			if p2, a2, _ := key(rows[end]); p2 != p || a2 != a {
				break
			}
			end++
		}
		fn(p, a, rows[start:end])
		start = end
	}
}

func positionsReport(q resultParams, runID int64, rows []pipeline.PositionRow) PositionsReport {
	rep := PositionsReport{DeliveryDay: q.day, RunID: runID, Portfolio: q.portfolio, Intervals: q.day.Intervals(), Areas: []PositionArea{}}
	key := func(r pipeline.PositionRow) (string, pipeline.ControlArea, int) {
		return r.Portfolio, r.ControlArea, r.QH
	}
	byArea(rows, key, func(p string, a pipeline.ControlArea, group []pipeline.PositionRow) {
		area := PositionArea{Portfolio: p, ControlArea: a, Source: group[0].Source, Series: make([]PositionPoint, len(group))}
		cons, prod, net := make([]float64, len(group)), make([]float64, len(group)), make([]float64, len(group))
		for i, r := range group {
			area.Series[i] = PositionPoint{QH: r.QH, TS: r.TS.UTC(), ConsumptionMW: r.ConsumptionMW, ProductionMW: r.ProductionMW, NetMW: r.NetMW}
			cons[i], prod[i], net[i] = r.ConsumptionMW, r.ProductionMW, r.NetMW
			if r.Source != area.Source {
				area.Source = "mixed"
			}
		}
		area.Totals = PositionTotals{ConsumptionMWh: energy(cons), ProductionMWh: energy(prod), NetMWh: energy(net)}
		rep.Areas = append(rep.Areas, area)
	})
	return rep
}

func openPositionReport(q resultParams, runID int64, rows []pipeline.OpenPositionRow) OpenPositionReport {
	rep := OpenPositionReport{DeliveryDay: q.day, RunID: runID, Portfolio: q.portfolio, Intervals: q.day.Intervals(), Areas: []OpenPositionArea{}}
	key := func(r pipeline.OpenPositionRow) (string, pipeline.ControlArea, int) {
		return r.Portfolio, r.ControlArea, r.QH
	}
	byArea(rows, key, func(p string, a pipeline.ControlArea, group []pipeline.OpenPositionRow) {
		area := OpenPositionArea{Portfolio: p, ControlArea: a, Series: make([]OpenPositionPoint, len(group))}
		cols := [4][]float64{}
		for k := range cols {
			cols[k] = make([]float64, len(group))
		}
		for i, r := range group {
			area.Series[i] = OpenPositionPoint{QH: r.QH, TS: r.TS.UTC(), NetMW: r.NetMW, BoughtMW: r.BoughtMW, SoldMW: r.SoldMW, OpenMW: r.OpenMW}
			cols[0][i], cols[1][i], cols[2][i], cols[3][i] = r.NetMW, r.BoughtMW, r.SoldMW, r.OpenMW
		}
		area.Totals = OpenPositionTotals{NetMWh: energy(cols[0]), BoughtMWh: energy(cols[1]), SoldMWh: energy(cols[2]), OpenMWh: energy(cols[3])}
		rep.Areas = append(rep.Areas, area)
	})
	return rep
}

func (s *Server) getPositions(c *gin.Context) {
	q, ok := s.resultQuery(c, false)
	if !ok {
		return
	}
	runID, rows, err := s.deps.Results.Positions(c.Request.Context(), q.portfolio, q.day)
	if err != nil {
		s.fail(c, notFoundAs(err, "no run has published positions%s for %s yet", q.of(), q.day))
		return
	}
	c.JSON(http.StatusOK, positionsReport(q, runID, rows))
}

func (s *Server) getOpenPosition(c *gin.Context) {
	q, ok := s.resultQuery(c, false)
	if !ok {
		return
	}
	runID, rows, err := s.deps.Results.OpenPosition(c.Request.Context(), q.portfolio, q.day)
	if err != nil {
		s.fail(c, notFoundAs(err, "no run has published the open position%s for %s yet", q.of(), q.day))
		return
	}
	c.JSON(http.StatusOK, openPositionReport(q, runID, rows))
}

// --- schedules ---

// SchedulesReport is the answer of GET /v1/process/schedules.
type SchedulesReport struct {
	DeliveryDay pipeline.Day   `json:"delivery_day"`
	Portfolio   string         `json:"portfolio,omitempty"`
	Areas       []ScheduleArea `json:"areas"`
}

// ScheduleArea is the latest schedule message of a portfolio and control
// area, where it stands with the TSO, and every version sent (newest first).
type ScheduleArea struct {
	pipeline.ScheduleMessage
	Versions []pipeline.ScheduleMessage `json:"versions"`
}

func schedulesReport(q resultParams, msgs []pipeline.ScheduleMessage) SchedulesReport {
	rep := SchedulesReport{DeliveryDay: q.day, Portfolio: q.portfolio, Areas: []ScheduleArea{}}
	// Newest version first within an area: byArea sorts ascending by its
	// third key, so the version is negated.
	key := func(m pipeline.ScheduleMessage) (string, pipeline.ControlArea, int) {
		return m.PortfolioID, m.ControlArea, -m.Version
	}
	byArea(msgs, key, func(_ string, _ pipeline.ControlArea, group []pipeline.ScheduleMessage) {
		rep.Areas = append(rep.Areas, ScheduleArea{ScheduleMessage: group[0], Versions: slices.Clone(group)})
	})
	return rep
}

func (s *Server) getSchedules(c *gin.Context) {
	q, ok := s.resultQuery(c, false)
	if !ok {
		return
	}
	msgs, err := s.deps.Results.Schedules(c.Request.Context(), q.portfolio, q.day)
	if err == nil && len(msgs) == 0 {
		err = pipeline.Errorf(pipeline.NotFound, "no schedules")
	}
	if err != nil {
		s.fail(c, notFoundAs(err, "no run has sent schedules%s for %s yet", q.of(), q.day))
		return
	}
	c.JSON(http.StatusOK, schedulesReport(q, msgs))
}

// --- runs ---

// RunDetail is a run record; a chain run also lists its stage runs in the
// order they ran, retries included.
type RunDetail struct {
	pipeline.Run
	Stages []pipeline.Run `json:"stages,omitempty"`
}

// RunList is the answer of GET /v1/process/runs.
type RunList struct {
	Runs []pipeline.Run `json:"runs"`
}

// RunFailure is the answer of a POST whose run failed: why, and the run.
type RunFailure struct {
	Detail string    `json:"detail"`
	Run    RunDetail `json:"run"`
}

// runStageNames are the values of the stage filter of GET /v1/process/runs.
var runStageNames = append(slices.Clone(stageNames), string(pipeline.StageChain))

func (s *Server) getRuns(c *gin.Context) {
	var problems []ingest.Problem
	q := pipeline.RunQuery{Limit: int(queryInt(c, "limit", 100, 1, 1000, &problems))}
	if d, given := queryDay(c, "day", &problems); given {
		q.Day = &d
	}
	q.Stage = pipeline.Stage(queryEnum(c, "stage", "", runStageNames, &problems))
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	runs, err := s.deps.Results.Runs(c.Request.Context(), q)
	if err != nil {
		s.fail(c, err)
		return
	}
	if runs == nil {
		runs = []pipeline.Run{}
	}
	c.JSON(http.StatusOK, RunList{Runs: runs})
}

// pathID reads a positive integer path parameter with FastAPI's problems.
func (s *Server) pathID(c *gin.Context, name string) (int64, bool) {
	raw := c.Param(name)
	loc := []string{"path", name}
	id, err := strconv.ParseInt(raw, 10, 64)
	var p ingest.Problem
	switch {
	case err != nil:
		p = ingest.Problem{Type: "int_parsing", Loc: loc, Input: raw, Ctx: map[string]any{},
			Msg: "Input should be a valid integer, unable to parse string as an integer"}
	case id < 1:
		p = ingest.Problem{Type: "greater_than_equal", Loc: loc, Input: raw, Ctx: map[string]any{"ge": 1},
			Msg: "Input should be greater than or equal to 1"}
	default:
		return id, true
	}
	s.fail(c, &ingest.SchemaError{Problems: []ingest.Problem{p}})
	return 0, false
}

// runDetail adds a chain run's stage runs, oldest first.
func (s *Server) runDetail(ctx context.Context, run pipeline.Run) (RunDetail, error) {
	d := RunDetail{Run: run}
	if run.Stage != pipeline.StageChain || run.ID == 0 || s.deps.Results == nil {
		return d, nil
	}
	id := run.ID
	stages, err := s.deps.Results.Runs(ctx, pipeline.RunQuery{ParentID: &id, Limit: 1000})
	if err != nil {
		return d, fmt.Errorf("stage runs of chain run %d: %w", id, err)
	}
	slices.SortFunc(stages, func(a, b pipeline.Run) int { return cmp.Compare(a.ID, b.ID) })
	d.Stages = stages
	return d, nil
}

func (s *Server) getRun(c *gin.Context) {
	id, ok := s.pathID(c, "id")
	if !ok {
		return
	}
	run, err := s.deps.Results.Run(c.Request.Context(), id)
	if err != nil {
		s.fail(c, notFoundAs(err, "run %d not found", id))
		return
	}
	d, err := s.runDetail(c.Request.Context(), run)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, d)
}

// failedRunStatus is the status of a POST whose run was recorded and
// failed. The request itself was fine, so a run that failed for its input
// (invalid staged data, a prerequisite stage that has not published) is a
// conflict with the current state, 409; a dependency that is down is 503;
// anything else is the server's fault, 500.
func failedRunStatus(kind pipeline.ErrorKind) int {
	switch kind {
	case pipeline.Unavailable:
		return http.StatusServiceUnavailable
	case pipeline.Internal:
		return http.StatusInternalServerError
	}
	return http.StatusConflict
}

// answerRun answers a command with the finished run: 200 when it
// succeeded, else the status of failedRunStatus with the reason and the run.
func (s *Server) answerRun(ctx context.Context, c *gin.Context, run pipeline.Run, err error) {
	if err == nil && run.Status == pipeline.RunFailed {
		err = pipeline.Errorf(pipeline.Internal, "%s", run.Error)
	}
	if err != nil && run.ID == 0 {
		s.fail(c, err)
		return
	}
	d, derr := s.runDetail(ctx, run)
	if err == nil {
		if derr != nil {
			s.fail(c, derr)
			return
		}
		c.JSON(http.StatusOK, d)
		return
	}
	if derr != nil {
		s.log.WarnContext(ctx, "list stage runs of a failed chain", slog.Any("err", derr))
	}
	kind := pipeline.KindOf(err)
	status := failedRunStatus(kind)
	switch kind {
	case pipeline.Unavailable:
		c.Header("Retry-After", s.retryAfter())
	case pipeline.Internal:
		s.log.ErrorContext(ctx, "run failed", slog.Int64("run", run.ID), slog.String("stage", string(run.Stage)),
			slog.String("day", run.Day.String()), slog.Any("err", err))
	}
	c.AbortWithStatusJSON(status, RunFailure{
		Detail: fmt.Sprintf("run %d (%s %s) failed: %s", run.ID, run.Stage, run.Day, pipeline.MessageOf(err)),
		Run:    d,
	})
}

// runContext detaches a run from the client's connection: a stage that
// writes schedules to the outbox should not stop halfway because a curl
// gave up waiting; the run's record tells how it ended.
func runContext(c *gin.Context) context.Context { return context.WithoutCancel(c.Request.Context()) }

func (s *Server) postStage(c *gin.Context) {
	var problems []ingest.Problem
	raw := c.Param("stage")
	stage, err := pipeline.ParseStage(raw)
	if err != nil {
		problems = append(problems, enumProblem([]string{"path", "stage"}, raw, stageNames))
	}
	day := s.commandDay(c, stage, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	ctx := runContext(c)
	run, err := s.deps.Runner.RunStage(ctx, stage, day, triggerAPI)
	s.answerRun(ctx, c, run, err)
}

func (s *Server) postOrchestrate(c *gin.Context) {
	var problems []ingest.Problem
	day := s.commandDay(c, pipeline.StageChain, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	ctx := runContext(c)
	run, err := s.deps.Runner.Orchestrate(ctx, day, triggerAPI)
	s.answerRun(ctx, c, run, err)
}

// --- trades ---

// TradesAck acknowledges a trade import.
type TradesAck struct {
	Ack
	DeliveryDay pipeline.Day `json:"delivery_day"`
}

// TradesReport is the answer of GET /v1/process/trades: the current set.
type TradesReport struct {
	Portfolio   string           `json:"portfolio"`
	DeliveryDay pipeline.Day     `json:"delivery_day"`
	Version     int              `json:"version"`
	Intervals   int              `json:"intervals"`
	Trades      []pipeline.Trade `json:"trades"`
}

func (s *Server) putTrades(c *gin.Context) {
	var problems []ingest.Problem
	portfolio, err := scopedPortfolio(c, true, &problems)
	if err != nil {
		s.fail(c, err)
		return
	}
	day := requiredDay(c, "day", &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	a := auditOf(c)
	a.PortfolioID = portfolio
	ctx := c.Request.Context()
	p, err := s.deps.Portfolios.Portfolio(ctx, portfolio)
	if err != nil {
		s.fail(c, notFoundAs(err, "portfolio %s does not exist", portfolio))
		return
	}
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	sub, err := tradeset.DecodeTrades(body, day, ingest.Rules{Active: p.Active()})
	if err != nil {
		s.fail(c, err)
		return
	}
	sub.Set.Portfolio = p.ID
	values := 0
	for _, t := range sub.Set.Trades {
		values += len(t.Values)
	}
	counts := map[string]int{"trades": len(sub.Set.Trades), "values": values}
	a.InputHash, a.Counts, a.StatusCode = sub.InputHash, counts, http.StatusOK
	ack := TradesAck{Ack: Ack{InputHash: sub.InputHash, ReceivedAt: a.ReceivedAt, Portfolio: p.ID, Counts: counts}, DeliveryDay: day}
	if sub.ValidateOnly {
		ack.Status = string(pipeline.Validated)
		a.Outcome = ack.Status
		c.JSON(http.StatusOK, ack)
		return
	}
	res, err := s.deps.Trades.StageTrades(ctx, a, sub.Set, sub.Canonical)
	if err != nil {
		s.fail(c, err)
		return
	}
	ack.Status, ack.Version = string(res.Status), res.Version
	ack.Counts = map[string]int{"created": res.Created, "replaced": res.Replaced, "unchanged": res.Unchanged}
	for k, v := range counts {
		ack.Counts[k] = v
	}
	c.JSON(http.StatusOK, ack)
}

func (s *Server) getTrades(c *gin.Context) {
	q, ok := s.resultQuery(c, true)
	if !ok {
		return
	}
	if a := auditOf(c); a != nil {
		a.PortfolioID = q.portfolio
	}
	set, version, err := s.deps.Trades.Trades(c.Request.Context(), q.portfolio, q.day)
	if err != nil {
		s.fail(c, notFoundAs(err, "no trades imported for portfolio %s and %s", q.portfolio, q.day))
		return
	}
	trades := set.Trades
	if trades == nil {
		trades = []pipeline.Trade{}
	}
	c.JSON(http.StatusOK, TradesReport{Portfolio: q.portfolio, DeliveryDay: q.day, Version: version, Intervals: q.day.Intervals(), Trades: trades})
}
