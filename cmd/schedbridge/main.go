// Command schedbridge is the scheduling bridge: the HTTP API, the operator
// commands for portfolios and keys, and database migrations. It is the only
// package that reads flags and the environment; it wires the adapters.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
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

	"github.com/schedbridge/schedbridge/api"
	"github.com/schedbridge/schedbridge/api/bearer"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

const usage = `schedbridge: the scheduling bridge of a German balancing group.

Usage:
  schedbridge [--config FILE] COMMAND [ARGS]

Commands:
  serve                                  run the HTTP API and the bulk inbox (applies pending migrations first)
  migrate                                apply pending migrations and exit
  portfolio put ID --name NAME --control-areas 50Hertz,TenneT [--balancing-group EIC] [--exchange-balancing-group EIC]
  portfolio list [--json]
  key create --scope data|process|report|mobile [--portfolio ID] [--label TEXT]
  key list [--json]
  key revoke ID
  issuer add URL --audience AUD          trust the access tokens of an OAuth 2.0 issuer (discovery via
                                         URL/.well-known/openid-configuration; https, or http on loopback)
  issuer list [--json] | issuer remove URL
  client add --issuer URL --client-id ID --scope data|process|report|mobile [--portfolio ID] [--label TEXT]
                                         register a machine client; its tokens need schedbridge:<scope>
  client list [--json] | client revoke --issuer URL --client-id ID
  inbox put FILE --portfolio ID --kind metered-data|profiles|master-data|forecasts [--name NAME]
  inbox scan                             process the files waiting in the inbox once, then exit
  run forecast|aggregate|open-position|schedules|kalkulation|chain [--day YYYY-MM-DD]
                                         run one stage (or the whole chain) now, with progress
                                         (default day: tomorrow; for kalkulation yesterday)
  prices import spot|rebap FILE          import SMARD JSON spot prices or a netztransparenz reBAP CSV
  zeitreihen aktivierungen FILE          replace the imported series activations (JSON or .csv)
  zeitreihen sync                        import the files dropped under inbox/prices/ and inbox/zeitreihen/ once
  kalkulation [--von D] [--bis D] [--portfolio ID]
                                         the period calculation as JSON (default: this month up to yesterday)
  demo [--locations N] [--day YYYY-MM-DD] create a demo portfolio, run the chain for tomorrow, print where to look
  mako sync|registry FILE|send MP_ID STREAM|nachversand [--list]|overview|antworten
                                         the market communication with the DSOs (see docs/mako.md)
  portal employee put ID --name N --email E [--department D] [--position P] [--entry-date D] [--state BE]
        [--weekly-hours H] [--leave-days N] [--sso-subject S] [--magic-link] [--roles R,...]
        [--component NAME=EUR:INTERVAL[:VISIBILITY] ...]
  portal employee import FILE.csv | portal compensation import FILE.csv | portal employee list [--json]
  portal user put --email E --name N [--roles R,...] [--magic-link=false]
  portal certificate status ID beantragt|in_bearbeitung|ausgestellt|abgelehnt
                                         HR loads the employees' portal (see docs/portal-hr.md)

Configuration comes from the environment (SCHEDBRIDGE_ADDR, SCHEDBRIDGE_DATA_DIR,
SCHEDBRIDGE_DATABASE_URL, SCHEDBRIDGE_MAX_BODY_BYTES, ...; see README) and an
optional YAML file given with --config.
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// app carries what every command needs.
type app struct {
	cfg    Config
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	now    func() time.Time
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	configPath, args := extractConfigFlag(args)
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cfg, err := loadConfig(configPath, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "schedbridge:", err)
		return 2
	}
	a := &app{cfg: cfg, stdout: stdout, stderr: stderr, log: newLogger(cfg, stderr), now: time.Now}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		err = a.serve(ctx)
	case "migrate":
		err = a.migrate(ctx)
	case "portfolio":
		err = a.portfolio(ctx, rest)
	case "key":
		err = a.key(ctx, rest)
	case "issuer":
		err = a.issuer(ctx, rest)
	case "client":
		err = a.client(ctx, rest)
	case "inbox":
		err = a.inbox(ctx, rest)
	case "run":
		err = a.runCmd(ctx, rest)
	case "demo":
		err = a.demo(ctx, rest)
	case "mako":
		err = a.makoCmd(ctx, rest)
	case "prices", "zeitreihen", "kalkulation":
		err = a.marktdatenCmd(ctx, cmd, rest)
	case "portal":
		err = a.portalCmd(ctx, rest)
	default:
		fmt.Fprintf(stderr, "schedbridge: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "schedbridge:", err)
		// Bad arguments, whether the command line caught them or the domain
		// did, exit 2; failures of the work itself exit 1.
		var ue usageError
		if errors.As(err, &ue) || pipeline.KindOf(err) == pipeline.Invalid {
			return 2
		}
		return 1
	}
	return 0
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

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
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// openDB opens the configured database and applies pending migrations, so
// that any command works on a fresh data directory.
func (a *app) openDB(ctx context.Context) (*sqldb.DB, error) {
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
	fmt.Fprintf(a.stderr, "database (%s) is up to date\n", db.Dialect())
	return nil
}

// parseInterspersed parses flags that may stand before, between or after
// positional arguments, as `portfolio put ID --name X` needs.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func newFlagSet(name string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	return fs
}

func (a *app) portfolio(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("portfolio: want put or list")
	}
	switch args[0] {
	case "put":
		fs := newFlagSet("portfolio put", a.stderr)
		name := fs.String("name", "", "display name (required)")
		areas := fs.String("control-areas", "", "comma-separated active control areas: 50Hertz, Amprion, TenneT, TransnetBW")
		bg := fs.String("balancing-group", "", "EIC of the portfolio's balancing group (sender of its schedules)")
		xbg := fs.String("exchange-balancing-group", "", "EIC of the exchange's balancing group: counterparty of the open position without trades")
		pos, err := parseInterspersed(fs, args[1:])
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usagef("portfolio put: want exactly one ID")
		}
		p := pipeline.Portfolio{ID: pos[0], Name: *name, BalancingGroup: *bg, ExchangeBalancingGroup: *xbg}
		for _, s := range strings.Split(*areas, ",") {
			if s = strings.TrimSpace(s); s != "" {
				p.ControlAreas = append(p.ControlAreas, pipeline.ControlArea(s))
			}
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
		fmt.Fprintf(a.stderr, "portfolio %s %s\n", p.ID, verb)
		return nil
	case "list":
		return listCmd(ctx, a, "portfolio list", args[1:], (*sqldb.DB).Portfolios,
			"ID\tNAME\tCONTROL AREAS\tBALANCING GROUP", func(p pipeline.Portfolio) []string {
				areas := make([]string, len(p.ControlAreas))
				for i, c := range p.ControlAreas {
					areas[i] = string(c)
				}
				return []string{p.ID, p.Name, strings.Join(areas, ","), p.BalancingGroup}
			})
	}
	return usagef("portfolio: unknown subcommand %q", args[0])
}

func (a *app) key(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("key: want create, list or revoke")
	}
	switch args[0] {
	case "create":
		fs := newFlagSet("key create", a.stderr)
		ent := entitlementFlags(fs, "key")
		sc, err := ent.parse(fs, args[1:])
		if err != nil {
			return err
		}
		id, secret, err := pipeline.NewKey(rand.Reader)
		if err != nil {
			return err
		}
		k := pipeline.APIKey{ID: id, Scope: sc, PortfolioID: *ent.portfolio, Label: *ent.label, CreatedAt: a.now().UTC()}
		if err := a.withDB(ctx, func(db *sqldb.DB) error { return db.CreateKey(ctx, k, pipeline.HashKey(secret)) }); err != nil {
			return err
		}
		// The secret goes to stdout and nowhere else, so that scripts can
		// capture it with $(...); it cannot be shown again.
		fmt.Fprintln(a.stdout, secret)
		fmt.Fprintf(a.stderr, "key %s created (scope %s); store it now, it is shown once\n", id, sc)
		return nil
	case "list":
		return listCmd(ctx, a, "key list", args[1:], (*sqldb.DB).Keys,
			"ID\tSCOPE\tPORTFOLIO\tLABEL\tCREATED\tLAST USED\tREVOKED", func(k pipeline.APIKey) []string {
				return []string{k.ID, string(k.Scope), orDash(k.PortfolioID), orDash(k.Label), k.CreatedAt.Format(time.RFC3339),
					timeOrDash(k.LastUsedAt), timeOrDash(k.RevokedAt)}
			})
	case "revoke":
		if len(args) != 2 {
			return usagef("key revoke: want exactly one key ID")
		}
		if err := a.withDB(ctx, func(db *sqldb.DB) error { return db.RevokeKey(ctx, args[1], a.now()) }); err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "key %s revoked\n", args[1])
		return nil
	}
	return usagef("key: unknown subcommand %q", args[0])
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

// parse parses a command that takes flags only, and its scope.
func (e entitlement) parse(fs *flag.FlagSet, args []string) (pipeline.Scope, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 0 {
		return "", usagef("%s: unexpected argument %q", fs.Name(), pos[0])
	}
	return pipeline.ParseScope(*e.scope)
}

// listCmd prints what fetch returns as a table, or as JSON with --json.
func listCmd[T any](ctx context.Context, a *app, name string, args []string,
	fetch func(*sqldb.DB, context.Context) ([]T, error), header string, row func(T) []string) error {
	fs := newFlagSet(name, a.stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parseInterspersed(fs, args); err != nil {
		return err
	}
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
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
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

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	bucket, err := a.openBucket(ctx)
	if err != nil {
		return err
	}
	runner, lk, err := a.newRunner(db, bucket, reg, nil)
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
		Starter: runner, RunLogs: db, Recorded: db}
	// The scheduler fires the stages on cron on the one process that holds
	// the leader lock; it stops with the process.
	schedDone := make(chan struct{})
	schedCtx, stopSched := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { stopSched(); <-schedDone }()
	if a.cfg.Pipeline.Scheduler {
		specs, err := a.stageSpecs()
		if err != nil {
			close(schedDone)
			return err
		}
		sched, err := jobs.NewScheduler(runner, db, jobs.SchedulerConfig{Specs: specs, Now: a.now, Sweeper: lk,
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
		a.log.Info("inbox running", "bucket", bucket.String(), "interval", a.cfg.Inbox.Interval)
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
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	a.log.Info("serving", "addr", ln.Addr().String(), "dialect", string(db.Dialect()), "data_dir", a.cfg.DataDir)

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
	// Runs that the console started in the background end as failed, with
	// the shutdown as their error, while the database is still open; an
	// operator retries them on another replica or after the restart.
	if err := runner.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: background runs: %w", err)
	}
	a.log.Info("stopped")
	return nil
}
