package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/schedbridge/schedbridge/pipeline"
)

// This file holds the command line's skeleton: the tree of commands, their
// help, and the dispatch. A command's flags are parsed before the
// configuration is loaded and before anything is opened, so that --help,
// an unknown flag or a stray argument never has a side effect.

// action runs a command with its positional arguments, after its flags were
// parsed and the configuration loaded into the app.
type action func(ctx context.Context, args []string) error

// command is a node of the command tree: a group of subcommands, or a leaf
// whose define declares its flags on fs and returns what it runs.
type command struct {
	name    string
	args    string // what follows the command's path in the synopsis, flags included
	summary string // one line for the overview
	about   string // more text for the command's own help
	define  func(a *app, fs *flag.FlagSet) action
	subs    []*command
	path    string // filled in by commandTree
}

var tree *command

func init() { tree = commandTree() }

// commandTree is every command of the binary. Leaves name in args the
// positional arguments and the flags people need; --help lists every flag.
func commandTree() *command {
	root := &command{subs: []*command{
		{name: "serve", summary: "run the HTTP API, the bulk inbox, the scheduler and the mako sync (applies pending migrations first)",
			about:  "SIGTERM or SIGINT drain: new requests get 503 with Retry-After while the requests in flight finish, then the process exits 0.",
			define: func(a *app, fs *flag.FlagSet) action { return noArgs(a.serve) }},
		{name: "migrate", summary: "apply pending migrations and exit", define: func(a *app, fs *flag.FlagSet) action { return noArgs(a.migrate) }},
		{name: "config", summary: "print the effective configuration as YAML, secrets redacted",
			about:  "The output has the keys of the configuration file (--config FILE) with the environment applied; passwords, secret keys, client secrets, the webhook token and the database URL's password are shown as " + redacted + ".",
			define: func(a *app, fs *flag.FlagSet) action { return noArgs(a.printConfig) }},
		{name: "portfolio", summary: "portfolios and their balancing groups", subs: []*command{
			{name: "put", args: "ID --name NAME --control-areas 50Hertz,TenneT [--balancing-group EIC] [--exchange-balancing-group EIC]",
				summary: "create or update a portfolio", define: cmdPortfolioPut},
			{name: "list", args: "[--json]", summary: "list the portfolios", define: cmdPortfolioList},
		}},
		{name: "key", summary: "API keys", subs: []*command{
			{name: "create", args: "--scope data|process|report|mobile [--portfolio ID] [--label TEXT]",
				summary: "create a key; the key alone goes to stdout, shown once", define: cmdKeyCreate},
			{name: "list", args: "[--json]", summary: "list the keys (never their secrets)", define: cmdKeyList},
			{name: "revoke", args: "ID", summary: "revoke a key", define: cmdKeyRevoke},
		}},
		{name: "issuer", summary: "OAuth 2.0 issuers whose access tokens the API accepts", subs: []*command{
			{name: "add", args: "URL --audience AUD", summary: "trust an issuer's access tokens",
				about:  "The issuer's discovery document (URL/.well-known/openid-configuration; https, or http on loopback) is read now.",
				define: cmdIssuerAdd},
			{name: "list", args: "[--json]", summary: "list the issuers", define: cmdIssuerList},
			{name: "remove", args: "URL", summary: "stop trusting an issuer and revoke its clients", define: cmdIssuerRemove},
		}},
		{name: "client", summary: "machine clients of the registered issuers", subs: []*command{
			{name: "add", args: "--issuer URL --client-id ID --scope data|process|report|mobile [--portfolio ID] [--label TEXT]",
				summary: "register a machine client; its tokens need schedbridge:<scope>", define: cmdClientAdd},
			{name: "list", args: "[--json]", summary: "list the machine clients", define: cmdClientList},
			{name: "revoke", args: "--issuer URL --client-id ID", summary: "revoke a machine client", define: cmdClientRevoke},
		}},
		{name: "operator", summary: "the operator list of the web console (see docs/operations.md)", subs: []*command{
			{name: "add", args: "EMAIL", summary: "put an e-mail address on the operator list (one already on it stays as it is)",
				about:  "EMAIL is the address the identity provider puts in the ID token's email claim; it is compared in lower case.",
				define: cmdOperatorAdd},
			{name: "remove", args: "EMAIL", summary: "take a person off the operator list", define: cmdOperatorRemove},
			{name: "list", args: "[--json]", summary: "list the operators", define: cmdOperatorList},
		}},
		{name: "audit", summary: "the audit trail", subs: []*command{
			{name: "list", args: "[--limit N] [--json]", summary: "list the newest audit entries: data requests and operators' actions, newest first",
				about:  "An action taken in the web console names its operator (OPERATOR); one sent with a key names the key.",
				define: cmdAuditList},
		}},
		{name: "inbox", summary: "the bulk inbox", subs: []*command{
			{name: "put", args: "FILE --portfolio ID --kind metered-data|profiles|master-data|forecasts [--name NAME]",
				summary: "upload a file to inbox/<portfolio>/<kind>/<name>", define: cmdInboxPut},
			{name: "scan", summary: "process the files waiting in the inbox once, then exit", define: cmdInboxScan},
		}},
		{name: "run", args: "forecast|aggregate|open-position|schedules|kalkulation|chain [--day YYYY-MM-DD]",
			summary: "run one stage (or the whole chain) now, with progress",
			about:   "The default day is tomorrow in Europe/Berlin, yesterday for kalkulation. The run's outputs go to stdout as JSON; the exit code is 1 when the run failed.",
			define:  cmdRun},
		{name: "lake", summary: "the Parquet lake and its Iceberg tables (see docs/lake.md)", subs: []*command{
			{name: "files", args: "forecast_malo|position_control_area|open_position|schedule|kalkulation [--day YYYY-MM-DD] [--sql]",
				summary: "list the data files of the day's current run, for readers without an Iceberg client",
				about:   "The files come from the table's current snapshot in the catalog; a glob over the day's folder would also find replaced runs.",
				define:  cmdLakeFiles},
			{name: "relocate", summary: "point the lake's tables at the configured warehouse after the data directory or bucket moved",
				about: "Run it once, with the service stopped, after restoring or moving the data directory (or renaming the bucket): " +
					"Iceberg keeps absolute locations, and it writes the tables' manifests and metadata anew in the new place " +
					"and points the catalog at them in one transaction. Tables already in place are left as they are.",
				define: cmdLakeRelocate},
			{name: "sweep", args: "[--older-than DURATION]",
				summary: "expire old snapshots and remove what nothing references, now (the leader does it at 03:15)",
				about: "Removes, once older than DURATION: partial uploads of the bucket, the parts of aborted or crashed " +
					"writers, the files of runs that no remaining snapshot references (never published, or their snapshot expired), " +
					"the tables' metadata files that no table references, and on the local bucket the empty folders under lake/. " +
					"The current snapshot of each table and everything it references stay. A DURATION under an hour may remove " +
					"what a running service is still writing.",
				define: cmdLakeSweep},
		}},
		{name: "backup", args: "DIR",
			summary: "copy the embedded default (SQLite database, then the local bucket) to DIR while the service runs",
			about:   "The database is copied with SQLite's VACUUM INTO, then the bucket's files. To restore, copy DIR's contents into a data directory and run `lake relocate` there (docs/operations.md).",
			define:  cmdBackup},
		{name: "prices", summary: "market prices", subs: []*command{
			{name: "import", args: "spot|rebap FILE", summary: "import SMARD JSON spot prices or a netztransparenz reBAP CSV", define: cmdPricesImport},
		}},
		{name: "zeitreihen", summary: "series activations and the drop folders", subs: []*command{
			{name: "aktivierungen", args: "FILE", summary: "replace the imported series activations (JSON or .csv)", define: cmdZeitreihenAktivierungen},
			{name: "sync", summary: "import the files dropped under inbox/prices/ and inbox/zeitreihen/ once", define: cmdZeitreihenSync},
		}},
		{name: "kalkulation", args: "[--von YYYY-MM-DD] [--bis YYYY-MM-DD] [--portfolio ID]",
			summary: "the period calculation as JSON (default: this month up to yesterday)", define: cmdKalkulation},
		{name: "demo", args: "[--locations N] [--day YYYY-MM-DD]",
			summary: "create a demo portfolio, run the chain for tomorrow, print where to look", define: cmdDemo},
		{name: "mako", summary: "the market communication with the DSOs (see docs/mako.md)", subs: []*command{
			{name: "sync", summary: "index new EDIFACT files, mails and registry files once", define: cmdMakoSync},
			{name: "registry", args: "FILE", summary: "replace the partner registry with a CSV export", define: cmdMakoRegistry},
			{name: "send", args: "MP_ID partin_out|zuordnungsermaechtigung_out", summary: "write our PARTIN or Zuordnungsermaechtigung for a DSO to the outbox", define: cmdMakoSend},
			{name: "nachversand", args: "[--list]", summary: "send everything pre-listed (or list the queue)", define: cmdMakoNachversand},
			{name: "overview", args: "[--tage N] [--ordnung status|kontakt]", summary: "the market-partner overview as JSON", define: cmdMakoOverview},
			{name: "antworten", args: "[--tage N]", summary: "the reply reconciliation as JSON", define: cmdMakoAntworten},
		}},
		{name: "portal", summary: "HR loads the employees' portal (see docs/portal-hr.md)", subs: []*command{
			{name: "employee", summary: "employee records", subs: []*command{
				{name: "put", args: "ID --name N --email E [--roles R,...] [--component NAME=EUR:INTERVAL[:VISIBILITY] ...] [FLAGS]",
					summary: "create or update an employee (and replace the compensation when --component is given)", define: cmdPortalEmployeePut},
				{name: "import", args: "FILE.csv", summary: "load an employees file", define: cmdPortalEmployeeImport},
				{name: "list", args: "[--json]", summary: "list the employees", define: cmdPortalEmployeeList},
			}},
			{name: "compensation", summary: "compensation", subs: []*command{
				{name: "import", args: "FILE.csv", summary: "replace the compensation of the employees in the file", define: cmdPortalCompensationImport},
			}},
			{name: "user", summary: "users who sign in without an employee record", subs: []*command{
				{name: "put", args: "--email E --name N [--roles R,...] [--magic-link=false]", summary: "create or update a user", define: cmdPortalUserPut},
			}},
			{name: "certificate", summary: "certificate requests", subs: []*command{
				{name: "status", args: "ID beantragt|in_bearbeitung|ausgestellt|abgelehnt", summary: "set the state of a certificate request", define: cmdPortalCertificateStatus},
			}},
		}},
	}}
	var setPath func(c *command, prefix string)
	setPath = func(c *command, prefix string) {
		c.path = strings.TrimSpace(prefix + " " + c.name)
		for _, s := range c.subs {
			setPath(s, c.path)
		}
	}
	setPath(root, "")
	return root
}

// noArgs is the action of a command that takes no arguments.
func noArgs(fn func(ctx context.Context) error) action {
	return func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q", args[0])
		}
		return fn(ctx)
	}
}

// oneArg is the action of a command that takes exactly one argument; what
// names it in the refusal ("FILE", "key ID").
func oneArg(what string, fn func(ctx context.Context, arg string) error) action {
	return func(ctx context.Context, args []string) error {
		if len(args) != 1 {
			return usagef("want exactly one %s", what)
		}
		return fn(ctx, args[0])
	}
}

// leaves lists the runnable commands below c, depth first.
func (c *command) leaves() []*command {
	if c.define != nil {
		return []*command{c}
	}
	var out []*command
	for _, s := range c.subs {
		out = append(out, s.leaves()...)
	}
	return out
}

func (c *command) sub(name string) *command {
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (c *command) subNames() string {
	names := make([]string, len(c.subs))
	for i, s := range c.subs {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

// cliError is a mistake on the command line: one line, and a hint where
// the command's usage is.
type cliError struct {
	path string // the command whose usage helps
	msg  string
}

func (e *cliError) Error() string { return e.msg }

// errHelp says that help was asked for.
var errHelp = errors.New("help requested")

func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "-help" }

// resolve walks the tree along args to a command: a leaf, or a group when
// help on it was asked for (errHelp).
func resolve(args []string) (*command, []string, error) {
	c := tree
	for c.define == nil {
		switch {
		case len(args) == 0 && c == tree:
			return c, nil, &cliError{msg: "missing command"}
		case len(args) == 0:
			return c, nil, &cliError{path: c.path, msg: fmt.Sprintf("%s: missing subcommand (want %s)", c.path, c.subNames())}
		case isHelp(args[0]):
			return c, nil, errHelp
		}
		s := c.sub(args[0])
		if s == nil {
			if c == tree {
				return c, nil, &cliError{msg: fmt.Sprintf("unknown command %q", args[0])}
			}
			return c, nil, &cliError{path: c.path, msg: fmt.Sprintf("%s: unknown subcommand %q (want %s)", c.path, args[0], c.subNames())}
		}
		c, args = s, args[1:]
	}
	return c, args, nil
}

// hint is the second line of a usage error.
func hint(path string) string {
	if path == "" {
		return "Run 'schedbridge --help' for usage."
	}
	return fmt.Sprintf("Run 'schedbridge %s --help' for usage.", path)
}

func failUsage(w io.Writer, err error) int {
	var ce *cliError
	path := ""
	if errors.As(err, &ce) {
		path = ce.path
	}
	fmt.Fprintf(w, "schedbridge: %s\n%s\n", err.Error(), hint(path))
	return 2
}

const (
	globalFlags = `Global flags:
  --config FILE   YAML configuration file; the environment (SCHEDBRIDGE_*) overrides it
  -h, --help      show the help of the command
`
	usageHeader = `schedbridge: the scheduling bridge of a German balancing group.

Usage:
  schedbridge [--config FILE] COMMAND [ARGS]
  schedbridge help COMMAND [SUBCOMMAND]   the help of one command (or: COMMAND --help)

Commands:
`
	usageFooter = `
Configuration comes from the environment (SCHEDBRIDGE_ADDR, SCHEDBRIDGE_DATA_DIR,
SCHEDBRIDGE_DATABASE_URL, ...; see README) and an optional YAML file given with
--config; 'schedbridge config' prints the effective configuration.
Exit codes: 0 ok, 1 failure, 2 usage or configuration error.
`
)

// writeUsage writes the overview of every command.
func writeUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString(usageHeader)
	for _, l := range tree.leaves() {
		writeSynopsis(&b, l)
	}
	b.WriteString(usageFooter)
	io.WriteString(w, b.String())
}

// writeSynopsis writes a leaf's line of an overview: the summary beside a
// short synopsis, or under a long one.
func writeSynopsis(b *strings.Builder, l *command) {
	const col = 41
	syn := "  " + strings.TrimSpace(l.path+" "+l.args)
	if len(syn) < col-1 {
		fmt.Fprintf(b, "%-*s%s\n", col, syn, l.summary)
		return
	}
	fmt.Fprintf(b, "%s\n%s%s\n", syn, strings.Repeat(" ", col), l.summary)
}

// writeHelp writes the help of a command: a group's subcommands, or a
// leaf's synopsis, text and flags.
func writeHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	var b strings.Builder
	if c.define == nil {
		fmt.Fprintf(&b, "Usage: schedbridge %s SUBCOMMAND [ARGS]\n\n%s.\n\nSubcommands:\n", c.path, upperFirst(c.summary))
		for _, l := range c.leaves() {
			writeSynopsis(&b, l)
		}
		fmt.Fprintf(&b, "\nRun 'schedbridge %s SUBCOMMAND --help' for the flags of one.\n\n%s", c.path, globalFlags)
		io.WriteString(w, b.String())
		return
	}
	fmt.Fprintf(&b, "Usage: schedbridge %s\n\n%s.\n", strings.TrimSpace(c.path+" "+c.args), upperFirst(c.summary))
	if c.about != "" {
		fmt.Fprintf(&b, "%s\n", c.about)
	}
	type row struct{ name, usage string }
	var rows []row
	width := 0
	if fs != nil {
		fs.VisitAll(func(f *flag.Flag) {
			typ, usage := flag.UnquoteUsage(f)
			name := "--" + f.Name
			switch typ {
			case "":
			case "value":
				name += " string"
			default:
				name += " " + typ
			}
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" && f.DefValue != "0" && f.DefValue != "0s" {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
			rows = append(rows, row{name, usage})
			width = max(width, len(name))
		})
	}
	var flags strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&flags, "  %-*s  %s\n", width, r.name, r.usage)
	}
	if flags.Len() > 0 {
		fmt.Fprintf(&b, "\nFlags:\n%s", flags.String())
	}
	fmt.Fprintf(&b, "\n%s", globalFlags)
	io.WriteString(w, b.String())
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// isTerminal reports whether w is a terminal: progress bars and human
// summaries go there, log records everywhere else.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return runIO(ctx, args, stdout, stderr, isTerminal(stderr), getenv)
}

// runIO runs one command line; terminal says whether stderr is a terminal.
func runIO(ctx context.Context, args []string, stdout, stderr io.Writer, terminal bool, getenv func(string) string) int {
	return runEnv{stdout: stdout, stderr: stderr, terminal: terminal, getenv: getenv, now: time.Now}.run(ctx, args)
}

// runEnv is what a command line runs in: in main, the process's streams,
// environment and clock; in tests, fakes of them.
type runEnv struct {
	stdout, stderr io.Writer
	// terminal says whether stderr is a terminal.
	terminal bool
	getenv   func(string) string
	// environ lists the environment's variables for the warning about
	// unknown SCHEDBRIDGE_ names; nil skips the check.
	environ func() []string
	now     func() time.Time
}

func (e runEnv) run(ctx context.Context, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	configPath, args := extractConfigFlag(args)
	if len(args) == 0 {
		writeUsage(stderr)
		return 2
	}
	if args[0] == "help" || isHelp(args[0]) {
		if args[0] == "help" && len(args) > 1 {
			c := tree
			// What follows a runnable command is its arguments, as in
			// `help run chain`: the help is the command's.
			for _, name := range args[1:] {
				if c.define != nil {
					break
				}
				s := c.sub(name)
				if s == nil && c == tree {
					return failUsage(stderr, &cliError{msg: fmt.Sprintf("help: unknown command %q", name)})
				}
				if s == nil {
					return failUsage(stderr, &cliError{path: c.path, msg: fmt.Sprintf("help: %s has no subcommand %q", c.path, name)})
				}
				c = s
			}
			writeHelp(stdout, c, helpFlags(c))
			return 0
		}
		writeUsage(stdout)
		return 0
	}
	c, rest, err := resolve(args)
	if err == errHelp {
		writeHelp(stdout, c, nil)
		return 0
	}
	if err != nil {
		return failUsage(stderr, err)
	}
	a := &app{stdout: stdout, stderr: stderr, now: e.now, terminal: e.terminal, command: c.path}
	fs := newFlagSet(c.path)
	act := c.define(a, fs)
	pos, err := parseInterspersed(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		writeHelp(stdout, c, fs)
		return 0
	}
	if err != nil {
		return failUsage(stderr, &cliError{path: c.path, msg: c.path + ": " + err.Error()})
	}
	cfg, err := loadConfig(configPath, e.getenv)
	if err != nil {
		fmt.Fprintln(stderr, "schedbridge:", oneLine(err))
		return 2
	}
	a.cfg = cfg
	if a.terminal && c.path != "serve" {
		a.log = terminalLogger(cfg, a.tw())
	} else {
		a.log = newLogger(cfg, stderr)
	}
	if e.environ != nil {
		for _, w := range unknownEnvVars(e.environ()) {
			a.warn(w.sentence(), "variable", w.name, "nearest", w.nearest)
		}
	}
	if err := act(ctx, pos); err != nil {
		return a.fail(err)
	}
	return 0
}

// oneLine joins the lines of an error message, such as the YAML decoder's
// list of problems, so that a refusal stays one line.
func oneLine(err error) string {
	var b strings.Builder
	for _, line := range strings.Split(err.Error(), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if s := b.String(); s != "" && strings.HasSuffix(s, ":") {
			b.WriteString(" ")
		} else if s != "" {
			b.WriteString("; ")
		}
		b.WriteString(line)
	}
	return b.String()
}

// helpFlags declares a leaf's flags on a flag set that is only read for
// its help.
func helpFlags(c *command) *flag.FlagSet {
	if c.define == nil {
		return nil
	}
	fs := newFlagSet(c.path)
	c.define(&app{stdout: io.Discard, stderr: io.Discard, now: time.Now}, fs)
	return fs
}

// fail reports the error of a command. A refusal of the command's input
// exits 2 with one line on stderr: a mistake on the command line (usagef)
// with a hint to the usage as its second line; data the domain refused
// (pipeline.Invalid or TooLarge, such as a day that does not exist or an
// input file that cannot be read) and a thing named that is not there
// (pipeline.NotFound, such as an unknown portfolio or key) without one,
// since the usage would not help. A failure of the work itself exits 1 and
// is, off a terminal, a log record like the command's other lines.
func (a *app) fail(err error) int {
	var ue usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(a.stderr, "schedbridge: %s: %s\n%s\n", a.command, err, hint(a.command))
		return 2
	case isRefusal(err):
		fmt.Fprintf(a.stderr, "schedbridge: %s: %s\n", a.command, oneLine(err))
		return 2
	case a.terminal:
		fmt.Fprintf(a.tw(), "schedbridge: %s: %s\n", a.command, err)
	default:
		a.log.Error("command failed", "command", a.command, "err", err.Error())
	}
	return 1
}

// isRefusal says whether err refuses what the command was given rather
// than reports a failure of its work.
func isRefusal(err error) bool {
	var wf workFailed
	if errors.As(err, &wf) {
		return false
	}
	switch pipeline.KindOf(err) {
	case pipeline.Invalid, pipeline.NotFound, pipeline.TooLarge:
		return true
	}
	return false
}

// workFailed marks the failure of work a command started, such as a run
// whose stage met bad stored data: it exits 1 whatever its kind, since
// the command's input was accepted.
type workFailed struct{ err error }

func (w workFailed) Error() string { return w.err.Error() }
func (w workFailed) Unwrap() error { return w.err }

// inputFile opens a file named on the command line; one that cannot be
// read is a refusal of the input that names the file and the reason.
func inputFile(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, pipeline.Errorf(pipeline.Invalid, "cannot read %s: %s", path, pathReason(err))
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, pipeline.Errorf(pipeline.Invalid, "cannot read %s: it is a directory, want a file", path)
	}
	return f, nil
}

// readInput reads a whole file named on the command line, as inputFile
// opens it.
func readInput(path string) ([]byte, error) {
	f, err := inputFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// pathReason is the reason of a failed file operation without the
// operation and the path, which the caller's sentence names.
func pathReason(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// parseInterspersed parses flags that may stand before, between or after
// positional arguments, as `portfolio put ID --name X` needs; everything
// after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, flagError(err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag.Parse stops at the first positional argument, or after
		// "--", which it swallows: what follows "--" is all positional.
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagError turns the flag package's messages into the one-line form of
// git and kubectl, with the flags spelled as people type them.
func flagError(err error) error {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "flag provided but not defined: "):
		name := strings.TrimLeft(strings.TrimPrefix(msg, "flag provided but not defined: "), "-")
		return usagef("unknown flag --%s", name)
	case strings.HasPrefix(msg, "flag needs an argument: "):
		name := strings.TrimLeft(strings.TrimPrefix(msg, "flag needs an argument: "), "-")
		return usagef("flag --%s needs a value", name)
	case strings.HasPrefix(msg, "bad flag syntax: "):
		return usagef("bad flag syntax %s", strings.TrimPrefix(msg, "bad flag syntax: "))
	}
	// invalid value "x" for flag -n: parse error
	return usagef("%s", strings.Replace(msg, "for flag -", "for flag --", 1))
}

// newFlagSet makes a flag set that reports errors to its caller only: the
// dispatch prints one line and a hint, never the whole usage.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}
