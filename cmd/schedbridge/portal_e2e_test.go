package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api/portal/portaltest"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// chromiumPath is Debian's Chromium, which test-deps.sh installs; npm
// playwright-core drives it (Playwright's own browser download cannot reach
// its host from the build machines).
const chromiumPath = "/usr/bin/chromium"

// screenshotsEnv names a directory for the browser test's screenshots;
// `make screenshots` points it at docs/screenshots. Unset, they go to a
// temporary directory.
const screenshotsEnv = "SCHEDBRIDGE_SCREENSHOTS"

// The pages deploy/dev/portal/e2e.mjs photographs, in order.
var screenshotNames = []string{
	"01-anmelden.png", "02-uebersicht.png", "03-urlaub.png", "04-krankmeldung.png",
	"05-bescheinigungen.png", "06-verguetung.png", "07-abmelden.png", "08-verguetung-link.png",
}

// TestPortalBrowser runs the employees' web portal in a real browser:
// deploy/dev/portal/e2e.mjs drives Chromium through the SSO sign-in of an
// employee (a cross-site form_post from the IdP on 127.0.0.1 to the portal
// on localhost, as in production), leave, sick leave, a certificate, the
// compensation with a masked component and the sign-out, then through the
// magic-link sign-in of a new hire. The binary serves with the production
// defaults (Secure __Host- cookies): Chromium treats http://localhost as a
// secure context. Afterwards the server's log must hold none of the session
// ids, CSRF tokens or codes the browser saw.
func TestPortalBrowser(t *testing.T) {
	shots := screenshotDir(t)
	in := newInstance(t, sqldb.SQLite)
	base := browserBase(t, in)
	const clientID, clientSecret = "portal-web", "e2e-client-secret"
	idp := portaltest.StartIdP(t, portaltest.IdPOptions{
		Web: portaltest.WebClient{ID: clientID, Secret: clientSecret,
			RedirectURIs: []string{base + "/portal/anmelden/sso/callback"}},
		Accounts: []portaltest.Account{
			{Subject: "sub-anna", Email: "anna@firma.test", EmailVerified: true, Name: "Anna Schmidt"},
		},
	})
	md := portaltest.StartMailDev(t)
	in.env = append(in.env,
		"SCHEDBRIDGE_PORTAL_BASE_URL="+base,
		"SCHEDBRIDGE_PORTAL_OIDC_ISSUER="+idp.Issuer,
		"SCHEDBRIDGE_PORTAL_OIDC_CLIENT_ID="+clientID,
		"SCHEDBRIDGE_PORTAL_OIDC_CLIENT_SECRET="+clientSecret,
		"SCHEDBRIDGE_PORTAL_SMTP_ADDR="+md.SMTPAddr,
		"SCHEDBRIDGE_PORTAL_SMTP_FROM=portal@firma.test",
		"SCHEDBRIDGE_PORTAL_SMTP_SECURITY=none",
	)

	// Seeded through HR's commands, as an operator would.
	in.cli(0, "portal", "employee", "put", "P-1001", "--name", "Anna Schmidt", "--email", "anna@firma.test",
		"--department", "Netzbetrieb", "--position", "Ingenieurin Leitsysteme", "--entry-date", "2021-04-01",
		"--state", "BE", "--weekly-hours", "40", "--leave-days", "30", "--sso-subject", "sub-anna",
		"--component", "Grundgehalt=5200.00:monatlich:sichtbar",
		"--component", "Jahresbonus=6400.00:jaehrlich:maskiert")
	in.cli(0, "portal", "employee", "put", "P-1002", "--name", "Jonas Neu", "--email", "jonas.neu@firma.test",
		"--department", "Vertrieb", "--position", "Werkstudent", "--entry-date", "2027-01-01",
		"--state", "BE", "--weekly-hours", "20", "--magic-link",
		"--component", "Grundgehalt=1850.00:monatlich:sichtbar")
	srv, logs := in.serve()

	secrets, runErr := runBrowserScript(t, "portal", 2*time.Minute,
		"BASE_URL="+base,
		"MAILDEV_API="+md.APIURL,
		"SCREENSHOT_DIR="+shots,
		"STAFF_LOGIN=sub-anna", "STAFF_NAME=Anna Schmidt",
		"LINK_EMAIL=jonas.neu@firma.test", "LINK_NAME=Jonas Neu",
	)
	stopAndCheckSecrets(t, srv, logs, runErr, secrets, 5, "portal: signed in")
	checkScreenshots(t, shots, screenshotNames)
}

// screenshotDir is where a browser test's screenshots go: docs/screenshots
// under `make screenshots`, else a temporary directory.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv(screenshotsEnv); d != "" {
		return d
	}
	return t.TempDir()
}

// browserBase is the origin the browser reaches the instance at:
// localhost, while the IdP is reached as 127.0.0.1, so that the two are
// different sites and the IdP's answer is a real cross-site POST.
func browserBase(t *testing.T, in *instance) string {
	_, port, err := net.SplitHostPort(in.addr)
	if err != nil {
		t.Fatal(err)
	}
	return "http://localhost:" + port
}

// runBrowserScript runs deploy/dev/<dir>/e2e.mjs with node, npm
// playwright-core and Debian's Chromium, passing env, and returns the
// secrets the script reported holding. The script runs in its own process
// group, so that a timeout also ends the Chromium it started.
func runBrowserScript(t *testing.T, dir string, timeout time.Duration, env ...string) ([]string, error) {
	t.Helper()
	node, modules := portaltest.NodeModules(t, "playwright-core", portaltest.PlaywrightCoreVersion)
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("chromium is not installed (%v): run `make test-deps`", err)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "deploy", "dev", dir, "e2e.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(append(os.Environ(), "NODE_PATH="+modules, "CHROMIUM="+chromiumPath), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out := &lineLog{t: t}
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	runErr := cmd.Run()
	out.flush()
	t.Logf("%s/e2e.mjs ran %v", dir, time.Since(start).Round(time.Millisecond))
	return out.secrets(), runErr
}

// stopAndCheckSecrets stops the server before reading its log, so that
// nothing writes to it any more, fails on the script's error, and checks
// that the log holds none of the secrets the browser saw (at least atLeast
// of them: fewer means the script lost track) and does show signedIn.
func stopAndCheckSecrets(t *testing.T, srv *exec.Cmd, logs *syncBuffer, runErr error, secrets []string, atLeast int, signedIn string) {
	t.Helper()
	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(); err != nil {
		t.Errorf("serve exit: %v", err)
	}
	if runErr != nil {
		t.Fatalf("e2e.mjs: %v\nserver log:\n%s", runErr, logs)
	}
	if len(secrets) < atLeast {
		t.Fatalf("e2e.mjs reported %d secrets, want at least %d: %q", len(secrets), atLeast, secrets)
	}
	serverLog := logs.String()
	if !strings.Contains(serverLog, signedIn) {
		t.Fatalf("the server log shows no sign-in; is it the right log?\n%s", serverLog)
	}
	for _, s := range secrets {
		if strings.Contains(serverLog, s) {
			t.Errorf("the server log contains %q, a secret the browser held", s)
		}
	}
}

func checkScreenshots(t *testing.T, dir string, names []string) {
	t.Helper()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("screenshot %s: not a PNG (%v)", name, err)
		}
	}
}

// lineLog passes the script's output to the test log line by line and
// keeps its SECRETS line out of it.
type lineLog struct {
	t       *testing.T
	mu      sync.Mutex
	partial []byte
	secret  []string
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
}

func (l *lineLog) line(s string) {
	if rest, ok := strings.CutPrefix(s, "SECRETS"); ok {
		l.secret = append(l.secret, strings.Fields(rest)...)
		l.t.Logf("e2e.mjs: SECRETS (%d values)", len(strings.Fields(rest)))
		return
	}
	l.t.Log(s)
}

func (l *lineLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.line(string(l.partial))
		l.partial = nil
	}
}

func (l *lineLog) secrets() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.secret
}
