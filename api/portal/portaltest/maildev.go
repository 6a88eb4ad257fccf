package portaltest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MailDev is a running maildev: an SMTP server that keeps every mail it
// receives (no authentication, no TLS, no relaying) and a REST API to read
// them.
type MailDev struct {
	// SMTPAddr is the SMTP server's "127.0.0.1:port".
	SMTPAddr string
	// APIURL is the REST API's base, "http://127.0.0.1:port/api"; the
	// mails are at APIURL + "/email".
	APIURL string
	// WebURL is maildev's web interface, for looking at mails in a browser.
	WebURL string

	http *http.Client
}

// Message is a mail as maildev parsed it.
type Message struct {
	ID      string
	Time    time.Time
	Subject string
	// From is the address in the From header; To and Cc are those in the
	// To and Cc headers, and Recipients those of the SMTP envelope (RCPT
	// TO), which include Bcc.
	From       string
	To         []string
	Cc         []string
	Recipients []string
	Text       string
	HTML       string
	// Headers are the headers maildev keeps after parsing, by lower-case
	// name. It leaves out the address headers and some structured ones
	// (List-Unsubscribe, Content-Type); Source has the mail as sent.
	Headers map[string][]string
}

// StartMailDev starts maildev on free loopback ports and stops it when the
// test ends.
func StartMailDev(tb testing.TB) *MailDev {
	tb.Helper()
	node, modules := nodeModules(tb, "maildev", MailDevVersion)
	script := filepath.Join(modules, "maildev", "dist", "bin", "maildev.js")
	dir := tb.TempDir()
	// maildev also reads configuration files from its working directory and
	// the directories above it; an empty one of our own keeps it to the
	// flags below.
	cfg := filepath.Join(dir, "maildev.json")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	// maildev cannot bind port 0 and report the port, so the ports are
	// chosen here; another process may take one in between, hence the
	// retries.
	var lastErr error
	for range 3 {
		ports, err := freePorts(2)
		if err != nil {
			tb.Fatalf("portaltest: %v", err)
		}
		m := &MailDev{
			SMTPAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
			APIURL:   fmt.Sprintf("http://127.0.0.1:%d/api", ports[1]),
			WebURL:   fmt.Sprintf("http://127.0.0.1:%d/", ports[1]),
			http:     &http.Client{Timeout: 10 * time.Second},
		}
		mailDir := filepath.Join(dir, fmt.Sprintf("mail-%d", ports[0]))
		p, err := startProcess(tb, "maildev", node, dir, []string{"NODE_PATH=" + modules},
			script, "--config", cfg,
			"--smtp", strconv.Itoa(ports[0]), "--ip", "127.0.0.1",
			"--web", strconv.Itoa(ports[1]), "--web-ip", "127.0.0.1",
			"--mail-directory", mailDir)
		if err != nil {
			tb.Fatalf("portaltest: %v", err)
		}
		if lastErr = m.waitReady(p); lastErr == nil {
			return m
		}
		p.stop()
	}
	tb.Fatalf("portaltest: maildev: %v", lastErr)
	return nil
}

// waitReady waits until the REST API answers and the SMTP server greets.
func (m *MailDev) waitReady(p *process) error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("%w: %s", errExited, p.output())
		default:
		}
		if m.apiReady() && smtpGreets(m.SMTPAddr) {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("not ready within %v: %s", startTimeout, p.output())
}

func (m *MailDev) apiReady() bool {
	resp, err := m.http.Get(m.APIURL + "/healthz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// smtpGreets reports whether addr answers with an SMTP greeting.
func smtpGreets(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "220")
}

// Messages returns every mail maildev holds, oldest first.
func (m *MailDev) Messages(tb testing.TB) []Message {
	tb.Helper()
	msgs, err := m.messages()
	if err != nil {
		tb.Fatalf("portaltest: maildev: %v", err)
	}
	return msgs
}

// WaitMessage waits up to timeout for a mail to the address to (in its To
// or Cc header or its envelope; case-insensitive) and returns the oldest
// such mail. It fails the test, listing what did arrive, on timeout.
func (m *MailDev) WaitMessage(tb testing.TB, to string, timeout time.Duration) Message {
	tb.Helper()
	return m.WaitFor(tb, timeout, "a mail to "+to, func(msg Message) bool { return msg.SentTo(to) })
}

// WaitFor waits up to timeout for a mail that match accepts and returns the
// oldest such mail; what names it in the failure message.
func (m *MailDev) WaitFor(tb testing.TB, timeout time.Duration, what string, match func(Message) bool) Message {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msgs, err := m.messages()
		if err != nil {
			tb.Fatalf("portaltest: maildev: %v", err)
		}
		for _, msg := range msgs {
			if match(msg) {
				return msg
			}
		}
		if time.Now().After(deadline) {
			var got []string
			for _, msg := range msgs {
				got = append(got, fmt.Sprintf("%q to %v", msg.Subject, msg.Recipients))
			}
			tb.Fatalf("portaltest: no %s within %v; maildev holds %d: %s", what, timeout, len(msgs), strings.Join(got, ", "))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// SentTo reports whether addr is among the mail's To, Cc or envelope
// recipients, compared case-insensitively.
func (msg Message) SentTo(addr string) bool {
	for _, list := range [][]string{msg.To, msg.Cc, msg.Recipients} {
		for _, a := range list {
			if strings.EqualFold(a, addr) {
				return true
			}
		}
	}
	return false
}

// Source returns the mail with the given ID as it was received.
func (m *MailDev) Source(tb testing.TB, id string) []byte {
	tb.Helper()
	resp, err := m.http.Get(m.APIURL + "/email/" + id + "/source")
	if err != nil {
		tb.Fatalf("portaltest: maildev: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("portaltest: maildev source of %s: %d %v: %s", id, resp.StatusCode, err, b)
	}
	return b
}

// DeleteAll removes every mail.
func (m *MailDev) DeleteAll(tb testing.TB) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodDelete, m.APIURL+"/email/all", nil)
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := m.http.Do(req)
	if err != nil {
		tb.Fatalf("portaltest: maildev: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("portaltest: maildev delete all: %d: %s", resp.StatusCode, b)
	}
}

// messages reads GET /email, which lists the mails in arrival order.
func (m *MailDev) messages() ([]Message, error) {
	resp, err := m.http.Get(m.APIURL + "/email")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /email: %d: %s", resp.StatusCode, b)
	}
	var raw []struct {
		ID       string                     `json:"id"`
		Time     time.Time                  `json:"time"`
		Subject  string                     `json:"subject"`
		From     []mailAddress              `json:"from"`
		To       []mailAddress              `json:"to"`
		Cc       []mailAddress              `json:"cc"`
		Text     string                     `json:"text"`
		HTML     string                     `json:"html"`
		Headers  map[string]json.RawMessage `json:"headers"`
		Envelope struct {
			To []mailAddress `json:"to"`
		} `json:"envelope"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("GET /email: %w", err)
	}
	msgs := make([]Message, len(raw))
	for i, r := range raw {
		msgs[i] = Message{
			ID: r.ID, Time: r.Time, Subject: r.Subject,
			To: addresses(r.To), Cc: addresses(r.Cc), Recipients: addresses(r.Envelope.To),
			Text: r.Text, HTML: r.HTML, Headers: headerValues(r.Headers),
		}
		if len(r.From) > 0 {
			msgs[i].From = r.From[0].Address
		}
	}
	return msgs, nil
}

type mailAddress struct {
	Address string `json:"address"`
	Name    string `json:"name"`
}

func addresses(as []mailAddress) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Address)
	}
	return out
}

// headerValues flattens maildev's headers, whose values are a string, a
// list of strings for repeated headers, or a parsed structure, which is
// kept as its JSON.
func headerValues(h map[string]json.RawMessage) map[string][]string {
	out := make(map[string][]string, len(h))
	for name, v := range h {
		var one string
		var many []string
		switch {
		case json.Unmarshal(v, &one) == nil:
			out[name] = []string{one}
		case json.Unmarshal(v, &many) == nil:
			out[name] = many
		default:
			out[name] = []string{string(v)}
		}
	}
	return out
}
