package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// writeCSV writes a metered-data CSV of rows days of 96 values.
func writeCSV(t *testing.T, path string, rows, seed int) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString("malo;day;unit")
	for i := 1; i <= 96; i++ {
		fmt.Fprintf(w, ";v%d", i)
	}
	w.WriteString("\n")
	for r := range rows {
		fmt.Fprintf(w, "%011d;2026-11-%02d;KWH", 20000000000+seed*1000000+r/10, 10+r%10)
		for q := range 96 {
			fmt.Fprintf(w, ";%d,%03d", (r+q)%97, q)
		}
		w.WriteString("\n")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// withInbox sets a quick scan and a short lease, and MinIO when asked.
func (in *instance) withInbox(minio bool) {
	in.env = append(in.env, "SCHEDBRIDGE_INBOX_INTERVAL=200ms", "SCHEDBRIDGE_INBOX_LEASE=3s", "SCHEDBRIDGE_LOG_LEVEL=debug")
	if minio {
		c := objtest.MinIO(in.t)
		in.env = append(in.env, "SCHEDBRIDGE_S3_ENDPOINT="+c.Endpoint, "SCHEDBRIDGE_S3_BUCKET="+c.Bucket,
			"SCHEDBRIDGE_S3_ACCESS_KEY="+c.AccessKey, "SCHEDBRIDGE_S3_SECRET_KEY="+c.SecretKey)
	}
}

// second is another serve process on the same database and bucket.
func (in *instance) second() *instance {
	addr, metricsAddr := freeAddr(in.t), freeAddr(in.t)
	env := append(append([]string{}, in.env...), "SCHEDBRIDGE_ADDR="+addr, "SCHEDBRIDGE_METRICS_ADDR="+metricsAddr)
	return &instance{t: in.t, env: env, addr: addr, dbURL: in.dbURL, metricsAddr: metricsAddr}
}

func (in *instance) report(key string) map[string][]map[string]any {
	in.t.Helper()
	code, _, b := in.raw("GET", "/v1/process/inbox?limit=1000", key, nil)
	var rep map[string]json.RawMessage
	if err := json.Unmarshal(b, &rep); err != nil {
		in.t.Fatalf("report %d: %s", code, b)
	}
	out := map[string][]map[string]any{}
	for _, k := range []string{"pending", "processing", "processed", "rejected"} {
		var rows []map[string]any
		json.Unmarshal(rep[k], &rows)
		out[k] = rows
	}
	return out
}

func (in *instance) versions() int { return in.meteredVersions("p1") }

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (in *instance) setup() string {
	in.cli(0, "portfolio", "put", "p1", "--name", "One", "--control-areas", "TenneT")
	key, _ := in.cli(0, "key", "create", "--scope", "process")
	return strings.TrimSpace(key)
}

// TestInboxPutAndScan uploads with the CLI's progress bar and processes with
// the cron command, on the embedded default.
func TestInboxPutAndScan(t *testing.T) {
	in := newInstance(t, sqldb.SQLite)
	in.setup()
	file := filepath.Join(t.TempDir(), "meter.csv")
	writeCSV(t, file, 200, 0)
	out, errOut := in.cli(0, "inbox", "put", file, "--portfolio", "p1", "--kind", "metered-data")
	// stderr is no terminal here: the progress is log records, the last
	// one of the whole file.
	if out != "inbox/p1/metered-data/meter.csv\n" || !strings.Contains(errOut, `"msg":"progress","task":"upload meter.csv"`) ||
		!regexp.MustCompile(`"done":(\d+),"total":(\d+),[^\n]*"unit":"bytes"`).MatchString(errOut) ||
		!strings.Contains(errOut, `"msg":"uploaded inbox/p1/metered-data/meter.csv`) {
		t.Errorf("put: stdout %q stderr %q", out, errOut)
	}
	if all := regexp.MustCompile(`"done":(\d+),"total":(\d+)`).FindAllStringSubmatch(errOut, -1); len(all) == 0 || all[len(all)-1][1] != all[len(all)-1][2] {
		t.Errorf("the last progress record is not of the whole file: %s", errOut)
	}
	if _, errOut := in.cli(2, "inbox", "put", file, "--portfolio", "p1", "--kind", "weather"); !strings.Contains(errOut, "kind") {
		t.Errorf("bad kind: %q", errOut)
	}
	// An unknown portfolio is refused before a byte is sent: the scan below
	// sees the one file above only.
	for _, id := range []string{"nope", "tso"} {
		out, errOut := in.cli(2, "inbox", "put", file, "--portfolio", id, "--kind", "metered-data")
		// A data problem: one line, no hint to the usage.
		if out != "" || !strings.Contains(errOut, `unknown portfolio "`+id+`"`) || strings.Contains(errOut, "100.0%") ||
			strings.Contains(errOut, "--help") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("unknown portfolio %s: stdout %q stderr %q", id, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(in.dataDir(), "bucket", "inbox", id)); !os.IsNotExist(err) {
			t.Errorf("unknown portfolio %s: inbox folder exists (%v)", id, err)
		}
	}
	out, _ = in.cli(0, "inbox", "scan")
	if out != "seen 1, processed 1, rejected 0, busy 0, failed 0\n" {
		t.Errorf("scan: %q", out)
	}
	if n := in.versions(); n != 200 {
		t.Errorf("versions = %d", n)
	}
	// The supplier finds the result under the upload's name.
	var latest struct{ Outcome, File string }
	if b, err := os.ReadFile(filepath.Join(in.dataDir(), "bucket", "receipts", "p1", "metered-data", "meter.csv.json")); err != nil ||
		json.Unmarshal(b, &latest) != nil || latest.Outcome != "processed" || latest.File != "inbox/p1/metered-data/meter.csv" {
		t.Errorf("latest result: %+v, %v", latest, err)
	}
	out, _ = in.cli(0, "inbox", "scan")
	if out != "seen 0, processed 0, rejected 0, busy 0, failed 0\n" {
		t.Errorf("second scan: %q", out)
	}
}

// TestInboxKilledMidFile kills serve with SIGKILL while it stages a file;
// the restarted process processes it, exactly once.
func TestInboxKilledMidFile(t *testing.T) {
	in := newInstance(t, sqldb.SQLite)
	in.withInbox(false)
	key := in.setup()
	file := filepath.Join(t.TempDir(), "big.csv")
	// Large enough that the kill lands inside the one pass that reads and
	// stages it. The report's first request records the key's use while
	// the staging holds SQLite's write lock; it must not wait for it
	// (sqldb.TouchKey).
	const rows = 150000
	writeCSV(t, file, rows, 1)
	cmd, logs := in.serve()
	in.cli(0, "inbox", "put", file, "--portfolio", "p1", "--kind", "metered-data")
	waitFor(t, "processing to start", 20*time.Second, func() bool { return len(in.report(key)["processing"]) == 1 })
	// Into the file, not at its claim: the process has written rows into
	// its open transaction.
	waitFor(t, "staging to begin", 20*time.Second, func() bool {
		return strings.Contains(logs.String(), `"msg":"inbox file staging: first batch written`)
	})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// Killed before the commit: the file was neither staged nor finished.
	if n := in.versions(); n != 0 || strings.Contains(logs.String(), `"msg":"inbox file processed"`) {
		t.Fatalf("the kill came after the file's commit: %d versions\n%s", n, logs)
	}
	in.serve()
	waitFor(t, "the file to be processed", 60*time.Second, func() bool {
		r := in.report(key)
		return len(r["processed"]) == 1 && len(r["processing"]) == 0
	})
	r := in.report(key)["processed"][0]
	receipt := r["receipt"].(map[string]any)
	if receipt["status"] != "created" || receipt["attempts"].(float64) != 2 || r["dest"] != "processed/p1/"+pipeline.DayOf(time.Now()).String()+"/big.csv" {
		t.Errorf("after restart: %+v\nfirst run's log:\n%s", r, logs)
	}
	if n := in.versions(); n != rows {
		t.Errorf("versions = %d, want %d", n, rows)
	}
}

// TestInboxTwoServers races two serve processes over the same PostgreSQL
// database and MinIO bucket: every file is staged once.
func TestInboxTwoServers(t *testing.T) {
	a := newInstance(t, sqldb.Postgres)
	a.withInbox(true)
	key := a.setup()
	const files, rows = 8, 500
	for i := range files {
		file := filepath.Join(t.TempDir(), fmt.Sprintf("f%d.csv", i))
		writeCSV(t, file, rows, 10+i)
		a.cli(0, "inbox", "put", file, "--portfolio", "p1", "--kind", "metered-data")
	}
	b := a.second()
	_, logsA := a.serve()
	_, logsB := b.serve()
	deadline := time.Now().Add(120 * time.Second)
	for {
		r := a.report(key)
		if len(r["processed"]) == files && len(r["processing"]) == 0 && len(r["pending"]) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not all files processed: %+v\nlogs A:\n%s\nlogs B:\n%s", r, tail(logsA.String()), tail(logsB.String()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := a.versions(); n != files*rows {
		t.Errorf("versions = %d, want %d", n, files*rows)
	}
	owners := map[string]bool{}
	for _, r := range b.report(key)["processed"] {
		owners[r["owner"].(string)] = true
		if r["receipt"].(map[string]any)["status"] != "created" {
			t.Errorf("file %v: status %v", r["key"], r["receipt"])
		}
	}
	t.Logf("files were processed by %d process(es)", len(owners))
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}
