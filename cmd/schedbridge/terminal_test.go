package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
)

// TestTerminalRecordAboveBar: on a terminal, a record written while a bar
// is drawn clears the bar's line first, is text, and the bar is drawn again
// below it; info records are left to the sentences.
func TestTerminalRecordAboveBar(t *testing.T) {
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC), step: time.Second}
	a := &app{stderr: &buf, terminal: true, now: clock.now}
	a.log = terminalLogger(defaultConfig(), a.tw())
	p := a.newProgress("stage", false)
	p.update("forecast", 1, 2)
	a.log.Info("stage started", "stage", "forecast")
	a.log.Warn("slow answer", "stage", "forecast")
	p.update("forecast", 2, 2)
	p.finish()
	bar := "forecast       [###############...............]  50.0% 1/2"
	want := "\r" + bar + "\r\x1b[Klevel=WARN msg=\"slow answer\" stage=forecast\n\r" + bar +
		"\rforecast       [##############################] 100.0% 2/2\n"
	if buf.String() != want {
		t.Errorf("terminal\n%q, want\n%q", buf.String(), want)
	}
}

// TestTerminalDemo runs `demo` with stderr on a pseudo-terminal, as `make
// demo` does: bars (staging included) and sentences, no JSON record, no
// info record between the bars.
func TestTerminalDemo(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	dir := t.TempDir()
	cmd := exec.Command(binary, "demo", "--locations", "30", "--day", "2026-03-29")
	cmd.Env = append(os.Environ(), "SCHEDBRIDGE_DATA_DIR="+dir, "SCHEDBRIDGE_SCHEDULER=false")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var term bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(&term, ptmx)
		done <- err
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("demo: %v\n%s", err, term.String())
	}
	// The reader ends with EIO once the last writer of the terminal is gone.
	if err := <-done; err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatal(err)
	}
	// The terminal turns "\n" into "\r\n"; split at both.
	s := strings.ReplaceAll(term.String(), "\r\n", "\n")
	for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if strings.HasPrefix(line, "{") || strings.Contains(line, "level=INFO") {
			t.Errorf("a record on the terminal: %q", line)
		}
	}
	for _, want := range []string{"database (sqlite): ", "\rstaging ", "\rforecast ", "100.0%", "demo: staged ",
		"warning: delivery day 2026-03-29 is in the past"} {
		if !strings.Contains(s, want) {
			t.Errorf("the terminal lacks %q:\n%q", want, s)
		}
	}
	if strings.Contains(s, "migration applied") {
		t.Error("migration records on the terminal")
	}
	if !strings.Contains(stdout.String(), filepath.Join(dir, "bucket", "outbox", "fahrplan")) {
		t.Errorf("stdout %s", stdout.String())
	}
}

// TestDataDirNotWritable: a data directory that belongs to another user,
// as a bind-mounted volume does, is refused at the start with a sentence
// that names the directory, its owner and the process's user, not with
// SQLite's "unable to open database file (14)". As root, the binary runs
// as the image's user 65532 on a directory of root's.
func TestDataDirNotWritable(t *testing.T) {
	base, err := os.MkdirTemp("", "schedbridge-datadir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	bin := filepath.Join(base, "schedbridge")
	data := filepath.Join(base, "data")
	for _, err := range []error{os.Chmod(base, 0o755), copyExecutable(binary, bin), os.Mkdir(data, 0o755)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "migrate")
	cmd.Env = []string{"SCHEDBRIDGE_DATA_DIR=" + data}
	uid := os.Getuid()
	if uid == 0 {
		uid = 65532
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	} else if err := os.Chmod(data, 0o555); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, stderr %s", err, stderr.String())
	}
	for _, want := range []string{"data directory " + data + " (data_dir, SCHEDBRIDGE_DATA_DIR) is not writable",
		"owned by uid " + itoa(os.Getuid()), "this process runs as uid " + itoa(uid), "fsGroup", "--user"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q: %s", want, stderr.String())
		}
	}
	if strings.Count(stderr.String(), "\n") != 1 || strings.Contains(stderr.String(), "(14)") {
		t.Errorf("not one sentence: %s", stderr.String())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// copyExecutable copies a binary to a place the test user may run it from.
func copyExecutable(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// TestDemoS3Paths: with S3, the demo points at the schedules and the lake
// by their s3:// URIs, not at local paths that hold nothing.
func TestDemoS3Paths(t *testing.T) {
	c := objtest.MinIO(t)
	getenv, dir := cliEnv(t, map[string]string{"SCHEDBRIDGE_S3_ENDPOINT": c.Endpoint, "SCHEDBRIDGE_S3_BUCKET": c.Bucket,
		"SCHEDBRIDGE_S3_ACCESS_KEY": c.AccessKey, "SCHEDBRIDGE_S3_SECRET_KEY": c.SecretKey})
	code, out, errOut := runCLI(t, getenv, "demo", "--locations", "5")
	if code != 0 {
		t.Fatalf("demo: %d %s", code, errOut)
	}
	for _, want := range []string{"s3://" + c.Bucket + "/outbox/fahrplan/", "s3://" + c.Bucket + "/lake/"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, dir) {
		t.Errorf("stdout names the local data directory:\n%s", out)
	}
}
