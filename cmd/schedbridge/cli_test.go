package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// cliEnv is an environment whose data directory does not exist yet, so that
// a test sees whether a command touched it.
func cliEnv(t *testing.T, extra map[string]string) (func(string) string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	env := map[string]string{"SCHEDBRIDGE_DATA_DIR": dir}
	for k, v := range extra {
		env[k] = v
	}
	return func(k string) string { return env[k] }, dir
}

func runCLI(t *testing.T, getenv func(string) string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runIO(t.Context(), args, &out, &errb, false, getenv)
	return code, out.String(), errb.String()
}

// allCommands lists every command path of the tree, groups included.
func allCommands() [][]string {
	var out [][]string
	var walk func(c *command)
	walk = func(c *command) {
		if c != tree {
			out = append(out, strings.Fields(c.path))
		}
		for _, s := range c.subs {
			walk(s)
		}
	}
	walk(tree)
	return out
}

// TestHelp asks every command and group for its help in the three ways a
// person would. Each prints the same usage to stdout and exits 0 without
// touching the data directory, even with a configuration that would refuse
// to start: help comes before the configuration is read.
func TestHelp(t *testing.T) {
	getenv, dir := cliEnv(t, map[string]string{"SCHEDBRIDGE_LOG_LEVEL": "loud"})
	cmds := allCommands()
	if len(cmds) < 40 {
		t.Fatalf("only %d commands in the tree", len(cmds))
	}
	for _, path := range cmds {
		name := strings.Join(path, " ")
		t.Run(name, func(t *testing.T) {
			var first string
			for _, args := range [][]string{
				append(append([]string{}, path...), "--help"),
				append(append([]string{}, path...), "-h"),
				append([]string{"help"}, path...),
			} {
				code, out, errOut := runCLI(t, getenv, args...)
				if code != 0 || errOut != "" {
					t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
				}
				if !strings.HasPrefix(out, "Usage: schedbridge "+name) {
					t.Errorf("%v: stdout %q", args, out)
				}
				if first == "" {
					first = out
				} else if out != first {
					t.Errorf("%v differs from %s --help:\n%s\n---\n%s", args, name, out, first)
				}
			}
			c, _, err := resolve(path)
			if c.define == nil {
				for _, s := range c.leaves() {
					if !strings.Contains(first, s.path) {
						t.Errorf("the help of %s lacks %s", name, s.path)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Every flag the command takes is in its help.
			fs := helpFlags(c)
			fs.VisitAll(func(f *flag.Flag) {
				if !strings.Contains(first, "--"+f.Name+" ") {
					t.Errorf("the help of %s lacks --%s:\n%s", name, f.Name, first)
				}
			})
		})
	}
	// Flags before the help flag are not acted upon either.
	if code, out, _ := runCLI(t, getenv, "demo", "--locations", "3", "--help"); code != 0 || !strings.Contains(out, "--locations") {
		t.Errorf("demo --locations 3 --help: %d %s", code, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("help touched the data directory: %v", err)
	}
}

// TestHelpNoSideEffectBinary runs the real binary: serve --help must print
// its usage and exit, not serve; mako sync --help must not sync.
func TestHelpNoSideEffectBinary(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for _, args := range [][]string{{"serve", "--help"}, {"migrate", "-h"}, {"mako", "sync", "--help"}, {"help", "run"}} {
		in := &instance{t: t, env: append(os.Environ(), "SCHEDBRIDGE_DATA_DIR="+dir)}
		out, errOut := in.cli(0, args...)
		if !strings.HasPrefix(out, "Usage: schedbridge ") || errOut != "" {
			t.Errorf("%v: stdout %q stderr %q", args, out, errOut)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("help touched the data directory: %v", err)
	}
}

// TestUsageOverview: the overview lists every command; without arguments
// it goes to stderr with exit 2, asked for to stdout with exit 0.
func TestUsageOverview(t *testing.T) {
	getenv, _ := cliEnv(t, nil)
	code, out, errOut := runCLI(t, getenv)
	if code != 2 || out != "" || !strings.HasPrefix(errOut, "schedbridge: the scheduling bridge") {
		t.Errorf("no arguments: exit %d stdout %q stderr %q", code, out, errOut)
	}
	overview := errOut
	for _, l := range tree.leaves() {
		if !strings.Contains(overview, "\n  "+l.path) {
			t.Errorf("the overview lacks %s", l.path)
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, out, errOut := runCLI(t, getenv, args...)
		if code != 0 || out != overview || errOut != "" {
			t.Errorf("%v: exit %d stderr %q", args, code, errOut)
		}
	}
}

// TestUnknownInput: unknown flags, stray arguments and unknown commands
// exit 2 with one line of error and one line of hint, before anything is
// opened.
func TestUnknownInput(t *testing.T) {
	getenv, dir := cliEnv(t, nil)
	hintLine := regexp.MustCompile(`^Run 'schedbridge ([a-z -]+ )?--help' for usage\.$`)
	for _, c := range []struct {
		args      []string
		line, see string
	}{
		{[]string{"serve", "--addr", "x"}, "schedbridge: serve: unknown flag --addr", "serve"},
		{[]string{"serve", "now"}, `schedbridge: serve: unexpected argument "now"`, "serve"},
		{[]string{"migrate", "-x"}, "schedbridge: migrate: unknown flag --x", "migrate"},
		{[]string{"frobnicate"}, `schedbridge: unknown command "frobnicate"`, ""},
		{[]string{"mako"}, "schedbridge: mako: missing subcommand (want sync, registry, send, nachversand, overview, antworten)", "mako"},
		{[]string{"mako", "snc"}, `schedbridge: mako: unknown subcommand "snc"`, "mako"},
		{[]string{"mako", "sync", "--all"}, "schedbridge: mako sync: unknown flag --all", "mako sync"},
		{[]string{"mako", "sync", "now"}, `schedbridge: mako sync: unexpected argument "now"`, "mako sync"},
		{[]string{"portal", "employee", "fire", "1"}, `schedbridge: portal employee: unknown subcommand "fire"`, "portal employee"},
		{[]string{"portfolio", "list", "--json", "extra"}, `schedbridge: portfolio list: unexpected argument "extra"`, "portfolio list"},
		{[]string{"portfolio", "put", "a", "b", "--name", "x"}, "schedbridge: portfolio put: want exactly one ID", "portfolio put"},
		{[]string{"run", "chain", "--day"}, "schedbridge: run: flag --day needs a value", "run"},
		{[]string{"demo", "--locations", "many"}, `schedbridge: demo: invalid value "many" for flag --locations`, "demo"},
		{[]string{"key", "revoke"}, "schedbridge: key revoke: want exactly one key ID", "key revoke"},
		{[]string{"inbox", "scan", "--portfolio", "p"}, "schedbridge: inbox scan: unknown flag --portfolio", "inbox scan"},
		{[]string{"config", "--all"}, "schedbridge: config: unknown flag --all", "config"},
		{[]string{"help", "nothing"}, `schedbridge: help: unknown command "nothing"`, ""},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, getenv, c.args...)
			lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
			if code != 2 || out != "" || len(lines) != 2 {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if !strings.HasPrefix(lines[0], c.line) {
				t.Errorf("error %q, want %q", lines[0], c.line)
			}
			if !hintLine.MatchString(lines[1]) || !strings.Contains(lines[1], strings.TrimSpace("schedbridge "+c.see)+" --help") {
				t.Errorf("hint %q, want one to %q", lines[1], c.see)
			}
		})
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a refused command line touched the data directory: %v", err)
	}
}
