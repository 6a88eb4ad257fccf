package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestRefusalsAtTheDoor goes through the commands and their inputs: every
// refusal of what a command was given exits 2 with one plain line that
// names the cause (a mistake on the command line adds a second line, the
// hint to the usage), never a log record, and prints nothing to stdout.
func TestRefusalsAtTheDoor(t *testing.T) {
	getenv, _ := cliEnv(t, nil)
	if code, _, errOut := runCLI(t, getenv, "portfolio", "put", "p1", "--name", "One", "--control-areas", "TenneT"); code != 0 {
		t.Fatalf("portfolio put: %d %s", code, errOut)
	}
	dir := t.TempDir()
	upload := filepath.Join(dir, "meter.csv")
	writeCSV(t, upload, 5, 0)
	odd := filepath.Join(dir, "meter.xyz")
	if err := os.WriteFile(odd, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nonexistent")
	for _, c := range []struct {
		args []string
		want string // the cause, in the first line
	}{
		{[]string{"portfolio", "put", "p2", "--name", "Two", "--control-areas", "Nowhere"}, "Nowhere"},
		{[]string{"key", "create", "--scope", "data", "--portfolio", "nope"}, `unknown portfolio "nope"`},
		{[]string{"key", "create", "--scope", "admin"}, `"admin"`},
		{[]string{"key", "create", "--scope", "data"}, "--portfolio"},
		{[]string{"key", "revoke", "sbk_nosuchkey"}, "not found"},
		{[]string{"client", "add", "--issuer", "https://login.example.de", "--client-id", "c1", "--scope", "process"}, "https://login.example.de"},
		{[]string{"client", "revoke", "--issuer", "https://login.example.de", "--client-id", "c1"}, "client c1 of issuer https://login.example.de is not registered"},
		{[]string{"issuer", "remove", "https://login.example.de"}, "issuer https://login.example.de is not registered"},
		{[]string{"operator", "add", "not-an-address"}, "not-an-address"},
		{[]string{"audit", "list", "--limit", "0"}, "--limit"},
		{[]string{"inbox", "put", missing, "--portfolio", "p1", "--kind", "metered-data"}, "cannot read " + missing + ": no such file or directory"},
		{[]string{"inbox", "put", dir, "--portfolio", "p1", "--kind", "metered-data"}, "is a directory"},
		{[]string{"inbox", "put", upload, "--portfolio", "nope", "--kind", "metered-data"}, `unknown portfolio "nope"`},
		{[]string{"inbox", "put", upload, "--portfolio", "p1", "--kind", "meters"}, "meters"},
		{[]string{"inbox", "put", odd, "--portfolio", "p1", "--kind", "metered-data"}, "meter.xyz"},
		{[]string{"run", "chain", "--day", "2026-02-30"}, `day "2026-02-30" does not exist: February 2026 has 28 days`},
		{[]string{"run", "chain", "--day", "2026-13-01"}, `day "2026-13-01" does not exist: there is no month 13`},
		{[]string{"run", "chain", "--day", "30.01.2026"}, `day "30.01.2026": want YYYY-MM-DD`},
		{[]string{"run", "forcast"}, `unknown stage "forcast"`},
		{[]string{"lake", "files", "schedules"}, `unknown dataset "schedules"`},
		{[]string{"lake", "files", "schedule", "--day", "2026-02-29"}, `day "2026-02-29" does not exist`},
		{[]string{"prices", "import", "spot", missing}, "cannot read " + missing},
		{[]string{"prices", "import", "intraday", upload}, "intraday"},
		{[]string{"zeitreihen", "aktivierungen", missing}, "cannot read " + missing},
		{[]string{"kalkulation", "--bis", "2026-04-31"}, "April 2026 has 30 days"},
		{[]string{"kalkulation", "--bis", "2026-04-30", "--portfolio", "nope"}, `unknown portfolio "nope"`},
		{[]string{"demo", "--locations", "0"}, "--locations"},
		{[]string{"demo", "--day", "2027-02-29"}, "February 2027 has 28 days"},
		{[]string{"mako", "registry", missing}, "cannot read " + missing},
		{[]string{"mako", "send", "9900000000011", "partin"}, "partin"},
		{[]string{"mako", "overview", "--tage", "0"}, "--tage"},
		{[]string{"portal", "employee", "import", missing}, "cannot read " + missing},
		{[]string{"portal", "compensation", "import", missing}, "cannot read " + missing},
		{[]string{"portal", "employee", "put", "1001"}, "--name"},
		{[]string{"portal", "user", "put", "--email", "nobody", "--name", "N"}, "--email"},
		{[]string{"portal", "certificate", "status", "424242", "abgelehnt"}, "424242 not found"},
		{[]string{"portal", "certificate", "status", "424242", "verloren"}, "verloren"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, getenv, c.args...)
			lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
			if code != 2 || out != "" || len(lines) > 2 {
				t.Fatalf("exit %d, stdout %.200q, stderr %q", code, out, errOut)
			}
			if !strings.HasPrefix(lines[0], "schedbridge: ") || !strings.Contains(lines[0], c.want) {
				t.Errorf("stderr %q, want a line naming %q", lines[0], c.want)
			}
			if len(lines) == 2 && !strings.HasPrefix(lines[1], "Run 'schedbridge ") {
				t.Errorf("second line %q is no usage hint", lines[1])
			}
		})
	}
}

// TestHelpOfArguments: `help run chain` is the help of run, as `run chain
// --help` is.
func TestHelpOfArguments(t *testing.T) {
	getenv, _ := cliEnv(t, nil)
	_, want, _ := runCLI(t, getenv, "run", "chain", "--help")
	for _, args := range [][]string{{"help", "run", "chain"}, {"help", "lake", "files", "schedule"}} {
		code, out, errOut := runCLI(t, getenv, args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "Usage: schedbridge "+args[1]) {
			t.Errorf("%v: exit %d stdout %q stderr %q", args, code, out, errOut)
		}
		if args[1] == "run" && out != want {
			t.Errorf("help run chain differs from run chain --help:\n%s\n---\n%s", out, want)
		}
	}
}

// TestPastDayWarning: a chain or a schedules run for a day that has passed
// by the injected clock warns, as a sentence on a terminal and as a
// warning record elsewhere; tomorrow does not.
func TestPastDayWarning(t *testing.T) {
	getenv, _ := cliEnv(t, map[string]string{"SCHEDBRIDGE_SCHEDULER": "false"})
	now := func() time.Time { return time.Date(2026, 3, 30, 10, 0, 0, 0, time.UTC) }
	runAt := func(terminal bool, args ...string) string {
		var out, errb bytes.Buffer
		runEnv{stdout: &out, stderr: &errb, terminal: terminal, getenv: getenv, now: now}.run(t.Context(), args)
		return errb.String()
	}
	const warning = "delivery day 2026-03-29 is in the past (today is 2026-03-30 in Europe/Berlin)"
	if s := runAt(true, "run", "schedules", "--day", "2026-03-29"); !strings.Contains(s, "warning: "+warning) {
		t.Errorf("terminal: %q", s)
	}
	found := false
	for _, r := range jsonLines(t, runAt(false, "run", "chain", "--day", "2026-03-29")) {
		found = found || (r["level"] == "WARN" && strings.HasPrefix(r["msg"].(string), warning) && r["day"] == "2026-03-29")
	}
	if !found {
		t.Error("no warning record for a past day")
	}
	if s := runAt(true, "run", "schedules", "--day", "2026-03-31"); strings.Contains(s, "warning") {
		t.Errorf("tomorrow warned: %q", s)
	}
}

// TestConfigCheckedByEveryCommand: a value only serve's scheduler read
// before (a stage's cron spec) is refused by every command at its start,
// and the message names the variable and the YAML key, whether the value
// came from the environment or the file.
func TestConfigCheckedByEveryCommand(t *testing.T) {
	getenv, _ := cliEnv(t, map[string]string{"SCHEDBRIDGE_SCHEDULE_FORECAST": "bogus"})
	for _, args := range [][]string{{"migrate"}, {"config"}, {"portfolio", "list"}, {"run", "forecast"}, {"serve"}} {
		code, out, errOut := runCLI(t, getenv, args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 ||
			!strings.Contains(errOut, "pipeline.schedule.forecast (SCHEDBRIDGE_SCHEDULE_FORECAST)") || !strings.Contains(errOut, `"bogus"`) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	path := configFile(t, "pipeline:\n  schedule:\n    aggregate: '61 9 * * *'\n")
	getenv, _ = cliEnv(t, nil)
	if code, _, errOut := runCLI(t, getenv, "--config", path, "migrate"); code != 2 ||
		!strings.Contains(errOut, "pipeline.schedule.aggregate (SCHEDBRIDGE_SCHEDULE_AGGREGATE)") {
		t.Errorf("file: exit %d, stderr %q", code, errOut)
	}
	// A value of the wrong type names both, from either source.
	for _, c := range []struct {
		env  map[string]string
		yaml string
		want string
	}{
		{map[string]string{"SCHEDBRIDGE_READ_TIMEOUT": "60"}, "", `SCHEDBRIDGE_READ_TIMEOUT="60" (read_timeout): want a duration`},
		{nil, "inbox:\n  interval: soon\n", `line 2: inbox.interval (SCHEDBRIDGE_INBOX_INTERVAL) "soon": want a duration`},
		{nil, "rate_burst: [1]\n", "line 1: rate_burst (SCHEDBRIDGE_RATE_BURST): want an integer"},
	} {
		_, err := loadConfig(configFile(t, c.yaml), func(k string) string { return c.env[k] })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %q: %v, want %q", c.env, c.yaml, err, c.want)
		}
	}
}

// TestUnknownEnvVars: a SCHEDBRIDGE_ variable that sets nothing is warned
// about with the nearest known name, and the command runs; the variables
// Kubernetes injects for a Service named schedbridge are not mentioned.
func TestUnknownEnvVars(t *testing.T) {
	getenv, _ := cliEnv(t, nil)
	environ := func() []string {
		return []string{"PATH=/bin", "SCHEDBRIDGE_DATADIR=/data", "SCHEDBRIDGE_SERVICE_HOST=10.0.0.7", "SCHEDBRIDGE_SERVICE_PORT=8080",
			"SCHEDBRIDGE_SERVICE_PORT_HTTP=8080", "SCHEDBRIDGE_PORT=tcp://10.0.0.7:8080", "SCHEDBRIDGE_PORT_8080_TCP=tcp://10.0.0.7:8080",
			"SCHEDBRIDGE_PORT_8080_TCP_PROTO=tcp", "SCHEDBRIDGE_PORT_8080_TCP_PORT=8080", "SCHEDBRIDGE_PORT_8080_TCP_ADDR=10.0.0.7"}
	}
	for _, terminal := range []bool{true, false} {
		var out, errb bytes.Buffer
		code := runEnv{stdout: &out, stderr: &errb, terminal: terminal, getenv: getenv, environ: environ, now: time.Now}.run(t.Context(), []string{"config"})
		if code != 0 || !strings.Contains(out.String(), "data_dir:") {
			t.Fatalf("terminal %v: exit %d %s", terminal, code, errb.String())
		}
		want := "the environment variable SCHEDBRIDGE_DATADIR is no setting of schedbridge and is ignored; did you mean SCHEDBRIDGE_DATA_DIR?"
		if terminal {
			if errb.String() != "warning: "+want+"\n" {
				t.Errorf("terminal: stderr %q", errb.String())
			}
			continue
		}
		recs := jsonLines(t, errb.String())
		if len(recs) != 1 || recs[0]["level"] != "WARN" || recs[0]["msg"] != want || recs[0]["nearest"] != "SCHEDBRIDGE_DATA_DIR" {
			t.Errorf("log: %v", recs)
		}
	}
}

// TestConfigPrintsDefaults: `schedbridge config` shows the values in
// effect where a default applies, not an empty map or a zero.
func TestConfigPrintsDefaults(t *testing.T) {
	getenv, _ := cliEnv(t, nil)
	_, out, _ := runCLI(t, getenv, "config")
	for _, want := range []string{"forecast: 0 9 * * *", "kalkulation: 0 7 * * *", "rate_burst: 100", "TenneT: 10XDE-EON-NETZ-C",
		"Gesendet: out"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "schedule: {}") {
		t.Error("an empty schedule")
	}
	// The burst follows the rate unless it is set.
	getenv, _ = cliEnv(t, map[string]string{"SCHEDBRIDGE_RATE_LIMIT": "10", "SCHEDBRIDGE_SCHEDULE_FORECAST": "15 9 * * *"})
	_, out, _ = runCLI(t, getenv, "config")
	if !strings.Contains(out, "rate_burst: 20") || !strings.Contains(out, "forecast: 15 9 * * *") || !strings.Contains(out, "aggregate: 30 9 * * *") {
		t.Errorf("rate 10:\n%s", out)
	}
}

// TestEveryKeyIsChecked: every leaf of Config says how it is checked, so
// that a new field is not forgotten; and every rule refuses a bad value
// through the variable, naming it.
func TestEveryKeyIsChecked(t *testing.T) {
	for _, key := range yamlLeafKeys(reflect.TypeOf(Config{}), "") {
		_, sf, _ := field(&Config{}, key)
		rule := sf.Tag.Get("check")
		var bad string
		switch {
		case rule == "free" || rule == "custom":
			continue
		case rule == "positive" && sf.Type == durationType:
			bad = "0s"
		case rule == "positive":
			bad = "0"
		case rule == "nonnegative" && sf.Type == durationType:
			bad = "-1s"
		case rule == "nonnegative":
			bad = "-1"
		case rule == "listen":
			bad = "localhost"
		case strings.HasPrefix(rule, "oneof="):
			bad = "bogus"
		case rule == "nonempty":
			continue // an empty variable leaves the default; the YAML test below
		default:
			t.Errorf("%s: check tag %q", key, rule)
			continue
		}
		name := ""
		for _, e := range envVars {
			if e.key == key {
				name = e.name
			}
		}
		_, err := loadConfig("", func(k string) string {
			if k == name {
				return bad
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), key+" ("+name+")") {
			t.Errorf("%s=%s: %v", name, bad, err)
		}
	}
	if _, err := loadConfig(configFile(t, "data_dir: ''\n"), func(string) string { return "" }); err == nil ||
		!strings.Contains(err.Error(), "data_dir (SCHEDBRIDGE_DATA_DIR)") {
		t.Errorf("empty data_dir: %v", err)
	}
}
