package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeClock advances by step on every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

// jsonLines decodes each line of s as one JSON object.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	if s == "" {
		return nil
	}
	for i, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("line %d is not a JSON object: %q", i+1, line)
			continue
		}
		out = append(out, m)
	}
	return out
}

// TestProgressLog: off a terminal, progress is a log record at a task's
// first update, every logEvery after it, and at its end; no carriage
// return, every line a JSON object.
func TestProgressLog(t *testing.T) {
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC), step: time.Second}
	a := &app{stderr: &buf, log: slog.New(slog.NewJSONHandler(&buf, nil)), now: clock.now}
	p := a.newProgress("stage", false)
	for i := int64(1); i <= 12; i++ {
		p.update("forecast", i, 12)
	}
	p.update("aggregate", 1, 3)
	p.update("aggregate", 2, 3)
	p.finish()
	a.note("forecast 2026-11-27: run 1 succeeded", "run", 1)

	var got []string
	recs := jsonLines(t, buf.String())
	for _, r := range recs[:len(recs)-1] {
		if r["msg"] != "progress" {
			t.Fatalf("record %v", r)
		}
		got = append(got, fmt.Sprintf("%s %v/%v", r["stage"], r["done"], r["total"]))
	}
	want := []string{"forecast 1/12", "forecast 6/12", "forecast 11/12", "forecast 12/12", "aggregate 1/3", "aggregate 2/3"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("progress records %v, want %v", got, want)
	}
	if last := recs[len(recs)-1]; last["msg"] != "forecast 2026-11-27: run 1 succeeded" || last["run"] != 1.0 {
		t.Errorf("summary record %v", last)
	}
	if strings.Contains(buf.String(), "\r") {
		t.Error("carriage return in a log")
	}
}

// TestProgressTerminal: on a terminal, a bar redrawn in place at most every
// barEvery, its last state shown and its line closed at the end, and plain
// sentences.
func TestProgressTerminal(t *testing.T) {
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC), step: 50 * time.Millisecond}
	a := &app{stderr: &buf, terminal: true, log: slog.New(slog.NewJSONHandler(&buf, nil)), now: clock.now}
	p := a.newProgress("stage", false)
	for i := int64(1); i <= 10; i++ {
		p.update("forecast", i, 10)
	}
	p.update("schedules", 1, 4)
	p.update("schedules", 2, 4) // within barEvery: drawn only by finish
	p.finish()
	a.note("chain 2026-11-27: run 7 succeeded in 1.0 s")

	lines := strings.Split(buf.String(), "\n")
	if len(lines) != 4 || lines[3] != "" {
		t.Fatalf("want two bar lines and a sentence:\n%q", buf.String())
	}
	draws := strings.Split(lines[0], "\r")[1:]
	if len(draws) != 4 || !strings.HasPrefix(draws[0], "forecast ") || !strings.HasSuffix(draws[3], "100.0% 10/10") {
		t.Errorf("forecast bar redrawn %d times: %q", len(draws), lines[0])
	}
	if !strings.HasSuffix(lines[1], " 50.0% 2/4") {
		t.Errorf("schedules bar does not end at its last state: %q", lines[1])
	}
	if lines[2] != "chain 2026-11-27: run 7 succeeded in 1.0 s" {
		t.Errorf("sentence %q", lines[2])
	}

	buf.Reset()
	bp := a.newProgress("task", true)
	w := &byteProgress{p: bp, task: "upload m.csv", size: 3 << 20}
	for range 3 {
		w.Write(make([]byte, 1<<20))
	}
	bp.finish()
	if s := buf.String(); !strings.HasPrefix(s, "\rupload m.csv [") || !strings.Contains(s, "100.0% 3.0 MiB/3.0 MiB") || !strings.HasSuffix(s, "\n") {
		t.Errorf("byte bar %q", s)
	}
}

// TestStderrIsJSON runs commands as cron would, stderr not a terminal:
// every line they write to stderr, progress, summaries and a failure
// included, is one JSON object. On a terminal the same run draws a bar and
// a sentence.
func TestStderrIsJSON(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"SCHEDBRIDGE_DATA_DIR": dir, "SCHEDBRIDGE_SCHEDULER": "false"}
	getenv := func(k string) string { return env[k] }
	upload := filepath.Join(t.TempDir(), "meter.csv")
	writeCSV(t, upload, 50, 0)
	employees, _ := filepath.Abs("../../ingest/hr/testdata/hr/mitarbeiter.csv")
	env["SCHEDBRIDGE_PORTAL_OIDC_ISSUER"], env["SCHEDBRIDGE_PORTAL_OIDC_CLIENT_ID"] = "https://login.example.de", "portal"
	for _, c := range []struct {
		code int
		args []string
		msgs []string // messages that must be among the records
	}{
		{0, []string{"migrate"}, []string{"migration applied", "database (sqlite) is up to date"}},
		{0, []string{"portfolio", "put", "p1", "--name", "One", "--control-areas", "TenneT"}, []string{"portfolio p1 created"}},
		{0, []string{"key", "create", "--scope", "process"}, nil},
		{0, []string{"inbox", "put", upload, "--portfolio", "p1", "--kind", "metered-data"}, []string{"progress", "uploaded inbox/p1/metered-data/meter.csv (0.0 MiB)"}},
		{0, []string{"inbox", "scan"}, nil},
		{0, []string{"demo", "--locations", "20", "--day", "2026-03-29"}, []string{"progress"}},
		{0, []string{"run", "schedules", "--day", "2026-03-29"}, nil},
		{0, []string{"portal", "employee", "import", employees}, []string{"progress", "portal employee import: 3 rows, 3 employees created, 0 updated"}},
		{0, []string{"mako", "sync"}, nil},
		{0, []string{"zeitreihen", "sync"}, nil},
		// A run that fails for want of its inputs is a failure of the
		// work, not a refusal: exit 1 and a record.
		{1, []string{"run", "aggregate", "--day", "2027-01-04"}, []string{"command failed"}},
	} {
		var out, errb bytes.Buffer
		if code := runIO(t.Context(), c.args, &out, &errb, false, getenv); code != c.code {
			t.Fatalf("%v: exit %d, want %d\n%s", c.args, code, c.code, errb.String())
		}
		msgs := map[string]bool{}
		for _, r := range jsonLines(t, errb.String()) {
			msgs[fmt.Sprint(r["msg"])] = true
		}
		for _, m := range c.msgs {
			if !msgs[m] {
				t.Errorf("%v: no record %q among %v", c.args, m, msgs)
			}
		}
	}
	// The summary of run is a record with its facts as attributes.
	var out, errb bytes.Buffer
	if code := runIO(t.Context(), []string{"run", "forecast", "--day", "2026-03-29"}, &out, &errb, false, getenv); code != 0 {
		t.Fatalf("run forecast: %d %s", code, errb.String())
	}
	recs := jsonLines(t, errb.String())
	progressed := false
	for _, r := range recs {
		progressed = progressed || (r["msg"] == "progress" && r["stage"] == "forecast" && r["done"] == r["total"])
	}
	if !progressed {
		t.Errorf("no final progress record of the forecast: %v", recs)
	}
	last := recs[len(recs)-1]
	if !strings.HasPrefix(fmt.Sprint(last["msg"]), "forecast 2026-03-29: run ") || last["status"] != "succeeded" ||
		last["stage"] != "forecast" || last["day"] != "2026-03-29" || last["duration_s"] == nil {
		t.Errorf("summary record %v", last)
	}

	// On a terminal: a bar and the sentence.
	out.Reset()
	errb.Reset()
	if code := runIO(t.Context(), []string{"run", "forecast", "--day", "2026-03-29"}, &out, &errb, true, getenv); code != 0 {
		t.Fatalf("run forecast on a terminal: %d %s", code, errb.String())
	}
	if s := errb.String(); !strings.Contains(s, "\rforecast") || !strings.Contains(s, "100.0%") || !strings.Contains(s, "\nforecast 2026-03-29: run ") {
		t.Errorf("terminal output %q", s)
	}
	if _, err := os.Stat(filepath.Join(dir, "bucket")); err != nil {
		t.Error(err)
	}
}
