package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/price"
	"github.com/schedbridge/schedbridge/storage/catalog/catalogtest"
	"github.com/schedbridge/schedbridge/storage/commit"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// consoleFixture is a server with the console wired to the real store and a
// real runner over a local bucket, on the clock of the operator's morning
// before the delivery day.
type consoleFixture struct {
	*fixture
	clock  *clocktest.Clock
	runner *jobs.Runner
}

// consoleNow is 10:00 Berlin on 2026-11-23: tomorrow is 2026-11-24.
var consoleNow = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

func newConsoleFixture(t *testing.T, d sqldb.Dialect) *consoleFixture {
	clock := clocktest.New(consoleNow)
	f := newFixture(t, d, api.Config{Now: clock.Now})
	cat := catalogtest.Open(t, f.db, f.bucket)
	lk := lake.New(f.bucket, lake.Options{Now: clock.Now, SpoolDir: t.TempDir(), Catalog: cat})
	runner := jobs.New(f.db, lk, f.bucket, jobs.Config{Now: clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Backoff: time.Millisecond, Commit: commit.New(f.db, cat, clock.Now)})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := runner.Shutdown(ctx); err != nil {
			t.Errorf("runner shutdown: %v", err)
		}
	})
	deps := f.deps
	deps.Results, deps.Runner, deps.Starter, deps.RunLogs, deps.Recorded = f.db, runner, runner, f.db, f.db
	deps.Marktdaten = jobs.NewMarktdaten(f.db, jobs.MarktdatenConfig{Now: clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	f.srv = api.New(api.Config{Now: clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, deps)
	return &consoleFixture{fixture: f, clock: clock, runner: runner}
}

func eachConsole(t *testing.T, fn func(t *testing.T, f *consoleFixture)) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, newConsoleFixture(t, d))
		})
	}
}

// awaitRun polls a run until it has finished, as the console would.
func (f *consoleFixture) awaitRun(t *testing.T, id int64) api.ConsoleRun {
	t.Helper()
	for range 3000 {
		r := f.as("process", "GET", fmt.Sprintf("/v1/console/runs/%d", id), nil)
		var run api.ConsoleRun
		if err := json.Unmarshal(r.body, &run); err != nil || r.code != 200 {
			t.Fatalf("run %d: %d %s", id, r.code, r.body)
		}
		if run.Status != pipeline.RunRunning {
			return run
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("run %d still running", id)
	return api.ConsoleRun{}
}

func (f *consoleFixture) post(t *testing.T, path, body string, headers ...string) (response, pipeline.Run) {
	t.Helper()
	r := f.do("POST", path, []byte(body), append([]string{"X-API-Key", f.keys["process"]}, headers...)...)
	var run pipeline.Run
	if r.code == http.StatusAccepted {
		if err := json.Unmarshal(r.body, &run); err != nil {
			t.Fatalf("%s: %v %s", path, err, r.body)
		}
	}
	return r, run
}

// TestConsoleRuns: start a stage and the chain in the background, idempotent
// by key; retry a failed run from its failed stage; a succeeded run cannot
// be retried; the list pages by cursor with Link headers and 304s; a run
// shows its attempts and log lines.
func TestConsoleRuns(t *testing.T) {
	eachConsole(t, func(t *testing.T, f *consoleFixture) {
		// aggregate before any forecast fails: nothing to read.
		r, agg := f.post(t, "/v1/console/runs", `{"stage":"aggregate","day":"2026-11-24"}`, "Idempotency-Key", "k-agg-1")
		if r.code != 202 || agg.ID == 0 || agg.Stage != pipeline.StageAggregate || agg.Trigger != "console" ||
			r.header.Get("Location") != fmt.Sprintf("/v1/console/runs/%d", agg.ID) {
			t.Fatalf("start: %d %v %s", r.code, r.header, r.body)
		}
		if got := f.awaitRun(t, agg.ID); got.Status != pipeline.RunFailed || !strings.Contains(got.Error, "forecast") ||
			got.Seconds == nil || len(got.Log) == 0 {
			t.Fatalf("aggregate without forecast: %+v", got)
		}
		// The same key again: the same run, nothing started.
		r, again := f.post(t, "/v1/console/runs", `{"stage":"aggregate","day":"2026-11-24"}`, "Idempotency-Key", "k-agg-1")
		if r.code != 202 || again.ID != agg.ID || r.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("repeated key: %d %s", r.code, r.body)
		}
		// The same key for another request is refused; so is a key that is no key.
		if r, _ := f.post(t, "/v1/console/runs", `{"stage":"forecast","day":"2026-11-24"}`, "Idempotency-Key", "k-agg-1"); r.code != 422 ||
			!strings.Contains(string(r.body), "different request") {
			t.Errorf("key reused for another request: %d %s", r.code, r.body)
		}
		if r, _ := f.post(t, "/v1/console/runs", `{"stage":"forecast"}`, "Idempotency-Key", "two words"); r.code != 422 {
			t.Errorf("bad key: %d %s", r.code, r.body)
		}
		for _, body := range []string{`{"stage":"all"}`, `{"day":"2026-11-24"}`, `{"stage":"forecast","from_stage":"aggregate"}`, `not json`} {
			if r, _ := f.post(t, "/v1/console/runs", body); r.code != 422 {
				t.Errorf("start %s: %d %s", body, r.code, r.body)
			}
		}
		// Retrying the failed aggregate fails again (still no forecast), and
		// names what it retried.
		r, retry1 := f.post(t, fmt.Sprintf("/v1/console/runs/%d/retry", agg.ID), "", "Idempotency-Key", "k-retry-1")
		if r.code != 202 || retry1.RetryOf == nil || *retry1.RetryOf != agg.ID || retry1.Stage != pipeline.StageAggregate {
			t.Fatalf("retry: %d %s", r.code, r.body)
		}
		if r, same := f.post(t, fmt.Sprintf("/v1/console/runs/%d/retry", agg.ID), "", "Idempotency-Key", "k-retry-1"); r.code != 202 || same.ID != retry1.ID {
			t.Errorf("repeated retry: %d %s", r.code, r.body)
		}
		f.awaitRun(t, retry1.ID)
		// The forecast succeeds (no locations: nothing to forecast), then
		// the retry of the retry succeeds.
		r, fc := f.post(t, "/v1/console/runs", `{"stage":"forecast","day":"2026-11-24"}`)
		if r.code != 202 {
			t.Fatalf("forecast: %d %s", r.code, r.body)
		}
		if got := f.awaitRun(t, fc.ID); got.Status != pipeline.RunSucceeded {
			t.Fatalf("forecast: %+v", got)
		}
		if r, _ := f.post(t, fmt.Sprintf("/v1/console/runs/%d/retry", fc.ID), ""); r.code != 409 {
			t.Errorf("retry of a succeeded run: %d %s", r.code, r.body)
		}
		if r, _ := f.post(t, "/v1/console/runs/999999/retry", ""); r.code != 404 {
			t.Errorf("retry of no run: %d %s", r.code, r.body)
		}
		if r, _ := f.post(t, "/v1/console/runs/x/retry", ""); r.code != 422 {
			t.Errorf("retry of a bad id: %d %s", r.code, r.body)
		}
		_, retry2 := f.post(t, fmt.Sprintf("/v1/console/runs/%d/retry", retry1.ID), "")
		if got := f.awaitRun(t, retry2.ID); got.Status != pipeline.RunSucceeded {
			t.Fatalf("retry after the forecast: %+v", got)
		}

		// Four runs of the day: pages of two, newest first, by cursor and Link.
		var ids []int64
		next := "/v1/console/runs?day=2026-11-24&limit=2"
		for page := 0; next != ""; page++ {
			r := f.as("process", "GET", next, nil)
			var p struct {
				Items      []pipeline.Run `json:"items"`
				NextCursor *string        `json:"next_cursor"`
			}
			if err := json.Unmarshal(r.body, &p); err != nil || r.code != 200 || page > 3 {
				t.Fatalf("page %d: %d %s", page, r.code, r.body)
			}
			for _, run := range p.Items {
				ids = append(ids, run.ID)
			}
			next = ""
			if link := r.header.Get("Link"); link != "" {
				next = nextLink(r)
				if p.NextCursor == nil || !strings.Contains(next, "cursor="+url.QueryEscape(*p.NextCursor)) || !strings.Contains(next, "day=2026-11-24") {
					t.Errorf("Link %q does not carry the cursor %v and the filters", link, p.NextCursor)
				}
			} else if p.NextCursor != nil {
				t.Errorf("next_cursor without Link")
			}
		}
		want := []int64{retry2.ID, fc.ID, retry1.ID, agg.ID}
		if fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Errorf("paged runs %v, want %v", ids, want)
		}
		// Filters, and a 304 for an unchanged list.
		r = f.as("process", "GET", "/v1/console/runs?status=failed&stage=aggregate&trigger=console", nil)
		if !strings.Contains(string(r.body), fmt.Sprintf(`"id":%d`, retry1.ID)) || strings.Contains(string(r.body), fmt.Sprintf(`"id":%d,`, fc.ID)) {
			t.Errorf("filtered: %s", r.body)
		}
		etag := r.header.Get("ETag")
		if r := f.do("GET", "/v1/console/runs?status=failed&stage=aggregate&trigger=console", nil, "X-API-Key", f.keys["process"], "If-None-Match", etag); r.code != 304 || len(r.body) != 0 {
			t.Errorf("If-None-Match: %d %s", r.code, r.body)
		}
		for _, q := range []string{"status=done", "stage=all", "cursor=%21%21", "cursor=" + url.QueryEscape("eA"), "limit=0", "trigger=me", "day=24.11.2026"} {
			if r := f.as("process", "GET", "/v1/console/runs?"+q, nil); r.code != 422 {
				t.Errorf("runs?%s: %d %s", q, r.code, r.body)
			}
		}
		if r := f.as("process", "GET", "/v1/console/runs/999999", nil); r.code != 404 {
			t.Errorf("no such run: %d", r.code)
		}

		// The chain from a stage: forecast is not run again.
		r, chain := f.post(t, "/v1/console/runs", `{"stage":"chain","day":"2026-11-24","from_stage":"open-position"}`)
		if r.code != 202 || chain.Stage != pipeline.StageChain {
			t.Fatalf("chain: %d %s", r.code, r.body)
		}
		got := f.awaitRun(t, chain.ID)
		if len(got.Stages) == 0 || got.Stages[0].Stage != pipeline.StageOpenPosition {
			t.Errorf("chain from open-position ran %+v", got.Stages)
		}
	})
}

// TestConsoleScopes: the console takes process keys only; the app takes
// mobile keys only; without a key, 401.
func TestConsoleScopes(t *testing.T) {
	eachConsole(t, func(t *testing.T, f *consoleFixture) {
		console := []string{"/v1/console/summary", "/v1/console/runs", "/v1/console/runs/1", "/v1/console/inbox?state=failed",
			"/v1/console/schedules", "/v1/console/events"}
		mobile := []string{"/v1/mobile/summary", "/v1/mobile/alerts", "/v1/mobile/schedules"}
		for key, codes := range map[string][2]int{
			"process": {0, 403}, "mobile": {403, 0}, "data1": {403, 403}, "report1": {403, 403}, "revoked": {401, 401}, "": {401, 401},
		} {
			for i, paths := range [][]string{console, mobile} {
				for _, p := range paths {
					r := f.as(key, "GET", p, nil)
					if want := codes[i]; (want == 0 && (r.code == 401 || r.code == 403)) || (want != 0 && r.code != want) {
						t.Errorf("%s key on %s: %d %s", key, p, r.code, r.body)
					}
				}
			}
		}
		for _, p := range []string{"/v1/console/runs", "/v1/console/runs/1/retry", "/v1/console/inbox/retry"} {
			if r := f.as("mobile", "POST", p, []byte(`{}`)); r.code != 403 {
				t.Errorf("mobile key POST %s: %d", p, r.code)
			}
		}
		// The app has no write route.
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			if r := f.as("mobile", m, "/v1/mobile/summary", nil); r.code != 405 {
				t.Errorf("%s /v1/mobile/summary: %d", m, r.code)
			}
		}
	})
}

// seedSchedules records two versions for p1 in TenneT (the second with an
// anomaly report), one for p2 in Amprion (confirmed), with their tso.answer
// events as the inbox records them.
func (f *consoleFixture) seedSchedules(t *testing.T, day pipeline.Day) {
	t.Helper()
	ctx := context.Background()
	run, err := f.db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageSchedules, Day: day, Trigger: "cron", StartedAt: consoleNow})
	if err != nil {
		t.Fatal(err)
	}
	answer := func(m pipeline.ScheduleMessage, status pipeline.ScheduleStatus, kind string, at time.Time, reasons string) {
		if err := f.db.RecordScheduleAnswer(ctx, m.ID, status, kind, at, "processed/tso/"+kind+".xml", kind); err != nil {
			t.Fatal(err)
		}
		data := fmt.Sprintf(`{"kind":%q,"status":%q,"accepted":true,"file":"inbox/tso/%s.xml","reasons":%s,"schedule_id":%d,"control_area":%q}`,
			kind, status, kind, reasons, m.ID, m.ControlArea)
		d := day
		if err := f.db.RecordEvent(ctx, pipeline.Event{At: at, Kind: "tso.answer", PortfolioID: m.PortfolioID, Subject: kind + ".xml",
			DeliveryDay: &d, Data: json.RawMessage(data)}); err != nil {
			t.Fatal(err)
		}
	}
	record := func(p string, area pipeline.ControlArea, hash string) pipeline.ScheduleMessage {
		m, _, err := f.db.RecordSchedule(ctx, pipeline.ScheduleMessage{PortfolioID: p, Day: day, ControlArea: area,
			MessageID: "MSG-" + p + "-" + string(area), FileName: hash + ".xml", ObjectKey: "outbox/fahrplan/" + hash + ".xml",
			ContentHash: hash, Sender: "11XSBTEST-BKV--A", Receiver: "10XDE-EON-NETZ-C", RunID: run.ID, SentAt: consoleNow})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	v1 := record("p1", pipeline.TenneT, "h1")
	answer(v1, pipeline.ScheduleAcknowledged, "ACK", consoleNow.Add(time.Minute), `[]`)
	v2 := record("p1", pipeline.TenneT, "h2")
	answer(v2, pipeline.ScheduleAcknowledged, "ACK", consoleNow.Add(2*time.Minute), `[]`)
	answer(v2, pipeline.ScheduleAnomaly, "ANO", consoleNow.Add(3*time.Minute), `[{"code":"A63","text":"time series mismatch","series_id":"TS1"}]`)
	p2 := record("p2", pipeline.Amprion, "h3")
	answer(p2, pipeline.ScheduleConfirmed, "CNF", consoleNow.Add(4*time.Minute), `[]`)
	if err := f.db.FinishRun(ctx, run.ID, pipeline.RunSucceeded, "", nil, consoleNow.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
}

// TestConsoleSummaryAndSchedules: the summary names the day's chain, the
// deadline, per portfolio and TSO the latest version with its answer and
// reasons, and the last successes; the schedules view lists every version
// with its answers; both answer 304 while nothing changes.
func TestConsoleSummaryAndSchedules(t *testing.T) {
	eachConsole(t, func(t *testing.T, f *consoleFixture) {
		tomorrow := pipeline.NewDay(2026, 11, 24)
		f.seedSchedules(t, tomorrow)
		// Hourly spot prices for the first half of tomorrow: 48 quarter-hours
		// covered, 48 missing; no reBAP for the day the calculation works on.
		var spot []price.Point
		for h := range 12 {
			spot = append(spot, price.Point{Start: tomorrow.Start().UTC().Add(time.Duration(h) * time.Hour), Minutes: 60, Price: 80, PriceLong: 80})
		}
		if _, err := f.db.PutPrices(context.Background(), price.Spot, spot, "test", consoleNow); err != nil {
			t.Fatal(err)
		}
		r := f.as("process", "GET", "/v1/console/summary", nil) // default: tomorrow
		var sum api.ConsoleSummary
		if err := json.Unmarshal(r.body, &sum); err != nil || r.code != 200 {
			t.Fatalf("summary: %d %s", r.code, r.body)
		}
		if sum.Day != tomorrow || sum.QuarterHours != 96 || !sum.Deadline.Equal(time.Date(2026, 11, 23, 13, 30, 0, 0, time.UTC)) {
			t.Errorf("day, quarter-hours, deadline: %s %d %s", sum.Day, sum.QuarterHours, sum.Deadline)
		}
		if sum.Chain.State != "incomplete" || len(sum.Chain.Stages) != 4 || sum.Chain.Stages[3].State != "succeeded" || sum.Chain.Stages[0].State != "not_run" {
			t.Errorf("chain: %+v", sum.Chain)
		}
		if len(sum.Portfolios) != 2 || sum.Portfolios[0].Portfolio != "p1" || len(sum.Portfolios[0].Schedules) != 1 {
			t.Fatalf("portfolios: %+v", sum.Portfolios)
		}
		p1 := sum.Portfolios[0].Schedules[0]
		if p1.Version != 2 || p1.State != pipeline.ScheduleAnomaly || p1.AnswerKind != "ANO" || len(p1.Reasons) != 1 || p1.Reasons[0].Code != "A63" ||
			p1.ControlArea != pipeline.TenneT || p1.TSO != "10XDE-EON-NETZ-C" {
			t.Errorf("p1's TSO state: %+v", p1)
		}
		if p2 := sum.Portfolios[1].Schedules[0]; p2.State != pipeline.ScheduleConfirmed || len(p2.Reasons) != 0 {
			t.Errorf("p2's TSO state: %+v", p2)
		}
		if ls := sum.LastSuccess[pipeline.StageSchedules]; ls == nil || ls.Day != tomorrow {
			t.Errorf("last success of schedules: %+v", sum.LastSuccess)
		}
		wantPrices := []api.MissingPrices{
			{Kind: price.Spot, Day: tomorrow, QuarterHours: 96, Missing: 48},
			{Kind: price.ReBAP, Day: pipeline.NewDay(2026, 11, 22), QuarterHours: 96, Missing: 96},
		}
		if fmt.Sprint(sum.Prices) != fmt.Sprint(wantPrices) {
			t.Errorf("missing prices %+v, want %+v", sum.Prices, wantPrices)
		}
		if ls, ok := sum.LastSuccess[pipeline.StageForecast]; !ok || ls != nil {
			t.Errorf("a stage that never succeeded: %+v, %v", ls, ok)
		}
		// The tag holds while nothing changes, also when the clock moves on.
		etag := r.header.Get("ETag")
		f.clock.Add(10 * time.Minute)
		if r := f.do("GET", "/v1/console/summary", nil, "X-API-Key", f.keys["process"], "If-None-Match", etag); r.code != 304 {
			t.Errorf("unchanged summary: %d", r.code)
		}
		if err := f.db.RecordScheduleAnswer(context.Background(), 3, pipeline.ScheduleConfirmed, "CNF", consoleNow.Add(time.Hour), "k", "d"); err != nil {
			t.Fatal(err)
		}
		if r := f.do("GET", "/v1/console/summary", nil, "X-API-Key", f.keys["process"], "If-None-Match", etag); r.code != 200 {
			t.Errorf("changed summary: %d", r.code)
		}
		if r := f.as("process", "GET", "/v1/console/summary?day=tomorrow", nil); r.code != 422 {
			t.Errorf("bad day: %d %s", r.code, r.body)
		}

		r = f.as("process", "GET", "/v1/console/schedules?day=2026-11-24", nil)
		var sch api.ConsoleSchedules
		if err := json.Unmarshal(r.body, &sch); err != nil || r.code != 200 || len(sch.Threads) != 2 {
			t.Fatalf("schedules: %d %s", r.code, r.body)
		}
		th := sch.Threads[0]
		if th.Portfolio != "p1" || th.Latest != 2 || len(th.Versions) != 2 || th.Versions[0].Version != 2 ||
			len(th.Versions[0].Answers) != 2 || th.Versions[0].Answers[1].Kind != "ANO" || len(th.Versions[1].Answers) != 1 {
			t.Errorf("p1's thread: %+v", th)
		}
		if r := f.as("process", "GET", "/v1/console/schedules?day=2026-11-25", nil); r.code != 200 || !strings.Contains(string(r.body), `"schedules":[]`) {
			t.Errorf("a day without schedules: %d %s", r.code, r.body)
		}
	})
}

// TestMobile: the app's summary sums the published series per control area
// (3 decimals), is gzip-compressed when asked and 304 when unchanged; the
// alerts page by cursor, newest first, after the conditions of now.
func TestMobile(t *testing.T) {
	eachConsole(t, func(t *testing.T, f *consoleFixture) {
		ctx := context.Background()
		tomorrow := pipeline.NewDay(2026, 11, 24)
		run, err := f.db.CreateRun(ctx, pipeline.Run{Stage: pipeline.StageAggregate, Day: tomorrow, Trigger: "cron", StartedAt: consoleNow})
		if err != nil {
			t.Fatal(err)
		}
		ts := tomorrow.QuarterStartsMicros()
		var pos []pipeline.PositionRow
		var open []pipeline.OpenPositionRow
		for qh := range ts {
			at := time.UnixMicro(ts[qh]).UTC()
			pos = append(pos,
				pipeline.PositionRow{Portfolio: "p1", ControlArea: pipeline.TenneT, QH: qh, TS: at, ConsumptionMW: 12, NetMW: 10.0004, Source: "generated"},
				pipeline.PositionRow{Portfolio: "p2", ControlArea: pipeline.TenneT, QH: qh, TS: at, ConsumptionMW: 1, NetMW: 1, Source: "generated"})
			open = append(open, pipeline.OpenPositionRow{Portfolio: "p1", ControlArea: pipeline.TenneT, QH: qh, TS: at, NetMW: 10, BoughtMW: 2.5, SoldMW: 0.5, OpenMW: 8})
		}
		if err := f.db.PublishPositions(ctx, run.ID, tomorrow, pos); err != nil {
			t.Fatal(err)
		}
		if err := f.db.PublishOpenPosition(ctx, run.ID, tomorrow, open); err != nil {
			t.Fatal(err)
		}
		if err := f.db.FinishRun(ctx, run.ID, pipeline.RunSucceeded, "", nil, consoleNow); err != nil {
			t.Fatal(err)
		}
		r := f.do("GET", "/v1/mobile/summary", nil, "X-API-Key", f.keys["mobile"], "Accept-Encoding", "gzip")
		if r.code != 200 || r.header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("gzip summary: %d %v", r.code, r.header)
		}
		r = f.as("mobile", "GET", "/v1/mobile/summary?day=tomorrow", nil)
		var sum api.MobileSummary
		if err := json.Unmarshal(r.body, &sum); err != nil || r.code != 200 || len(sum.Areas) != 1 {
			t.Fatalf("summary: %d %s", r.code, r.body)
		}
		a := sum.Areas[0]
		if a.ControlArea != pipeline.TenneT || len(a.ForecastMW) != 96 || a.ForecastMW[0] != 11 || a.PositionMW[95] != 2 || a.OpenMW[0] != 8 ||
			sum.Chain != "incomplete" || sum.Stages[1].State != "succeeded" {
			t.Errorf("summary: %+v", sum)
		}
		if r2 := f.do("GET", "/v1/mobile/summary?day=tomorrow", nil, "X-API-Key", f.keys["mobile"], "If-None-Match", r.header.Get("ETag")); r2.code != 304 {
			t.Errorf("unchanged: %d", r2.code)
		}
		if r := f.as("mobile", "GET", "/v1/mobile/summary?day=today", nil); r.code != 200 || !strings.Contains(string(r.body), `"areas":[]`) {
			t.Errorf("today, nothing published: %d %s", r.code, r.body)
		}
		if r := f.as("mobile", "GET", "/v1/mobile/summary?day=2026-11-24", nil); r.code != 422 {
			t.Errorf("a date instead of today|tomorrow: %d", r.code)
		}

		// Alerts: 5 failed runs among accepted answers, newest first, 2 per page.
		d := tomorrow
		for i := range 5 {
			for _, ev := range []pipeline.Event{
				{At: consoleNow, Kind: "run.failed", Subject: fmt.Sprint("run ", i), DeliveryDay: &d, Data: json.RawMessage(fmt.Sprintf(`{"stage":"forecast","error":"boom %d"}`, i))},
				{At: consoleNow, Kind: "tso.answer", Subject: "ack.xml", DeliveryDay: &d, Data: json.RawMessage(`{"kind":"ACK","status":"acknowledged"}`)},
			} {
				if err := f.db.RecordEvent(ctx, ev); err != nil {
					t.Fatal(err)
				}
			}
		}
		var titles []string
		path := "/v1/mobile/alerts?limit=2"
		for page := 0; path != ""; page++ {
			r := f.as("mobile", "GET", path, nil)
			var al api.MobileAlerts
			if err := json.Unmarshal(r.body, &al); err != nil || r.code != 200 || page > 4 {
				t.Fatalf("alerts page %d: %d %s", page, r.code, r.body)
			}
			if page == 0 {
				// 10:00 Berlin: the deadline of 14:30 is not yet at risk.
				for _, a := range al.Active {
					if a.Kind == "deadline_at_risk" {
						t.Errorf("deadline at risk at 10:00: %+v", a)
					}
				}
			} else if len(al.Active) != 0 {
				t.Errorf("page %d repeats the active conditions", page)
			}
			for _, a := range al.Items {
				titles = append(titles, a.Title)
			}
			path = ""
			if al.NextCursor != nil {
				path = "/v1/mobile/alerts?limit=2&cursor=" + url.QueryEscape(*al.NextCursor)
			}
		}
		if want := "Stage forecast failed: boom 4|Stage forecast failed: boom 3|Stage forecast failed: boom 2|Stage forecast failed: boom 1|Stage forecast failed: boom 0"; strings.Join(titles, "|") != want {
			t.Errorf("alerts %q", titles)
		}
		// At 13:30 Berlin, nothing sent for tomorrow: the deadline is at risk.
		f.clock.Set(time.Date(2026, 11, 23, 12, 30, 0, 0, time.UTC))
		r = f.as("mobile", "GET", "/v1/mobile/alerts", nil)
		if !strings.Contains(string(r.body), `"kind":"deadline_at_risk"`) || !strings.Contains(string(r.body), `"severity":"critical"`) {
			t.Errorf("deadline at risk: %s", r.body)
		}
	})
}

// sseEvent is one event of a stream.
type sseEvent struct{ id, kind, data string }

// readSSE reads a stream until n events arrived, returning them and whether
// a heartbeat comment came.
func readSSE(t *testing.T, body io.Reader, n int) ([]sseEvent, bool) {
	t.Helper()
	var evs []sseEvent
	var cur sseEvent
	heartbeat := false
	sc := bufio.NewScanner(body)
	for len(evs) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.id != "" {
				evs = append(evs, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ": heartbeat"):
			heartbeat = true
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return evs, heartbeat
}

// TestConsoleEventStream: events arrive as SSE with their ids; after the
// server is gone and another one serves the same database, Last-Event-ID
// resumes with exactly the events after it: none lost, none repeated.
func TestConsoleEventStream(t *testing.T) {
	eachConsole(t, func(t *testing.T, f *consoleFixture) {
		ctx := context.Background()
		record := func(kinds ...string) {
			for _, k := range kinds {
				if err := f.db.RecordEvent(ctx, pipeline.Event{At: consoleNow, Kind: k, Subject: k, Data: json.RawMessage(`{}`)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		start := func() *httptest.Server {
			srv := api.New(api.Config{Now: f.clock.Now, StreamPoll: 5 * time.Millisecond, StreamHeartbeat: 20 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, f.deps)
			return httptest.NewServer(srv.Handler())
		}
		open := func(ts *httptest.Server, lastID string) *http.Response {
			req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/console/events/stream", nil)
			req.Header.Set("X-API-Key", f.keys["process"])
			if lastID != "" {
				req.Header.Set("Last-Event-ID", lastID)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("stream: %d %v", res.StatusCode, res.Header)
			}
			return res
		}
		record("run.started", "run.failed")
		ts := start()
		res := open(ts, "")
		first, _ := readSSE(t, res.Body, 2)
		// Events recorded while the stream is open arrive too, with a
		// heartbeat while it waits.
		time.AfterFunc(50*time.Millisecond, func() { record("inbox.rejected") })
		more, heartbeat := readSSE(t, res.Body, 1)
		first = append(first, more...)
		if len(first) != 3 || first[1].kind != "run.failed" || first[2].kind != "inbox.rejected" || !heartbeat ||
			!strings.Contains(first[0].data, `"kind":"run.started"`) {
			t.Fatalf("first stream: %+v (heartbeat %v)", first, heartbeat)
		}
		res.Body.Close()
		ts.Close()

		// Meanwhile, with no server up, two more events.
		record("schedule.sent", "tso.answer")
		ts = start()
		defer ts.Close()
		res = open(ts, first[2].id)
		defer res.Body.Close()
		resumed, _ := readSSE(t, res.Body, 2)
		if len(resumed) != 2 || resumed[0].kind != "schedule.sent" || resumed[1].kind != "tso.answer" {
			t.Fatalf("resumed: %+v", resumed)
		}
		// Nothing is repeated: the next event is the one recorded next.
		record("run.succeeded")
		next, _ := readSSE(t, res.Body, 1)
		if len(next) != 1 || next[0].kind != "run.succeeded" {
			t.Fatalf("after resuming: %+v", next)
		}
		if r := f.do("GET", "/v1/console/events/stream", nil, "X-API-Key", f.keys["process"], "Last-Event-ID", "x"); r.code != 422 {
			t.Errorf("bad Last-Event-ID: %d", r.code)
		}
	})
}

// TestConsoleInboxPages: pending files page by key and rejected ones by
// record, newest first, each with next_cursor and Link until the last page.
func TestConsoleInboxPages(t *testing.T) {
	eachConsole(t, func(t *testing.T, f *consoleFixture) {
		ctx := context.Background()
		put := func(key string) {
			body := "malo;day;unit;v1\n"
			if err := f.bucket.Put(ctx, key, strings.NewReader(body), int64(len(body))); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 3 {
			put(fmt.Sprintf("inbox/p9/metered-data/%d.csv", i)) // p9 does not exist: rejected
		}
		if _, err := f.inbox.Scan(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			put(fmt.Sprintf("inbox/p1/metered-data/w%d.csv", i)) // waiting, not scanned
		}
		pages := func(state string) [][]string {
			var out [][]string
			path := "/v1/console/inbox?limit=2&state=" + state
			for n := 0; path != "" && n < 5; n++ {
				r := f.as("process", "GET", path, nil)
				var p struct {
					Items      []api.ConsoleInboxFile `json:"items"`
					NextCursor *string                `json:"next_cursor"`
				}
				if err := json.Unmarshal(r.body, &p); err != nil || r.code != 200 {
					t.Fatalf("%s: %d %s", path, r.code, r.body)
				}
				var files []string
				for _, it := range p.Items {
					if it.State != state {
						t.Errorf("%s lists a %s file", state, it.State)
					}
					files = append(files, strings.TrimPrefix(it.File, "inbox/"))
				}
				out = append(out, files)
				path = nextLink(r)
				if (p.NextCursor == nil) != (path == "") {
					t.Errorf("next_cursor %v and Link %q disagree", p.NextCursor, link(r))
				}
			}
			return out
		}
		if got := fmt.Sprint(pages("pending")); got != "[[p1/metered-data/w0.csv p1/metered-data/w1.csv] [p1/metered-data/w2.csv]]" {
			t.Errorf("pending pages %s", got)
		}
		if got := fmt.Sprint(pages("rejected")); got != "[[p9/metered-data/2.csv p9/metered-data/1.csv] [p9/metered-data/0.csv]]" {
			t.Errorf("rejected pages %s", got)
		}
		if got := fmt.Sprint(pages("failed")); got != "[[]]" {
			t.Errorf("failed pages %s", got)
		}
		// The summary counts the backlog.
		var sum api.ConsoleSummary
		r := f.as("process", "GET", "/v1/console/summary", nil)
		if err := json.Unmarshal(r.body, &sum); err != nil || sum.Inbox == nil || sum.Inbox.Pending != 3 || sum.Inbox.Rejected24h != 3 ||
			sum.Inbox.OldestPending == nil {
			t.Errorf("summary's inbox: %d %s", r.code, r.body)
		}
	})
}

func link(r response) string { return r.header.Get("Link") }

// nextLink is the target of the answer's Link header with rel="next", or "".
func nextLink(r response) string {
	return strings.TrimSuffix(strings.TrimPrefix(link(r), "<"), `>; rel="next"`)
}
