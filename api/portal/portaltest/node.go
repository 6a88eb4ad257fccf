package portaltest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/storage/lake/laketest"
)

// The pinned npm packages; keep them in sync with deploy/dev/test-deps.sh
// and deploy/dev/portal/package.json.
const (
	OIDCProviderVersion = "9.13.3"
	MailDevVersion      = "3.0.0"
)

// startTimeout bounds how long a server may take to come up. Both start in
// well under two seconds here; the margin is for a loaded CI machine.
const startTimeout = 30 * time.Second

// nodeModules returns node's path and the node_modules directory holding
// the package at the pinned version, failing tb when either is missing: the
// tests that need them must not pass silently on a machine where they
// cannot run.
func nodeModules(tb testing.TB, pkg, version string) (node, modules string) {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Fatalf("portaltest: node is not installed: run `make test-deps`")
	}
	// The npm cache is the one laketest reads DuckDB from: test-deps.sh
	// installs every npm package of the tests there.
	dir, err := laketest.NodeDir()
	if err != nil {
		tb.Fatalf("portaltest: %v", err)
	}
	modules = filepath.Join(dir, "node_modules")
	raw, err := os.ReadFile(filepath.Join(modules, pkg, "package.json"))
	if err != nil {
		tb.Fatalf("portaltest: npm %s is not installed in %s (%v): run `make test-deps`", pkg, dir, err)
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(raw, &meta); err != nil || meta.Version != version {
		tb.Fatalf("portaltest: %s has npm %s %q, want %s: run `make test-deps`", dir, pkg, meta.Version, version)
	}
	return node, modules
}

// repoRoot finds the module root (the directory holding go.mod) above this
// source file, or above the working directory when the file's path is not
// available (a -trimpath build).
func repoRoot(tb testing.TB) string {
	tb.Helper()
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	tb.Fatalf("portaltest: no go.mod above %v", starts)
	return ""
}

// process is a node server started by a test. It is killed, with its
// process group, when the test ends.
type process struct {
	name   string
	cmd    *exec.Cmd
	out    lockedBuffer  // what it printed, stdout and stderr
	lines  chan string   // its stdout, line by line
	exited chan struct{} // closed once it has exited
}

// startProcess starts node with args in dir and registers its clean-up.
func startProcess(tb testing.TB, name, node, dir string, env []string, args ...string) (*process, error) {
	tb.Helper()
	cmd := exec.Command(node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	p := &process{name: name, cmd: cmd, lines: make(chan string, 64), exited: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = &p.out
	ownProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.scan(stdout)
		// Wait only after stdout reached EOF, as os/exec requires.
		_ = cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() {
		p.stop()
		if tb.Failed() {
			tb.Logf("%s output:\n%s", name, p.output())
		}
	})
	return p, nil
}

// scan copies stdout into the log and hands each line to whoever waits for
// one, dropping lines nobody waits for once the channel is full.
func (p *process) scan(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		p.out.Write([]byte(line + "\n"))
		select {
		case p.lines <- line:
		default:
		}
	}
}

// stop kills the process group and waits until the process is gone.
func (p *process) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	killGroup(p.cmd)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
}

// output is what the process printed, shortened to its last 8 KiB.
func (p *process) output() string {
	s := p.out.String()
	if len(s) > 8<<10 {
		s = "..." + s[len(s)-8<<10:]
	}
	return strings.TrimSpace(s)
}

// errExited reports a server that stopped while the test waited for it.
var errExited = errors.New("exited during start-up")

type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// freePorts returns n distinct loopback ports that were free a moment ago.
// Another process may take one before the server binds it; callers retry.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		// Kept open until all are chosen, so that the kernel hands out
		// distinct ports.
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
