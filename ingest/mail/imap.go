package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/schedbridge/schedbridge/pipeline"
)

// IMAPConfig says how to reach and log in to a mailbox.
type IMAPConfig struct {
	// Addr is host:port; without a port, 993 (tls) or 143 is used.
	Addr     string
	Username string
	// Password is sent with LOGIN and never appears in errors or logs.
	Password string
	// Security is "tls" (implicit TLS, the default when empty), "starttls",
	// or "none" (plain text, refused unless Addr is a loopback address:
	// meant for tests against a local server).
	Security string
	// InsecureSkipVerify accepts any server certificate (self-signed test
	// servers only).
	InsecureSkipVerify bool
	// Timeout bounds connecting and logging in, and then each IMAP command
	// (one FETCH batch counts as one command). Zero means 30 seconds.
	Timeout time.Duration
}

// FolderState is where the sync of a folder stands: the folder's
// UIDVALIDITY and the highest UID handed on. UIDs are only comparable
// within one UIDVALIDITY.
type FolderState struct {
	UIDValidity uint32
	LastUID     uint32
}

// DefaultBatch is the number of messages fetched per FETCH command when the
// caller passes no batch size.
const DefaultBatch = 50

// Mailbox is a logged-in IMAP connection. It is not safe for concurrent
// use. After a timeout or a cancelled context the connection is closed and
// every later call fails; dial a new Mailbox.
type Mailbox struct {
	c       *imapclient.Client
	addr    string
	user    string
	timeout time.Duration
	// aborted is set when a timeout or cancellation closed the connection,
	// so the resulting I/O error can be reported as what it is.
	aborted atomic.Bool
}

// DialIMAP connects, negotiates TLS as configured and logs in.
func DialIMAP(ctx context.Context, cfg IMAPConfig) (*Mailbox, error) {
	sec := strings.ToLower(strings.TrimSpace(cfg.Security))
	if sec == "" {
		sec = "tls"
	}
	if sec != "tls" && sec != "starttls" && sec != "none" {
		return nil, pipeline.Errorf(pipeline.Invalid, "imap security %q: want tls, starttls or none", cfg.Security)
	}
	addr, host, err := imapAddr(cfg.Addr, sec)
	if err != nil {
		return nil, err
	}
	if sec == "none" && !pipeline.IsLoopbackHost(host) {
		return nil, pipeline.Errorf(pipeline.Invalid, "imap %s: security none sends the password in clear text and is allowed only for loopback addresses", addr)
	}
	if cfg.Username == "" {
		return nil, pipeline.Errorf(pipeline.Invalid, "imap %s: no user name", addr)
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	dialer := &net.Dialer{Timeout: timeout}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, pipeline.Errorf(pipeline.Unavailable, "imap %s: cannot connect: %v", addr, err)
	}
	// Until login is done, the context (with the timeout) closes the
	// connection, which unblocks whatever the client waits for.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	tlsConfig := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify}
	opts := &imapclient.Options{TLSConfig: tlsConfig}
	var c *imapclient.Client
	switch sec {
	case "tls":
		tc := tls.Client(conn, tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, pipeline.Errorf(pipeline.Unavailable, "imap %s: TLS handshake: %v", addr, err)
		}
		c = imapclient.New(tc, opts)
	case "starttls":
		c, err = imapclient.NewStartTLS(conn, opts)
		if err != nil {
			conn.Close()
			return nil, pipeline.Errorf(pipeline.Unavailable, "imap %s: STARTTLS: %v", addr, dialErr(ctx, err))
		}
	default:
		c = imapclient.New(conn, opts)
	}
	if err := c.WaitGreeting(); err != nil {
		c.Close()
		return nil, pipeline.Errorf(pipeline.Unavailable, "imap %s: no greeting: %v", addr, dialErr(ctx, err))
	}
	if err := c.Login(cfg.Username, cfg.Password).Wait(); err != nil {
		c.Close()
		var ie *imap.Error
		if errors.As(err, &ie) && ctx.Err() == nil {
			// The server's text ("Authentication failed.") is safe to
			// show; the password is never part of the message.
			return nil, pipeline.Errorf(pipeline.Forbidden, "imap %s: login as %q refused: %s", addr, cfg.Username, ie.Text)
		}
		return nil, pipeline.Errorf(pipeline.Unavailable, "imap %s: login as %q: %v", addr, cfg.Username, dialErr(ctx, err))
	}
	if !stop() {
		// The timeout fired after login finished but closed the connection.
		c.Close()
		return nil, pipeline.Errorf(pipeline.Unavailable, "imap %s: timed out after %s", addr, timeout)
	}
	return &Mailbox{c: c, addr: addr, user: cfg.Username, timeout: timeout}, nil
}

// dialErr names a timeout or cancellation instead of the "use of closed
// connection" it caused.
func dialErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// imapAddr adds the default port and returns the host for TLS.
func imapAddr(addr, sec string) (hostPort, host string, err error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "", "", pipeline.Errorf(pipeline.Invalid, "imap address is empty")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = strings.Trim(addr, "[]"), "143"
		if sec == "tls" {
			port = "993"
		}
	}
	if host == "" {
		return "", "", pipeline.Errorf(pipeline.Invalid, "imap address %q has no host", addr)
	}
	return net.JoinHostPort(host, port), host, nil
}

// Close logs out and closes the connection.
func (m *Mailbox) Close() error {
	if m.aborted.Load() {
		m.c.Close()
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- m.c.Logout().Wait() }()
	select {
	case <-done:
	case <-time.After(m.timeout):
	}
	// The server closes the connection after BYE; an error from closing an
	// already closed connection says nothing useful.
	m.c.Close()
	return nil
}

// guard closes the connection when ctx ends or the command timeout passes,
// which makes the pending command fail. Call the returned function when the
// command is done; it reports the abort reason, if any.
func (m *Mailbox) guard(ctx context.Context) (done func(error) error) {
	if m.aborted.Load() {
		return func(error) error {
			return pipeline.Errorf(pipeline.Unavailable, "imap %s: connection was closed by an earlier timeout or cancellation", m.addr)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	stop := context.AfterFunc(ctx, func() {
		m.aborted.Store(true)
		m.c.Close()
	})
	return func(err error) error {
		stopped := stop()
		cause := ctx.Err()
		cancel()
		if err == nil {
			// A result that arrived complete counts even if the timer closed
			// the connection right afterwards; later calls see aborted.
			return nil
		}
		if !stopped {
			if errors.Is(cause, context.DeadlineExceeded) {
				return pipeline.Errorf(pipeline.Unavailable, "imap %s: no answer within %s", m.addr, m.timeout)
			}
			return fmt.Errorf("imap %s: %w", m.addr, cause)
		}
		return err
	}
}

// Folders lists the selectable folders (mailboxes), sorted by name.
func (m *Mailbox) Folders(ctx context.Context) ([]string, error) {
	done := m.guard(ctx)
	list, err := m.c.List("", "*", nil).Collect()
	if err = done(err); err != nil {
		return nil, m.wrap("LIST", err)
	}
	var out []string
	for _, l := range list {
		if slices.Contains(l.Attrs, imap.MailboxAttrNoSelect) || slices.Contains(l.Attrs, imap.MailboxAttrNonExistent) {
			continue
		}
		out = append(out, l.Mailbox)
	}
	slices.Sort(out)
	return out, nil
}

// Fetch hands every message of folder above afterUID to fn, in UID order,
// and returns the state to pass to the next call.
//
// The folder is opened read-only (EXAMINE) and bodies are fetched with
// BODY.PEEK[], so the sync never marks mail as read. When the folder's
// UIDVALIDITY is not uidValidity (it was recreated, or this is the first
// sync with uidValidity 0), the old UIDs mean nothing and Fetch starts from
// UID 1. Messages are fetched in batches of batch (DefaultBatch when <= 0);
// each batch is read completely before fn sees it, so the time fn takes does
// not count against the command timeout.
//
// The returned LastUID is the highest UID fn accepted. When fn fails, Fetch
// stops and returns that state together with fn's error, so the caller can
// store the progress and retry from the failing message. A message removed
// between search and fetch is skipped. A folder that does not exist is a
// pipeline.NotFound error.
func (m *Mailbox) Fetch(ctx context.Context, folder string, uidValidity, afterUID uint32, batch int, fn func(uid uint32, raw []byte) error) (FolderState, error) {
	if batch <= 0 {
		batch = DefaultBatch
	}
	done := m.guard(ctx)
	sel, err := m.c.Select(folder, &imap.SelectOptions{ReadOnly: true}).Wait()
	if err = done(err); err != nil {
		if m.missing(ctx, folder, err) {
			return FolderState{}, pipeline.Errorf(pipeline.NotFound, "imap %s: folder %q does not exist", m.addr, folder)
		}
		return FolderState{}, m.wrap(fmt.Sprintf("EXAMINE %q", folder), err)
	}
	if sel.UIDValidity != uidValidity {
		afterUID = 0
	}
	state := FolderState{UIDValidity: sel.UIDValidity, LastUID: afterUID}
	if sel.NumMessages == 0 || (sel.UIDNext != 0 && uint32(sel.UIDNext) <= afterUID+1) {
		return state, nil
	}

	// "UID n:*" always matches the highest message even when its UID is
	// below n (RFC 3501 6.4.8), hence the filter.
	done = m.guard(ctx)
	found, err := m.c.UIDSearch(&imap.SearchCriteria{UID: []imap.UIDSet{{imap.UIDRange{Start: imap.UID(afterUID + 1), Stop: 0}}}}, nil).Wait()
	if err = done(err); err != nil {
		return state, m.wrap(fmt.Sprintf("UID SEARCH in %q", folder), err)
	}
	var uids []uint32
	for _, u := range found.AllUIDs() {
		if uint32(u) > afterUID {
			uids = append(uids, uint32(u))
		}
	}
	slices.Sort(uids)

	section := &imap.FetchItemBodySection{Peek: true}
	for start := 0; start < len(uids); start += batch {
		chunk := uids[start:min(start+batch, len(uids))]
		set := imap.UIDSet{}
		for _, u := range chunk {
			set.AddNum(imap.UID(u))
		}
		done = m.guard(ctx)
		msgs, err := m.c.Fetch(set, &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{section}}).Collect()
		if err = done(err); err != nil {
			return state, m.wrap(fmt.Sprintf("UID FETCH in %q", folder), err)
		}
		bodies := make(map[uint32][]byte, len(msgs))
		for _, msg := range msgs {
			if raw := msg.FindBodySection(section); raw != nil {
				bodies[uint32(msg.UID)] = raw
			}
		}
		for _, u := range chunk {
			raw, ok := bodies[u]
			if ok {
				if err := ctx.Err(); err != nil {
					return state, err
				}
				if err := fn(u, raw); err != nil {
					return state, fmt.Errorf("imap %s: folder %q uid %d: %w", m.addr, folder, u, err)
				}
			}
			state.LastUID = u
		}
	}
	return state, nil
}

// missing tells whether a refused EXAMINE means the folder does not exist.
// Servers with RFC 5530 response codes say so; others (Dovecot 2.3 answers
// a bare "NO Mailbox doesn't exist") are asked with LIST.
func (m *Mailbox) missing(ctx context.Context, folder string, err error) bool {
	var ie *imap.Error
	if !errors.As(err, &ie) || ie.Type != imap.StatusResponseTypeNo {
		return false
	}
	if ie.Code == imap.ResponseCodeNonExistent || ie.Code == imap.ResponseCodeTryCreate {
		return true
	}
	done := m.guard(ctx)
	list, err := m.c.List("", folder, nil).Collect()
	if done(err) != nil {
		return false
	}
	for _, l := range list {
		if !slices.Contains(l.Attrs, imap.MailboxAttrNonExistent) {
			return false
		}
	}
	return true
}

// wrap gives an IMAP failure a kind: a NO or BAD answer is the server's
// refusal, anything else a broken connection.
func (m *Mailbox) wrap(what string, err error) error {
	var pe *pipeline.Error
	if errors.As(err, &pe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ie *imap.Error
	if errors.As(err, &ie) {
		return pipeline.Errorf(pipeline.Unavailable, "imap %s: %s refused: %s", m.addr, what, ie.Text)
	}
	return pipeline.Errorf(pipeline.Unavailable, "imap %s: %s: %v", m.addr, what, err)
}
