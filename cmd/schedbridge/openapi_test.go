package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api/portal/portaltest"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// The pinned npm packages of the OpenAPI tests; keep them in sync with
// OPENAPI_NODE_PACKAGES in deploy/dev/test-deps.sh and with
// deploy/dev/openapi/package.json.
const (
	redoclyCLIVersion        = "2.77.0"
	swaggerParserVersion     = "13.0.0"
	openapiTypescriptVersion = "7.13.0"
	openapiFetchVersion      = "0.17.0"
	typescriptVersion        = "5.9.3"
)

// openapiDir holds the node scripts and the TypeScript client of these tests.
var openapiDir = filepath.Join("..", "..", "deploy", "dev", "openapi")

// nodeTimeout bounds one node run: the linters take about 2 s and tsc about
// 5 s here; the margin is for a loaded CI machine.
const nodeTimeout = 2 * time.Minute

// runNode runs node with args in dir and returns its standard output. A
// non-zero exit is returned as an *exec.ExitError along with the output, for
// the tools whose exit code says "found problems"; anything else fails the
// test with what the tool printed on standard error.
func runNode(t *testing.T, node, modules, dir string, env []string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), nodeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"NODE_PATH=" + modules}, env...)...)
	// Its own process group, as in TestPortalBrowser, so that a timeout also
	// ends a Chromium that playwright-core started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) || ctx.Err() != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if err != nil && stdout.Len() == 0 {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), err
}

// servedOpenAPI starts serve on the embedded default and returns it with
// the document it serves.
func servedOpenAPI(t *testing.T) (*instance, []byte) {
	t.Helper()
	in := newInstance(t, sqldb.SQLite)
	in.serve()
	resp, err := http.Get("http://" + in.addr + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /openapi.json: %d %v", resp.StatusCode, err)
	}
	return in, body
}

// lintReport is what the two validators said about a document.
type lintReport struct {
	redoclyErrors   []string
	redoclyWarnings []string
	parserErrors    []string
}

// lintOpenAPI runs `redocly lint` with its recommended rules and
// swagger-parser's validation on doc.
func lintOpenAPI(t *testing.T, node, modules string, doc []byte) lintReport {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "openapi.json"), doc, 0o644); err != nil {
		t.Fatal(err)
	}
	var rep lintReport
	// The temporary directory holds no redocly.yaml, so the rules are the
	// recommended set as published. No telemetry and no update check: the
	// tests reach no network.
	out, _ := runNode(t, node, modules, dir, []string{"REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true"},
		filepath.Join(modules, "@redocly", "cli", "bin", "cli.js"),
		"lint", "--extends", "recommended", "--format", "json", "--max-problems", "10000", "openapi.json")
	var lint struct {
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
			Location []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(out, &lint); err != nil {
		t.Fatalf("redocly lint output: %v\n%s", err, out)
	}
	for _, p := range lint.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		line := p.RuleID + " " + where + ": " + p.Message
		if p.Severity == "error" {
			rep.redoclyErrors = append(rep.redoclyErrors, line)
		} else {
			rep.redoclyWarnings = append(rep.redoclyWarnings, line)
		}
	}
	script, err := filepath.Abs(filepath.Join(openapiDir, "validate.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	out, err = runNode(t, node, modules, dir, nil, script, "openapi.json")
	var parsed struct{ Errors []string }
	if err != nil || json.Unmarshal(out, &parsed) != nil {
		t.Fatalf("validate.mjs: %v\n%s", err, out)
	}
	rep.parserErrors = parsed.Errors
	return rep
}

// TestOpenAPILinters lints the document the binary serves with
// @redocly/cli (recommended rules) and @apidevtools/swagger-parser: neither
// may report an error. The same document with the slip that 0.4.0 had put
// back (an unquoted comma in a YAML flow mapping, which becomes a key
// without a value) must fail both, so that this test cannot pass because a
// linter did not run.
func TestOpenAPILinters(t *testing.T) {
	node, modules := portaltest.NodeModules(t, "@redocly/cli", redoclyCLIVersion)
	portaltest.NodeModules(t, "@apidevtools/swagger-parser", swaggerParserVersion)
	_, served := servedOpenAPI(t)

	var doc map[string]any
	if err := json.Unmarshal(served, &doc); err != nil {
		t.Fatal(err)
	}
	ok := doc["paths"].(map[string]any)["/health"].(map[string]any)["get"].(map[string]any)["responses"].(map[string]any)["200"].(map[string]any)
	ok["in German"] = nil // {description: Service and database are up, in German}
	broken, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name      string
		doc       []byte
		wantValid bool
	}{
		{"served", served, true},
		{"unquoted comma", broken, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := lintOpenAPI(t, node, modules, tc.doc)
			if !tc.wantValid {
				if len(rep.redoclyErrors) == 0 || len(rep.parserErrors) == 0 {
					t.Errorf("a broken document passed: redocly errors %q, swagger-parser errors %q", rep.redoclyErrors, rep.parserErrors)
				}
				return
			}
			for _, e := range rep.redoclyErrors {
				t.Errorf("redocly lint: %s", e)
			}
			for _, e := range rep.parserErrors {
				t.Errorf("swagger-parser: %s", e)
			}
			// Warnings of the recommended rules that the API itself causes
			// (no licence; /health has no 4xx; the SSO routes answer 303)
			// are logged, not failed.
			t.Logf("redocly lint: %d errors, %d warnings", len(rep.redoclyErrors), len(rep.redoclyWarnings))
			for _, w := range rep.redoclyWarnings {
				t.Logf("warning: %s", w)
			}
		})
	}
}

// clientCall is one line of deploy/dev/openapi/client.ts's output.
type clientCall struct {
	Call             string  `json:"call"`
	Status           int     `json:"status"`
	Result           string  `json:"result"`
	InputHash        string  `json:"input_hash"`
	Version          int     `json:"version"`
	Values           int     `json:"values"`
	Last             float64 `json:"last"`
	Pending          *int    `json:"pending"`
	PendingTruncated *bool   `json:"pending_truncated"`
	Detail           string  `json:"detail"`
}

// TestOpenAPIClient generates TypeScript types from the served document
// with openapi-typescript, as an integrator would, compiles
// deploy/dev/openapi/client.ts against them and openapi-fetch with
// tsc --strict, and runs it against the server: a forecast submitted with a
// data key and read back, the inbox report with a process key, and the
// data key refused there.
func TestOpenAPIClient(t *testing.T) {
	node, modules := portaltest.NodeModules(t, "openapi-typescript", openapiTypescriptVersion)
	portaltest.NodeModules(t, "openapi-fetch", openapiFetchVersion)
	portaltest.NodeModules(t, "typescript", typescriptVersion)

	in := newInstance(t, sqldb.SQLite)
	in.cli(0, "portfolio", "put", "acme", "--name", "ACME Energie", "--control-areas", "TenneT")
	dataKey, _ := in.cli(0, "key", "create", "--scope", "data", "--portfolio", "acme")
	processKey, _ := in.cli(0, "key", "create", "--scope", "process")
	in.serve()
	base := "http://" + in.addr

	// The program and its settings next to the generated types, and the
	// test's npm packages where tsc and node look for them.
	dir := t.TempDir()
	for _, name := range []string{"client.ts", "tsconfig.json", "package.json"} {
		b, err := os.ReadFile(filepath.Join(openapiDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	// --default-non-nullable false: by default openapi-typescript makes a
	// property with a default required, which is right for answers but
	// wrong for request bodies, where the default is what the server
	// assumes when the client leaves the field out (unit, malo_mapping).
	if _, err := runNode(t, node, modules, dir, nil, filepath.Join(modules, "openapi-typescript", "bin", "cli.js"),
		base+"/openapi.json", "--output", "schema.d.ts", "--default-non-nullable", "false"); err != nil {
		t.Fatalf("openapi-typescript: %v", err)
	}
	if out, err := runNode(t, node, modules, dir, nil, filepath.Join(modules, "typescript", "bin", "tsc"), "-p", "tsconfig.json"); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}

	// 2027-03-28 is the spring-forward day: 92 quarter-hours.
	const day, intervals = "2027-03-28", 92
	out, err := runNode(t, node, modules, dir, []string{
		"BASE_URL=" + base, "DATA_KEY=" + strings.TrimSpace(dataKey), "PROCESS_KEY=" + strings.TrimSpace(processKey),
		"DELIVERY_DAY=" + day, "INTERVALS=" + strconv.Itoa(intervals),
	}, filepath.Join("out", "client.js"))
	if err != nil {
		t.Fatalf("client.js: %v\n%s", err, out)
	}
	t.Logf("client.js:\n%s", out)
	var calls []clientCall
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var c clientCall
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("client.js printed %q: %v", line, err)
		}
		calls = append(calls, c)
	}
	if len(calls) != 4 {
		t.Fatalf("client.js made %d calls, want 4:\n%s", len(calls), out)
	}
	submitted, read, inbox, refused := calls[0], calls[1], calls[2], calls[3]
	if submitted.Call != "submitForecast" || submitted.Status != 200 || submitted.Result != "created" || submitted.Version != 1 || len(submitted.InputHash) != 64 {
		t.Errorf("submit: %+v", submitted)
	}
	// The last value the program sent was 10 + 91/4.
	if read.Call != "getForecast" || read.Status != 200 || read.Version != 1 || read.InputHash != submitted.InputHash ||
		read.Values != intervals || read.Last != 32.75 {
		t.Errorf("read back: %+v", read)
	}
	if inbox.Status != 200 || inbox.Pending == nil || *inbox.Pending != 0 || inbox.PendingTruncated == nil || *inbox.PendingTruncated {
		t.Errorf("inbox with the process key: %+v", inbox)
	}
	if refused.Status != 403 || !strings.Contains(refused.Detail, "process") {
		t.Errorf("inbox with the data key: %+v", refused)
	}
}

// redocLogo is the one request of the /docs page to another origin: Redoc
// 2.5.4 shows its logo from its CDN in the side menu, unconditionally. The
// page's policy blocks it, so it never leaves the browser, and Redoc hides
// the image on error; that violation is the only one expected.
const redocLogo = "https://cdn.redoc.ly/redoc/logo-mini.svg"

// TestDocsBrowser opens GET /docs in Chromium (deploy/dev/openapi/docs.mjs)
// against the binary: Redoc renders every operation of the served document
// and its search answers, under the page's Content-Security-Policy with no
// violation but the blocked Redoc logo, no console error, and no request to
// another origin that the policy did not stop.
func TestDocsBrowser(t *testing.T) {
	node, modules := portaltest.NodeModules(t, "playwright-core", portaltest.PlaywrightCoreVersion)
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("chromium is not installed (%v): run `make test-deps`", err)
	}
	script, err := filepath.Abs(filepath.Join(openapiDir, "docs.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	in, served := servedOpenAPI(t)
	base := "http://" + in.addr
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(served, &doc); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, methods := range doc.Paths {
		for _, op := range methods {
			want = append(want, op.OperationID)
		}
	}

	out, err := runNode(t, node, modules, t.TempDir(), []string{"BASE_URL=" + base, "CHROMIUM=" + chromiumPath}, script)
	if err != nil {
		t.Fatalf("docs.mjs: %v\n%s", err, out)
	}
	var rep struct {
		Status     int
		CSP        string
		Operations []string
		Search     bool
		Violations []string
		Errors     []string
		Requests   []string
		Blocked    []string
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("docs.mjs printed %s: %v", out, err)
	}
	if rep.Status != 200 || !strings.Contains(rep.CSP, "script-src 'self';") {
		t.Errorf("GET /docs: %d, policy %q", rep.Status, rep.CSP)
	}
	slices.Sort(want)
	slices.Sort(rep.Operations)
	if !slices.Equal(rep.Operations, want) {
		t.Errorf("Redoc rendered %d operations %v, the document has %d %v", len(rep.Operations), rep.Operations, len(want), want)
	}
	if !rep.Search {
		t.Errorf("the search (a Worker from a blob: URL) found nothing for \"forecast\"")
	}
	for _, v := range rep.Violations {
		if v != "img-src blocked "+redocLogo+" (:0)" {
			t.Errorf("policy violation: %s", v)
		}
	}
	for _, e := range rep.Errors {
		if !strings.Contains(e, "Loading the image '"+redocLogo+"' violates") {
			t.Errorf("page error: %s", e)
		}
	}
	for _, r := range rep.Requests {
		url := r[strings.IndexByte(r, ' ')+1:]
		if !strings.HasPrefix(url, base+"/") && !strings.HasPrefix(url, "blob:"+base+"/") && !slices.Contains(rep.Blocked, url+" csp") {
			t.Errorf("request to another origin that the policy did not stop: %s", r)
		}
	}
	t.Logf("Redoc rendered %d operations; requests %q; blocked %q", len(rep.Operations), rep.Requests, rep.Blocked)
}
