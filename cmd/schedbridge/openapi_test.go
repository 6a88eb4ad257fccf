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
	"strings"
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
