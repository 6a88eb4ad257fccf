package edifact

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

func utc(y int, mo time.Month, d, h, mi int) time.Time {
	return time.Date(y, mo, d, h, mi, 0, 0, time.UTC)
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// show renders an interchange for failure messages (the Ack pointer as its
// content).
func show(ic *mako.Interchange) string {
	b, _ := json.MarshalIndent(ic, "", "  ")
	return string(b)
}

// The expected values are read off the sample files by hand.
func TestParseSamples(t *testing.T) {
	dso, us := "9907248000001", "9900000000003"
	msms := []mako.Party{{Qualifier: "MS", ID: dso, CodeList: "293"}, {Qualifier: "MR", ID: us, CodeList: "293"}}
	tests := []struct {
		file string
		want *mako.Interchange
	}{
		{
			// Latin-1 bytes (UNOC), escaped ?' ?+ in names, AppRef in UNB 0026.
			file: "partin_37001.edi",
			want: &mako.Interchange{
				Sender: dso, SenderQualifier: "500", Receiver: us, ReceiverQualifier: "500",
				Ref: "NB4711000001", PreparedAt: utc(2026, 8, 12, 14, 15), AppRef: "PARTIN",
				Messages: []mako.Message{{
					Ref: "PI000001", Type: "PARTIN", Version: "D:20B:UN:1.0f", BGM: "10", DocumentNo: "PI-2026-0815",
					ProcessID: "37001", Date: utc(2026, 8, 12, 14, 15),
					References: []mako.Reference{{Qualifier: "Z13", Value: "37001"}, {Qualifier: "VA", Value: "DE123456789"}},
					Parties: []mako.Party{
						{Qualifier: "MS", ID: dso, CodeList: "293"},
						{Qualifier: "MR", ID: us, CodeList: "293"},
						{Qualifier: "DDM", ID: dso},
					},
					SegmentCount: 19,
				}},
			},
		},
		{
			file: "contrl_accept.edi",
			want: &mako.Interchange{
				Sender: dso, SenderQualifier: "500", Receiver: us, ReceiverQualifier: "500",
				Ref: "CT0000000815", PreparedAt: utc(2026, 8, 13, 8, 12),
				Messages: []mako.Message{{
					Ref: "1", Type: "CONTRL", Version: "D:3:UN:2.0b",
					Ack:          &mako.Ack{Verdict: mako.Accepted, RefInterchange: "SB000000000042"},
					SegmentCount: 3,
				}},
			},
		},
		{
			// No UNA, LF after each segment, CCYYMMDD in UNB.
			file: "contrl_reject.edi",
			want: &mako.Interchange{
				Sender: dso, SenderQualifier: "500", Receiver: us, ReceiverQualifier: "500",
				Ref: "CT0000000816", PreparedAt: utc(2026, 8, 13, 8, 15),
				Messages: []mako.Message{{
					Ref: "CT1", Type: "CONTRL", Version: "D:3:UN:2.0b",
					Ack:          &mako.Ack{Verdict: mako.Rejected, RefInterchange: "SB000000000043", RefMessage: "SB00000000004", Codes: []string{"13", "12"}},
					SegmentCount: 6,
				}},
			},
		},
		{
			file: "aperak_312.edi",
			want: &mako.Interchange{
				Sender: dso, SenderQualifier: "500", Receiver: us, ReceiverQualifier: "500",
				Ref: "AP0000001234", PreparedAt: utc(2026, 8, 13, 10, 3),
				Messages: []mako.Message{{
					Ref: "AP1234", Type: "APERAK", Version: "D:07B:UN:2.2", BGM: "312", DocumentNo: "AP-2026-1234",
					Date:         utc(2026, 8, 13, 10, 3),
					References:   []mako.Reference{{Qualifier: "ACE", Value: "SB0000000042"}},
					Parties:      msms,
					Ack:          &mako.Ack{Verdict: mako.Accepted, RefMessage: "SB0000000042"},
					SegmentCount: 8,
				}},
			},
		},
		{
			// UTF-8 with BOM; DTM offset ?+01; FTX with ?: ?+ ?' and two components.
			file: "aperak_313.edi",
			want: &mako.Interchange{
				Sender: dso, SenderQualifier: "500", Receiver: us, ReceiverQualifier: "500",
				Ref: "AP0000001235", PreparedAt: utc(2026, 8, 13, 11, 30),
				Messages: []mako.Message{{
					Ref: "AP1235", Type: "APERAK", Version: "D:07B:UN:2.2", BGM: "313", DocumentNo: "AP-2026-1235",
					Date:       utc(2026, 8, 13, 11, 30),
					References: []mako.Reference{{Qualifier: "ACE", Value: "SB0000000043"}, {Qualifier: "AGO", Value: "SB0000000043"}},
					Parties:    msms,
					Ack: &mako.Ack{Verdict: mako.Rejected, RefMessage: "SB0000000043", Codes: []string{"Z29", "Z10"},
						Text: "Pflichtangabe fehlt: NAD+Z10 Segmentgruppe SG4 (Ansprechpartner für 'Datenaustausch') MP-ID 9900000000099 unbekannt"},
					SegmentCount: 13,
				}},
			},
		},
		{
			file: "utilmd_two_messages.edi",
			want: &mako.Interchange{
				Sender: dso, SenderQualifier: "500", Receiver: us, ReceiverQualifier: "500",
				Ref: "UM0000000777", PreparedAt: utc(2026, 8, 14, 6, 0),
				Messages: []mako.Message{
					{
						Ref: "UM1", Type: "UTILMD", Version: "D:11A:UN:S2.1", BGM: "Z07", DocumentNo: "UM-2026-0777-1",
						ProcessID: "55062", Date: utc(2026, 8, 14, 6, 0),
						References: []mako.Reference{{Qualifier: "Z13", Value: "55062"}},
						Parties: []mako.Party{{Qualifier: "MS", ID: dso, CodeList: "293"}, {Qualifier: "MR", ID: us, CodeList: "293"},
							{Qualifier: "VY", ID: us, CodeList: "293"}},
						SegmentCount: 15,
						Series: []mako.SeriesInfo{{Transaction: "UM07770001", ProcessID: "55062", Start: utc(2026, 8, 31, 22, 0),
							Area: "11YR000000000123", Group: "11XACME-ENERGIEZ", Family: "Z21", Type: "SLS"}},
					},
					{
						Ref: "UM2", Type: "UTILMD", Version: "D:11A:UN:S2.1", BGM: "Z07", DocumentNo: "UM-2026-0777-2",
						ProcessID: "55063", Date: utc(2026, 8, 14, 6, 0),
						References: []mako.Reference{{Qualifier: "Z13", Value: "55063"}},
						Parties: []mako.Party{{Qualifier: "MS", ID: dso, CodeList: "293"}, {Qualifier: "MR", ID: us, CodeList: "293"},
							{Qualifier: "VY", ID: us, CodeList: "293"}},
						SegmentCount: 15,
						Series: []mako.SeriesInfo{{Transaction: "UM07770002", ProcessID: "55063", End: utc(2026, 9, 30, 22, 0),
							Area: "11YR000000000123", Group: "11XACME-ENERGIEZ", Family: "Z21", Type: "TLS"}},
					},
				},
			},
		},
		{
			// UNA^|.\ ~ and Latin-1: '+' and ''' are plain text here, \| \~ \^ \\ are released.
			file: "custom_una.edi",
			want: &mako.Interchange{
				Sender: dso, SenderQualifier: "500", Receiver: us, ReceiverQualifier: "500",
				Ref: "AP0000001236", PreparedAt: utc(2026, 8, 13, 12, 0),
				Messages: []mako.Message{{
					Ref: "AP1236", Type: "APERAK", Version: "D:07B:UN:2.2", BGM: "313", DocumentNo: "AP-2026-1236",
					Date:       utc(2026, 8, 13, 12, 0),
					References: []mako.Reference{{Qualifier: "ACE", Value: "SB0000000044"}},
					Parties:    msms,
					Ack: &mako.Ack{Verdict: mako.Rejected, RefMessage: "SB0000000044", Codes: []string{"Z35"},
						Text: `Wert 'A|B' für 1+1~2 ^ Ende Pfad C:\temp`},
					SegmentCount: 9,
				}},
			},
		},
		{
			// CRLF between segments, test indicator, CONTRL 8.
			file: "crlf.edi",
			want: &mako.Interchange{
				Sender: dso, SenderQualifier: "500", Receiver: us, ReceiverQualifier: "500",
				Ref: "CT0000000817", PreparedAt: utc(2026, 8, 13, 8, 5), Test: true,
				Messages: []mako.Message{{
					Ref: "1", Type: "CONTRL", Version: "D:3:UN:2.0b",
					Ack:          &mako.Ack{Verdict: mako.Received, RefInterchange: "SB000000000044"},
					SegmentCount: 3,
				}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got, err := Parse(readFile(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", show(got), show(tc.want))
			}
		})
	}
}

func TestParseBrokenFiles(t *testing.T) {
	tests := []struct{ file, want string }{
		{"bad_unt_count.edi", "segment 9 (UNT): segment count 7, counted 8"},
		{"missing_unz.edi", "missing UNZ: the data ends after segment 4 (UNT)"},
		{"truncated.edi", `segment 12 (CCI): truncated, no segment terminator "'" before the end of the data`},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			ic, err := Parse(readFile(t, tc.file))
			if err == nil {
				t.Fatalf("no error, got %s", show(ic))
			}
			if pipeline.KindOf(err) != pipeline.Invalid || err.Error() != tc.want {
				t.Errorf("error %q (%s), want %q (invalid)", err, pipeline.KindOf(err), tc.want)
			}
		})
	}
}

const (
	unb    = "UNB+UNOC:3+9907248000001:500+9900000000003:500+260813:0812+R1'"
	contrl = "UNH+1+CONTRL:D:3:UN:2.0b'UCI+SB1+9900000000003:500+9907248000001:500+7'UNT+3+1'"
)

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"empty", "", "no UNB: the data holds no segment"},
		{"blank", " \r\n", "no UNB: the data holds no segment"},
		{"no UNB", contrl + "UNZ+1+R1'", "segment 1 (UNH): no UNB: an interchange starts with UNB"},
		{"unknown syntax", "UNB+UNOQ:3+9907248000001:500+9900000000003:500+260813:0812+R1'" + contrl + "UNZ+1+R1'",
			`segment 1 (UNB): unknown syntax identifier "UNOQ"`},
		{"bad UNB date", "UNB+UNOC:3+9907248000001:500+9900000000003:500+261313:0812+R1'" + contrl + "UNZ+1+R1'",
			"segment 1 (UNB): date and time: 2026-13-13 08:12:00 is no valid date and time"},
		{"no interchange ref", "UNB+UNOC:3+9907248000001:500+9900000000003:500+260813:0812'" + contrl + "UNZ+1+R1'",
			"segment 1 (UNB): interchange reference (0020) is missing"},
		{"unterminated release", unb + "UNH+1+CONTRL:D:3:UN:2.0b'UCI+SB1?",
			`segment 3 (UCI): unterminated release character "?" at the end of the data`},
		{"escaped terminator at end", unb + "UNH+1+CONTRL:D:3:UN:2.0b'UCI+SB1?'",
			`segment 3 (UCI): truncated, no segment terminator "'" before the end of the data`},
		{"UNT ref", unb + "UNH+1+CONTRL:D:3:UN:2.0b'UCI+SB1+9900000000003:500+9907248000001:500+7'UNT+3+2'UNZ+1+R1'",
			`segment 4 (UNT): message reference "2" differs from UNH "1"`},
		{"UNT count not a number", unb + "UNH+1+CONTRL:D:3:UN:2.0b'UNT+x+1'UNZ+1+R1'",
			`segment 3 (UNT): segment count "x" is not a number`},
		{"UNZ count", unb + contrl + "UNZ+2+R1'", "segment 5 (UNZ): message count 2, counted 1"},
		{"UNZ ref", unb + contrl + "UNZ+1+R2'", `segment 5 (UNZ): interchange reference "R2" differs from UNB "R1"`},
		{"outside message", unb + "BGM+312+X'" + contrl + "UNZ+1+R1'", "segment 2 (BGM): segment outside a message (no UNH before it)"},
		{"UNH not closed", unb + "UNH+1+CONTRL:D:3:UN:2.0b'UCI+SB1+A:500+B:500+7'UNH+2+CONTRL:D:3:UN:2.0b'",
			`segment 4 (UNH): message "1" (UNH in segment 2) is not closed by UNT`},
		{"UNT without UNH", unb + "UNT+1+1'UNZ+0+R1'", "segment 2 (UNT): UNT without UNH"},
		{"missing UNZ in message", unb + "UNH+1+CONTRL:D:3:UN:2.0b'UCI+SB1+A:500+B:500+7'",
			`missing UNZ: the data ends inside message "1" (UNH in segment 2) after segment 3 (UCI)`},
		{"bad DTM", unb + "UNH+1+APERAK:D:07B:UN:2.2'BGM+312+A1'DTM+137:202613401200?+00:303'UNT+4+1'UNZ+1+R1'",
			"segment 4 (DTM): DTM+137: 2026-13-40 12:00:00 is no valid date and time"},
		{"data after UNZ", unb + contrl + "UNZ+1+R1'" + unb, "segment 5 (UNZ): data after the end of the interchange"},
		{"invalid tag", unb + "un h+1'", `segment 2: invalid segment tag "un h"`},
		{"UNA truncated", "UNA:+.", "UNA: service string advice truncated (6 of 9 characters)"},
		{"UNA duplicate separators", "UNA::.? '" + unb, `UNA: component separator ":", element separator ":" and segment terminator "'" must differ`},
		{"second UNB", unb + unb, `segment 2 (UNB): second UNB inside interchange "R1"`},
		{"UNH without type", unb + "UNH+1'UNT+2+1'UNZ+1+R1'", "segment 2 (UNH): message reference (0062) and type (0065) are required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ic, err := Parse([]byte(tc.data))
			if err == nil {
				t.Fatalf("no error, got %s", show(ic))
			}
			if pipeline.KindOf(err) != pipeline.Invalid || err.Error() != tc.want {
				t.Errorf("error %q (%s),\nwant  %q (invalid)", err, pipeline.KindOf(err), tc.want)
			}
		})
	}
}

// TestParseVariants covers envelope forms and acknowledgment rules with
// small inline interchanges; only the field under test is compared.
func TestParseVariants(t *testing.T) {
	ack := func(ic *mako.Interchange) any { return *ic.Messages[0].Ack }
	tests := []struct {
		name string
		data string
		get  func(*mako.Interchange) any
		want any
	}{
		{
			name: "UNOB information separators without UNA",
			data: "UNB\x1dUNOB\x1f3\x1d9907248000001\x1f500\x1d9900000000003\x1f500\x1d260813\x1f0812\x1dR1\x1c" +
				"UNH\x1d1\x1dCONTRL\x1fD\x1f3\x1fUN\x1f2.0b\x1cUCI\x1dSB?1\x1dA\x1dB\x1d7\x1cUNT\x1d3\x1d1\x1cUNZ\x1d1\x1dR1\x1c",
			get:  ack,
			want: mako.Ack{Verdict: mako.Accepted, RefInterchange: "SB?1"}, // no release character in UNOB
		},
		{
			name: "UNA without release character",
			data: "UNA:+.  '" + unb + "UNH+1+CONTRL:D:3:UN:2.0b'UCI+SB?1+A+B+4'UNT+3+1'UNZ+1+R1'",
			get:  ack,
			want: mako.Ack{Verdict: mako.Rejected, RefInterchange: "SB?1"},
		},
		{
			name: "UCM action 4 rejects an accepted interchange",
			data: unb + "UNH+1+CONTRL:D:3:UN:2.0b'UCI+SB1+A:500+B:500+7'UCM+M1+UTILMD:D:11A:UN:S2.1+4+12'UNT+4+1'UNZ+1+R1'",
			get:  ack,
			want: mako.Ack{Verdict: mako.Rejected, RefInterchange: "SB1", RefMessage: "M1", Codes: []string{"12"}},
		},
		{
			name: "UCM action 7 keeps the interchange verdict",
			data: unb + "UNH+1+CONTRL:D:3:UN:2.0b'UCI+SB1+A:500+B:500+7'UCM+M1+PARTIN:D:20B:UN:1.0f+7'UNT+4+1'UNZ+1+R1'",
			get:  ack,
			want: mako.Ack{Verdict: mako.Accepted, RefInterchange: "SB1", RefMessage: "M1"},
		},
		{
			name: "UCI error code",
			data: unb + "UNH+1+CONTRL:D:3:UN:2.0b'UCI+SB1+A:500+B:500+4+18'UNT+3+1'UNZ+1+R1'",
			get:  ack,
			want: mako.Ack{Verdict: mako.Rejected, RefInterchange: "SB1", Codes: []string{"18"}},
		},
		{
			name: "unknown UCI action leaves no verdict",
			data: unb + "UNH+1+CONTRL:D:3:UN:2.0b'UCI+SB1+A:500+B:500+9'UNT+3+1'UNZ+1+R1'",
			get:  ack,
			want: mako.Ack{RefInterchange: "SB1"},
		},
		{
			name: "APERAK with other BGM code has no verdict",
			data: unb + "UNH+1+APERAK:D:07B:UN:2.2'BGM+Z99+A1'RFF+ACE:X1'UNT+4+1'UNZ+1+R1'",
			get:  ack,
			want: mako.Ack{RefMessage: "X1"},
		},
		{
			name: "FTX and ERC outside APERAK are ignored",
			data: unb + "UNH+1+PARTIN:D:20B:UN:1.0f'BGM+10+P1'FTX+Z13+++www.example.de'ERC+Z29'UNT+5+1'UNZ+1+R1'",
			get:  func(ic *mako.Interchange) any { return ic.Messages[0].Ack == nil },
			want: true,
		},
		{
			name: "first DTM+137 wins, other qualifiers ignored",
			data: unb + "UNH+1+UTILMD:D:11A:UN:S2.1'BGM+E01+D1'DTM+158:202608312200?+00:303'DTM+137:202608130900-0100:303'DTM+137:202601010000?+00:303'UNT+6+1'UNZ+1+R1'",
			get:  func(ic *mako.Interchange) any { return ic.Messages[0].Date },
			want: utc(2026, 8, 13, 10, 0),
		},
		{
			name: "DTM+137 format 102",
			data: unb + "UNH+1+UTILMD:D:11A:UN:S2.1'DTM+137:20260813:102'UNT+3+1'UNZ+1+R1'",
			get:  func(ic *mako.Interchange) any { return ic.Messages[0].Date },
			want: utc(2026, 8, 13, 0, 0),
		},
		{
			name: "version without association code",
			data: unb + "UNH+1+MSCONS:D:04B:UN'UNT+2+1'UNZ+1+R1'",
			get:  func(ic *mako.Interchange) any { return ic.Messages[0].Version },
			want: "D:04B:UN",
		},
		{
			name: "released release character",
			data: unb + "UNH+1+APERAK:D:07B:UN:2.2'RFF+ACE:A??B?:C'UNT+3+1'UNZ+1+R1'",
			get:  func(ic *mako.Interchange) any { return ic.Messages[0].Ack.RefMessage },
			want: "A?B:C",
		},
		{
			name: "functional group: UNZ counts groups",
			data: unb + "UNG+CONTRL+A:500+B:500+260813:0812+G1+UN+3'" + contrl + contrl + "UNE+2+G1'UNZ+1+R1'",
			get:  func(ic *mako.Interchange) any { return len(ic.Messages) },
			want: 2,
		},
		{
			name: "UNA followed by a line break, trailing blanks and SUB",
			data: "UNA:+.? '\r\n" + unb + "\n" + contrl + "UNZ+1+R1'\r\n\x1a",
			get:  func(ic *mako.Interchange) any { return ic.Ref },
			want: "R1",
		},
		{
			name: "UNOA with invalid UTF-8 bytes is repaired, not rejected",
			data: "UNB+UNOA:3+9907248000001:500+9900000000003:500+260813:0812+R1'UNH+1+APERAK:D:07B:UN:2.2'FTX+Z02+++Stra\xdfe'UNT+3+1'UNZ+1+R1'",
			get:  func(ic *mako.Interchange) any { return ic.Messages[0].Ack.Text },
			want: "Stra\uFFFDe",
		},
		{
			name: "NAD without id is no party",
			data: unb + "UNH+1+UTILMD:D:11A:UN:S2.1'NAD+Z09+++Schaefer:Ulrike'NAD+DP++++Hauptstr. 1'UNT+4+1'UNZ+1+R1'",
			get:  func(ic *mako.Interchange) any { return len(ic.Messages[0].Parties) },
			want: 0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ic, err := Parse([]byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.get(ic); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestField checks element and component access on an escaped segment.
func TestField(t *testing.T) {
	p := newParser(nil)
	raw := []byte("NAD+DDM+9907++A?+B?'C?:D??:E::::Z02+X+")
	seg := segment{n: 1, tag: raw[:3], raw: raw}
	tests := []struct {
		e, c int
		want string
	}{
		{0, 0, "DDM"},
		{1, 0, "9907"},
		{1, 1, ""},
		{2, 0, ""},
		{3, 0, "A+B'C:D?"},
		{3, 1, "E"},
		{3, 4, ""},
		{3, 5, "Z02"},
		{3, 6, ""},
		{4, 0, "X"},
		{5, 0, ""},
		{6, 0, ""},
	}
	for _, tc := range tests {
		if got := p.str(p.field(seg, tc.e, tc.c)); got != tc.want {
			t.Errorf("field(%d, %d) = %q, want %q", tc.e, tc.c, got, tc.want)
		}
	}
}

func TestParseDTM(t *testing.T) {
	tests := []struct {
		v, format string
		want      time.Time
		err       string
	}{
		{v: "202608130900+00", format: "303", want: utc(2026, 8, 13, 9, 0)},
		{v: "202608130900+01", format: "303", want: utc(2026, 8, 13, 8, 0)},
		{v: "202608130900+02", format: "303", want: utc(2026, 8, 13, 7, 0)},
		{v: "202608130900-0100", format: "303", want: utc(2026, 8, 13, 10, 0)},
		{v: "202608130900+0130", format: "303", want: utc(2026, 8, 13, 7, 30)},
		{v: "202601010030+01", format: "303", want: utc(2025, 12, 31, 23, 30)},
		{v: "20260813091530+00", format: "304", want: time.Date(2026, 8, 13, 9, 15, 30, 0, time.UTC)},
		{v: "20260813", format: "102", want: utc(2026, 8, 13, 0, 0)},
		{v: "260813", format: "101", want: utc(2026, 8, 13, 0, 0)},
		{v: "2608130915", format: "201", want: utc(2026, 8, 13, 9, 15)},
		{v: "202608130915", format: "203", want: utc(2026, 8, 13, 9, 15)},
		{v: "20260813091501", format: "204", want: time.Date(2026, 8, 13, 9, 15, 1, 0, time.UTC)},
		{v: "20280229", format: "102", want: utc(2028, 2, 29, 0, 0)},
		{v: "20260229", format: "102", err: "2026-02-29 00:00:00 is no valid date and time"},
		{v: "202608132400", format: "203", err: "2026-08-13 24:00:00 is no valid date and time"},
		{v: "2026081309", format: "203", err: `value "2026081309" does not match format 203`},
		{v: "202608130900", format: "303", err: `value "202608130900" does not match format 303`},
		{v: "202608130900+1", format: "303", err: `value "202608130900+1" does not match format 303`},
		{v: "202608130900 00", format: "303", err: `value "202608130900 00" does not match format 303`},
		{v: "202608130900+15", format: "303", err: `value "202608130900+15" does not match format 303`},
		{v: "2026-08-13", format: "102", err: `value "2026-08-13" does not match format 102`},
		{v: "20260813", format: "", err: `unsupported date format code ""`},
		{v: "20260813", format: "999", err: `unsupported date format code "999"`},
	}
	for _, tc := range tests {
		got, err := parseDTM(tc.v, tc.format)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("parseDTM(%q, %q) error %v, want %q", tc.v, tc.format, err, tc.err)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("parseDTM(%q, %q) = %v, %v; want %v", tc.v, tc.format, got, err, tc.want)
		}
	}
}

func TestParseUNBTime(t *testing.T) {
	tests := []struct {
		date, clock string
		want        time.Time
		ok          bool
	}{
		{"260813", "0812", utc(2026, 8, 13, 8, 12), true},
		{"20260813", "2359", utc(2026, 8, 13, 23, 59), true},
		{"991231", "0000", utc(1999, 12, 31, 0, 0), true},
		{"2608131", "0812", time.Time{}, false},
		{"260813", "812", time.Time{}, false},
		{"260813", "", time.Time{}, false},
		{"260832", "0812", time.Time{}, false},
	}
	for _, tc := range tests {
		got, err := parseUNBTime(tc.date, tc.clock)
		if (err == nil) != tc.ok || !got.Equal(tc.want) {
			t.Errorf("parseUNBTime(%q, %q) = %v, %v; want %v ok=%v", tc.date, tc.clock, got, err, tc.want, tc.ok)
		}
	}
}

// TestParseLatin1OnlyWhenInvalidUTF8: a UNOC file written in UTF-8 keeps its
// characters; the same text in Latin-1 bytes decodes to the same string.
func TestParseLatin1OnlyWhenInvalidUTF8(t *testing.T) {
	body := unb + "UNH+1+APERAK:D:07B:UN:2.2'FTX+Z02+++Müller Straße'UNT+3+1'UNZ+1+R1'"
	latin := []byte(strings.NewReplacer("ü", "\xfc", "ß", "\xdf").Replace(body))
	for name, data := range map[string][]byte{"utf8": []byte(body), "latin1": latin} {
		ic, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := ic.Messages[0].Ack.Text; got != "Müller Straße" {
			t.Errorf("%s: text %q", name, got)
		}
	}
}
