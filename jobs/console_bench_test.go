package jobs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/schedbridge/schedbridge/api"
	portalapi "github.com/schedbridge/schedbridge/api/portal"
	"github.com/schedbridge/schedbridge/ingest/edifact"
	"github.com/schedbridge/schedbridge/ingest/inbox"
	"github.com/schedbridge/schedbridge/ingest/mail"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/fahrplan"
	"github.com/schedbridge/schedbridge/pipeline/kalkulation"
	"github.com/schedbridge/schedbridge/pipeline/mako"
	"github.com/schedbridge/schedbridge/pipeline/portal"
	"github.com/schedbridge/schedbridge/pipeline/price"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// consoleBenchNow is the operator's morning of the benchmark: 10:00 Berlin on
// 2026-11-23, so the summary's default day is 2026-11-24, whose chain ran at
// 08:00 and whose schedules wait for their confirmations.
var consoleBenchNow = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

// consoleBenchDays is how many delivery days of runs, events, schedules and
// inbox files the data set holds: a year up to and including tomorrow.
const consoleBenchDays = 366

// consolePortfolios are the benchmark's portfolios with their share of the
// market locations: 9 schedule threads (portfolio and control area) a day.
var consolePortfolios = []struct {
	p     pipeline.Portfolio
	share float64
}{
	{pipeline.Portfolio{ID: "haushalt", Name: "Haushaltskunden", ControlAreas: pipeline.ControlAreas}, 0.60},
	{pipeline.Portfolio{ID: "gewerbe", Name: "Gewerbekunden", ControlAreas: []pipeline.ControlArea{pipeline.Amprion, pipeline.TenneT}}, 0.25},
	{pipeline.Portfolio{ID: "industrie", Name: "Industrie", ControlAreas: []pipeline.ControlArea{pipeline.FiftyHertz, pipeline.TransnetBW}}, 0.10},
	{pipeline.Portfolio{ID: "waerme", Name: "Wärmepumpen", ControlAreas: []pipeline.ControlArea{pipeline.TenneT}}, 0.05},
}

// BenchmarkConsoleSummary is the benchmark of the operators' console
// (issue 17): GET /v1/console/summary and GET /v1/mobile/summary through the
// real server, wired as serve wires it, at the scale of the other
// benchmarks, on SQLite + local directory and on PostgreSQL + MinIO. The
// data set is 1,000,000 market locations over four portfolios (scaled by
// SCHEDBRIDGE_BENCH_LOCATIONS), the market communication of
// BenchmarkMakoViews (900 DSOs, 200,000 EDIFACT files, 20,000 mails), and a
// year of what the pipeline and the inbox record: a chain with its four
// stage runs per day (some failed and retried), the kalkulation runs, their
// log lines, the schedule versions per portfolio and control area with the
// TSOs' answers, the inbox files with their events (a few hundred a day),
// the published positions, open positions and kalkulation quantities of
// every day, and a year of spot and reBAP prices. A few files wait in the
// inbox, some failed ones among them.
//
// The sub-benchmarks time the two summaries, the cheapest authenticated
// request on the same server as their peer (GET /v1/console/events?limit=1),
// and each read the summaries make, alone, so that the figures say where the
// time goes (with the Kalkulation page's: part/kalkulation-rows and
// part/kalkulation). The market-partner facts are kept between requests until an
// indexing run writes (storage/sqldb/mako_cache.go); summary-after-sync and
// part/mako-overview-after-sync index one EDIFACT file before each call, as
// a sync that found one does, so they read the facts in full.
//
// The pages of the web console (issue 19) go through the same server with
// an operator's session cookie: page/lage (tomorrow, the default),
// page/laeufe, page/eingang, page/fahrplaene, page/marktpartner,
// page/antworten and page/kalkulation, each with its default parameters.
//
// Each reports ms/op; the summaries and the pages also report their ratio to
// the peer (x_trivial), and the Lage page, which reads the summary and the
// position series, its ratio to the JSON summary of the same run
// (x_summary).
func BenchmarkConsoleSummary(b *testing.B) {
	n := benchLocations(b, EnvBenchLocations, 1_000_000)
	for _, c := range combos {
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b, c)
			start := time.Now()
			cs := seedConsole(b, e, n)
			b.Logf("%s: seeded %d market locations, the market communication and a year of runs, events, schedules and inbox files in %s",
				c.name, n, time.Since(start).Round(time.Second))
			cs.run(b)
		})
	}
}

// consoleBench is the seeded data set and the server over it.
type consoleBench struct {
	e        *env
	h        http.Handler
	process  string // the process key's secret
	mobile   string // the mobile key's secret
	cookie   string // the Cookie header of an operator's session
	tomorrow pipeline.Day
	mk       *jobs.Mako
	md       *jobs.Marktdaten
	proc     *inbox.Processor
	runner   *jobs.Runner
}

// seedConsole loads the data set and builds the server.
func seedConsole(b *testing.B, e *env, locations int) *consoleBench {
	ctx := context.Background()
	now := consoleBenchNow
	clk := &fixedClock{t: now}
	tomorrow := pipeline.DayOf(now).AddDays(1)
	for _, cp := range consolePortfolios {
		p := cp.p
		p.BalancingGroup, p.ExchangeBalancingGroup = bg, exchange
		if _, err := e.db.PutPortfolio(ctx, p, now.AddDate(-2, 0, 0)); err != nil {
			b.Fatal(err)
		}
	}

	t := time.Now()
	staged := 0
	for i, cp := range consolePortfolios {
		n := int(math.Round(float64(locations) * cp.share))
		if i == len(consolePortfolios)-1 {
			n = locations - staged
		}
		staged += n
		locs := jobs.SynthLocations(jobs.SynthConfig{Portfolio: cp.p.ID, Locations: n, RLMShare: 0.05, Areas: cp.p.ControlAreas,
			MGAs: 50, Day: tomorrow, Seed: uint64(i + 1)})
		stageBulkFor(b, e.db, cp.p.ID, "location", func(st *sqldb.BulkStage) error { return st.Locations(ctx, locs) })
	}
	b.Logf("staged %d market locations in %s", staged, time.Since(t).Round(time.Millisecond))

	t = time.Now()
	loadScale(b, e, now)
	b.Logf("indexed 900 partners, 200,000 EDIFACT files, 20,000 mails in %s", time.Since(t).Round(time.Millisecond))

	t = time.Now()
	seedConsoleYear(b, e, now)
	b.Logf("recorded a year of runs, events, schedules, inbox files and read models in %s", time.Since(t).Round(time.Millisecond))

	t = time.Now()
	seedConsolePrices(b, e, now)
	seedConsoleInbox(b, e, now)
	b.Logf("prices and the inbox in %s", time.Since(t).Round(time.Millisecond))

	cs := &consoleBench{e: e, tomorrow: tomorrow, process: "sbk_bench_process", mobile: "sbk_bench_mobile"}
	for _, k := range []struct {
		id, secret string
		scope      pipeline.Scope
	}{{"key_process", cs.process, pipeline.ScopeProcess}, {"key_mobile", cs.mobile, pipeline.ScopeMobile}} {
		if err := e.db.CreateKey(ctx, pipeline.APIKey{ID: k.id, Scope: k.scope, CreatedAt: now.AddDate(0, -1, 0)}, pipeline.HashKey(k.secret)); err != nil {
			b.Fatal(err)
		}
	}

	// The server as serve wires it (cmd/schedbridge/main.go), on a clock
	// that stands still in the operator's morning: the database for the
	// recorded state, the runner, the market communication over the
	// database and the bucket, the market data, and an inbox processor over
	// the bucket that is not scanning.
	quiet := slog.New(slog.DiscardHandler)
	var err error
	cs.mk, err = jobs.NewMako(e.db, e.bucket, jobs.MakoConfig{Now: clk.Now, Logger: quiet, ParseEDI: edifact.Parse, ParseMail: mail.Parse})
	if err != nil {
		b.Fatal(err)
	}
	cs.md = jobs.NewMarktdaten(e.db, jobs.MarktdatenConfig{Now: clk.Now, Logger: quiet})
	cs.proc, err = inbox.New(e.bucket, benchInboxStore{e.db}, inbox.Config{Owner: "bench/console", Now: clk.Now, Logger: quiet,
		SpoolDir: b.TempDir(), ParseAnswer: fahrplan.ParseAnswer, Answers: e.db})
	if err != nil {
		b.Fatal(err)
	}
	runner := e.runner(func(c *jobs.Config) { c.Logger = quiet })
	cs.runner = runner
	db := e.db
	// The web console signs in through the portal; its cookies are the bare
	// ones of local development, so that the session cookie is sb_session.
	pt := portalapi.New(portalapi.Config{BaseURL: "http://console.bench", InsecureCookies: true, Now: clk.Now, Logger: quiet}, db, nil, nil)
	deps := api.Deps{Keys: db, Portfolios: db, Staging: db, Audit: db, DB: db,
		InboxFiles: db, Events: db, Runner: runner, Results: db, Trades: db,
		Starter: runner, RunLogs: db, Recorded: db, Waker: cs.proc, Inbox: cs.proc,
		Mako: cs.mk, Marktdaten: cs.md, Calculator: runner,
		Portal: pt, Operators: db, EventCursor: db}
	cs.h = api.New(api.Config{Now: clk.Now, Logger: quiet}, deps).Handler()
	cs.cookie = signInOperator(b, db, now)
	return cs
}

// signInOperator stores an operator and a live single sign-on session
// directly, as the portal's SSO callback would (its sign-in is tested in
// api/portal), and returns the session's Cookie header. The session lives
// longer than the benchmark on its clock that stands still.
func signInOperator(b *testing.B, db *sqldb.DB, now time.Time) string {
	ctx := context.Background()
	hash := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return hex.EncodeToString(h[:])
	}
	u := portal.User{ID: "u_bench_operator", Email: "leitstand@beispiel-energie.de", Name: "Leitstand", CreatedAt: now, UpdatedAt: now}
	if err := db.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	tok, csrf := "bench-operator-session", "bench-operator-csrf"
	if err := db.CreateSession(ctx, portal.Session{IDHash: hash(tok), CSRFHash: hash(csrf), UserID: u.ID, Method: portal.MethodSSO,
		Client: portal.ClientWeb, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour), OperatorClaim: true}, ""); err != nil {
		b.Fatal(err)
	}
	return "sb_session=" + tok + "; sb_csrf=" + csrf
}

// page sends one request for a console page with the operator's session and
// checks for 200, an HTML answer, and the page's heading, so that a redirect
// to the sign-in or an error page does not pass for a page.
func (cs *consoleBench) page(b *testing.B, path, title string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Cookie", cs.cookie)
	rec := httptest.NewRecorder()
	cs.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d %.500s", path, rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(rec.Body.String(), "<h1>"+title+"</h1>") {
		b.Fatalf("GET %s: %s without <h1>%s</h1>: %.500s", path, ct, title, rec.Body)
	}
	return rec
}

// benchInboxStore adapts the database to the inbox's Store as serve does:
// BeginBulk returns the concrete staging transaction.
type benchInboxStore struct{ *sqldb.DB }

func (s benchInboxStore) BeginBulk(ctx context.Context, kind, portfolio string, now time.Time) (inbox.Stager, error) {
	return s.DB.BeginBulk(ctx, kind, portfolio, now)
}

// get sends one request through the handler and checks for 200.
func (cs *consoleBench) get(b *testing.B, path, key string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("X-API-Key", key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	cs.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d %.500s", path, rec.Code, rec.Body)
	}
	return rec
}

// run times the requests and the parts.
func (cs *consoleBench) run(b *testing.B) {
	ctx := context.Background()
	// What the operator sees, checked once: the data set is what the
	// figures claim it is.
	var sum api.ConsoleSummary
	if err := json.Unmarshal(cs.get(b, "/v1/console/summary", cs.process).Body.Bytes(), &sum); err != nil {
		b.Fatal(err)
	}
	threads := 0
	for _, p := range sum.Portfolios {
		threads += len(p.Schedules)
	}
	if sum.Day != cs.tomorrow || len(sum.Portfolios) != len(consolePortfolios) || sum.Chain.State == "not_run" ||
		threads != 9 || sum.Inbox == nil || sum.Inbox.Pending == 0 || sum.RedPartners == nil ||
		len(sum.Prices) != 2 || sum.LastSuccess[pipeline.StageKalkulation] == nil {
		b.Fatalf("summary: %s", cs.get(b, "/v1/console/summary", cs.process).Body)
	}
	var mob api.MobileSummary
	if err := json.Unmarshal(cs.get(b, "/v1/mobile/summary", cs.mobile).Body.Bytes(), &mob); err != nil {
		b.Fatal(err)
	}
	if len(mob.Areas) != 4 || len(mob.TSO) != 9 || len(mob.Areas[0].ForecastMW) != 96 {
		b.Fatalf("mobile summary: %s", cs.get(b, "/v1/mobile/summary", cs.mobile).Body)
	}
	b.Logf("summary: chain %s, inbox: %d pending, %d processing, %d failed and %d rejected in 24 h; %d red partners; missing prices %+v",
		sum.Chain.State, sum.Inbox.Pending, sum.Inbox.Processing, sum.Inbox.Failed24h, sum.Inbox.Rejected24h, *sum.RedPartners, sum.Prices)

	// The machine may be shared: the load it had goes with the figures.
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		b.Logf("load average before the timed requests: %s", strings.Join(strings.Fields(string(load))[:3], " "))
	}

	// timed runs fn b.N times and reports milliseconds per call; prep, if
	// given, runs before each call outside the measurement.
	timed := func(b *testing.B, prep, fn func()) float64 {
		if prep != nil {
			prep()
		}
		fn() // warm: the key cache, prepared statements, the page cache
		var took time.Duration
		n := 0
		for b.Loop() {
			if prep != nil {
				b.StopTimer()
				prep()
				b.StartTimer()
			}
			start := time.Now()
			fn()
			took += time.Since(start)
			n++
		}
		ms := float64(took.Microseconds()) / 1000 / float64(n)
		b.ReportMetric(ms, "ms/op")
		return ms
	}
	// indexOne indexes one new EDIFACT file, as a sync that found one does:
	// the market-partner facts that the servers keep are read again on the
	// next call.
	indexed := 0
	indexOne := func() {
		indexed++
		ref := fmt.Sprintf("CB%012d", indexed)
		at := consoleBenchNow.Add(-time.Duration(indexed) * time.Second)
		to := fmt.Sprintf("99%011d", indexed%900+1)
		f := mako.EDIFile{Key: fmt.Sprintf("%sconsole-%07d.edi", jobs.EDIOutPrefix, indexed), ETag: "e", Size: 900, Direction: mako.Out, SeenAt: at,
			Interchange: &mako.Interchange{Ref: ref, PreparedAt: at, Sender: us, SenderQualifier: "500", Receiver: to, ReceiverQualifier: "500",
				Messages: []mako.Message{{Ref: "M" + ref, Type: "PARTIN", BGM: "Z31", DocumentNo: "D" + ref, ProcessID: "37000", Date: at, SegmentCount: 8}}}}
		if err := cs.e.db.IndexEDIFiles(ctx, []mako.EDIFile{f}); err != nil {
			b.Fatal(err)
		}
	}
	var trivial float64
	b.Run("trivial", func(b *testing.B) {
		trivial = timed(b, nil, func() { cs.get(b, "/v1/console/events?limit=1", cs.process) })
	})
	vsTrivial := func(b *testing.B, ms float64) {
		if trivial > 0 {
			b.ReportMetric(ms/trivial, "x_trivial")
		}
	}
	var summary float64
	b.Run("summary", func(b *testing.B) {
		summary = timed(b, nil, func() { cs.get(b, "/v1/console/summary", cs.process) })
		vsTrivial(b, summary)
	})
	// The first summary after a sync indexed something reads the
	// market-partner facts in full.
	b.Run("summary-after-sync", func(b *testing.B) {
		vsTrivial(b, timed(b, indexOne, func() { cs.get(b, "/v1/console/summary", cs.process) }))
	})
	// The app asks for gzip, which the answer of about 10 kB is worth.
	b.Run("mobile", func(b *testing.B) {
		vsTrivial(b, timed(b, nil, func() { cs.get(b, "/v1/mobile/summary", cs.mobile, "Accept-Encoding", "gzip") }))
	})

	// The web console's pages, each with its default parameters, as an
	// operator opens them. The Lage page reads what the summary reads and
	// the position series, and renders a chart per control area. marker is
	// a text the page shows only with its data, absent one it shows only
	// without (the Kalkulation page draws its days with or without
	// quantities, so an empty sum tells that it read none).
	pages := []struct{ name, path, title, marker, absent string }{
		{"lage", "/console/lage", "Lage", "zone-amprion-chart", ""},
		{"laeufe", "/console/laeufe", "Läufe", "/console/laeufe/", ""},
		{"eingang", "/console/eingang", "Eingang", "Erneut verarbeiten", ""},
		{"fahrplaene", "/console/fahrplaene", "Fahrpläne", "SB-haushalt-", ""},
		{"marktpartner", "/console/marktpartner", "Marktpartner", "9900000000001", ""},
		{"antworten", "/console/antworten", "Antworten", `<tr class="row--`, ""},
		{"kalkulation", "/console/kalkulation", "Kalkulation", "kalkulation-chart", `<th scope="row">Summe</th><td>0,000</td>`},
	}
	for _, p := range pages {
		// What each page shows, checked once: a page that lost its data
		// would render fast and prove nothing.
		body := cs.page(b, p.path, p.title).Body
		if p.marker != "" && !strings.Contains(body.String(), p.marker) {
			b.Fatalf("GET %s: no %q in %d bytes", p.path, p.marker, body.Len())
		}
		if p.absent != "" && strings.Contains(body.String(), p.absent) {
			b.Fatalf("GET %s: %q in %d bytes", p.path, p.absent, body.Len())
		}
		b.Logf("%s: %d bytes", p.path, body.Len())
	}
	for _, p := range pages {
		b.Run("page/"+p.name, func(b *testing.B) {
			ms := timed(b, nil, func() { cs.page(b, p.path, p.title) })
			vsTrivial(b, ms)
			if p.name == "lage" && summary > 0 {
				b.ReportMetric(ms/summary, "x_summary")
			}
		})
	}

	// The parts, each the call the summaries make, without HTTP.
	day := cs.tomorrow
	von, bis := kalkulation.DefaultPeriod(pipeline.DayOf(consoleBenchNow))
	db := cs.e.db
	must := func(b *testing.B, err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	parts := []struct {
		name string
		fn   func(b *testing.B)
	}{
		{"runs", func(b *testing.B) {
			_, err := db.Runs(ctx, pipeline.RunQuery{Day: &day, Limit: 1000})
			must(b, err)
		}},
		{"portfolios", func(b *testing.B) { _, err := db.Portfolios(ctx); must(b, err) }},
		{"schedules", func(b *testing.B) { _, err := db.Schedules(ctx, "", day); must(b, err) }},
		{"tso-answers", func(b *testing.B) {
			_, err := db.Events(ctx, pipeline.EventQuery{Kind: "tso.answer", Day: &day, Limit: 10000})
			must(b, err)
		}},
		{"last-successes", func(b *testing.B) { _, err := db.LastSuccesses(ctx); must(b, err) }},
		{"inbox-pending", func(b *testing.B) { _, err := cs.proc.PendingStats(ctx, 10000); must(b, err) }},
		{"inbox-counts", func(b *testing.B) {
			_, err := db.InboxCounts(ctx, consoleBenchNow.Add(-24*time.Hour))
			must(b, err)
		}},
		{"mako-overview", func(b *testing.B) { _, err := cs.mk.Overview(ctx, 365, mako.OrderStatus); must(b, err) }},
		{"mako-overview-after-sync", func(b *testing.B) { _, err := cs.mk.Overview(ctx, 365, mako.OrderStatus); must(b, err) }},
		{"prices", func(b *testing.B) {
			_, err := cs.md.Prices(ctx, price.Spot, day.Start(), day.End())
			must(b, err)
			yesterday := pipeline.DayOf(consoleBenchNow).AddDays(-1)
			_, err = cs.md.Prices(ctx, price.ReBAP, yesterday.Start(), yesterday.End())
			must(b, err)
		}},
		{"positions", func(b *testing.B) { _, _, err := db.Positions(ctx, "", day); must(b, err) }},
		{"open-position", func(b *testing.B) { _, _, err := db.OpenPosition(ctx, "", day); must(b, err) }},
		// The Kalkulation page's period (the month so far): its rows alone,
		// and the calculation with the prices as the page asks for it.
		{"kalkulation-rows", func(b *testing.B) { _, err := db.KalkulationRows(ctx, "", von, bis); must(b, err) }},
		{"kalkulation", func(b *testing.B) { _, err := cs.runner.Kalkulation(ctx, "", von, bis); must(b, err) }},
	}
	for _, p := range parts {
		var prep func()
		if strings.HasSuffix(p.name, "-after-sync") {
			prep = indexOne
		}
		b.Run("part/"+p.name, func(b *testing.B) { timed(b, prep, func() { p.fn(b) }) })
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		b.Logf("load average after the timed requests: %s", strings.Join(strings.Fields(string(load))[:3], " "))
	}
}

// tsoParties are the receivers of the schedules.
var tsoParties = fahrplan.DefaultTSOParty

// seedConsoleYear records a year of delivery days up to tomorrow as the
// runner, the schedules stage and the inbox record them. Days are recorded
// in order; on PostgreSQL eight days at a time, so that the commits of one
// day do not wait for those of another (SQLite has one writer anyway).
func seedConsoleYear(b *testing.B, e *env, now time.Time) {
	tomorrow := pipeline.DayOf(now).AddDays(1)
	first := tomorrow.AddDays(-(consoleBenchDays - 1))
	workers := 1
	if e.db.Dialect() == sqldb.Postgres {
		workers = 8
	}
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(workers)
	var n seedCounts
	for i := range consoleBenchDays {
		d := first.AddDays(i)
		g.Go(func() error { return seedConsoleDay(ctx, e.db, d, now, i, &n) })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	b.Logf("a year: %d runs with %d log lines, %d events, %d schedule versions, %d inbox records",
		n.runs.Load(), n.logLines.Load(), n.events.Load(), n.schedules.Load(), n.inboxFiles.Load())
}

// seedCounts counts what seedConsoleYear recorded.
type seedCounts struct {
	runs, logLines, events, schedules, inboxFiles atomic.Int64
}

// daySeeder records one delivery day.
type daySeeder struct {
	ctx context.Context
	db  *sqldb.DB
	day pipeline.Day
	now time.Time
	rng *rand.Rand
	n   *seedCounts
	err error
	// file numbers the day's inbox files.
	file int
}

// seedConsoleDay records delivery day d: the chain run the morning before
// (with its stages, retries and, on some days, an operator's retry of the
// chain), the schedules with the TSOs' answers, the read models, the inbox
// files that arrived that day, and the kalkulation the morning after.
// Nothing after now is recorded.
func seedConsoleDay(ctx context.Context, db *sqldb.DB, d pipeline.Day, now time.Time, seed int, n *seedCounts) error {
	s := &daySeeder{ctx: ctx, db: db, day: d, now: now, rng: rand.New(rand.NewPCG(uint64(seed), 17)), n: n}
	before := d.AddDays(-1).Start() // midnight Berlin of the day before
	s.chain(before.Add(8 * time.Hour))
	s.inboxFiles(before)
	if kalk := d.AddDays(1).Start().Add(7 * time.Hour); kalk.Before(now) {
		s.stageRuns(pipeline.StageKalkulation, nil, 1, false, "cron", kalk)
	}
	return s.err
}

func (s *daySeeder) fail(err error) {
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("seed %s: %w", s.day, err)
	}
}

// event records a console event as the runner and the inbox write them.
func (s *daySeeder) event(at time.Time, kind, portfolio, subject string, day *pipeline.Day, data map[string]any) {
	raw, _ := json.Marshal(data)
	s.fail(s.db.RecordEvent(s.ctx, pipeline.Event{At: at, Kind: kind, PortfolioID: portfolio, Subject: subject, DeliveryDay: day, Data: raw}))
	s.n.events.Add(1)
}

// runEvent records the runner's event about a run.
func (s *daySeeder) runEvent(at time.Time, kind string, r pipeline.Run, extra map[string]any) {
	s.fail(s.db.RecordEvent(s.ctx, jobs.RunEvent(at, kind, r, extra)))
	s.n.events.Add(1)
}

// stageErrors are what failed attempts report.
var stageErrors = []string{
	"write forecast_malo: put lake/forecast_malo/part-0003.parquet: connection reset by peer",
	"read metered history: context deadline exceeded",
	"publish positions: database is locked",
	"write outbox/fahrplan: 503 Service Unavailable",
}

// stageRuns records a run of st with its attempts (the last one succeeds
// unless giveUp), their log lines and events, and returns the time it ended
// and whether it succeeded. A stage that succeeds stores what its real run
// stores for the console: the read models, the schedules.
func (s *daySeeder) stageRuns(st pipeline.Stage, parent *int64, attempts int, giveUp bool, trigger string, at time.Time) (time.Time, bool) {
	for a := 1; a <= attempts && s.err == nil; a++ {
		if !at.Before(s.now) {
			return at, false
		}
		r, err := s.db.CreateRun(s.ctx, pipeline.Run{ParentID: parent, Stage: st, Day: s.day, Trigger: trigger, Attempt: a, StartedAt: at})
		if err != nil {
			s.fail(err)
			return at, false
		}
		s.n.runs.Add(1)
		s.runEvent(at, "run.started", r, nil)
		took := time.Duration(2+s.rng.IntN(40)) * time.Second
		lines := []pipeline.RunLogLine{
			{At: at, Level: "INFO", Message: "stage started", Attrs: json.RawMessage(fmt.Sprintf(`{"stage":%q,"day":%q,"attempt":%d}`, st, s.day, a))},
			{At: at.Add(took / 3), Level: "INFO", Message: "inputs read", Attrs: json.RawMessage(`{"portfolios":4,"locations":1000000}`)},
			{At: at.Add(took * 2 / 3), Level: "INFO", Message: "dataset written", Attrs: json.RawMessage(`{"rows":96000000,"files":12}`)},
		}
		failed := a < attempts || giveUp
		r.Status = pipeline.RunSucceeded
		if failed {
			r.Status, r.Error = pipeline.RunFailed, stageErrors[s.rng.IntN(len(stageErrors))]
			lines = append(lines, pipeline.RunLogLine{At: at.Add(took), Level: "ERROR", Message: "stage failed",
				Attrs: json.RawMessage(fmt.Sprintf(`{"err":%q}`, r.Error))})
		}
		for i := range lines {
			lines[i].RunID, lines[i].Seq = r.ID, i+1
			s.fail(s.db.AppendRunLog(s.ctx, lines[i]))
			s.n.logLines.Add(1)
		}
		at = at.Add(took)
		var out json.RawMessage
		if !failed {
			out = json.RawMessage(`{"rows":96000,"files":1}`)
		}
		s.fail(s.db.FinishRun(s.ctx, r.ID, r.Status, r.Error, out, at))
		if failed {
			s.runEvent(at, "run.failed", r, nil)
			if a < attempts {
				s.runEvent(at, "stage.retry", r, map[string]any{"next_attempt": a + 1, "backoff_s": 30})
				at = at.Add(30 * time.Second)
			}
			continue
		}
		s.runEvent(at, "run.succeeded", r, nil)
		if st == pipeline.StageAggregate || st == pipeline.StageOpenPosition || st == pipeline.StageKalkulation {
			s.publish(st, r.ID)
		}
		if st == pipeline.StageSchedules {
			at = s.schedules(r.ID, at)
		}
		return at, true
	}
	return at, false
}

// chain records the day's chain: its four stages, each retried after a
// failure now and then; on one day in forty a stage fails every attempt,
// the chain fails, and an operator retries it from that stage.
func (s *daySeeder) chain(at time.Time) {
	from := pipeline.Stages[0]
	trigger := "cron"
	var retryOf *int64
	for round := 0; round < 2 && s.err == nil; round++ {
		var fromStage pipeline.Stage
		if retryOf != nil {
			fromStage = from
		}
		chain, err := s.db.CreateRun(s.ctx, pipeline.Run{Stage: pipeline.StageChain, Day: s.day, Trigger: trigger, StartedAt: at,
			RetryOf: retryOf, FromStage: fromStage})
		if err != nil {
			s.fail(err)
			return
		}
		s.n.runs.Add(1)
		s.runEvent(at, "run.started", chain, nil)
		ok := true
		for _, st := range pipeline.Stages[slices.Index(pipeline.Stages, from):] {
			attempts := 1
			if s.rng.IntN(8) == 0 {
				attempts = 2
			}
			giveUp := round == 0 && s.rng.IntN(40) == 0
			if giveUp {
				attempts = 3
			}
			var done bool
			at, done = s.stageRuns(st, &chain.ID, attempts, giveUp, trigger, at)
			if !done {
				ok, from = false, st
				break
			}
		}
		if !at.Before(s.now) {
			return // still running at the operator's morning
		}
		chain.Status = pipeline.RunSucceeded
		if !ok {
			chain.Status, chain.Error = pipeline.RunFailed, "stage "+string(from)+" failed"
		}
		s.fail(s.db.FinishRun(s.ctx, chain.ID, chain.Status, chain.Error, nil, at))
		s.runEvent(at, "run."+string(chain.Status), chain, nil)
		if ok {
			return
		}
		trigger, retryOf, at = "console", &chain.ID, at.Add(40*time.Minute)
	}
}

// publish stores the read model a stage run computed: positions for
// aggregate, the open position for open-position, the quantities of the
// period calculation for kalkulation (metered on nine days in ten, the
// schedule's on the others), which the Kalkulation page reads.
func (s *daySeeder) publish(st pipeline.Stage, runID int64) {
	ts := s.day.QuarterStartsMicros()
	var pos []pipeline.PositionRow
	var open []pipeline.OpenPositionRow
	var kalk []kalkulation.Row
	// Only the kalkulation, the day's last record, draws from the day's
	// random numbers here, so that the rest of the day is what it was
	// before the Kalkulation page was benchmarked.
	basis := kalkulation.BasisIst
	if st == pipeline.StageKalkulation && s.rng.IntN(10) == 0 {
		basis = kalkulation.BasisFahrplan
	}
	for pi, cp := range consolePortfolios {
		for ai, area := range cp.p.ControlAreas {
			for qh, us := range ts {
				net := cp.share*400 + 20*float64(ai) + 30*math.Sin(float64(qh)/15) + float64(pi)
				at := time.UnixMicro(us).UTC()
				pos = append(pos, pipeline.PositionRow{Portfolio: cp.p.ID, ControlArea: area, QH: qh, TS: at,
					ConsumptionMW: net + 1, ProductionMW: 1, NetMW: net, Source: "generated"})
				open = append(open, pipeline.OpenPositionRow{Portfolio: cp.p.ID, ControlArea: area, QH: qh, TS: at,
					NetMW: net, BoughtMW: net * 0.9, SoldMW: 2, OpenMW: net*0.1 + 2})
				k := kalkulation.Row{Portfolio: cp.p.ID, ControlArea: area, Day: s.day, QH: qh, TS: at, BoughtMW: net * 0.9, SoldMW: 2, Basis: basis}
				if basis == kalkulation.BasisIst && st == pipeline.StageKalkulation {
					k.IstMW = net * (0.95 + 0.1*s.rng.Float64())
				}
				kalk = append(kalk, k)
			}
		}
	}
	switch st {
	case pipeline.StageAggregate:
		s.fail(s.db.PublishPositions(s.ctx, runID, s.day, pos))
	case pipeline.StageOpenPosition:
		s.fail(s.db.PublishOpenPosition(s.ctx, runID, s.day, open))
	case pipeline.StageKalkulation:
		s.fail(s.db.PublishKalkulation(s.ctx, runID, s.day, kalk))
	}
}

// schedules records what the schedules run sent (version 1 per portfolio
// and control area, a new version after an anomaly report or a rejection)
// and the TSOs' answers, each taken in through the inbox as a tso.answer
// event with its record.
func (s *daySeeder) schedules(runID int64, at time.Time) time.Time {
	for _, cp := range consolePortfolios {
		for _, area := range cp.p.ControlAreas {
			sent := at
			for v := 1; s.err == nil; v++ {
				m, _, err := s.db.RecordSchedule(s.ctx, pipeline.ScheduleMessage{PortfolioID: cp.p.ID, Day: s.day, ControlArea: area,
					MessageID: fmt.Sprintf("SB-%s-%s-%s", cp.p.ID, compact(s.day), area), FileName: fmt.Sprintf("%s_%s_%s_%03d.XML", compact(s.day), cp.p.ID, area, v),
					ObjectKey: fmt.Sprintf("outbox/fahrplan/%s/%s_%s_%03d.XML", s.day, cp.p.ID, area, v), ContentHash: fmt.Sprintf("%s-%s-%d", cp.p.ID, area, v),
					Sender: bg, Receiver: tsoParties[area], RunID: runID, SentAt: sent})
				if err != nil {
					s.fail(err)
					return at
				}
				s.n.schedules.Add(1)
				day := s.day
				s.event(sent, "schedule.sent", cp.p.ID, m.FileName, &day, map[string]any{"portfolio": cp.p.ID, "control_area": area,
					"file_name": m.FileName, "object_key": m.ObjectKey, "version": m.Version, "message_id": m.MessageID, "series": 3})
				s.answer(m, "ACK", pipeline.ScheduleAcknowledged, sent.Add(time.Duration(5+s.rng.IntN(20))*time.Minute), nil)
				later := sent.Add(time.Duration(90+s.rng.IntN(180)) * time.Minute)
				// Most versions are confirmed; 6% get an anomaly report and
				// 2% are rejected, and a corrected version follows (at most
				// three versions a day).
				k := s.rng.IntN(100)
				switch {
				case v < 3 && k < 6:
					s.answer(m, "ANO", pipeline.ScheduleAnomaly, later, []inbox.AnswerReason{
						{Code: "A63", Text: "Time series not matching with counterparty", SeriesID: "TS0001"},
						{Code: "A28", Text: "Counterpart time series quantity differences", SeriesID: "TS0002"}})
				case v < 3 && k < 8:
					later = sent.Add(30 * time.Minute)
					s.answer(m, "ACK", pipeline.ScheduleRejected, later, []inbox.AnswerReason{{Code: "A59", Text: "Not compliant to local market rules"}})
				default:
					s.answer(m, "CNF", pipeline.ScheduleConfirmed, later, nil)
				}
				sent = later.Add(20 * time.Minute)
				if k >= 8 || v == 3 || !sent.Before(s.now) {
					break
				}
			}
		}
	}
	return at.Add(time.Minute)
}

// answer takes a TSO answer in as the inbox does: a claimed record of the
// answer file, the schedule's state, and the closed record with its
// tso.answer event.
func (s *daySeeder) answer(m pipeline.ScheduleMessage, kind string, status pipeline.ScheduleStatus, at time.Time, reasons []inbox.AnswerReason) {
	if !at.Before(s.now) || s.err != nil {
		return
	}
	if reasons == nil {
		reasons = []inbox.AnswerReason{}
	}
	name := fmt.Sprintf("%s_%s_%s.XML", m.FileName[:len(m.FileName)-4], kind, at.Format("20060102T150405"))
	key := "inbox/tso/" + name
	f, ok, err := s.db.ClaimInboxFile(s.ctx, pipeline.InboxFile{Key: key, ETag: "e" + name, Size: 2400, Kind: "tso-answer", Name: name},
		"bench", at, 2*time.Minute)
	if err != nil || !ok {
		s.fail(fmt.Errorf("claim %s: %v %w", key, ok, err))
		return
	}
	dest := "processed/tso/" + name
	accepted := status != pipeline.ScheduleRejected
	s.fail(s.db.MarkInboxStaged(s.ctx, f.ID, "bench", dest, string(status), []byte(`{}`)))
	s.fail(s.db.RecordScheduleAnswer(s.ctx, m.ID, status, kind, at, dest, kind))
	raw, _ := json.Marshal(map[string]any{"id": f.ID, "file": key, "dest": dest, "kind": kind, "format": "ESS",
		"message_id": m.MessageID, "version": m.Version, "status": status, "accepted": accepted, "reasons": reasons,
		"schedule_id": m.ID, "control_area": m.ControlArea})
	day := s.day
	s.n.inboxFiles.Add(1)
	s.n.events.Add(1)
	s.fail(s.db.FinishInboxFile(s.ctx, f.ID, "bench", at, pipeline.Event{At: at, Kind: "tso.answer", PortfolioID: m.PortfolioID,
		Subject: name, DeliveryDay: &day, Data: raw}))
}

// inboxFiles records the files the suppliers and meter operators dropped
// on the day before the delivery day: about 200, of which a few are
// rejected and now and then one fails.
func (s *daySeeder) inboxFiles(midnight time.Time) {
	kinds := []string{"metered-data", "metered-data", "metered-data", "forecasts", "master-data", "profiles"}
	n := 180 + s.rng.IntN(40)
	for i := 0; i < n && s.err == nil; i++ {
		at := midnight.Add(time.Duration(s.rng.IntN(24*3600)) * time.Second)
		if !at.Before(s.now) {
			continue
		}
		p := consolePortfolios[s.rng.IntN(len(consolePortfolios))].p.ID
		kind := kinds[s.rng.IntN(len(kinds))]
		s.file++
		name := fmt.Sprintf("%s_%04d.csv", s.day.AddDays(-1), s.file)
		key := fmt.Sprintf("inbox/%s/%s/%s", p, kind, name)
		f, ok, err := s.db.ClaimInboxFile(s.ctx, pipeline.InboxFile{Key: key, ETag: fmt.Sprintf("%x", s.rng.Uint64()), Size: 40_000 + s.rng.Int64N(4_000_000),
			PortfolioID: p, Kind: kind, Name: name}, "bench", at, 2*time.Minute)
		if err != nil || !ok {
			s.fail(fmt.Errorf("claim %s: %v %w", key, ok, err))
			return
		}
		// Each record closes with its event.
		s.n.inboxFiles.Add(1)
		s.n.events.Add(1)
		done := at.Add(time.Duration(1+s.rng.IntN(20)) * time.Second)
		switch k := s.rng.IntN(1000); {
		case k < 3: // given up after its attempts
			ev := pipeline.Event{At: done, Kind: "inbox.failed", PortfolioID: p, Subject: key,
				Data: json.RawMessage(fmt.Sprintf(`{"id":%d,"reason":"gave up after 5 attempts","kind":%q,"name":%q}`, f.ID, kind, name))}
			s.fail(s.db.FailInboxFile(s.ctx, f.ID, "bench", done, "gave up after 5 attempts", "read: unexpected EOF", ev))
		case k < 25: // rejected with problems
			dest := fmt.Sprintf("rejected/%s/%s/%s", p, kind, name)
			s.fail(s.db.MarkInboxRejected(s.ctx, f.ID, "bench", "3 problem(s) found", dest, []byte(`{"errors":[]}`)))
			s.fail(s.db.FinishInboxFile(s.ctx, f.ID, "bench", done, pipeline.Event{At: done, Kind: "inbox.rejected", PortfolioID: p, Subject: key,
				Data: json.RawMessage(fmt.Sprintf(`{"id":%d,"dest":%q,"kind":%q,"name":%q,"reason":"3 problem(s) found"}`, f.ID, dest, kind, name))}))
		default:
			dest := fmt.Sprintf("processed/%s/%s/%s", p, kind, name)
			s.fail(s.db.MarkInboxStaged(s.ctx, f.ID, "bench", dest, "created", []byte(`{}`)))
			s.fail(s.db.FinishInboxFile(s.ctx, f.ID, "bench", done, pipeline.Event{At: done, Kind: "inbox.processed", PortfolioID: p, Subject: key,
				Data: json.RawMessage(fmt.Sprintf(`{"id":%d,"dest":%q,"kind":%q,"name":%q,"status":"created","input_hash":"%x"}`, f.ID, dest, kind, name, s.rng.Uint64()))}))
		}
	}
}

// seedConsolePrices stores a year of quarter-hourly spot prices up to and
// including tomorrow, and reBAP up to the day before yesterday: the reBAP of
// yesterday, which the kalkulation of today needs, is not out yet.
func seedConsolePrices(b *testing.B, e *env, now time.Time) {
	ctx := context.Background()
	today := pipeline.DayOf(now)
	var spot, rebap []price.Point
	for d := today.AddDays(-365); !today.AddDays(1).Before(d); d = d.AddDays(1) {
		for q, us := range d.QuarterStartsMicros() {
			ts := time.UnixMicro(us).UTC()
			v := 90 + 30*math.Sin(float64(q)/8)
			spot = append(spot, price.Point{Start: ts, Minutes: 15, Price: v, PriceLong: v})
			if d.Before(today.AddDays(-1)) {
				rebap = append(rebap, price.Point{Start: ts, Minutes: 15, Price: v + 40, PriceLong: v - 30})
			}
		}
	}
	if _, err := e.db.PutPrices(ctx, price.Spot, spot, "bench", now); err != nil {
		b.Fatal(err)
	}
	if _, err := e.db.PutPrices(ctx, price.ReBAP, rebap, "bench", now); err != nil {
		b.Fatal(err)
	}
}

// seedConsoleInbox leaves files in the inbox: five waiting for the next
// scan, three that failed and stay there until an operator retries them,
// and one a process is working on.
func seedConsoleInbox(b *testing.B, e *env, now time.Time) {
	ctx := context.Background()
	put := func(key string) pipeline.ObjectInfo {
		body := []byte("malo;day;unit;v1\n50000000001;2026-11-22;KWH;1,5\n")
		e.putBytes(b, key, body)
		info, err := e.bucket.Stat(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		return info
	}
	for i := range 5 {
		put(fmt.Sprintf("inbox/haushalt/metered-data/pending_%d.csv", i))
	}
	for i := range 3 {
		key := fmt.Sprintf("inbox/gewerbe/metered-data/broken_%d.csv", i)
		info := put(key)
		at := now.Add(-time.Duration(i+1) * time.Hour)
		f, ok, err := e.db.ClaimInboxFile(ctx, pipeline.InboxFile{Key: key, ETag: info.ETag, Size: info.Size, PortfolioID: "gewerbe",
			Kind: "metered-data", Name: fmt.Sprintf("broken_%d.csv", i)}, "bench", at, 2*time.Minute)
		if err != nil || !ok {
			b.Fatalf("claim %s: %v %v", key, ok, err)
		}
		if err := e.db.FailInboxFile(ctx, f.ID, "bench", at, "gave up after 5 attempts", "read: unexpected EOF",
			pipeline.Event{At: at, Kind: "inbox.failed", PortfolioID: "gewerbe", Subject: key, Data: json.RawMessage(`{"reason":"gave up after 5 attempts"}`)}); err != nil {
			b.Fatal(err)
		}
	}
	key := "inbox/industrie/master-data/stammdaten.csv"
	info := put(key)
	if _, ok, err := e.db.ClaimInboxFile(ctx, pipeline.InboxFile{Key: key, ETag: info.ETag, Size: info.Size, PortfolioID: "industrie",
		Kind: "master-data", Name: "stammdaten.csv"}, "bench/other", now.Add(-30*time.Second), 2*time.Minute); err != nil || !ok {
		b.Fatalf("claim %s: %v %v", key, ok, err)
	}
}

// compact is a day as YYYYMMDD, as schedule file names carry it.
func compact(d pipeline.Day) string { return fmt.Sprintf("%04d%02d%02d", d.Year, int(d.Month), d.Dom) }
