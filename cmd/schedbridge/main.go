// Command schedbridge is the scheduling bridge: the HTTP API, the operator
// commands for portfolios and keys, and database migrations. It is the only
// package that reads flags and the environment; it wires the adapters.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/api/bearer"
	"github.com/schedbridge/schedbridge/api/requestid"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

func main() {
	env := runEnv{stdout: os.Stdout, stderr: os.Stderr, terminal: isTerminal(os.Stderr), getenv: os.Getenv,
		environ: os.Environ, now: time.Now}
	os.Exit(env.run(context.Background(), os.Args[1:]))
}

// app carries what every command needs.
type app struct {
	cfg    Config
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	now    func() time.Time
	// terminal says whether stderr is a terminal: progress bars and plain
	// sentences there, log records otherwise.
	terminal bool
	// term writes to stderr when it is a terminal (progress.go).
	term *termWriter
	// command is the path of the running command, "portfolio put".
	command string
}

// extractConfigFlag takes --config FILE (or --config=FILE) from anywhere in
// the arguments, so it works before and after the command.
func extractConfigFlag(args []string) (string, []string) {
	var path string
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "--config" || a == "-config") && i+1 < len(args):
			path = args[i+1]
			i++
		case strings.HasPrefix(a, "--config="):
			path = strings.TrimPrefix(a, "--config=")
		default:
			out = append(out, a)
		}
	}
	return path, out
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	// loadConfig has refused a level that does not parse.
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	// Lines logged with an HTTP request's context carry its id, in every
	// package the request passes through.
	if cfg.LogFormat == "text" {
		return slog.New(requestid.Handler(slog.NewTextHandler(w, opts)))
	}
	return slog.New(requestid.Handler(slog.NewJSONHandler(w, opts)))
}

// terminalLogger is the logger of a command other than serve whose stderr
// is a terminal: records from warnings up (from errors up when log_level
// says so), as text without the time, written above an open progress bar.
// What a person needs of the info records, the command says in its
// sentences; log_format does not apply, since no program reads a terminal.
func terminalLogger(cfg Config, w *termWriter) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: max(level, slog.LevelWarn), ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		return a
	}}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openDB opens the configured database and applies pending migrations, so
// that any command works on a fresh data directory.
func (a *app) openDB(ctx context.Context) (*sqldb.DB, error) {
	if err := checkDataDir(a.cfg.DataDir); err != nil {
		return nil, err
	}
	db, err := sqldb.Open(ctx, sqldb.Options{URL: a.cfg.DatabaseURL, DataDir: a.cfg.DataDir})
	if err != nil {
		return nil, err
	}
	applied, err := db.Migrate(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	for _, name := range applied {
		a.log.Info("migration applied", "name", name, "dialect", string(db.Dialect()))
	}
	if a.terminal && len(applied) > 0 {
		// One sentence for the records that a terminal does not show.
		fmt.Fprintf(a.tw(), "database (%s): %d migrations applied\n", db.Dialect(), len(applied))
	}
	return db, nil
}

// withDB runs fn on the configured database, opened as openDB does, and
// closes it afterwards.
func (a *app) withDB(ctx context.Context, fn func(*sqldb.DB) error) error {
	db, err := a.openDB(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(db)
}

func (a *app) migrate(ctx context.Context) error {
	db, err := a.openDB(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	a.checkStored(ctx, db)
	a.note(fmt.Sprintf("database (%s) is up to date", db.Dialect()), "dialect", string(db.Dialect()))
	return nil
}

func cmdPortfolioPut(a *app, fs *flag.FlagSet) action {
	name := fs.String("name", "", "display name (required)")
	areas := fs.String("control-areas", "", "comma-separated active control areas: 50Hertz, Amprion, TenneT, TransnetBW")
	bg := fs.String("balancing-group", "", "EIC of the portfolio's balancing group (sender of its schedules)")
	xbg := fs.String("exchange-balancing-group", "", "EIC of the exchange's balancing group: counterparty of the open position without trades")
	return func(ctx context.Context, pos []string) error {
		if len(pos) != 1 {
			return usagef("want exactly one ID")
		}
		p := pipeline.Portfolio{ID: pos[0], Name: *name, BalancingGroup: *bg, ExchangeBalancingGroup: *xbg}
		for _, s := range strings.Split(*areas, ",") {
			if s = strings.TrimSpace(s); s != "" {
				p.ControlAreas = append(p.ControlAreas, pipeline.ControlArea(s))
			}
		}
		// Refuse bad input before touching the database.
		if err := p.Validate(); err != nil {
			return err
		}
		db, err := a.openDB(ctx)
		if err != nil {
			return err
		}
		defer db.Close()
		created, err := db.PutPortfolio(ctx, p, a.now())
		if err != nil {
			return err
		}
		verb := "updated"
		if created {
			verb = "created"
		}
		a.note(fmt.Sprintf("portfolio %s %s", p.ID, verb), "portfolio", p.ID)
		return nil
	}
}

func cmdPortfolioList(a *app, fs *flag.FlagSet) action {
	return listCmd(a, fs, (*sqldb.DB).Portfolios,
		"ID\tNAME\tCONTROL AREAS\tBALANCING GROUP", func(p pipeline.Portfolio) []string {
			areas := make([]string, len(p.ControlAreas))
			for i, c := range p.ControlAreas {
				areas[i] = string(c)
			}
			return []string{p.ID, p.Name, strings.Join(areas, ","), p.BalancingGroup}
		})
}

// knownPortfolio refuses a portfolio named on the command line that is not
// stored, saying how to create it; a data problem, not a mistake on the
// command line, so without a usage hint.
func knownPortfolio(ctx context.Context, db *sqldb.DB, id string) error {
	_, err := db.Portfolio(ctx, id)
	if pipeline.KindOf(err) == pipeline.NotFound {
		return pipeline.Errorf(pipeline.Invalid, "unknown portfolio %q: create it with `schedbridge portfolio put %s` (see `schedbridge portfolio list`)", id, id)
	}
	return err
}

func cmdKeyCreate(a *app, fs *flag.FlagSet) action {
	ent := entitlementFlags(fs, "key")
	return func(ctx context.Context, pos []string) error {
		sc, err := ent.parse(pos)
		if err != nil {
			return err
		}
		id, secret, err := pipeline.NewKey(rand.Reader)
		if err != nil {
			return err
		}
		k := pipeline.APIKey{ID: id, Scope: sc, PortfolioID: *ent.portfolio, Label: *ent.label, CreatedAt: a.now().UTC()}
		if err := a.withDB(ctx, func(db *sqldb.DB) error {
			if k.PortfolioID != "" {
				if err := knownPortfolio(ctx, db, k.PortfolioID); err != nil {
					return err
				}
			}
			return db.CreateKey(ctx, k, pipeline.HashKey(secret))
		}); err != nil {
			return err
		}
		// The secret goes to stdout and nowhere else, so that scripts can
		// capture it with $(...); it cannot be shown again.
		fmt.Fprintln(a.stdout, secret)
		a.note(fmt.Sprintf("key %s created (scope %s); store it now, it is shown once", id, sc), "key", id, "scope", string(sc))
		return nil
	}
}

func cmdKeyList(a *app, fs *flag.FlagSet) action {
	return listCmd(a, fs, (*sqldb.DB).Keys,
		"ID\tSCOPE\tPORTFOLIO\tLABEL\tCREATED\tLAST USED\tREVOKED", func(k pipeline.APIKey) []string {
			return []string{k.ID, string(k.Scope), orDash(k.PortfolioID), orDash(k.Label), k.CreatedAt.Format(time.RFC3339),
				timeOrDash(k.LastUsedAt), timeOrDash(k.RevokedAt)}
		})
}

func cmdKeyRevoke(a *app, fs *flag.FlagSet) action {
	return oneArg("key ID", func(ctx context.Context, id string) error {
		if err := a.withDB(ctx, func(db *sqldb.DB) error { return db.RevokeKey(ctx, id, a.now()) }); err != nil {
			return err
		}
		a.note(fmt.Sprintf("key %s revoked", id), "key", id)
		return nil
	})
}

// entitlement holds the flags that say what a key or a machine client is
// entitled to: its scope and portfolio, and a label to recognise it by.
type entitlement struct{ scope, portfolio, label *string }

func entitlementFlags(fs *flag.FlagSet, what string) entitlement {
	return entitlement{
		scope:     fs.String("scope", "", "data, process, report or mobile (required)"),
		portfolio: fs.String("portfolio", "", "portfolio of a data or report "+what),
		label:     fs.String("label", "", "free text to recognise the "+what+" by"),
	}
}

// parse checks that a command that takes flags only got no argument, and
// parses its scope.
func (e entitlement) parse(pos []string) (pipeline.Scope, error) {
	if len(pos) != 0 {
		return "", usagef("unexpected argument %q", pos[0])
	}
	return pipeline.ParseScope(*e.scope)
}

// listCmd prints what fetch returns as a table, or as JSON with --json.
func listCmd[T any](a *app, fs *flag.FlagSet, fetch func(*sqldb.DB, context.Context) ([]T, error),
	header string, row func(T) []string) action {
	asJSON := fs.Bool("json", false, "print JSON")
	return noArgs(func(ctx context.Context) error {
		var items []T
		err := a.withDB(ctx, func(db *sqldb.DB) (err error) {
			items, err = fetch(db, ctx)
			return err
		})
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(a.stdout).Encode(items)
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, header)
		for _, it := range items {
			fmt.Fprintln(tw, strings.Join(row(it), "\t"))
		}
		return tw.Flush()
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// newMetricsServer serves the registry's metrics at GET /metrics and
// nothing else.
func newMetricsServer(reg *prometheus.Registry, log *slog.Logger) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}))
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// serve runs the API until SIGTERM or SIGINT, then drains: new requests get
// 503 with Retry-After while requests in flight finish, and the process exits 0.
func (a *app) serve(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	db, err := a.openDB(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	a.checkStored(ctx, db)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	bucket, err := a.openBucket(ctx)
	if err != nil {
		return err
	}
	runner, lk, err := a.newRunner(ctx, db, bucket, reg, nil)
	if err != nil {
		return err
	}
	// Machine clients' access tokens: the verifier keeps the registered
	// issuers' keys cached for the life of the process, through the drain.
	tokens, err := bearer.New(context.WithoutCancel(ctx), db, bearer.Config{Now: a.now, Logger: a.log})
	if err != nil {
		return err
	}
	defer tokens.Close()
	deps := api.Deps{Keys: db, Portfolios: db, Staging: db, Audit: db, DB: db, Tokens: tokens, TokenClients: db,
		InboxFiles: db, Events: db, Runner: runner, Results: db, Trades: db,
		Starter: runner, RunLogs: db, Recorded: db, Operators: db, EventCursor: db,
		// GET /readyz: the schema is current and the bucket answers.
		Schema: db, Bucket: bucket}
	// The scheduler fires the stages on cron on the one process that holds
	// the leader lock; it stops with the process.
	schedDone := make(chan struct{})
	schedCtx, stopSched := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { stopSched(); <-schedDone }()
	if a.cfg.Pipeline.Scheduler {
		specs, err := a.cfg.Pipeline.stageSpecs()
		if err != nil {
			close(schedDone)
			return err
		}
		sched, err := jobs.NewScheduler(runner, db, jobs.SchedulerConfig{Specs: specs, Now: a.now, Sweeper: lk, SweepAge: a.cfg.Pipeline.LakeRetention,
			LeaderPoll: a.cfg.Pipeline.LeaderPoll, StaleAfter: a.cfg.Pipeline.RunStaleAfter})
		if err == nil {
			err = sched.Register(reg)
		}
		if err != nil {
			close(schedDone)
			return err
		}
		go func() {
			defer close(schedDone)
			if err := sched.Run(schedCtx); err != nil {
				a.log.Error("scheduler stopped", "err", err)
			}
		}()
	} else {
		close(schedDone)
	}
	// Every replica has the inbox's processor: it serves the console's inbox
	// desk and counts what waits for the metrics, whichever replica scans.
	// Only with inbox.enabled does it scan, beside the API, stopping with
	// it; a file being staged when the process stops is rolled back and
	// processed on the next start.
	proc, err := a.newProcessor(bucket, db, reg)
	if err != nil {
		return err
	}
	deps.Inbox = proc
	inboxDone := make(chan struct{})
	inboxCtx, stopInbox := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { stopInbox(); <-inboxDone }()
	if a.cfg.Inbox.Enabled {
		deps.Waker = proc
		go func() { defer close(inboxDone); _ = proc.Run(inboxCtx) }()
		a.log.Info("inbox running", "bucket", bucket.String(), "interval_s", a.cfg.Inbox.Interval.Seconds())
	} else {
		close(inboxDone)
	}
	// The market communication syncs its channels beside the API.
	makoDone := make(chan struct{})
	makoCtx, stopMako := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { stopMako(); <-makoDone }()
	mk, err := a.newMako(db, bucket)
	if err != nil {
		close(makoDone)
		return err
	}
	deps.Mako = mk
	if err := mk.Register(reg); err != nil {
		close(makoDone)
		return err
	}
	// The metrics of the recorded state are read from the database and the
	// market-partner overview and the inbox at
	// scrape time, so that every replica shows the same, runs of
	// `schedbridge run`, of other replicas and of before a restart included.
	state := jobs.NewStateCollector(jobs.StateSources{Runs: db, Schedules: db, Inbox: proc, Partners: mk},
		jobs.StateConfig{Now: a.now, Logger: a.log})
	if err := state.Register(reg); err != nil {
		close(makoDone)
		return err
	}
	md := a.newMarktdaten(db)
	deps.Marktdaten, deps.Calculator = md, runner
	if a.cfg.Mako.Sync {
		go func() { defer close(makoDone); a.runMakoSync(makoCtx, mk, md, bucket) }()
	} else {
		close(makoDone)
	}
	ph, err := a.newPortal(db)
	if err != nil {
		return err
	}
	if ph != nil {
		deps.Portal = ph
		defer ph.Close()
		sweepCtx, stopSweep := context.WithCancel(context.WithoutCancel(ctx))
		sweepDone := make(chan struct{})
		defer func() { stopSweep(); <-sweepDone }()
		go func() { defer close(sweepDone); a.sweepPortal(sweepCtx, db) }()
	}
	webhook := ""
	switch {
	case a.cfg.Inbox.WebhookToken != "":
		webhook = pipeline.HashKey(a.cfg.Inbox.WebhookToken)
	case a.cfg.Inbox.WebhookOpen:
		a.log.Warn("the bucket-notification webhook is open: anyone who reaches POST /v1/inbox/events "+
			"can wake the inbox scan; keep the route reachable from the S3 server only", "addr", a.cfg.Addr)
	}
	srv := api.New(api.Config{
		MaxBodyBytes: a.cfg.MaxBodyBytes, RatePerSecond: a.cfg.RateLimit, RateBurst: a.cfg.RateBurst,
		RetryAfter: a.cfg.RetryAfter, Logger: a.log, Registry: reg, WebhookTokenHash: webhook,
		WebhookOpen: a.cfg.Inbox.WebhookOpen, WriteTimeout: a.cfg.WriteTimeout,
	}, deps)

	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", a.cfg.Addr, err)
	}
	// ReadTimeout bounds receiving each whole request, headers and body,
	// and net/http lifts it once the body is in, so a slow handler is not
	// cut; the headers alone get at most 10 s. There is deliberately no
	// WriteTimeout: it would count from the end of the headers and cut the
	// answers of long runs, so the API sets the write deadline per answer
	// (api/deadline.go).
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadTimeout:       a.cfg.ReadTimeout,
		ReadHeaderTimeout: min(10*time.Second, a.cfg.ReadTimeout),
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	// The metrics have a listener of their own (metrics_addr, loopback by
	// default): they show the schedules per TSO answer, the inbox's backlog
	// and the leader flag, which are nothing for whoever can reach the API.
	mln, err := net.Listen("tcp", a.cfg.MetricsAddr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("listen %s (%s): %w", a.cfg.MetricsAddr, keyName("metrics_addr"), err)
	}
	ms := newMetricsServer(reg, a.log)
	errc := make(chan error, 2)
	go func() { errc <- hs.Serve(ln) }()
	go func() { errc <- ms.Serve(mln) }()
	a.log.Info("serving", "addr", ln.Addr().String(), "metrics_addr", mln.Addr().String(),
		"dialect", string(db.Dialect()), "data_dir", a.cfg.DataDir)

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	a.log.Info("shutting down: draining")
	srv.Drain()
	deadline := time.Now().Add(a.cfg.ShutdownTimeout)
	// Keep the listener open for the grace period and until the work in flight
	// is done, so that late clients get a 503 with Retry-After rather than a
	// refused connection.
	time.Sleep(a.cfg.DrainGrace)
	for srv.InFlight() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	sctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	// The metrics were served through the drain; a scrape in flight is
	// short.
	if err := ms.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: metrics: %w", err)
	}
	// Runs that the console started in the background end as failed, with
	// the shutdown as their error, while the database is still open; an
	// operator retries them on another replica or after the restart.
	if err := runner.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: background runs: %w", err)
	}
	a.log.Info("stopped")
	return nil
}
