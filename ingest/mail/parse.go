// Package mail reads the mail channel of the market communication: Parse
// decodes one RFC 5322 message into a mako.Mail, and Mailbox fetches new
// messages from an IMAP folder, remembering where it stopped by UID.
//
// EDIFACT files that arrive as mail attachments are only named here; parsing
// them is the job of ingest/edifact.
package mail

import (
	"bytes"
	"io"
	"mime"
	netmail "net/mail"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-message"
	// The charset package registers decoders for ISO-8859-x, Windows-125x
	// and the other legacy charsets German mail clients still send.
	_ "github.com/emersion/go-message/charset"
	gomail "github.com/emersion/go-message/mail"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// MaxText is the most bytes of body text Parse keeps. The triage needs the
// start of a reply, not a quoted thread of several megabytes.
const MaxText = 64 << 10

// maxPartRead bounds how much of one text part is read before it is reduced
// to text: HTML shrinks a lot when its tags go, so it gets more room than
// MaxText, but an endless part must not fill memory.
const maxPartRead = 1 << 20

// Parse decodes a raw RFC 5322 message. It fills everything but Source,
// Folder and Direction, which only the caller knows.
//
// Parse is lenient where real mail is sloppy (a missing or broken Date, a
// Message-ID without angle brackets, an unknown charset) and returns a
// pipeline.Invalid error only when the input is not a mail at all: no
// readable header, or no From address.
func Parse(raw []byte) (m mako.Mail, err error) {
	// go-message and the standard library parsers are not known to panic,
	// but a panic on one hostile mail must not stop a whole mailbox sync.
	defer func() {
		if r := recover(); r != nil {
			m, err = mako.Mail{}, pipeline.Errorf(pipeline.Invalid, "mail cannot be parsed: %v", r)
		}
	}()
	if len(bytes.TrimSpace(raw)) == 0 {
		return mako.Mail{}, pipeline.Errorf(pipeline.Invalid, "mail is empty")
	}
	ent, err := message.Read(bytes.NewReader(raw))
	if err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
		return mako.Mail{}, pipeline.Errorf(pipeline.Invalid, "mail header cannot be read: %v", err)
	}
	h := gomail.Header{Header: ent.Header}
	if !h.Fields().Next() {
		return mako.Mail{}, pipeline.Errorf(pipeline.Invalid, "mail has no header fields")
	}

	from, fromName := firstAddress(h, "From")
	if from == "" {
		from, fromName = firstAddress(h, "Sender")
	}
	if from == "" {
		return mako.Mail{}, pipeline.Errorf(pipeline.Invalid, "mail has no From address (From: %q)", clip(h.Get("From"), 200))
	}
	m = mako.Mail{
		MessageID: messageID(h),
		InReplyTo: inReplyTo(h),
		Date:      mailDate(h),
		From:      from,
		FromName:  fromName,
		To:        recipients(h),
		Subject:   headerText(h, "Subject"),
	}

	body, err := readBody(ent)
	if err != nil {
		return mako.Mail{}, err
	}
	m.Text = body.text
	m.Attachments = body.attachments
	return m, nil
}

// headerText decodes RFC 2047 encoded words. With an unknown charset it keeps
// the raw value rather than losing the field.
func headerText(h gomail.Header, key string) string {
	v, err := h.Text(key)
	if err != nil {
		v = h.Get(key)
	}
	return strings.TrimSpace(cleanText(v))
}

// addrPattern finds an addr-spec in a header the RFC 5322 parser rejects,
// e.g. an unquoted display name with a comma or a dot.
var addrPattern = regexp.MustCompile(`[^\s<>"',;:()\[\]]+@[^\s<>"',;:()\[\]]+`)

// addresses parses an address header. Broken headers fall back to every
// addr-spec found in the raw value, without display names.
func addresses(h gomail.Header, key string) []*gomail.Address {
	list, err := h.AddressList(key)
	if err == nil {
		return list
	}
	var out []*gomail.Address
	for _, a := range addrPattern.FindAllString(h.Get(key), -1) {
		out = append(out, &gomail.Address{Address: a})
	}
	return out
}

func firstAddress(h gomail.Header, key string) (addr, name string) {
	for _, a := range addresses(h, key) {
		if a.Address != "" {
			return strings.ToLower(a.Address), strings.TrimSpace(cleanText(a.Name))
		}
	}
	return "", ""
}

// recipients lists the To and Cc addresses, lower-cased, each once.
func recipients(h gomail.Header) []string {
	var out []string
	seen := map[string]bool{}
	for _, key := range []string{"To", "Cc"} {
		for _, a := range addresses(h, key) {
			addr := strings.ToLower(a.Address)
			if addr != "" && !seen[addr] {
				seen[addr] = true
				out = append(out, addr)
			}
		}
	}
	return out
}

// messageID returns the Message-ID without angle brackets. Ids that break
// the RFC syntax (no brackets, spaces) are kept as the bare text, because the
// id is what ties a reply to our mail.
func messageID(h gomail.Header) string {
	if id, err := h.MessageID(); err == nil && id != "" {
		return id
	}
	return looseID(h.Get("Message-Id"))
}

// inReplyTo returns the first message id of In-Reply-To: the mail this one
// answers.
func inReplyTo(h gomail.Header) string {
	if ids, err := h.MsgIDList("In-Reply-To"); err == nil && len(ids) > 0 {
		return ids[0]
	}
	v := h.Get("In-Reply-To")
	if i := strings.IndexByte(v, '>'); i >= 0 {
		v = v[:i]
	}
	return looseID(v)
}

func looseID(v string) string {
	v = strings.TrimSpace(v)
	if f := strings.Fields(v); len(f) > 0 {
		v = f[0]
	}
	return strings.Trim(v, "<>")
}

// mailDate is the Date header in UTC. A missing or unreadable Date falls back
// to the first Received header, which the receiving server added; when that
// fails too, the date stays zero and the caller decides (e.g. the IMAP
// internal date or the time of the sync).
func mailDate(h gomail.Header) time.Time {
	if t, err := h.Date(); err == nil && !t.IsZero() {
		return t.UTC()
	}
	if recv := h.Get("Received"); recv != "" {
		if i := strings.LastIndexByte(recv, ';'); i >= 0 {
			if t, err := netmail.ParseDate(strings.TrimSpace(recv[i+1:])); err == nil {
				return t.UTC()
			}
		}
	}
	return time.Time{}
}

type body struct {
	text        string
	attachments []string
}

// readBody walks the MIME tree: the first text/plain part that is not an
// attachment is the text; without one, the first text/html part reduced to
// text. Every part with a file name counts as an attachment. Attachment
// bodies are not read.
func readBody(ent *message.Entity) (body, error) {
	var b body
	var plain, html string
	var havePlain, haveHTML bool
	walkErr := ent.Walk(func(_ []int, part *message.Entity, _ error) error {
		// An unknown charset or transfer encoding reaches us as the error
		// argument; the part is still readable (undecoded), which beats
		// dropping the text.
		mediaType, params, err := part.Header.ContentType()
		if err != nil {
			mediaType, params = "application/octet-stream", nil
		}
		mediaType = strings.ToLower(mediaType)
		if strings.HasPrefix(mediaType, "multipart/") {
			return nil
		}
		disp, dparams, _ := part.Header.ContentDisposition()
		name := fileName(dparams["filename"], params["name"])
		if name != "" || strings.EqualFold(disp, "attachment") || mediaType == "message/rfc822" {
			// Images embedded in an HTML body (referenced by Content-ID)
			// are decoration, not attached files.
			embedded := strings.HasPrefix(mediaType, "image/") && part.Header.Get("Content-Id") != "" && !strings.EqualFold(disp, "attachment")
			if name != "" && !embedded {
				b.attachments = append(b.attachments, name)
			}
			return nil
		}
		switch {
		case mediaType == "text/plain" && !havePlain:
			plain, havePlain = readText(part.Body), true
		case mediaType == "text/html" && !haveHTML:
			html, haveHTML = readText(part.Body), true
		}
		return nil
	})
	if walkErr != nil && !havePlain && !haveHTML && len(b.attachments) == 0 {
		// Nothing usable came out of a broken MIME structure; a structure
		// that breaks after the text (a missing final boundary is common)
		// keeps what was read.
		return body{}, pipeline.Errorf(pipeline.Invalid, "mail body cannot be read: %v", walkErr)
	}
	switch {
	case havePlain && strings.TrimSpace(plain) != "":
		b.text = plain
	case haveHTML:
		b.text = htmlToText(html)
	default:
		b.text = plain
	}
	b.text = limitText(normalizeText(b.text), MaxText)
	return b, nil
}

// fileName prefers the Content-Disposition filename (RFC 2231 encoded and
// continued forms are decoded by mime.ParseMediaType) over the older
// Content-Type name. Some clients put RFC 2047 encoded words into either;
// those are decoded too, and any path is cut off.
func fileName(candidates ...string) string {
	for _, n := range candidates {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if strings.Contains(n, "=?") {
			if d, err := new(mime.WordDecoder).DecodeHeader(n); err == nil {
				n = d
			}
		}
		if i := strings.LastIndexAny(n, `/\`); i >= 0 {
			n = n[i+1:]
		}
		if n = strings.TrimSpace(cleanText(n)); n != "" {
			return n
		}
	}
	return ""
}

func readText(r io.Reader) string {
	data, _ := io.ReadAll(io.LimitReader(r, maxPartRead))
	return cleanText(string(data))
}

// cleanText replaces invalid UTF-8 (an undeclared or unknown charset) so the
// text can be stored and shown.
func cleanText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// normalizeText uses \n line ends, drops trailing blanks on each line and
// the blank lines around the text.
func normalizeText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\u00a0")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// limitText cuts s to at most n bytes on a rune boundary.
func limitText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut])
}

func clip(s string, n int) string {
	return limitText(cleanText(s), n)
}
