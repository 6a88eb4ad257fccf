package api

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/consolebody"
	"github.com/schedbridge/schedbridge/ingest/inbox"
	"github.com/schedbridge/schedbridge/pipeline"
)

// RunStarter starts stages and chains in the background and retries failed
// runs (jobs.Runner). Both return the run recorded for the request and
// whether it was created now; false means the idempotency key named a run
// started earlier, which is returned instead.
type RunStarter interface {
	Start(ctx context.Context, req pipeline.StartRequest) (pipeline.Run, bool, error)
	Retry(ctx context.Context, id int64, req pipeline.StartRequest) (pipeline.Run, bool, error)
}

// RunLogs reads the log lines that a run recorded while it ran.
type RunLogs interface {
	RunLog(ctx context.Context, runID int64, limit int) ([]pipeline.RunLogLine, error)
}

// InboxDesk is the operators' side of the bulk inbox (inbox.Processor): what
// waits unclaimed, and sending a failed or rejected file back in.
type InboxDesk interface {
	Pending(ctx context.Context, portfolio, startAfter string, limit int) ([]pipeline.ObjectInfo, bool, error)
	PendingStats(ctx context.Context, limit int) (pipeline.PendingInbox, error)
	Retry(ctx context.Context, id int64) (pipeline.InboxFile, error)
}

// Recorded reads the recorded state that the console and the operators'
// app sum up (storage/sqldb).
type Recorded interface {
	Portfolios(ctx context.Context) ([]pipeline.Portfolio, error)
	LastSuccesses(ctx context.Context) (map[pipeline.Stage]pipeline.Run, error)
	InboxCounts(ctx context.Context, since time.Time) (pipeline.InboxCounts, error)
	// Alerts pages through the events of the given kinds, newest first,
	// before an event id (0: from the newest).
	Alerts(ctx context.Context, kinds []string, beforeID int64, limit int) ([]pipeline.Event, error)
}

// triggerConsole marks runs that an operator started or retried in the
// console or its API.
const triggerConsole = "console"

// runTriggers are the values of a run's trigger, for the runs filter.
var runTriggers = []string{"cron", triggerAPI, triggerConsole, "cli", "demo"}

// runStatuses are the values of the runs filter's status.
var runStatuses = stringsOf([]pipeline.RunStatus{pipeline.RunRunning, pipeline.RunSucceeded, pipeline.RunFailed})

// consoleRoutes registers the operators' console under /v1/console: process
// keys, process-scoped tokens, and operators signed in to the web console.
func (s *Server) consoleRoutes(e *gin.Engine) {
	d := s.deps
	events := s.needs(d.Events != nil, "the console feed")
	results := s.needs(d.Results != nil, "the pipeline results")
	starter := s.needs(d.Starter != nil, "the pipeline runner")
	logs := s.needs(d.RunLogs != nil, "the run logs")
	inbox := s.needs(d.Inbox != nil && d.InboxFiles != nil, "the inbox")
	recorded := s.needs(d.Recorded != nil, "the recorded state")

	// The web console's pages call these routes with the operator's
	// session (allowOperators); every action is in the audit trail.
	g := e.Group("/v1/console", s.auditActions, s.allowOperators, s.requireScope(pipeline.ScopeProcess), s.rateLimit)
	g.GET("/events", events, s.getEvents)
	g.GET("/events/stream", events, s.streamEvents)
	g.GET("/summary", results, recorded, s.getConsoleSummary)
	g.GET("/runs", results, s.getConsoleRuns)
	g.GET("/runs/:id", results, logs, s.getConsoleRun)
	g.POST("/runs", starter, s.postConsoleRun)
	g.POST("/runs/:id/retry", starter, s.postConsoleRetry)
	g.GET("/inbox", inbox, s.getConsoleInbox)
	g.POST("/inbox/retry", inbox, s.postConsoleInboxRetry)
	g.GET("/schedules", results, events, s.getConsoleSchedules)
}

// --- cursors ---

// A cursor is opaque to clients: the base64url of where the next page
// starts (a record id, or an object key for pending files). It carries no
// filters; a client sends the same filters with it, as the Link header does.
func encodeCursor(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// queryCursor reads the cursor parameter; a cursor that does not decode is
// a 422 problem like any malformed parameter.
func queryCursor(c *gin.Context, problems *[]ingest.Problem) string {
	raw, given := c.GetQuery("cursor")
	if !given {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || len(b) == 0 {
		*problems = append(*problems, cursorProblem(raw))
		return ""
	}
	return string(b)
}

// queryIDCursor reads a cursor that holds a record id.
func queryIDCursor(c *gin.Context, problems *[]ingest.Problem) int64 {
	raw := queryCursor(c, problems)
	if raw == "" {
		return 0
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		*problems = append(*problems, cursorProblem(c.Query("cursor")))
		return 0
	}
	return id
}

// trimPage cuts the one item more than limit that a list read to learn
// whether a next page exists, and returns the cursor of that page: the id
// of the last item kept, or "" on the last page.
func trimPage[T any](items []T, limit int, id func(T) int64) ([]T, string) {
	if len(items) <= limit {
		return items, ""
	}
	items = items[:limit]
	return items, encodeCursor(strconv.FormatInt(id(items[limit-1]), 10))
}

func cursorProblem(raw string) ingest.Problem {
	return ingest.Problem{Type: "value_error", Loc: []string{"query", "cursor"}, Input: raw,
		Msg: "Value error, not a cursor of this list: pass next_cursor of the previous page unchanged",
		Ctx: map[string]any{"error": map[string]any{}}}
}

// page answers a list page, {"items": [...], "next_cursor": ...} with
// next_cursor null on the last page, with its weak ETag, and sets the Link header
// (RFC 8288) of the next page: this request's URL with the cursor replaced.
func (s *Server) page(c *gin.Context, items any, next string) {
	var cursor *string
	if next != "" {
		cursor = &next
		q := c.Request.URL.Query()
		q.Set("cursor", next)
		u := url.URL{Path: c.Request.URL.Path, RawQuery: q.Encode()}
		c.Header("Link", "<"+u.String()+`>; rel="next"`)
	}
	s.cachedJSON(c, http.StatusOK, struct {
		Items      any     `json:"items"`
		NextCursor *string `json:"next_cursor"`
	}{items, cursor})
}

// --- runs ---

// runsQuery reads the filters and the cursor of a runs list, as the console
// API and the Läufe page take them; dayGiven tells whether a day was named.
func runsQuery(c *gin.Context, problems *[]ingest.Problem) (q pipeline.RunQuery, dayGiven bool) {
	q = pipeline.RunQuery{
		Stage:   pipeline.Stage(queryEnum(c, "stage", "", runStageNames, problems)),
		Status:  pipeline.RunStatus(queryEnum(c, "status", "", runStatuses, problems)),
		Trigger: queryEnum(c, "trigger", "", runTriggers, problems),
	}
	if d, given := queryDay(c, "day", problems); given {
		q.Day, dayGiven = &d, true
	}
	q.BeforeID = queryIDCursor(c, problems)
	return q, dayGiven
}

// runsPage reads one page of runs, newest first, and the cursor of the next.
func (s *Server) runsPage(ctx context.Context, q pipeline.RunQuery, limit int) ([]pipeline.Run, string, error) {
	q.Limit = limit + 1 // one more tells whether a next page exists
	runs, err := s.deps.Results.Runs(ctx, q)
	if err != nil {
		return nil, "", err
	}
	runs, next := trimPage(runs, limit, func(r pipeline.Run) int64 { return r.ID })
	return runs, next, nil
}

func (s *Server) getConsoleRuns(c *gin.Context) {
	var problems []ingest.Problem
	q, _ := runsQuery(c, &problems)
	limit := int(queryInt(c, "limit", 50, 1, 500, &problems))
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	runs, next, err := s.runsPage(c.Request.Context(), q, limit)
	if err != nil {
		s.fail(c, err)
		return
	}
	if runs == nil {
		runs = []pipeline.Run{}
	}
	s.page(c, runs, next)
}

// ConsoleRun is the answer of GET /v1/console/runs/{id}: the run, its
// duration, for a chain its stages with every attempt, and the run's own
// log lines.
type ConsoleRun struct {
	pipeline.Run
	Seconds *float64              `json:"seconds"`
	Stages  []StageRuns           `json:"stages,omitempty"`
	Log     []pipeline.RunLogLine `json:"log"`
}

// StageRuns are the attempts of one stage of a chain, oldest first.
type StageRuns struct {
	Stage    pipeline.Stage     `json:"stage"`
	Status   pipeline.RunStatus `json:"status"`
	Attempts []pipeline.Run     `json:"attempts"`
}

// maxRunLog caps the log lines shown with a run.
const maxRunLog = 2000

func runSeconds(r pipeline.Run) *float64 {
	if r.FinishedAt == nil {
		return nil
	}
	s := r.FinishedAt.Sub(r.StartedAt).Seconds()
	return &s
}

func (s *Server) getConsoleRun(c *gin.Context) {
	id, ok := s.pathID(c, "id")
	if !ok {
		return
	}
	ctx := c.Request.Context()
	run, err := s.deps.Results.Run(ctx, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	d := ConsoleRun{Run: run, Seconds: runSeconds(run)}
	if run.Stage == pipeline.StageChain {
		children, err := s.deps.Results.Runs(ctx, pipeline.RunQuery{ParentID: &run.ID, Limit: 1000})
		if err != nil {
			s.fail(c, err)
			return
		}
		d.Stages = stageRuns(children)
	}
	if d.Log, err = s.deps.RunLogs.RunLog(ctx, run.ID, maxRunLog); err != nil {
		s.fail(c, err)
		return
	}
	if d.Log == nil {
		d.Log = []pipeline.RunLogLine{}
	}
	s.cachedJSON(c, http.StatusOK, d)
}

// stageRuns groups a chain's stage runs (newest first, as Runs lists them)
// by stage in chain order, each stage's attempts oldest first; its status
// is that of its last attempt.
func stageRuns(children []pipeline.Run) []StageRuns {
	byStage := map[pipeline.Stage][]pipeline.Run{}
	for _, r := range children {
		byStage[r.Stage] = append(byStage[r.Stage], r)
	}
	var out []StageRuns
	for _, st := range pipeline.Stages {
		rs := byStage[st]
		if len(rs) == 0 {
			continue
		}
		slices.SortFunc(rs, func(a, b pipeline.Run) int { return cmp.Compare(a.ID, b.ID) })
		out = append(out, StageRuns{Stage: st, Status: rs[len(rs)-1].Status, Attempts: rs})
	}
	return out
}

// maxIdempotencyKey bounds the Idempotency-Key header, as the IETF draft's
// implementations do; a UUID needs 36 characters.
const maxIdempotencyKey = 255

// idempotency reads the Idempotency-Key header and returns what the run
// record keeps of it: a hash of the caller and the key, so that two callers
// never share a key and the key itself is not stored. request is the
// resolved request, hashed to tell a repeat from a different request.
func idempotency(c *gin.Context, request string, problems *[]ingest.Problem) (key, hash string) {
	raw := c.GetHeader("Idempotency-Key")
	if raw == "" {
		return "", ""
	}
	if len(raw) > maxIdempotencyKey || strings.IndexFunc(raw, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		*problems = append(*problems, ingest.Problem{Type: "string_pattern_mismatch", Loc: []string{"header", "Idempotency-Key"},
			Input: raw, Msg: "String should match pattern '^[\\x21-\\x7e]{1,255}$'", Ctx: map[string]any{"pattern": "^[\\x21-\\x7e]{1,255}$"}})
		return "", ""
	}
	k := sha256.Sum256([]byte(principalOf(c).ID + "\x00" + raw))
	h := sha256.Sum256([]byte(request))
	return hex.EncodeToString(k[:]), hex.EncodeToString(h[:])
}

// accepted answers 202 with the run that a start or retry recorded, where to
// follow it, and whether an earlier request with the same Idempotency-Key
// had started it. The same key with a different request is refused: the key
// promises the same effect, which a different request cannot have.
func (s *Server) accepted(c *gin.Context, run pipeline.Run, created bool, hash string) {
	if !created && run.RequestHash != hash {
		s.fail(c, &ingest.SchemaError{Problems: []ingest.Problem{{Type: "value_error", Loc: []string{"header", "Idempotency-Key"},
			Input: c.GetHeader("Idempotency-Key"), Ctx: map[string]any{"error": map[string]any{}},
			Msg: "Value error, this Idempotency-Key was used for a different request (run " + strconv.FormatInt(run.ID, 10) + "); use a new key"}}})
		return
	}
	if !created {
		c.Header("Idempotent-Replayed", "true")
	}
	c.Header("Location", "/v1/console/runs/"+strconv.FormatInt(run.ID, 10))
	c.JSON(http.StatusAccepted, run)
}

func (s *Server) postConsoleRun(c *gin.Context) {
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var problems []ingest.Problem
	req, err := consolebody.DecodeRunStart(body)
	addProblems(&problems, err)
	if err != nil && len(problems) == 0 {
		s.fail(c, err)
		return
	}
	if req.Day.IsZero() && req.Stage != "" {
		req.Day = req.Stage.DefaultDay(pipeline.DayOf(s.now()))
	}
	key, hash := idempotency(c, "start "+string(req.Stage)+" "+req.Day.String()+" "+string(req.FromStage), &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	run, created, err := s.deps.Starter.Start(c.Request.Context(), pipeline.StartRequest{
		Stage: req.Stage, Day: req.Day, FromStage: req.FromStage, Trigger: triggerConsole,
		IdempotencyKey: key, RequestHash: hash,
	})
	if err != nil {
		s.fail(c, err)
		return
	}
	s.accepted(c, run, created, hash)
}

func (s *Server) postConsoleRetry(c *gin.Context) {
	id, ok := s.pathID(c, "id")
	if !ok {
		return
	}
	var problems []ingest.Problem
	key, hash := idempotency(c, "retry "+strconv.FormatInt(id, 10), &problems)
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	run, created, err := s.deps.Starter.Retry(c.Request.Context(), id, pipeline.StartRequest{
		Trigger: triggerConsole, IdempotencyKey: key, RequestHash: hash,
	})
	if err != nil {
		s.fail(c, err)
		return
	}
	s.accepted(c, run, created, hash)
}

// --- inbox ---

// inboxStates are the values of GET /v1/console/inbox's state parameter.
var inboxStates = []string{"pending", "processing", "failed", "rejected"}

// ConsoleInboxFile is a row of the console's inbox list. Pending files have
// no record yet, so they have no id, attempts or reason.
type ConsoleInboxFile struct {
	ID        int64      `json:"id,omitempty"`
	File      string     `json:"file"`
	Portfolio string     `json:"portfolio,omitempty"`
	Kind      string     `json:"kind,omitempty"`
	Name      string     `json:"name,omitempty"`
	Size      int64      `json:"size"`
	State     string     `json:"state"`
	Attempts  int        `json:"attempts"`
	Reason    string     `json:"reason,omitempty"`
	Receipt   string     `json:"receipt,omitempty"` // key of the receipt or errors document
	Latest    string     `json:"latest,omitempty"`  // key of the newest result under the file's name
	Errors    *int       `json:"error_count,omitempty"`
	Modified  *time.Time `json:"modified,omitempty"`
	ClaimedAt *time.Time `json:"claimed_at,omitempty"`
	Finished  *time.Time `json:"finished_at,omitempty"`
	RetriedAt *time.Time `json:"retried_at,omitempty"`
}

func consoleInboxFile(f pipeline.InboxFile) ConsoleInboxFile {
	r := inboxRow(f)
	claimed := f.ClaimedAt
	state := string(f.State)
	if f.State.Open() {
		state = "processing"
	}
	return ConsoleInboxFile{ID: f.ID, File: f.Key, Portfolio: f.PortfolioID, Kind: f.Kind, Name: f.Name, Size: f.Size,
		State: state, Attempts: f.Attempts, Reason: f.Reason, Receipt: r.Document, Latest: r.Latest, Errors: r.ErrorCount,
		ClaimedAt: &claimed, Finished: f.FinishedAt, RetriedAt: f.RetriedAt}
}

// inboxPage is one page of the console's inbox list in a state: the
// waiting objects for "pending" (paged by key), the records otherwise (paged
// by id), and the cursor of the next page.
type inboxPage struct {
	pending []pipeline.ObjectInfo
	files   []pipeline.InboxFile
	next    string
}

// inboxList reads a page of the inbox in state, after the cursor of the
// previous page (a key for pending files, a record id for the others), as
// the console API and the Eingang page list it. A portfolio that does not
// exist is NotFound.
func (s *Server) inboxList(c *gin.Context, state, portfolio string, limit int, problems *[]ingest.Problem) (inboxPage, error) {
	ctx := c.Request.Context()
	if state == "pending" {
		after := queryCursor(c, problems)
		if len(*problems) > 0 {
			return inboxPage{}, nil
		}
		if err := s.knownPortfolio(c, portfolio); err != nil {
			return inboxPage{}, err
		}
		objs, more, err := s.deps.Inbox.Pending(ctx, portfolio, after, limit)
		if err != nil {
			return inboxPage{}, err
		}
		p := inboxPage{pending: objs}
		if more && len(objs) > 0 {
			p.next = encodeCursor(objs[len(objs)-1].Key)
		}
		return p, nil
	}
	q := pipeline.InboxQuery{Portfolio: portfolio, BeforeID: queryIDCursor(c, problems), Limit: limit + 1}
	switch state {
	case "processing":
		q.States = []pipeline.InboxState{pipeline.InboxProcessing, pipeline.InboxStaged, pipeline.InboxRejecting}
	case "failed":
		q.States, q.NotRetried = []pipeline.InboxState{pipeline.InboxFailed}, true
	case "rejected":
		q.States, q.NotRetried = []pipeline.InboxState{pipeline.InboxRejected}, true
	}
	if len(*problems) > 0 {
		return inboxPage{}, nil
	}
	if err := s.knownPortfolio(c, portfolio); err != nil {
		return inboxPage{}, err
	}
	files, err := s.deps.InboxFiles.InboxFiles(ctx, q)
	if err != nil {
		return inboxPage{}, err
	}
	p := inboxPage{}
	p.files, p.next = trimPage(files, limit, func(f pipeline.InboxFile) int64 { return f.ID })
	return p, nil
}

// pendingFile is a waiting object as the console lists it: no record yet,
// so no id, attempts or reason.
func pendingFile(o pipeline.ObjectInfo) ConsoleInboxFile {
	portfolio, kind, name := splitInboxKey(o.Key)
	mod := o.Modified.UTC()
	return ConsoleInboxFile{File: o.Key, Portfolio: portfolio, Kind: kind, Name: name, Size: o.Size, State: "pending", Modified: &mod}
}

func (s *Server) getConsoleInbox(c *gin.Context) {
	var problems []ingest.Problem
	state := queryEnum(c, "state", "pending", inboxStates, &problems)
	limit := int(queryInt(c, "limit", 100, 1, 1000, &problems))
	p, err := s.inboxList(c, state, c.Query("portfolio"), limit, &problems)
	switch {
	case len(problems) > 0:
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	case err != nil:
		s.fail(c, err)
		return
	}
	items := make([]ConsoleInboxFile, 0, len(p.pending)+len(p.files))
	for _, o := range p.pending {
		items = append(items, pendingFile(o))
	}
	for _, f := range p.files {
		items = append(items, consoleInboxFile(f))
	}
	s.page(c, items, p.next)
}

// splitInboxKey names portfolio, kind and file of inbox/<portfolio>/<kind>/<name>;
// a key outside that layout (a TSO answer under inbox/tso/) names none.
func splitInboxKey(key string) (portfolio, kind, name string) {
	if parts := strings.Split(strings.TrimPrefix(key, inbox.InboxPrefix), "/"); len(parts) == 3 {
		return parts[0], parts[1], parts[2]
	}
	return "", "", ""
}

// postConsoleInboxRetry sends one failed or rejected file back into the
// inbox. The answer is 202: the next scan, woken now, processes the file as
// a new life with its own record; the old record keeps its reason.
func (s *Server) postConsoleInboxRetry(c *gin.Context) {
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	id, err := consolebody.DecodeInboxRetry(body)
	if err != nil {
		s.fail(c, err)
		return
	}
	f, err := s.deps.Inbox.Retry(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, consoleInboxFile(f))
}

// --- schedules ---

// TSOAnswer is one answer of a TSO to a schedule version, from the
// tso.answer events: kind ACK, ANO or CNF, the state it gave the version,
// and its reasons.
type TSOAnswer struct {
	EventID  int64                   `json:"event_id"`
	At       time.Time               `json:"at"`
	Kind     string                  `json:"kind"`
	Status   pipeline.ScheduleStatus `json:"status"`
	Accepted bool                    `json:"accepted"`
	File     string                  `json:"file"`
	Reasons  []inbox.AnswerReason    `json:"reasons"`
}

// ScheduleVersion is one version of a schedule message with its answers.
type ScheduleVersion struct {
	pipeline.ScheduleMessage
	Answers []TSOAnswer `json:"answers"`
}

// ScheduleThread is every version sent for one portfolio, day and control
// area, newest first.
type ScheduleThread struct {
	Portfolio   string                  `json:"portfolio"`
	ControlArea pipeline.ControlArea    `json:"control_area"`
	TSO         string                  `json:"tso"`
	Latest      int                     `json:"latest_version"`
	Status      pipeline.ScheduleStatus `json:"status"`
	Versions    []ScheduleVersion       `json:"versions"`
}

// ConsoleSchedules is the answer of GET /v1/console/schedules.
type ConsoleSchedules struct {
	Day      pipeline.Day     `json:"delivery_day"`
	Deadline time.Time        `json:"deadline"`
	Threads  []ScheduleThread `json:"schedules"`
}

// consoleDay reads the optional day of a console view; the default is
// tomorrow in Europe/Berlin, the day operators work on before 14:30.
func (s *Server) consoleDay(c *gin.Context, problems *[]ingest.Problem) pipeline.Day {
	if d, given := queryDay(c, "day", problems); given {
		return d
	}
	return pipeline.DayOf(s.now()).AddDays(1)
}

func (s *Server) getConsoleSchedules(c *gin.Context) {
	var problems []ingest.Problem
	day := s.consoleDay(c, &problems)
	portfolio := c.Query("portfolio")
	if len(problems) > 0 {
		s.fail(c, &ingest.SchemaError{Problems: problems})
		return
	}
	if err := s.knownPortfolio(c, portfolio); err != nil {
		s.fail(c, err)
		return
	}
	threads, err := s.scheduleThreads(c.Request.Context(), portfolio, day)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.cachedJSON(c, http.StatusOK, ConsoleSchedules{Day: day, Deadline: day.TSODeadline(), Threads: threads})
}

// maxAnswerEvents bounds the answers read for one day: four TSOs answer a
// few times per version, and a day has a handful of versions per portfolio.
const maxAnswerEvents = 10000

// scheduleThreads reads the messages of the day with their answers.
func (s *Server) scheduleThreads(ctx context.Context, portfolio string, day pipeline.Day) ([]ScheduleThread, error) {
	msgs, err := s.deps.Results.Schedules(ctx, portfolio, day)
	if err != nil {
		return nil, err
	}
	answers, err := s.answersOf(ctx, portfolio, day)
	if err != nil {
		return nil, err
	}
	threads := []ScheduleThread{}
	for _, m := range msgs { // ordered by portfolio, area, version descending
		n := len(threads)
		if n == 0 || threads[n-1].Portfolio != m.PortfolioID || threads[n-1].ControlArea != m.ControlArea {
			threads = append(threads, ScheduleThread{Portfolio: m.PortfolioID, ControlArea: m.ControlArea, TSO: m.Receiver,
				Latest: m.Version, Status: m.Status})
			n++
		}
		as := answers[m.ID]
		if as == nil {
			as = []TSOAnswer{}
		}
		threads[n-1].Versions = append(threads[n-1].Versions, ScheduleVersion{ScheduleMessage: m, Answers: as})
	}
	return threads, nil
}

// answersOf reads the day's TSO answers from the console feed, by the id of
// the schedule version they answer, oldest first.
func (s *Server) answersOf(ctx context.Context, portfolio string, day pipeline.Day) (map[int64][]TSOAnswer, error) {
	evs, err := s.deps.Events.Events(ctx, pipeline.EventQuery{Kind: "tso.answer", Portfolio: portfolio, Day: &day, Limit: maxAnswerEvents})
	if err != nil {
		return nil, err
	}
	out := map[int64][]TSOAnswer{}
	for _, ev := range evs {
		var d struct {
			Kind       string                  `json:"kind"`
			Status     pipeline.ScheduleStatus `json:"status"`
			Accepted   bool                    `json:"accepted"`
			File       string                  `json:"file"`
			Reasons    []inbox.AnswerReason    `json:"reasons"`
			ScheduleID int64                   `json:"schedule_id"`
		}
		if json.Unmarshal(ev.Data, &d) != nil || d.ScheduleID == 0 {
			continue // an event of another shape is not an answer to show
		}
		if d.Reasons == nil {
			d.Reasons = []inbox.AnswerReason{}
		}
		out[d.ScheduleID] = append(out[d.ScheduleID], TSOAnswer{EventID: ev.ID, At: ev.At, Kind: d.Kind, Status: d.Status,
			Accepted: d.Accepted, File: d.File, Reasons: d.Reasons})
	}
	return out, nil
}
