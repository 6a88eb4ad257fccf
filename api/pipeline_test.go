package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// --- fakes of the adapters ---

type fakeKeys map[string]pipeline.APIKey // hash -> key

func (f fakeKeys) KeyByHash(_ context.Context, hash string) (pipeline.APIKey, error) {
	if k, ok := f[hash]; ok {
		return k, nil
	}
	return pipeline.APIKey{}, pipeline.Errorf(pipeline.NotFound, "no key")
}

// TouchKey records nothing: these tests are about the pipeline routes; the
// key's last use is tested against the real store (TestKeyLastUsed).
func (f fakeKeys) TouchKey(context.Context, string, time.Time) error { return nil }

type fakePortfolios map[string]pipeline.Portfolio

func (f fakePortfolios) Portfolio(_ context.Context, id string) (pipeline.Portfolio, error) {
	if p, ok := f[id]; ok {
		return p, nil
	}
	return pipeline.Portfolio{}, pipeline.Errorf(pipeline.NotFound, "portfolio %s not found", id)
}

// fakeAudit keeps the audit trail in memory; the trade store's fake writes
// its accepted imports here too, as the real one does in its transaction.
type fakeAudit struct {
	mu      sync.Mutex
	entries []pipeline.AuditEntry
}

func (f *fakeAudit) RecordAudit(_ context.Context, a *pipeline.AuditEntry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	a.ID = int64(len(f.entries) + 1)
	f.entries = append(f.entries, *a)
	return nil
}

func (f *fakeAudit) AuditByHash(context.Context, string, string) ([]pipeline.AuditEntry, error) {
	return nil, nil
}

func (f *fakeAudit) last() pipeline.AuditEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.entries[len(f.entries)-1]
}

type runCall struct {
	stage   pipeline.Stage
	day     pipeline.Day
	trigger string
	ctxDone bool // whether the context handed to the runner can be cancelled
}

// fakeRunner answers with a programmed run and error and records its calls.
type fakeRunner struct {
	run   pipeline.Run
	err   error
	calls []runCall
}

func (f *fakeRunner) answer(ctx context.Context, st pipeline.Stage, day pipeline.Day, trigger string) (pipeline.Run, error) {
	f.calls = append(f.calls, runCall{st, day, trigger, ctx.Done() != nil})
	r := f.run
	if r.ID != 0 {
		r.Stage, r.Day, r.Trigger = st, day, trigger
	}
	return r, f.err
}

func (f *fakeRunner) RunStage(ctx context.Context, st pipeline.Stage, day pipeline.Day, trigger string) (pipeline.Run, error) {
	return f.answer(ctx, st, day, trigger)
}

func (f *fakeRunner) Orchestrate(ctx context.Context, day pipeline.Day, trigger string) (pipeline.Run, error) {
	return f.answer(ctx, pipeline.StageChain, day, trigger)
}

// fakeResults serves what "published" holds; a day without a run is
// NotFound, as the store answers.
type fakeResults struct {
	posRun    map[pipeline.Day]int64
	positions []pipeline.PositionRow
	openRun   map[pipeline.Day]int64
	open      []pipeline.OpenPositionRow
	schedules []pipeline.ScheduleMessage
	runs      []pipeline.Run
	queries   []pipeline.RunQuery
}

func (f *fakeResults) Positions(_ context.Context, portfolio string, day pipeline.Day) (int64, []pipeline.PositionRow, error) {
	id, ok := f.posRun[day]
	if !ok {
		return 0, nil, pipeline.Errorf(pipeline.NotFound, "no positions")
	}
	var out []pipeline.PositionRow
	for _, r := range f.positions {
		if portfolio == "" || r.Portfolio == portfolio {
			out = append(out, r)
		}
	}
	return id, out, nil
}

func (f *fakeResults) OpenPosition(_ context.Context, portfolio string, day pipeline.Day) (int64, []pipeline.OpenPositionRow, error) {
	id, ok := f.openRun[day]
	if !ok {
		return 0, nil, pipeline.Errorf(pipeline.NotFound, "no open position")
	}
	var out []pipeline.OpenPositionRow
	for _, r := range f.open {
		if portfolio == "" || r.Portfolio == portfolio {
			out = append(out, r)
		}
	}
	return id, out, nil
}

func (f *fakeResults) Schedules(_ context.Context, portfolio string, day pipeline.Day) ([]pipeline.ScheduleMessage, error) {
	var out []pipeline.ScheduleMessage
	for _, m := range f.schedules {
		if m.Day == day && (portfolio == "" || m.PortfolioID == portfolio) {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeResults) Runs(_ context.Context, q pipeline.RunQuery) ([]pipeline.Run, error) {
	f.queries = append(f.queries, q)
	var out []pipeline.Run
	for _, r := range slices.Backward(f.runs) { // newest first
		switch {
		case q.Day != nil && r.Day != *q.Day, q.Stage != "" && r.Stage != q.Stage,
			q.ParentID != nil && (r.ParentID == nil || *r.ParentID != *q.ParentID):
			continue
		}
		if len(out) < q.Limit {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeResults) Run(_ context.Context, id int64) (pipeline.Run, error) {
	for _, r := range f.runs {
		if r.ID == id {
			return r, nil
		}
	}
	return pipeline.Run{}, pipeline.Errorf(pipeline.NotFound, "run %d not found", id)
}

// fakeTrades keeps one current set per portfolio and day with a version
// that grows when the canonical content changes.
type fakeTrades struct {
	audit *fakeAudit
	sets  map[string]storedTrades
}

type storedTrades struct {
	set       pipeline.TradeSet
	canonical []byte
	version   int
}

func (f *fakeTrades) StageTrades(ctx context.Context, a *pipeline.AuditEntry, set pipeline.TradeSet, canonical []byte) (pipeline.StageResult, error) {
	k := set.Portfolio + "/" + set.Day.String()
	cur, ok := f.sets[k]
	res := pipeline.StageResult{Version: cur.version}
	switch {
	case !ok:
		res.Created, res.Version = 1, 1
	case bytes.Equal(cur.canonical, canonical):
		res.Unchanged = 1
	default:
		res.Replaced, res.Version = 1, cur.version+1
	}
	res.Tally()
	f.sets[k] = storedTrades{set, canonical, res.Version}
	a.Outcome = string(res.Status)
	return res, f.audit.RecordAudit(ctx, a)
}

func (f *fakeTrades) Trades(_ context.Context, portfolio string, day pipeline.Day) (pipeline.TradeSet, int, error) {
	cur, ok := f.sets[portfolio+"/"+day.String()]
	if !ok {
		return pipeline.TradeSet{}, 0, pipeline.Errorf(pipeline.NotFound, "no trades")
	}
	return cur.set, cur.version, nil
}

// fakeEvents records the query it was asked.
type fakeEvents struct {
	got pipeline.EventQuery
	evs []pipeline.Event
}

func (f *fakeEvents) Events(_ context.Context, q pipeline.EventQuery) ([]pipeline.Event, error) {
	f.got = q
	return f.evs, nil
}

type fakeDB struct{}

func (fakeDB) Ping(context.Context) error { return nil }

// --- the fixture ---

// Wednesday 2026-11-25 08:00 in Berlin: the day-ahead target is the 26th.
var pipeNow = time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)

var (
	day24 = pipeline.NewDay(2026, 11, 24)
	day26 = pipeline.NewDay(2026, 11, 26)
)

type pipeFixture struct {
	srv     *api.Server
	clock   time.Time
	runner  *fakeRunner
	results *fakeResults
	trades  *fakeTrades
	events  *fakeEvents
	audit   *fakeAudit
}

var pipeKeys = map[string]pipeline.APIKey{
	"process": {ID: "key_process", Scope: pipeline.ScopeProcess},
	"report1": {ID: "key_report1", Scope: pipeline.ScopeReport, PortfolioID: "p1"},
	"data1":   {ID: "key_data1", Scope: pipeline.ScopeData, PortfolioID: "p1"},
	"mobile":  {ID: "key_mobile", Scope: pipeline.ScopeMobile},
}

func newPipeFixture(t *testing.T, wired bool) *pipeFixture {
	t.Helper()
	keys := fakeKeys{}
	for name, k := range pipeKeys {
		keys[pipeline.HashKey("sbk_"+name)] = k
	}
	ports := fakePortfolios{
		"p1": {ID: "p1", Name: "One", ControlAreas: []pipeline.ControlArea{pipeline.TenneT, pipeline.FiftyHertz}},
		"p2": {ID: "p2", Name: "Two", ControlAreas: []pipeline.ControlArea{pipeline.Amprion}},
	}
	f := &pipeFixture{clock: pipeNow, audit: &fakeAudit{}, events: &fakeEvents{}}
	f.runner = &fakeRunner{}
	f.results = samplResults()
	f.trades = &fakeTrades{audit: f.audit, sets: map[string]storedTrades{}}
	deps := api.Deps{Keys: keys, Portfolios: ports, Audit: f.audit, DB: fakeDB{}}
	if wired {
		deps.Runner, deps.Results, deps.Trades, deps.Events = f.runner, f.results, f.trades, f.events
	}
	f.srv = api.New(api.Config{
		Now:    func() time.Time { return f.clock },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, deps)
	return f
}

func (f *pipeFixture) as(key, method, path string, body []byte) response {
	// A client's context can be cancelled (it is when the connection
	// drops); commands must not hand it on to the runner.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, method, path, bytes.NewReader(body))
	if key != "" {
		req.Header.Set("X-API-Key", "sbk_"+key)
	}
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, req)
	return response{rec.Code, rec.Header(), rec.Body.Bytes()}
}

func ptr[T any](v T) *T { return &v }

// samplResults is a published aggregate and open-position run for the 24th
// (run 41 and 42) over four quarter-hours of two portfolios, schedules in
// two versions, and a chain with its stage runs.
func samplResults() *fakeResults {
	ts := day24.QuarterStartsMicros()
	r := &fakeResults{posRun: map[pipeline.Day]int64{day24: 41}, openRun: map[pipeline.Day]int64{day24: 42}}
	// Stored out of order, as a database may return them.
	for _, qh := range []int{3, 1, 0, 2} {
		at := time.UnixMicro(ts[qh]).UTC()
		r.positions = append(r.positions,
			pipeline.PositionRow{Portfolio: "p2", ControlArea: pipeline.Amprion, QH: qh, TS: at, ConsumptionMW: 4, ProductionMW: 0, NetMW: 4, Source: "submitted"},
			pipeline.PositionRow{Portfolio: "p1", ControlArea: pipeline.TenneT, QH: qh, TS: at, ConsumptionMW: 10 + float64(qh), ProductionMW: 2, NetMW: 8 + float64(qh), Source: "generated"},
			pipeline.PositionRow{Portfolio: "p1", ControlArea: pipeline.FiftyHertz, QH: qh, TS: at, ConsumptionMW: 0.1, ProductionMW: 0.2, NetMW: -0.1, Source: "generated"},
		)
		r.open = append(r.open,
			pipeline.OpenPositionRow{Portfolio: "p1", ControlArea: pipeline.TenneT, QH: qh, TS: at, NetMW: 8, BoughtMW: 5, SoldMW: 1, OpenMW: 4},
			pipeline.OpenPositionRow{Portfolio: "p2", ControlArea: pipeline.Amprion, QH: qh, TS: at, NetMW: 4, BoughtMW: 6, SoldMW: 0, OpenMW: -2},
		)
	}
	sent := time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)
	msg := func(id int64, portfolio string, area pipeline.ControlArea, version int, status pipeline.ScheduleStatus, run int64) pipeline.ScheduleMessage {
		bg := "11XSB-" + strings.ToUpper(portfolio) + "-------1"
		name := fmt.Sprintf("20261124_TPS_%s_10XDE-EON-NETZ-C_%03d.XML", bg, version)
		m := pipeline.ScheduleMessage{ID: id, PortfolioID: portfolio, Day: day24, ControlArea: area,
			MessageID: "SB-" + portfolio + "-" + string(area), Version: version, FileName: name, ObjectKey: "outbox/" + name,
			ContentHash: fmt.Sprintf("hash%d", id), Sender: bg, Receiver: "10XDE-EON-NETZ-C",
			RunID: run, Status: status, SentAt: sent.Add(time.Duration(version) * time.Hour)}
		if status != pipeline.ScheduleSubmitted {
			m.AnswerKind = map[pipeline.ScheduleStatus]string{pipeline.ScheduleAnomaly: "ANO", pipeline.ScheduleConfirmed: "CNF"}[status]
			m.AnswerAt = ptr(m.SentAt.Add(10 * time.Minute))
			m.AnswerKey = "inbox/tso/" + name + "_" + m.AnswerKind
			if status == pipeline.ScheduleAnomaly {
				m.AnswerDetail = "time series differs from the counterpart's"
			}
		}
		return m
	}
	r.schedules = []pipeline.ScheduleMessage{
		msg(1, "p1", pipeline.TenneT, 1, pipeline.ScheduleAnomaly, 43),
		msg(3, "p2", pipeline.Amprion, 1, pipeline.ScheduleSubmitted, 43),
		msg(2, "p1", pipeline.TenneT, 2, pipeline.ScheduleConfirmed, 45),
	}
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	run := func(id int64, parent *int64, st pipeline.Stage, status pipeline.RunStatus) pipeline.Run {
		fin := start.Add(time.Duration(id) * time.Minute)
		return pipeline.Run{ID: id, ParentID: parent, Stage: st, Day: day24, Status: status, Trigger: "cron", Attempt: 1,
			StartedAt: start, FinishedAt: &fin, Outputs: json.RawMessage(`{"rows":4}`)}
	}
	r.runs = []pipeline.Run{
		run(39, nil, pipeline.StageChain, pipeline.RunSucceeded),
		run(40, ptr(int64(39)), pipeline.StageForecast, pipeline.RunSucceeded),
		run(41, ptr(int64(39)), pipeline.StageAggregate, pipeline.RunSucceeded),
		run(42, ptr(int64(39)), pipeline.StageOpenPosition, pipeline.RunSucceeded),
		run(43, ptr(int64(39)), pipeline.StageSchedules, pipeline.RunSucceeded),
		run(44, nil, pipeline.StageAggregate, pipeline.RunFailed),
	}
	r.runs[5].Day = day26
	return r
}

// golden compares an answer body with testdata/<name> (indented JSON).
func golden(t *testing.T, name string, body []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		t.Fatalf("%s: %v: %s", name, err, body)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs from the golden file:\n%s", name, buf.Bytes())
	}
}

// problems decodes a 422 body of the 2.13 shape.
func problems(t *testing.T, r response) []ingest.Problem {
	t.Helper()
	var body struct {
		Detail []ingest.Problem `json:"detail"`
	}
	if r.code != 422 {
		t.Fatalf("status %d, want 422: %s", r.code, r.body)
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("422 body %s: %v", r.body, err)
	}
	return body.Detail
}

// problemLine is a problem in one comparable line.
func problemLine(p ingest.Problem) string {
	in, _ := json.Marshal(p.Input)
	return fmt.Sprintf("%s %s %s | %s", strings.Join(p.Loc, "."), p.Type, in, p.Msg)
}

func problemLines(ps []ingest.Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = problemLine(p)
		if p.Ctx == nil {
			out[i] += " (ctx is nil)"
		}
	}
	return out
}

// --- tests ---

func TestPipelineCredentials(t *testing.T) {
	f := newPipeFixture(t, true)
	f.trades.sets["p1/2026-11-24"] = storedTrades{set: pipeline.TradeSet{Portfolio: "p1", Day: day24}, version: 1}
	f.runner.run = pipeline.Run{ID: 7, Status: pipeline.RunSucceeded}
	tests := []struct {
		key, method, path string
		want              int
		detail            string
	}{
		{"", "GET", "/v1/process/positions?day=2026-11-24", 401, "missing credential: send an API key in the X-API-Key header or an access token as Authorization: Bearer"},
		{"nobody", "GET", "/v1/process/positions?day=2026-11-24", 401, "invalid API key"},
		{"process", "GET", "/v1/process/positions?day=2026-11-24", 200, ""},
		{"process", "GET", "/v1/process/positions?day=2026-11-24&portfolio=p2", 200, ""},
		{"report1", "GET", "/v1/process/positions?day=2026-11-24", 200, ""},
		{"report1", "GET", "/v1/process/positions?day=2026-11-24&portfolio=p1", 200, ""},
		{"report1", "GET", "/v1/process/positions?day=2026-11-24&portfolio=p2", 403, "key key_report1 may read portfolio p1 only"},
		{"report1", "GET", "/v1/process/positions?day=bad&portfolio=p2", 403, "key key_report1 may read portfolio p1 only"},
		{"data1", "GET", "/v1/process/positions?day=2026-11-24", 403, "this endpoint needs a process or report key; key key_data1 has scope data"},
		{"mobile", "GET", "/v1/process/positions?day=2026-11-24", 403, "this endpoint needs a process or report key; key key_mobile has scope mobile"},
		{"report1", "GET", "/v1/process/open-position?day=2026-11-24", 200, ""},
		{"report1", "GET", "/v1/process/open-position?day=2026-11-24&portfolio=p2", 403, "key key_report1 may read portfolio p1 only"},
		{"data1", "GET", "/v1/process/open-position?day=2026-11-24", 403, "this endpoint needs a process or report key; key key_data1 has scope data"},
		{"report1", "GET", "/v1/process/schedules?day=2026-11-24", 200, ""},
		{"report1", "GET", "/v1/process/schedules?day=2026-11-24&portfolio=p2", 403, "key key_report1 may read portfolio p1 only"},
		{"mobile", "GET", "/v1/process/schedules?day=2026-11-24", 403, "this endpoint needs a process or report key; key key_mobile has scope mobile"},
		{"report1", "GET", "/v1/process/trades?day=2026-11-24", 200, ""},
		{"report1", "GET", "/v1/process/trades?day=2026-11-24&portfolio=p2", 403, "key key_report1 may read portfolio p1 only"},
		{"process", "GET", "/v1/process/trades?day=2026-11-24&portfolio=p1", 200, ""},
		{"data1", "GET", "/v1/process/trades?day=2026-11-24", 403, "this endpoint needs a process or report key; key key_data1 has scope data"},
		// Run records span all portfolios, and commands and imports change
		// things: process keys only.
		{"process", "GET", "/v1/process/runs", 200, ""},
		{"report1", "GET", "/v1/process/runs", 403, "this endpoint needs a process key; key key_report1 has scope report"},
		{"report1", "GET", "/v1/process/runs/39", 403, "this endpoint needs a process key; key key_report1 has scope report"},
		{"report1", "POST", "/v1/process/stages/aggregate", 403, "this endpoint needs a process key; key key_report1 has scope report"},
		{"data1", "POST", "/v1/process/orchestrate", 403, "this endpoint needs a process key; key key_data1 has scope data"},
		{"report1", "PUT", "/v1/process/trades?day=2026-11-24", 403, "this endpoint needs a process key; key key_report1 has scope report"},
		{"", "POST", "/v1/process/stages/aggregate", 401, "missing credential: send an API key in the X-API-Key header or an access token as Authorization: Bearer"},
		{"report1", "GET", "/v1/console/events", 403, "this endpoint needs a process key; key key_report1 has scope report"},
	}
	for _, tt := range tests {
		r := f.as(tt.key, tt.method, tt.path, nil)
		if r.code != tt.want {
			t.Errorf("%s %s as %q: %d, want %d: %s", tt.method, tt.path, tt.key, r.code, tt.want, r.body)
			continue
		}
		if tt.detail != "" {
			if got := r.json(t)["detail"]; got != tt.detail {
				t.Errorf("%s %s as %q: detail %q, want %q", tt.method, tt.path, tt.key, got, tt.detail)
			}
		}
	}
	// The report key's reads are about its own portfolio only.
	r := f.as("report1", "GET", "/v1/process/positions?day=2026-11-24", nil)
	var rep api.PositionsReport
	if err := json.Unmarshal(r.body, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Portfolio != "p1" || len(rep.Areas) != 2 || rep.Areas[0].Portfolio != "p1" || rep.Areas[1].Portfolio != "p1" {
		t.Errorf("report key sees %+v", rep)
	}
	// Refused trade requests are in the audit trail with the key.
	if e := f.audit.last(); e.Endpoint != "PUT /v1/process/trades" || e.Outcome != "forbidden" || e.KeyID != "key_report1" || e.PortfolioID != "p1" {
		t.Errorf("audit of the refused import: %+v", e)
	}
}

func TestPipelineResultDocuments(t *testing.T) {
	f := newPipeFixture(t, true)
	tests := []struct {
		key, path, golden string
	}{
		{"process", "/v1/process/positions?day=2026-11-24", "pipeline/positions.json"},
		{"process", "/v1/process/positions?day=2026-11-24&portfolio=p2", "pipeline/positions_p2.json"},
		{"process", "/v1/process/open-position?day=2026-11-24", "pipeline/open_position.json"},
		{"report1", "/v1/process/schedules?day=2026-11-24", "pipeline/schedules_p1.json"},
		{"process", "/v1/process/runs/39", "pipeline/run_chain.json"},
		{"process", "/v1/process/runs?day=2026-11-24&stage=aggregate", "pipeline/runs_aggregate.json"},
	}
	for _, tt := range tests {
		r := f.as(tt.key, "GET", tt.path, nil)
		if r.code != 200 {
			t.Errorf("%s: %d %s", tt.path, r.code, r.body)
			continue
		}
		golden(t, tt.golden, r.body)
	}

	// The figures the golden files hold, checked by meaning: sorted by
	// portfolio, area and quarter-hour, and the day's energy in MWh.
	var pos api.PositionsReport
	json.Unmarshal(f.as("process", "GET", "/v1/process/positions?day=2026-11-24", nil).body, &pos)
	if pos.RunID != 41 || pos.Intervals != 96 || pos.Portfolio != "" || len(pos.Areas) != 3 {
		t.Fatalf("positions: %+v", pos)
	}
	tennet := pos.Areas[1]
	if tennet.Portfolio != "p1" || tennet.ControlArea != pipeline.TenneT || tennet.Source != "generated" || len(tennet.Series) != 4 {
		t.Fatalf("p1 TenneT: %+v", tennet)
	}
	for i, p := range tennet.Series {
		if p.QH != i || !p.TS.Equal(time.Date(2026, 11, 23, 23, 15*i, 0, 0, time.UTC)) {
			t.Errorf("point %d: %+v", i, p)
		}
	}
	// (10+11+12+13) MW x 0.25 h = 11.5 MWh; 4 x 2 MW x 0.25 h = 2 MWh.
	if tennet.Totals != (api.PositionTotals{ConsumptionMWh: 11.5, ProductionMWh: 2, NetMWh: 9.5}) {
		t.Errorf("p1 TenneT totals: %+v", tennet.Totals)
	}
	// 4 x 0.1 MW x 0.25 h is 0.1 MWh, not 0.10000000000000002.
	if got := pos.Areas[0].Totals; pos.Areas[0].ControlArea != pipeline.FiftyHertz || got.ConsumptionMWh != 0.1 || got.NetMWh != -0.1 {
		t.Errorf("p1 50Hertz totals: %+v", got)
	}
	var open api.OpenPositionReport
	json.Unmarshal(f.as("process", "GET", "/v1/process/open-position?day=2026-11-24&portfolio=p2", nil).body, &open)
	if open.RunID != 42 || open.Portfolio != "p2" || len(open.Areas) != 1 ||
		open.Areas[0].Totals != (api.OpenPositionTotals{NetMWh: 4, BoughtMWh: 6, SoldMWh: 0, OpenMWh: -2}) {
		t.Errorf("open position p2: %+v", open)
	}
	var sch api.SchedulesReport
	json.Unmarshal(f.as("process", "GET", "/v1/process/schedules?day=2026-11-24", nil).body, &sch)
	if len(sch.Areas) != 2 || sch.Areas[0].Version != 2 || sch.Areas[0].Status != pipeline.ScheduleConfirmed ||
		len(sch.Areas[0].Versions) != 2 || sch.Areas[0].Versions[1].Version != 1 || sch.Areas[1].PortfolioID != "p2" {
		t.Errorf("schedules: %+v", sch)
	}
	var chain api.RunDetail
	json.Unmarshal(f.as("process", "GET", "/v1/process/runs/39", nil).body, &chain)
	var order []pipeline.Stage
	for _, s := range chain.Stages {
		order = append(order, s.Stage)
	}
	if !slices.Equal(order, pipeline.Stages) {
		t.Errorf("chain stages in order %v", order)
	}
	if q := f.results.queries[len(f.results.queries)-1]; q.ParentID == nil || *q.ParentID != 39 {
		t.Errorf("stage runs asked with %+v", q)
	}
	// A stage run has no stages of its own.
	if r := f.as("process", "GET", "/v1/process/runs/41", nil); r.code != 200 || strings.Contains(string(r.body), `"stages"`) {
		t.Errorf("stage run: %d %s", r.code, r.body)
	}
}

func TestPipelineNotFoundAndUnavailable(t *testing.T) {
	f := newPipeFixture(t, true)
	tests := []struct {
		key, method, path string
		want              int
		detail            string
	}{
		{"process", "GET", "/v1/process/positions?day=2026-11-25", 404, "no run has published positions for 2026-11-25 yet"},
		{"report1", "GET", "/v1/process/positions?day=2026-11-25", 404, "no run has published positions of portfolio p1 for 2026-11-25 yet"},
		{"process", "GET", "/v1/process/open-position?day=2026-11-25", 404, "no run has published the open position for 2026-11-25 yet"},
		{"process", "GET", "/v1/process/schedules?day=2026-11-25", 404, "no run has sent schedules for 2026-11-25 yet"},
		{"process", "GET", "/v1/process/schedules?day=2026-11-24&portfolio=p9", 404, "portfolio p9 does not exist"},
		{"process", "GET", "/v1/process/runs/999", 404, "run 999 not found"},
		{"process", "GET", "/v1/process/trades?day=2026-11-24&portfolio=p1", 404, "no trades imported for portfolio p1 and 2026-11-24"},
		{"process", "PUT", "/v1/process/trades?day=2026-11-24&portfolio=p9", 404, "portfolio p9 does not exist"},
		{"process", "GET", "/v1/process/nothing", 404, "Not Found"},
	}
	for _, tt := range tests {
		r := f.as(tt.key, tt.method, tt.path, []byte(`{"trades":[]}`))
		if r.code != tt.want || r.json(t)["detail"] != tt.detail {
			t.Errorf("%s %s: %d %s, want %d %q", tt.method, tt.path, r.code, r.body, tt.want, tt.detail)
		}
	}

	// A server without the pipeline's adapters answers 503 after checking
	// the key, like the other optional routes.
	bare := newPipeFixture(t, false)
	for _, tt := range []struct{ method, path, detail string }{
		{"GET", "/v1/process/positions?day=2026-11-24", "this server runs without the pipeline results"},
		{"GET", "/v1/process/runs", "this server runs without the pipeline results"},
		{"POST", "/v1/process/stages/forecast", "this server runs without the pipeline runner"},
		{"POST", "/v1/process/orchestrate", "this server runs without the pipeline runner"},
		{"PUT", "/v1/process/trades?day=2026-11-24&portfolio=p1", "this server runs without the trade store"},
		{"GET", "/v1/console/events", "this server runs without the console feed"},
		{"GET", "/v1/process/inbox", "this server runs without the inbox"},
		{"GET", "/v1/console/summary", "this server runs without the pipeline results"},
		{"GET", "/v1/console/runs", "this server runs without the pipeline results"},
		{"POST", "/v1/console/runs", "this server runs without the pipeline runner"},
		{"POST", "/v1/console/runs/1/retry", "this server runs without the pipeline runner"},
		{"GET", "/v1/console/inbox", "this server runs without the inbox"},
		{"POST", "/v1/console/inbox/retry", "this server runs without the inbox"},
		{"GET", "/v1/console/events/stream", "this server runs without the console feed"},
		{"mobile GET", "/v1/mobile/summary", "this server runs without the pipeline results"},
	} {
		key := "process"
		if m, ok := strings.CutPrefix(tt.method, "mobile "); ok {
			key, tt.method = "mobile", m
		}
		r := bare.as(key, tt.method, tt.path, nil)
		if r.code != 503 || r.json(t)["detail"] != tt.detail || r.header.Get("Retry-After") == "" {
			t.Errorf("unwired %s %s: %d %s", tt.method, tt.path, r.code, r.body)
		}
		if r := bare.as("", tt.method, tt.path, nil); r.code != 401 {
			t.Errorf("unwired %s %s without key: %d", tt.method, tt.path, r.code)
		}
	}
}

func TestPipelineParameterProblems(t *testing.T) {
	f := newPipeFixture(t, true)
	const stageMsg = "Input should be 'forecast', 'aggregate', 'open-position', 'schedules' or 'kalkulation'"
	tests := []struct {
		key, method, path string
		want              []string
	}{
		{"process", "GET", "/v1/process/positions", []string{`query.day missing null | Field required`}},
		{"process", "GET", "/v1/process/positions?day=2026-11-2", []string{
			`query.day date_from_datetime_parsing "2026-11-2" | Input should be a valid date or datetime, input is too short`}},
		{"process", "GET", "/v1/process/open-position?day=2026-13-01", []string{
			`query.day date_from_datetime_parsing "2026-13-01" | Input should be a valid date or datetime, month value is outside expected range of 1-12`}},
		{"report1", "GET", "/v1/process/schedules?day=2026-11-24T00:00:00", []string{
			`query.day date_parsing "2026-11-24T00:00:00" | Input should be a valid date in the format YYYY-MM-DD, unexpected extra characters at the end of the input`}},
		{"process", "POST", "/v1/process/stages/publish?day=24.11.2026", []string{
			`path.stage enum "publish" | ` + stageMsg,
			`query.day date_from_datetime_parsing "24.11.2026" | Input should be a valid date or datetime, invalid character in year`}},
		{"process", "POST", "/v1/process/stages/Aggregate", []string{`path.stage enum "Aggregate" | ` + stageMsg}},
		{"process", "POST", "/v1/process/stages/chain", []string{`path.stage enum "chain" | ` + stageMsg}},
		{"process", "POST", "/v1/process/orchestrate?day=", []string{
			`query.day date_from_datetime_parsing "" | Input should be a valid date or datetime, input is too short`}},
		{"process", "GET", "/v1/process/runs?limit=0&stage=publish&day=x", []string{
			`query.limit greater_than_equal "0" | Input should be greater than or equal to 1`,
			`query.day date_from_datetime_parsing "x" | Input should be a valid date or datetime, input is too short`,
			`query.stage enum "publish" | Input should be 'forecast', 'aggregate', 'open-position', 'schedules', 'kalkulation' or 'chain'`}},
		{"process", "GET", "/v1/process/runs?limit=1001", []string{`query.limit less_than_equal "1001" | Input should be less than or equal to 1000`}},
		{"process", "GET", "/v1/process/runs/abc", []string{
			`path.id int_parsing "abc" | Input should be a valid integer, unable to parse string as an integer`}},
		{"process", "GET", "/v1/process/runs/0", []string{`path.id greater_than_equal "0" | Input should be greater than or equal to 1`}},
		{"process", "PUT", "/v1/process/trades", []string{`query.portfolio missing null | Field required`, `query.day missing null | Field required`}},
		{"process", "PUT", "/v1/process/trades?portfolio=&day=1", []string{
			`query.portfolio string_too_short "" | String should have at least 1 character`,
			`query.day date_from_datetime_parsing "1" | Input should be a valid date or datetime, input is too short`}},
		{"process", "GET", "/v1/process/trades?day=2026-11-24", []string{`query.portfolio missing null | Field required`}},
		{"process", "GET", "/v1/console/events?from=yesterday&to=2026-11-24T00:00:00&day=2026-02-30&limit=0&after_id=-1", []string{
			`query.after_id greater_than_equal "-1" | Input should be greater than or equal to 0`,
			`query.limit greater_than_equal "0" | Input should be greater than or equal to 1`,
			`query.from datetime_from_date_parsing "yesterday" | Input should be a valid datetime or date, input is too short`,
			`query.to timezone_aware "2026-11-24T00:00:00" | Input should have timezone info`,
			`query.day date_from_datetime_parsing "2026-02-30" | Input should be a valid date or datetime, day value is outside expected range`}},
		{"process", "GET", "/v1/console/events?from=2026-11-24T00:00:00Z&to=2026-11-24T01:00:00%2B01:00", []string{
			`query.to value_error "2026-11-24T01:00:00+01:00" | Value error, to must be after from`}},
		{"process", "GET", "/v1/console/events?from=2026-11-24T00:00:00Z&to=2026-11-24T00:00:00Zulu", []string{
			`query.to datetime_from_date_parsing "2026-11-24T00:00:00Zulu" | Input should be a valid datetime or date, invalid time or timezone, expected an RFC 3339 date-time such as 2026-11-24T00:00:00+01:00`}},
		{"process", "GET", "/v1/console/events?after=x", []string{
			`query.after int_parsing "x" | Input should be a valid integer, unable to parse string as an integer`}},
	}
	for _, tt := range tests {
		r := f.as(tt.key, tt.method, tt.path, nil)
		if r.code != 422 {
			t.Errorf("%s %s: %d %s", tt.method, tt.path, r.code, r.body)
			continue
		}
		if got := problemLines(problems(t, r)); !slices.Equal(got, tt.want) {
			t.Errorf("%s %s:\n got %q\nwant %q", tt.method, tt.path, got, tt.want)
		}
	}
	if len(f.runner.calls) != 0 {
		t.Errorf("a refused command ran: %+v", f.runner.calls)
	}
}

func TestPipelineCommands(t *testing.T) {
	started := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	finished := started.Add(time.Minute)
	ok := pipeline.Run{ID: 50, Status: pipeline.RunSucceeded, Attempt: 1, StartedAt: started, FinishedAt: &finished}
	failed := pipeline.Run{ID: 51, Status: pipeline.RunFailed, Attempt: 1, StartedAt: started, FinishedAt: &finished,
		Error: "stage aggregate 2026-11-26: no complete forecast_malo snapshot for 2026-11-26: run the forecast stage first"}
	tests := []struct {
		name       string
		clock      time.Time
		path       string
		run        pipeline.Run
		err        error
		want       int
		wantStage  pipeline.Stage
		wantDay    pipeline.Day
		detail     string
		retryAfter bool
	}{
		{"stage, day given", pipeNow, "/v1/process/stages/open-position?day=2026-11-24", ok, nil, 200, pipeline.StageOpenPosition, day24, "", false},
		// 08:00 in Berlin on the 25th: tomorrow is the 26th.
		{"stage, default day", pipeNow, "/v1/process/stages/forecast", ok, nil, 200, pipeline.StageForecast, day26, "", false},
		// 23:30 UTC on the 25th is already the 26th in Berlin: tomorrow is the 27th.
		{"default day after Berlin midnight", time.Date(2026, 11, 25, 23, 30, 0, 0, time.UTC), "/v1/process/stages/schedules",
			ok, nil, 200, pipeline.StageSchedules, pipeline.NewDay(2026, 11, 27), "", false},
		// 21:30 UTC on 28 March is 22:30 CET: tomorrow is the spring-forward day.
		{"default day before the DST switch", time.Date(2026, 3, 28, 21, 30, 0, 0, time.UTC), "/v1/process/orchestrate",
			ok, nil, 200, pipeline.StageChain, pipeline.NewDay(2026, 3, 29), "", false},
		{"prerequisite missing", pipeNow, "/v1/process/stages/aggregate", failed,
			fmt.Errorf("stage aggregate 2026-11-26: %w", pipeline.Errorf(pipeline.NotFound, "no complete forecast_malo snapshot for 2026-11-26: run the forecast stage first")),
			409, pipeline.StageAggregate, day26,
			"run 51 (aggregate 2026-11-26) failed: no complete forecast_malo snapshot for 2026-11-26: run the forecast stage first", false},
		{"invalid data", pipeNow, "/v1/process/stages/schedules", failed,
			pipeline.Errorf(pipeline.Invalid, "portfolio p1 has no balancing group"), 409, pipeline.StageSchedules, day26,
			"run 51 (schedules 2026-11-26) failed: portfolio p1 has no balancing group", false},
		{"object store down", pipeNow, "/v1/process/stages/schedules", failed,
			pipeline.Errorf(pipeline.Unavailable, "object store unreachable"), 503, pipeline.StageSchedules, day26,
			"run 51 (schedules 2026-11-26) failed: object store unreachable", true},
		{"internal fault", pipeNow, "/v1/process/orchestrate?day=2026-11-24", failed,
			fmt.Errorf("write parquet: disk full"), 500, pipeline.StageChain, day24,
			"run 51 (chain 2026-11-24) failed: internal error", false},
		{"no run recorded", pipeNow, "/v1/process/stages/forecast", pipeline.Run{},
			pipeline.Errorf(pipeline.Unavailable, "database unreachable"), 503, pipeline.StageForecast, day26, "database unreachable", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newPipeFixture(t, true)
			f.clock = tt.clock
			f.runner.run, f.runner.err = tt.run, tt.err
			r := f.as("process", "POST", tt.path, nil)
			if r.code != tt.want {
				t.Fatalf("status %d, want %d: %s", r.code, tt.want, r.body)
			}
			if len(f.runner.calls) != 1 {
				t.Fatalf("runner calls: %+v", f.runner.calls)
			}
			call := f.runner.calls[0]
			if call.stage != tt.wantStage || call.day != tt.wantDay || call.trigger != "api" || call.ctxDone {
				t.Errorf("runner called with %+v, want %s %s by api on a context no client can cancel", call, tt.wantStage, tt.wantDay)
			}
			if got := r.header.Get("Retry-After") != ""; got != tt.retryAfter {
				t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
			}
			switch {
			case tt.want == 200:
				var d api.RunDetail
				if err := json.Unmarshal(r.body, &d); err != nil || d.ID != tt.run.ID || d.Status != pipeline.RunSucceeded ||
					d.Stage != tt.wantStage || d.Day != tt.wantDay || d.Trigger != "api" {
					t.Errorf("run: %s", r.body)
				}
			case tt.run.ID != 0:
				var fail api.RunFailure
				if err := json.Unmarshal(r.body, &fail); err != nil || fail.Detail != tt.detail || fail.Run.ID != tt.run.ID ||
					fail.Run.Status != pipeline.RunFailed || fail.Run.Error != tt.run.Error {
					t.Errorf("failure body: %s\nwant detail %q", r.body, tt.detail)
				}
			default:
				if got := r.json(t); got["detail"] != tt.detail || got["run"] != nil {
					t.Errorf("failure without run: %s", r.body)
				}
			}
		})
	}

	// A chain answers with its stage runs in chain order.
	f := newPipeFixture(t, true)
	f.runner.run = f.results.runs[0]
	r := f.as("process", "POST", "/v1/process/orchestrate?day=2026-11-24", nil)
	var d api.RunDetail
	if err := json.Unmarshal(r.body, &d); err != nil || r.code != 200 || d.ID != 39 || len(d.Stages) != 4 || d.Stages[0].Stage != pipeline.StageForecast {
		t.Errorf("orchestrate: %d %s", r.code, r.body)
	}
}

func tradesBody(n int, extra string) []byte {
	return []byte(fmt.Sprintf(`{"trades":[
		{"control_area":"TenneT","counterparty":"11XSELLER-GMBH-1","direction":"buy","values":%s},
		{"control_area":"50Hertz","counterparty":"11XBUYER--AG---2","direction":"sell","unit":"MWH","values":%s}]%s}`,
		values(n, 2.5), values(n, 0.25), extra))
}

func TestPipelineTrades(t *testing.T) {
	f := newPipeFixture(t, true)
	put := func(path string, body []byte) (response, map[string]any) {
		r := f.as("process", "PUT", path, body)
		var m map[string]any
		json.Unmarshal(r.body, &m)
		return r, m
	}
	const path = "/v1/process/trades?day=2026-11-24&portfolio=p1"
	r, ack := put(path, tradesBody(96, `,"validate_only":true`))
	if r.code != 200 || ack["status"] != "validated" || ack["portfolio"] != "p1" || ack["delivery_day"] != "2026-11-24" || ack["version"] != nil {
		t.Fatalf("validate_only: %d %s", r.code, r.body)
	}
	hash := ack["input_hash"]
	if len(f.trades.sets) != 0 || f.audit.last().Outcome != "validated" {
		t.Errorf("validate_only stored: %v, audit %+v", f.trades.sets, f.audit.last())
	}

	r, ack = put(path, tradesBody(96, ""))
	counts, _ := ack["counts"].(map[string]any)
	if r.code != 200 || ack["status"] != "created" || ack["version"] != 1.0 || ack["input_hash"] != hash ||
		ack["received_at"] != "2026-11-25T07:00:00Z" || counts["trades"] != 2.0 || counts["values"] != 192.0 || counts["created"] != 1.0 {
		t.Fatalf("import: %d %s", r.code, r.body)
	}
	if e := f.audit.last(); e.Endpoint != "PUT /v1/process/trades" || e.Outcome != "created" || e.KeyID != "key_process" ||
		e.PortfolioID != "p1" || e.InputHash != hash || e.Counts["values"] != 192 {
		t.Errorf("audit of the import: %+v", e)
	}
	audited := len(f.audit.entries)
	if r, ack = put(path, tradesBody(96, "")); ack["status"] != "unchanged" || ack["version"] != 1.0 {
		t.Errorf("same set again: %s", r.body)
	}
	if len(f.audit.entries) != audited+1 {
		t.Errorf("an accepted import was audited %d times", len(f.audit.entries)-audited)
	}
	if r, ack = put(path, []byte(`{"trades":[]}`)); ack["status"] != "replaced" || ack["version"] != 2.0 {
		t.Errorf("clearing the set: %s", r.body)
	}
	if r, ack = put(path, tradesBody(96, "")); ack["status"] != "replaced" || ack["version"] != 3.0 {
		t.Errorf("set again: %s", r.body)
	}

	for _, key := range []string{"process", "report1"} {
		r = f.as(key, "GET", "/v1/process/trades?day=2026-11-24&portfolio=p1", nil)
		var rep api.TradesReport
		if err := json.Unmarshal(r.body, &rep); err != nil || r.code != 200 || rep.Portfolio != "p1" || rep.Version != 3 ||
			rep.Intervals != 96 || len(rep.Trades) != 2 || rep.Trades[0].Unit != pipeline.MW || rep.Trades[1].Direction != pipeline.Sell ||
			rep.Trades[1].Unit != pipeline.MWH || rep.Trades[1].Values[95] != 0.25 {
			t.Errorf("read back as %s: %d %s", key, r.code, r.body)
		}
	}
	if e := f.audit.last(); e.Endpoint != "GET /v1/process/trades" || e.Outcome != "ok" || e.PortfolioID != "p1" {
		t.Errorf("audit of the read: %+v", e)
	}

	// The body is validated by the trades model against the portfolio's
	// active areas and the day's intervals.
	r, _ = put("/v1/process/trades?day=2026-03-29&portfolio=p1", tradesBody(96, ""))
	if r.code != 422 || r.json(t)["detail"] != "trades[0] has 96 intervals, expected 92 for 2026-03-29" {
		t.Errorf("interval count: %d %s", r.code, r.body)
	}
	r, _ = put("/v1/process/trades?day=2026-11-24&portfolio=p2", tradesBody(96, ""))
	if r.code != 422 || r.json(t)["detail"] != "trades[0]: control area TenneT is not in the active set" {
		t.Errorf("inactive area: %d %s", r.code, r.body)
	}
	r, _ = put(path, []byte(`{"trades":[{"control_area":"TenneT","counterparty":"SELLER","direction":"hold","values":[]}]}`))
	types := map[string]string{}
	for _, p := range problems(t, r) {
		types[strings.Join(p.Loc, ".")] = p.Type
	}
	if types["body.trades.0.counterparty"] != "string_pattern_mismatch" || types["body.trades.0.direction"] != "literal_error" {
		t.Errorf("schema problems: %v", types)
	}
	if e := f.audit.last(); e.Outcome != "rejected" || e.PortfolioID != "p1" || e.Detail == "" {
		t.Errorf("audit of the rejected import: %+v", e)
	}
	if r, _ := put(path, []byte(`{"trades":`)); r.code != 422 || !strings.Contains(string(r.body), "json_invalid") {
		t.Errorf("malformed JSON: %d %s", r.code, r.body)
	}
}

func TestConsoleEventFilters(t *testing.T) {
	f := newPipeFixture(t, true)
	at := time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)
	f.events.evs = []pipeline.Event{{ID: 8, At: at, Kind: "schedule.sent", PortfolioID: "p1", Subject: "20261124_TPS.XML",
		DeliveryDay: &day24, Data: json.RawMessage(`{"version":2}`)}}
	r := f.as("process", "GET", "/v1/console/events?from=2026-11-23T00:00:00%2B01:00&to=2026-11-24T00:00:00Z&kind=schedule.*&day=2026-11-24&portfolio=p1&after_id=7&limit=5", nil)
	if r.code != 200 {
		t.Fatalf("events: %d %s", r.code, r.body)
	}
	got := f.events.got
	if !got.From.Equal(time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)) || !got.To.Equal(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)) ||
		got.Kind != "schedule.*" || got.Day == nil || *got.Day != day24 || got.Portfolio != "p1" || got.AfterID != 7 || got.Limit != 5 {
		t.Errorf("query %+v", got)
	}
	golden(t, "pipeline/events.json", r.body)

	// Defaults: no bounds, no day, the first 100 after id 0; the old name
	// "after" still pages.
	f.events.evs = nil
	r = f.as("process", "GET", "/v1/console/events?after=3", nil)
	got = f.events.got
	if r.code != 200 || string(r.body) != "[]" || got.AfterID != 3 || got.Limit != 100 || !got.From.IsZero() || !got.To.IsZero() || got.Day != nil {
		t.Errorf("defaults: %d %s %+v", r.code, r.body, got)
	}
}
