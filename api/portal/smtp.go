package portal

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/smtp"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// SMTPConfig names the mail server that sends magic links.
type SMTPConfig struct {
	// Addr is host:port.
	Addr string
	// From is the sender address, e.g. "Mitarbeiterportal <portal@example.de>".
	From string
	// Username and Password authenticate with PLAIN when set; net/smtp sends
	// them only over TLS or to localhost.
	Username, Password string
	// Security is "starttls" (default), "tls" (implicit TLS, port 465) or
	// "none" (plain; for a relay on loopback or in a trusted network).
	Security string
	// Now stamps the Date header.
	Now func() time.Time
}

// SMTP sends mail over SMTP.
type SMTP struct{ cfg SMTPConfig }

// NewSMTP checks the configuration.
func NewSMTP(cfg SMTPConfig) (*SMTP, error) {
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("smtp addr %q: %w", cfg.Addr, err)
	}
	if cfg.From == "" {
		return nil, errors.New("smtp: a sender address (from) is required")
	}
	switch cfg.Security {
	case "":
		cfg.Security = "starttls"
	case "starttls", "tls", "none":
	default:
		return nil, fmt.Errorf("smtp security %q: want starttls, tls or none", cfg.Security)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &SMTP{cfg: cfg}, nil
}

// SendMagicLink writes the German sign-in mail.
func (s *SMTP) SendMagicLink(ctx context.Context, to, name, link string, expires time.Time) error {
	greeting := "Guten Tag,"
	if name != "" {
		greeting = "Guten Tag " + name + ","
	}
	body := greeting + "\r\n\r\n" +
		"mit dem folgenden Link melden Sie sich im Mitarbeiterportal an:\r\n\r\n" +
		link + "\r\n\r\n" +
		"Der Link ist einmal verwendbar und gilt bis " + expires.In(pipeline.Berlin).Format("02.01.2006, 15:04") + " Uhr.\r\n" +
		"Wenn Sie keinen Anmeldelink angefordert haben, können Sie diese E-Mail ignorieren.\r\n"
	return s.send(ctx, to, "Ihr Anmeldelink für das Mitarbeiterportal", body)
}

func (s *SMTP) send(ctx context.Context, to, subject, text string) error {
	from, err := parseAddr(s.cfg.From)
	if err != nil {
		return err
	}
	msg, err := s.message(from, to, subject, text)
	if err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(s.cfg.Addr)
	d := net.Dialer{Timeout: 10 * time.Second}
	var conn net.Conn
	if s.cfg.Security == "tls" {
		conn, err = (&tls.Dialer{NetDialer: &d, Config: &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}}).DialContext(ctx, "tcp", s.cfg.Addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", s.cfg.Addr)
	}
	if err != nil {
		return fmt.Errorf("smtp dial %s: %w", s.cfg.Addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp hello %s: %w", s.cfg.Addr, err)
	}
	defer c.Close()
	if s.cfg.Security == "starttls" {
		if err := c.StartTLS(&tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}); err != nil {
			return fmt.Errorf("smtp starttls: %w", err)
		}
	}
	if s.cfg.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", s.cfg.Username, s.cfg.Password, host)); err != nil {
			return fmt.Errorf("smtp auth: %w", err)
		}
	}
	if err := c.Mail(from); err != nil {
		return fmt.Errorf("smtp MAIL FROM: %w", err)
	}
	if err := c.Rcpt(to); err != nil {
		return fmt.Errorf("smtp RCPT TO: %w", err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp DATA: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("smtp DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp DATA: %w", err)
	}
	return c.Quit()
}

func parseAddr(s string) (string, error) {
	if i := strings.LastIndex(s, "<"); i >= 0 && strings.HasSuffix(s, ">") {
		return s[i+1 : len(s)-1], nil
	}
	if strings.Contains(s, "@") {
		return s, nil
	}
	return "", fmt.Errorf("smtp: sender %q has no address", s)
}

// message builds a UTF-8 text mail with quoted-printable body.
func (s *SMTP) message(from, to, subject, text string) ([]byte, error) {
	id := make([]byte, 12)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	domain := from[strings.LastIndex(from, "@")+1:]
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\r\n", s.cfg.From)
	fmt.Fprintf(&b, "To: %s\r\n", to)
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", subject))
	fmt.Fprintf(&b, "Date: %s\r\n", s.cfg.Now().Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s@%s>\r\n", hex.EncodeToString(id), domain)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n")
	// Auto-Submitted keeps vacation responders from answering the mail.
	b.WriteString("Auto-Submitted: auto-generated\r\n\r\n")
	qp := quotedprintable.NewWriter(&b)
	if _, err := qp.Write([]byte(text)); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
