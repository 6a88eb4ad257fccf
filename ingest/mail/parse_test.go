package mail

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

func readFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file string
		want mako.Mail
	}{
		{
			// multipart/alternative, quoted-printable UTF-8 with a soft line
			// break, a subject of a UTF-8 Q word and an ISO-8859-1 B word,
			// an ISO-8859-1 display name; text/plain wins over text/html.
			file: "reply_alternative_qp.eml",
			want: mako.Mail{
				MessageID: "20260811091530.4711@swm-netz.example",
				InReplyTo: "PARTIN-37000-0815@schedbridge.example",
				Date:      time.Date(2026, 8, 11, 7, 15, 30, 0, time.UTC),
				From:      "marktkommunikation@swm-netz.example",
				FromName:  "Netzbetreiber München",
				To:        []string{"edi@schedbridge.example", "bilanzierung@schedbridge.example", "j.weiss@swm-netz.example"},
				Subject:   "AW: Übertragungsdatei abgelehnt (Prüfung)",
				Text: "Sehr geehrte Damen und Herren,\n\n" +
					"die Übertragungsdatei PARTIN_9900000000001_20260810.edi wurde abgelehnt, da der Kommunikationsweg nicht geprüft werden konnte.\n\n" +
					"Mit freundlichen Grüßen\nIhre Marktkommunikation",
			},
		},
		{
			// Single-part base64 ISO-8859-1; no Date, so the first
			// (newest) Received header dates the mail; a Message-ID without
			// angle brackets.
			file: "latin1_base64.eml",
			want: mako.Mail{
				MessageID: "3344-rueckfrage@ortsnetz.example",
				Date:      time.Date(2026, 8, 12, 16, 45, 0, 0, time.UTC),
				From:      "service@ortsnetz.example",
				FromName:  "Ortsnetz Service",
				To:        []string{"edi@schedbridge.example"},
				Subject:   "Rückfrage zur Zuordnungsermächtigung",
				Text: "Guten Tag,\n\n" +
					"bitte prüfen Sie die Zuordnungsermächtigung für den Bilanzkreis 11XSCHEDBRIDGE-X.\n" +
					"Die Frist endet am 14.08.2026.\n\n" +
					"Mit freundlichen Grüßen\nÖrtliche Netzgesellschaft mbH",
			},
		},
		{
			// HTML only, Windows-1252 quoted-printable: head, style and
			// script dropped, entities decoded, <p>/<br>/<div> as breaks.
			file: "html_only.eml",
			want: mako.Mail{
				MessageID: "html-only-1@stadtwerke-beispielstadt.example",
				Date:      time.Date(2026, 8, 13, 7, 0, 0, 0, time.UTC),
				From:      "noreply@stadtwerke-beispielstadt.example",
				FromName:  "Stadtwerke Beispielstadt",
				To:        []string{"edi@schedbridge.example"},
				Subject:   "Eingangsbestätigung",
				Text: "Sehr geehrte Damen und Herren,\n\n" +
					"Ihre Nachricht ist am 13.08.2026\nbei uns eingegangen.\n\n" +
					"Gebühr: 0,00 € & keine „Nachforderung“.\n\n" +
					"Mit freundlichen Grüßen\nIhr Kundenservice",
			},
		},
		{
			// multipart/mixed around alternative around related: the .edi
			// and an RFC 2231 continued UTF-8 file name are attachments, the
			// embedded logo is not; the EDIFACT content is not parsed.
			file: "mixed_edi.eml",
			want: mako.Mail{
				MessageID:   "mixed-1@westnetz.example",
				InReplyTo:   "partin-7@schedbridge.example",
				Date:        time.Date(2026, 8, 14, 9, 0, 0, 0, time.UTC),
				From:        "mako@westnetz.example",
				FromName:    "Marktkommunikation",
				To:          []string{"edi@schedbridge.example"},
				Subject:     "APERAK zu Ihrer PARTIN",
				Text:        "Anbei unsere APERAK.",
				Attachments: []string{"APERAK_9900000000002_20260814.edi", "Prüfbericht 08–2026.pdf"},
			},
		},
		{
			// CRLF line ends, folded Subject and To, quoted display names
			// with commas, a Cc repeating a To address in other case, a Date
			// with a zone comment, two ids in In-Reply-To.
			file: "crlf.eml",
			want: mako.Mail{
				MessageID: "crlf-1@netze-bw.example",
				InReplyTo: "aperak-1@schedbridge.example",
				Date:      time.Date(2026, 8, 10, 21, 30, 0, 0, time.UTC),
				From:      "abrechnung@netze-bw.example",
				FromName:  "Netze BW, Abrechnung",
				To:        []string{"edi@schedbridge.example", "second@schedbridge.example"},
				Subject:   "Ihre APERAK vom 10.08.2026 - Nachfrage",
				Text:      "Guten Abend,\n\nwir haben Ihre APERAK erhalten.\nBitte senden Sie die Datei erneut.",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw := readFixture(t, tt.file)
			if tt.file == "crlf.eml" && !strings.Contains(string(raw), "\r\n") {
				t.Fatal("fixture lost its CRLF line ends")
			}
			got, err := Parse(raw)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse mismatch\n got: %#v\nwant: %#v", got, tt.want)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name, raw, msg string
	}{
		{"empty", "", "mail is empty"},
		{"blank", " \r\n\n", "mail is empty"},
		{"no header", "hello world\n", "mail header cannot be read"},
		{"body only", "\n\nbody", "mail has no header fields"},
		{"no from", "Subject: x\n\nbody", "mail has no From address"},
		{"from without address", "From: Netzbetreiber\n\nbody", "mail has no From address"},
		{"multipart without boundary", "From: a@example.org\nContent-Type: multipart/mixed\n\nhi", "mail body cannot be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.raw))
			if err == nil {
				t.Fatal("Parse accepted bad input")
			}
			if k := pipeline.KindOf(err); k != pipeline.Invalid {
				t.Errorf("kind %s, want invalid (%v)", k, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not say %q", err, tt.msg)
			}
		})
	}
}

// TestParseLenient covers sloppy but usable mail: what Parse recovers.
func TestParseLenient(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want mako.Mail
	}{
		{
			name: "broken From list falls back to the address",
			raw:  "From: Netz GmbH, Abt. EDI <EDI@Netz.example>\nDate: nonsense\nMessage-ID: <a b>\n\nText",
			want: mako.Mail{From: "edi@netz.example", MessageID: "a", Text: "Text"},
		},
		{
			name: "missing final boundary keeps the text",
			raw:  "From: a@example.org\nContent-Type: multipart/mixed; boundary=x\n\n--x\nContent-Type: text/plain\n\nhallo\n",
			want: mako.Mail{From: "a@example.org", Text: "hallo"},
		},
		{
			name: "unknown charset keeps the bytes as valid UTF-8",
			raw:  "From: a@example.org\nSubject: =?x-unknown?Q?abc?=\nContent-Type: text/plain; charset=x-unknown\n\nPr\xfcfung",
			want: mako.Mail{From: "a@example.org", Subject: "=?x-unknown?Q?abc?=", Text: "Pr\uFFFDfung"},
		},
		{
			name: "Sender when From is missing",
			raw:  "Sender: Robot <Robot@Example.org>\n\n",
			want: mako.Mail{From: "robot@example.org", FromName: "Robot"},
		},
		{
			name: "unnamed attachment and forwarded mail add no name",
			raw: "From: a@example.org\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nsee below\n" +
				"--b\nContent-Type: application/octet-stream\nContent-Disposition: attachment\n\nxx\n" +
				"--b\nContent-Type: message/rfc822\n\nFrom: c@example.org\n\ninner text\n" +
				"--b\nContent-Type: application/edifact; name=\"=?UTF-8?Q?=C3=84nderung.edi?=\"\n\nUNA\n--b--\n",
			want: mako.Mail{From: "a@example.org", Text: "see below", Attachments: []string{"Änderung.edi"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.raw))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse mismatch\n got: %#v\nwant: %#v", got, tt.want)
			}
		})
	}
}

func TestParseLimitsText(t *testing.T) {
	// One ASCII byte, then two-byte runes: byte MaxText falls inside a rune,
	// so the cut has to step back one byte.
	body := "x" + strings.Repeat("ä", MaxText)
	got, err := Parse([]byte("From: a@example.org\nContent-Type: text/plain; charset=utf-8\n\n" + body))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Text) != MaxText-1 {
		t.Errorf("text has %d bytes, want %d", len(got.Text), MaxText-1)
	}
	if !utf8.ValidString(got.Text) || !strings.HasPrefix(body, got.Text) {
		t.Error("text is not a valid UTF-8 prefix of the body")
	}
}

func TestHTMLToText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"<p>a</p><p>b</p>", "a\n\nb"},
		{"a<br>b<br/>c", "a\nb\nc"},
		{"<ul><li>eins</li><li>zwei</li></ul>", "eins\nzwei"},
		{"<head><title>T</title><style>x{}</style></head><body>Text &lt;ok&gt; &#252;</body>", "Text <ok> ü"},
		{"<html><head><title>T</title><body>unclosed head</body>", "unclosed head"},
		{"<script>alert(1)</script>  viel   \n  Platz  ", "viel Platz"},
	}
	for _, tt := range tests {
		if got := htmlToText(tt.in); got != tt.want {
			t.Errorf("htmlToText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzParse checks that no input makes Parse panic, that failures are
// Invalid, and that accepted mail keeps the text limits. Only the seeds run
// in the normal test suite.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.eml"))
	for _, file := range files {
		f.Add(readFixture(f, filepath.Base(file)))
	}
	for _, s := range []string{
		"", "From: a@b\n\n", "From: a@b\nContent-Type: multipart/mixed; boundary=x\n\n--x\n--x--",
		"From: =?utf-8?q?=ZZ?= <a@b>\nSubject: =?iso-8859-1?b?!!!?=\n\n",
		"From: a@b\nContent-Type: text/html\n\n<p><script>",
		"From: a@b\nContent-Transfer-Encoding: base64\n\n####",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := Parse(raw)
		if err != nil {
			if k := pipeline.KindOf(err); k != pipeline.Invalid {
				t.Fatalf("kind %s, want invalid: %v", k, err)
			}
			return
		}
		if len(m.Text) > MaxText || !utf8.ValidString(m.Text) || !utf8.ValidString(m.Subject) {
			t.Fatalf("text limits broken: %d bytes", len(m.Text))
		}
		if m.From == "" || m.From != strings.ToLower(m.From) {
			t.Fatalf("From %q not a lower-case address", m.From)
		}
		if !m.Date.IsZero() && m.Date.Location() != time.UTC {
			t.Fatalf("date %v not in UTC", m.Date)
		}
	})
}
