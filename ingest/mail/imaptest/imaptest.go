// Package imaptest starts a real Dovecot IMAP server for tests: its own
// configuration, port, state and maildir in a temporary directory, a single
// user with a plain-text password, no TLS, listening on 127.0.0.1 only.
// Tests fill the mailbox by writing maildir files (Deliver), the way a local
// delivery agent does, so no SMTP server is involved.
//
// Dovecot comes from the Debian package dovecot-imapd (make test-deps
// installs it). A system Dovecot the package may have started is neither
// needed nor touched.
//
// Running as root: the Dovecot master stays root (it must, to switch users),
// the login processes run as "dovenull" and the internal services as
// "dovecot" (both created by the package), and the mail processes (imap) run
// as "nobody". The temporary directory is made world-readable (0755) so that
// those users reach the maildir, and the maildir belongs to nobody.
// Running as another user: every Dovecot process runs as that user, so the
// configuration names it as login and internal user and turns off the
// chroot of imap-login and anvil, which needs root.
package imaptest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Binary is where Debian's dovecot-core installs the server.
const Binary = "/usr/sbin/dovecot"

// Server is a running Dovecot.
type Server struct {
	// Addr is 127.0.0.1:port of the plain-text IMAP listener.
	Addr     string
	User     string
	Password string
	// Maildir is the user's mail root (maildir++ layout: INBOX is the root,
	// folder X is the directory .X).
	Maildir string

	dir      string
	cmd      *exec.Cmd
	exited   chan struct{}
	uid, gid int // owner of the mail files; -1 when no chown is needed
	seq      atomic.Uint64
}

// Start starts Dovecot and stops it when the test ends. A missing Dovecot
// fails the test: the IMAP tests are part of the suite, not optional.
func Start(tb testing.TB) *Server {
	tb.Helper()
	if _, err := os.Stat(Binary); err != nil {
		tb.Fatalf("imaptest: Dovecot is not installed (%s missing): run `make test-deps` (installs the Debian package dovecot-imapd)", Binary)
	}
	dir, err := os.MkdirTemp("", "imaptest-")
	if err != nil {
		tb.Fatalf("imaptest: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	// Dovecot's unprivileged processes must reach the maildir and the
	// passwd file through this directory (MkdirTemp makes it 0700).
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatalf("imaptest: %v", err)
	}

	s := &Server{User: "mako", Password: "imaptest-Pw-7f3a9c", Maildir: filepath.Join(dir, "Maildir"), dir: dir, uid: -1, gid: -1}
	users, err := s.users()
	if err != nil {
		tb.Fatalf("imaptest: %v", err)
	}
	if err := s.mkMaildir(s.Maildir); err != nil {
		tb.Fatalf("imaptest: %v", err)
	}

	// The port is picked free and then handed to Dovecot, so another process
	// may take it in between; a failed start is retried with a new port.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if lastErr = s.start(users); lastErr == nil {
			tb.Cleanup(s.stop)
			return s
		}
	}
	tb.Fatalf("imaptest: %v", lastErr)
	return nil
}

// processUsers are the system users Dovecot's processes run as.
type processUsers struct {
	login, internal, internalGroup string
	mailUID, mailGID               int
	root                           bool
}

func (s *Server) users() (processUsers, error) {
	if os.Geteuid() != 0 {
		u, err := user.Current()
		if err != nil {
			return processUsers{}, err
		}
		g, err := user.LookupGroupId(strconv.Itoa(os.Getegid()))
		if err != nil {
			return processUsers{}, err
		}
		return processUsers{login: u.Username, internal: u.Username, internalGroup: g.Name, mailUID: os.Geteuid(), mailGID: os.Getegid()}, nil
	}
	for _, name := range []string{"dovenull", "dovecot"} {
		if _, err := user.Lookup(name); err != nil {
			return processUsers{}, fmt.Errorf("system user %s missing (the dovecot-core package creates it): run `make test-deps`", name)
		}
	}
	// Dovecot refuses mail processes as root, so mail access runs as nobody.
	nobody, err := user.Lookup("nobody")
	if err != nil {
		return processUsers{}, fmt.Errorf("system user nobody missing: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	s.uid, s.gid = uid, gid
	return processUsers{login: "dovenull", internal: "dovecot", internalGroup: "dovecot", mailUID: uid, mailGID: gid, root: true}, nil
}

func (s *Server) start(pu processUsers) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	base := filepath.Join(s.dir, "run")
	state := filepath.Join(s.dir, "state")
	for _, d := range []string{base, state} {
		os.RemoveAll(d)
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	passwd := filepath.Join(s.dir, "passwd")
	// user:password:uid:gid:gecos:home:shell; the password scheme prefix
	// tells Dovecot it is stored in plain text.
	line := fmt.Sprintf("%s:{PLAIN}%s:%d:%d::%s::\n", s.User, s.Password, pu.mailUID, pu.mailGID, s.dir)
	if err := os.WriteFile(passwd, []byte(line), 0o644); err != nil {
		return err
	}
	logPath := filepath.Join(s.dir, "dovecot.log")
	conf := fmt.Sprintf(`# Generated by imaptest for one test run.
protocols = imap
listen = 127.0.0.1
base_dir = %[1]s
state_dir = %[2]s
instance_name = imaptest-%[3]d
log_path = %[4]s
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
# Wrong-password tests must not wait the default 2 s.
auth_failure_delay = 0
default_login_user = %[5]s
default_internal_user = %[6]s
default_internal_group = %[7]s
first_valid_uid = 1
mail_location = maildir:%[8]s
passdb {
  driver = passwd-file
  args = scheme=PLAIN %[9]s
}
userdb {
  driver = passwd-file
  args = %[9]s
}
service imap-login {
%[10]s  inet_listener imap {
    address = 127.0.0.1
    port = %[3]d
  }
  inet_listener imaps {
    port = 0
  }
}
%[11]s`, base, state, port, logPath, pu.login, pu.internal, pu.internalGroup, s.Maildir, passwd,
		noChroot(pu.root, "  "), noChrootService(pu.root))
	confPath := filepath.Join(s.dir, "dovecot.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return err
	}

	cmd := exec.Command(Binary, "-F", "-c", confPath)
	out, err := os.Create(filepath.Join(s.dir, "dovecot.out"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so that stop can also reach the children if
	// the master dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start %s: %v", Binary, err)
	}
	out.Close()
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() { cmd.Wait(); close(s.exited) }()

	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("dovecot exited on start: %s", s.logs())
		default:
		}
		if greeted(s.Addr) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.stop()
	return fmt.Errorf("dovecot did not greet on %s within 10 s: %s", s.Addr, s.logs())
}

// noChroot turns off the chroot of imap-login, which only root may do.
func noChroot(root bool, indent string) string {
	if root {
		return ""
	}
	return indent + "chroot =\n"
}

func noChrootService(root bool) string {
	if root {
		return ""
	}
	return "service anvil {\n  chroot =\n}\n"
}

// greeted reports whether addr answers with Dovecot's ready greeting. While
// its auth process starts, Dovecot first greets with "Waiting for
// authentication process", which is not ready yet.
func greeted(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "* OK") && !strings.Contains(line, "Waiting for")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logs returns Dovecot's own output and log for failure messages.
func (s *Server) logs() string {
	var sb strings.Builder
	for _, f := range []string{"dovecot.out", "dovecot.log"} {
		if b, err := os.ReadFile(filepath.Join(s.dir, f)); err == nil && len(b) > 0 {
			fmt.Fprintf(&sb, "\n--- %s ---\n%s", f, strings.TrimSpace(string(b)))
		}
	}
	return sb.String()
}

// stop ends Dovecot: SIGTERM to its process group (the master forwards it
// to its children), SIGKILL after 5 s.
func (s *Server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	pgid := s.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.exited
	}
	s.cmd = nil
}

// Logs returns Dovecot's log so far, for a test's failure message.
func (s *Server) Logs() string { return s.logs() }

// Deliver puts raw into folder ("" or "INBOX" for the inbox) as a new
// message, creating the folder when needed. Dovecot assigns the next UID
// when a client next opens the folder.
func (s *Server) Deliver(tb testing.TB, folder string, raw []byte) {
	tb.Helper()
	dir, err := s.folderDir(folder)
	if err != nil {
		tb.Fatalf("imaptest: deliver: %v", err)
	}
	if err := s.mkMaildir(dir); err != nil {
		tb.Fatalf("imaptest: deliver: %v", err)
	}
	// Maildir delivery: write under tmp/, then rename into new/, so the
	// server never sees a half-written file.
	host, _ := os.Hostname()
	host = strings.NewReplacer("/", "_", ":", "_").Replace(host)
	// Dovecot assigns UIDs to new files in file-name order; the zero-padded
	// counter keeps that the order of Deliver calls.
	now := time.Now()
	name := fmt.Sprintf("%d.Q%08d.M%06dP%d.%s", now.Unix(), s.seq.Add(1), now.Nanosecond()/1000, os.Getpid(), host)
	tmp := filepath.Join(dir, "tmp", name)
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		tb.Fatalf("imaptest: deliver: %v", err)
	}
	if err := s.chown(tmp); err != nil {
		tb.Fatalf("imaptest: deliver: %v", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "new", name)); err != nil {
		tb.Fatalf("imaptest: deliver: %v", err)
	}
}

// RemoveFolder deletes folder with its messages and Dovecot's index and UID
// list, as if another client had deleted it. Delivering into it afterwards
// creates a new folder with a new UIDVALIDITY.
func (s *Server) RemoveFolder(tb testing.TB, folder string) {
	tb.Helper()
	dir, err := s.folderDir(folder)
	if err != nil || dir == s.Maildir {
		tb.Fatalf("imaptest: remove folder %q: only named folders can be removed", folder)
	}
	if err := os.RemoveAll(dir); err != nil {
		tb.Fatalf("imaptest: remove folder: %v", err)
	}
}

// folderDir maps a folder name to its maildir++ directory. Names are kept
// ASCII: Dovecot stores other names in modified UTF-7, which this harness
// does not encode.
func (s *Server) folderDir(folder string) (string, error) {
	if folder == "" || strings.EqualFold(folder, "INBOX") {
		return s.Maildir, nil
	}
	for _, r := range folder {
		if r < 0x20 || r > 0x7e || r == '/' || r == '&' {
			return "", fmt.Errorf("folder name %q: use printable ASCII without / and &", folder)
		}
	}
	if strings.HasPrefix(folder, ".") || strings.Contains(folder, "..") {
		return "", fmt.Errorf("folder name %q is not allowed", folder)
	}
	return filepath.Join(s.Maildir, "."+folder), nil
}

func (s *Server) mkMaildir(dir string) error {
	for _, d := range []string{dir, filepath.Join(dir, "cur"), filepath.Join(dir, "new"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := s.chown(d); err != nil {
			return err
		}
	}
	return nil
}

// chown hands files to the mail user when the tests run as root.
func (s *Server) chown(path string) error {
	if s.uid < 0 {
		return nil
	}
	return os.Chown(path, s.uid, s.gid)
}
