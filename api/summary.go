package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/sync/errgroup"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/inbox"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
	"github.com/schedbridge/schedbridge/pipeline/price"
)

// Stage states in the console: a stage's latest run of the day, or not_run.
const (
	stateNotRun  = "not_run"
	statePartial = "incomplete" // the chain: some stages succeeded, none failed or runs, others not run
)

// StageState is the latest run of one stage for a day.
type StageState struct {
	Stage      pipeline.Stage `json:"stage"`
	State      string         `json:"state"` // not_run, running, succeeded, failed
	RunID      *int64         `json:"run_id"`
	Attempt    int            `json:"attempt,omitempty"`
	Trigger    string         `json:"trigger,omitempty"`
	StartedAt  *time.Time     `json:"started_at,omitempty"`
	FinishedAt *time.Time     `json:"finished_at,omitempty"`
	Error      string         `json:"error,omitempty"`
}

// ChainState is the day's chain as a whole and stage by stage.
type ChainState struct {
	State  string       `json:"state"` // not_run, running, failed, incomplete, succeeded
	Stages []StageState `json:"stages"`
}

// TSOState is where the latest schedule version of a portfolio and control
// area stands with its TSO.
type TSOState struct {
	ControlArea pipeline.ControlArea    `json:"control_area"`
	TSO         string                  `json:"tso"`
	Version     int                     `json:"version"`
	MessageID   string                  `json:"message_id"`
	SentAt      time.Time               `json:"sent_at"`
	State       pipeline.ScheduleStatus `json:"state"`
	AnswerKind  string                  `json:"answer_kind,omitempty"`
	AnswerAt    *time.Time              `json:"answer_at,omitempty"`
	Reasons     []inbox.AnswerReason    `json:"reasons"`
}

// PortfolioState is one portfolio in the summary: the chain's stages (a run
// covers every portfolio, so they are the day's runs) and the portfolio's
// schedules per TSO.
type PortfolioState struct {
	Portfolio string       `json:"portfolio"`
	Name      string       `json:"name"`
	Stages    []StageState `json:"stages"`
	Schedules []TSOState   `json:"schedules"`
}

// InboxSummary is the inbox backlog. Ages are given as the time since when,
// so that the answer, and its ETag, change only when the backlog does.
type InboxSummary struct {
	Pending          int        `json:"pending"`
	PendingTruncated bool       `json:"pending_truncated"`
	OldestPending    *time.Time `json:"oldest_pending_since"`
	Processing       int        `json:"processing"`
	Failed24h        int        `json:"failed_24h"`
	Rejected24h      int        `json:"rejected_24h"`
}

// MissingPrices counts the quarter-hours of a day without a price of one
// kind: spot prices of the delivery day (published the day before), and
// reBAP of the day the calculation works on (yesterday).
type MissingPrices struct {
	Kind         price.Kind   `json:"kind"`
	Day          pipeline.Day `json:"delivery_day"`
	QuarterHours int          `json:"quarter_hours"`
	Missing      int          `json:"missing"`
}

// LastSuccess is the latest successful run of a stage, of any day.
type LastSuccess struct {
	RunID      int64        `json:"run_id"`
	Day        pipeline.Day `json:"delivery_day"`
	FinishedAt time.Time    `json:"finished_at"`
}

// ConsoleSummary is the answer of GET /v1/console/summary: whether the day
// is safe, in one call.
type ConsoleSummary struct {
	Day          pipeline.Day                    `json:"delivery_day"`
	QuarterHours int                             `json:"quarter_hours"`
	Deadline     time.Time                       `json:"deadline"`
	Chain        ChainState                      `json:"chain"`
	Portfolios   []PortfolioState                `json:"portfolios"`
	Inbox        *InboxSummary                   `json:"inbox"`
	RedPartners  *int                            `json:"red_partners"`
	Prices       []MissingPrices                 `json:"missing_prices"`
	LastSuccess  map[pipeline.Stage]*LastSuccess `json:"last_success"`
}

// pendingCap bounds the count of pending files in a summary: past it, the
// operator knows enough, and the listing would cost more than the answer is
// worth.
const pendingCap = 10000

func (s *Server) getConsoleSummary(c *gin.Context) {
	var problems []ingest.Problem
	day := s.consoleDay(c, &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	sum, err := s.summary(c.Request.Context(), day)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.cachedJSON(c, http.StatusOK, sum)
}

// summary reads the parts of the summary at once: each is a query or a
// listing of its own, and the slowest alone decides how long the answer takes.
func (s *Server) summary(ctx context.Context, day pipeline.Day) (ConsoleSummary, error) {
	sum := ConsoleSummary{Day: day, QuarterHours: day.Intervals(), Deadline: day.TSODeadline(), Prices: []MissingPrices{}}
	var (
		runs       []pipeline.Run
		portfolios []pipeline.Portfolio
		msgs       []pipeline.ScheduleMessage
		answers    map[int64][]TSOAnswer
		last       map[pipeline.Stage]pipeline.Run
	)
	now := s.now()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		runs, err = s.deps.Results.Runs(gctx, pipeline.RunQuery{Day: &day, Limit: 1000})
		return err
	})
	g.Go(func() (err error) { portfolios, err = s.deps.Recorded.Portfolios(gctx); return err })
	g.Go(func() (err error) { msgs, err = s.deps.Results.Schedules(gctx, "", day); return err })
	if s.deps.Events != nil {
		g.Go(func() (err error) { answers, err = s.answersOf(gctx, "", day); return err })
	}
	g.Go(func() (err error) { last, err = s.deps.Recorded.LastSuccesses(gctx); return err })
	g.Go(func() error {
		inbox, err := s.inboxSummary(gctx, now)
		sum.Inbox = inbox
		return err
	})
	if s.deps.Mako != nil {
		g.Go(func() error {
			red, err := s.redPartners(gctx)
			if err == nil {
				sum.RedPartners = &red
			}
			return err
		})
	}
	if s.deps.Marktdaten != nil {
		g.Go(func() (err error) {
			sum.Prices, err = s.missingPrices(gctx, day, pipeline.StageKalkulation.DefaultDay(pipeline.DayOf(now)))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return ConsoleSummary{}, err
	}
	sum.Chain = chainState(runs)
	sum.LastSuccess = map[pipeline.Stage]*LastSuccess{}
	for _, st := range append([]pipeline.Stage{pipeline.StageChain}, pipeline.AllStages...) {
		if r, ok := last[st]; ok && r.FinishedAt != nil {
			sum.LastSuccess[st] = &LastSuccess{RunID: r.ID, Day: r.Day, FinishedAt: r.FinishedAt.UTC()}
		} else {
			sum.LastSuccess[st] = nil
		}
	}
	sum.Portfolios = make([]PortfolioState, 0, len(portfolios))
	for _, p := range portfolios {
		sum.Portfolios = append(sum.Portfolios, PortfolioState{Portfolio: p.ID, Name: p.Name, Stages: sum.Chain.Stages,
			Schedules: tsoStates(msgs, answers, p.ID)})
	}
	return sum, nil
}

// inboxSummary counts the backlog; nil when the server runs without the
// inbox.
func (s *Server) inboxSummary(ctx context.Context, now time.Time) (*InboxSummary, error) {
	if s.deps.Inbox == nil {
		return nil, nil
	}
	pending, err := s.deps.Inbox.PendingStats(ctx, pendingCap)
	if err != nil {
		return nil, fmt.Errorf("pending inbox files: %w", err)
	}
	counts, err := s.deps.Recorded.InboxCounts(ctx, now.Add(-24*time.Hour))
	if err != nil {
		return nil, err
	}
	return &InboxSummary{Pending: pending.Count, PendingTruncated: pending.Truncated, OldestPending: pending.Oldest,
		Processing: counts.Processing, Failed24h: counts.Failed, Rejected24h: counts.Rejected}, nil
}

// redPartners counts the market partners that the overview of the last 365
// days shows red.
func (s *Server) redPartners(ctx context.Context) (int, error) {
	ov, err := s.deps.Mako.Overview(ctx, 365, mako.OrderStatus)
	if err != nil {
		return 0, fmt.Errorf("market partners: %w", err)
	}
	return ov.Counts[mako.Red], nil
}

// missingPrices counts the quarter-hours without spot price on the delivery
// day and without reBAP on the calculation's day.
func (s *Server) missingPrices(ctx context.Context, day, calcDay pipeline.Day) ([]MissingPrices, error) {
	out := []MissingPrices{}
	for _, want := range []struct {
		kind price.Kind
		day  pipeline.Day
	}{{price.Spot, day}, {price.ReBAP, calcDay}} {
		pts, err := s.deps.Marktdaten.Prices(ctx, want.kind, want.day.Start(), want.day.End())
		if err != nil {
			return nil, fmt.Errorf("%s prices of %s: %w", want.kind, want.day, err)
		}
		n := want.day.Intervals()
		out = append(out, MissingPrices{Kind: want.kind, Day: want.day, QuarterHours: n, Missing: n - coveredQuarterHours(pts, want.day)})
	}
	return out, nil
}

// coveredQuarterHours counts the quarter-hours of the day that have a
// price; an hourly price covers four.
func coveredQuarterHours(pts []price.Point, day pipeline.Day) int {
	start, end := day.Start(), day.End()
	seen := map[int64]bool{}
	for _, q := range price.QuarterHours(pts) {
		if !q.Start.Before(start) && q.Start.Before(end) {
			seen[q.Start.Unix()] = true
		}
	}
	return len(seen)
}

// chainState sums up a day's runs (newest first): per stage of the chain its
// latest run.
func chainState(runs []pipeline.Run) ChainState {
	latest := map[pipeline.Stage]pipeline.Run{}
	for _, r := range runs {
		if _, seen := latest[r.Stage]; !seen {
			latest[r.Stage] = r
		}
	}
	cs := ChainState{Stages: make([]StageState, 0, len(pipeline.Stages))}
	counts := map[string]int{}
	for _, st := range pipeline.Stages {
		ss := StageState{Stage: st, State: stateNotRun}
		if r, ok := latest[st]; ok {
			id, started := r.ID, r.StartedAt
			ss = StageState{Stage: st, State: string(r.Status), RunID: &id, Attempt: r.Attempt, Trigger: r.Trigger,
				StartedAt: &started, FinishedAt: r.FinishedAt, Error: r.Error}
		}
		counts[ss.State]++
		cs.Stages = append(cs.Stages, ss)
	}
	switch {
	case counts[string(pipeline.RunRunning)] > 0:
		cs.State = string(pipeline.RunRunning)
	case counts[string(pipeline.RunFailed)] > 0:
		cs.State = string(pipeline.RunFailed)
	case counts[string(pipeline.RunSucceeded)] == len(pipeline.Stages):
		cs.State = string(pipeline.RunSucceeded)
	case counts[stateNotRun] == len(pipeline.Stages):
		cs.State = stateNotRun
	default:
		cs.State = statePartial
	}
	return cs
}

// tsoStates picks a portfolio's latest version per control area (msgs are
// ordered by portfolio, area and version descending) with the reasons of
// its latest answer.
func tsoStates(msgs []pipeline.ScheduleMessage, answers map[int64][]TSOAnswer, portfolio string) []TSOState {
	out := []TSOState{}
	for _, m := range msgs {
		if m.PortfolioID != portfolio || slices.ContainsFunc(out, func(t TSOState) bool { return t.ControlArea == m.ControlArea }) {
			continue
		}
		st := TSOState{ControlArea: m.ControlArea, TSO: m.Receiver, Version: m.Version, MessageID: m.MessageID, SentAt: m.SentAt,
			State: m.Status, AnswerKind: m.AnswerKind, AnswerAt: m.AnswerAt, Reasons: []inbox.AnswerReason{}}
		if as := answers[m.ID]; len(as) > 0 {
			st.Reasons = latestAnswer(as, m).Reasons
		}
		out = append(out, st)
	}
	return out
}

// latestAnswer is the answer that set the version's state: the newest one of
// the recorded kind, else the newest.
func latestAnswer(as []TSOAnswer, m pipeline.ScheduleMessage) TSOAnswer {
	for i := len(as) - 1; i >= 0; i-- {
		if as[i].Kind == m.AnswerKind {
			return as[i]
		}
	}
	return as[len(as)-1]
}
