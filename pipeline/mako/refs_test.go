package mako

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readMail reads a fixture of testdata/mails: a "Subject:" line, a blank
// line, then the body.
func readMail(t testing.TB, name string) (subject, body string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "mails", name))
	if err != nil {
		t.Fatal(err)
	}
	head, body, ok := strings.Cut(string(b), "\n\n")
	subject, found := strings.CutPrefix(head, "Subject: ")
	if !ok || !found {
		t.Fatalf("%s: want a Subject line and a blank line", name)
	}
	return subject, body
}

func kw(v string) CitedRef   { return CitedRef{Value: v, Keyword: true} }
func bare(v string) CitedRef { return CitedRef{Value: v} }

func TestExtractReferencesFixtures(t *testing.T) {
	tests := []struct {
		file string
		want []CitedRef
	}{
		// The keyword reaches through "mit der" and the compound
		// "PARTIN-Nachricht"; the error code and the phone number of the
		// signature are bare candidates; the date, postcode, HRB number and
		// the addresses are not.
		{"aperak_ablehnung.txt", []CitedRef{kw("SB20261120001"), bare("Z29"), bare("1234567")}},
		// Subject first, then the new text, then the Outlook quote; the
		// MP-ID and the process id 55071 are no references.
		{"outlook_zitat.txt", []CitedRef{kw("ZE-2026-0042"), kw("VG-77812"), kw("40001234"), kw("MSG40001234-1")}},
		{"englisch.txt", []CitedRef{kw("4711000815"), kw("PARTIN-4711-1"), bare("INC0012345")}},
		{"ohne_referenz.txt", nil},
		// Dates, times, a timestamp, MP-IDs, short numbers, addresses and a
		// 37-digit number are left out; the 31-character meter id is kept.
		{"ausschluesse.txt", []CitedRef{bare("DE00012345678901234567890123456")}},
		{"thunderbird_zitat.txt", []CitedRef{kw("NEW-2"), kw("QUOTED-1"), kw("QUOTED-3")}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			subject, body := readMail(t, tt.file)
			if got := ExtractReferences(subject, body); !slices.Equal(got, tt.want) {
				t.Errorf("ExtractReferences =\n  %v\nwant\n  %v", got, tt.want)
			}
		})
	}
}

func TestExtractReferencesInline(t *testing.T) {
	tests := []struct {
		name          string
		subject, body string
		want          []CitedRef
	}{
		{"list after a keyword", "", "Betroffene Referenzen: 100200, 100201 und 100202 sowie ABC-9.",
			[]CitedRef{kw("100200"), kw("100201"), kw("100202"), kw("ABC-9")}},
		{"list ends at an ordinary word", "", "Referenz 4711 ist fehlerhaft, Beleg 4712 auch.",
			[]CitedRef{kw("4711")}},
		{"short number with a keyword, filler in between", "", "Die Referenz ist 42.",
			[]CitedRef{kw("42")}},
		{"data element number is skipped", "", "UNB (DE 0020): 4711", []CitedRef{kw("4711")}},
		{"Ref.-Nr. compound", "", "Ref.-Nr.: 12-34", []CitedRef{kw("12-34")}},
		{"Ref: glued to the value", "", "Ref:XK-778", []CitedRef{kw("XK-778")}},
		{"UNB-Referenz compound, Belegnummer", "", "UNB-Referenz 900123, Belegnummer B-17.",
			[]CitedRef{kw("900123"), kw("B-17")}},
		{"Uebertragungsdatei and Dokumentennummer", "", "Uebertragungsdatei X1Y2Z3 mit Dokumentennummer DOC/2026/17",
			[]CitedRef{kw("X1Y2Z3"), kw("DOC/2026/17")}},
		{"upper case keywords", "", "NACHRICHTENREFERENZ: AB12; BGM 1004: D77", []CitedRef{kw("AB12"), kw("D77")}},
		{"Message reference and UNH", "", "Message reference: M-1, UNH 0062 M-2", []CitedRef{kw("M-1"), kw("M-2")}},
		{"keyword without a value", "", "Ihre Nachricht vom 20.11.2026 haben wir erhalten.", nil},
		{"keyword stopped by an address", "", "Referenz mako@netz.example 4711", nil},
		{"first seen bare, then with a keyword: one entry, keyword, first position",
			"Datei 20261120SB01", "Weitere Datei 20261121SB02. Referenz: 20261120SB01",
			[]CitedRef{kw("20261120SB01"), bare("20261121SB02")}},
		{"quoted lines rank after the new text wherever they stand", "",
			"> Referenz: Q-100\nAntwort: Referenz A-200\n> und Q-300X",
			[]CitedRef{kw("A-200"), kw("Q-100"), kw("Q-300X")}},
		{"signature ranks after the quote", "",
			"Danke.\n-- \nTel 0341 998877\n\n-----Original Message-----\nReferenz R-1",
			[]CitedRef{kw("R-1"), bare("998877")}},
		{"bare length limits: 3 to 35", "", "A1 B12 " + strings.Repeat("9", 6) + " X" + strings.Repeat("1", 34) + " X" + strings.Repeat("1", 35),
			[]CitedRef{bare("B12"), bare("999999"), bare("X" + strings.Repeat("1", 34))}},
		{"exact duplicates once", "", "Referenz 4711 und Referenz 4711", []CitedRef{kw("4711")}},
		{"case matters for references", "", "Referenz ab12 und AB12", []CitedRef{kw("ab12"), kw("AB12")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExtractReferences(tt.subject, tt.body); !slices.Equal(got, tt.want) {
				t.Errorf("ExtractReferences(%q, %q) =\n  %v\nwant\n  %v", tt.subject, tt.body, got, tt.want)
			}
		})
	}
}

func TestExtractReferencesCap(t *testing.T) {
	// 60 bare candidates in the new text and one keyword reference in the
	// quote: the cap keeps the keyword reference and the first 49 bare ones.
	var words []string
	for i := 1; i <= 60; i++ {
		words = append(words, fmt.Sprintf("A%04d", i))
	}
	body := strings.Join(words, " ") + "\n> Referenz KW-1"
	got := ExtractReferences("", body)
	if len(got) != 50 {
		t.Fatalf("%d references, want 50", len(got))
	}
	for i := 0; i < 49; i++ {
		if want := bare(fmt.Sprintf("A%04d", i+1)); got[i] != want {
			t.Fatalf("ref %d = %v, want %v", i, got[i], want)
		}
	}
	if got[49] != kw("KW-1") {
		t.Errorf("last ref = %v, want the keyword reference KW-1", got[49])
	}
}

func TestCitedMPIDs(t *testing.T) {
	tests := []struct {
		name          string
		subject, body string
		want          []string
	}{
		{"subject then body, once each", "MP-ID 9900123000002", "Ihre ID 9900123000002, unsere: 9900987000001.",
			[]string{"9900123000002", "9900987000001"}},
		{"gas ids, 14 digits and 12 digits are none", "", "9800123000005 99001230000021 990012300000", nil},
		{"glued to letters", "", "NB9900555000003x", []string{"9900555000003"}},
		{"new text before the quote", "", "> 9900111000001\nBitte an 9900222000002", []string{"9900222000002", "9900111000001"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CitedMPIDs(tt.subject, tt.body); !slices.Equal(got, tt.want) {
				t.Errorf("CitedMPIDs = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSplitMail(t *testing.T) {
	tests := []struct {
		name                 string
		body                 string
		newText, sig, quoted string
	}{
		{"plain", "Hallo\nWelt", "Hallo\nWelt", "", ""},
		{"signature and quote", "Text\n-- \nSig\n> zitiert", "Text", "Sig", "> zitiert"},
		{"CRLF", "Text\r\n> zitiert\r\n", "Text\n", "", "> zitiert"},
		{"Outlook header without separator", "Danke\n\nVon: A <a@b.example>\nGesendet: Montag\nAn: c@d.example\n\nAlter Text",
			"Danke\n", "", "Von: A <a@b.example>\nGesendet: Montag\nAn: c@d.example\n\nAlter Text"},
		{"Von: in the text is no header", "Von: unserer Seite alles klar\nGruß", "Von: unserer Seite alles klar\nGruß", "", ""},
		{"English attribution", "Thanks\nOn Fri, Nov 20, 2026 at 10:15 AM Mako <m@x.example> wrote:\nold",
			"Thanks", "", "On Fri, Nov 20, 2026 at 10:15 AM Mako <m@x.example> wrote:\nold"},
		{"forwarded", "FYI\n---------- Forwarded message ---------\nalt", "FYI", "", "---------- Forwarded message ---------\nalt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := splitMail(tt.body)
			if p.New != tt.newText || p.Signature != tt.sig || p.Quoted != tt.quoted {
				t.Errorf("splitMail = new %q sig %q quoted %q\nwant       new %q sig %q quoted %q",
					p.New, p.Signature, p.Quoted, tt.newText, tt.sig, tt.quoted)
			}
		})
	}
}
