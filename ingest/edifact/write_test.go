package edifact

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const (
	self = "9900000000003"
	dso  = "9907248000001"
)

func envelope() Envelope {
	return Envelope{Sender: self, Receiver: dso, InterchangeRef: "SB000000000042", MessageRef: "SB0000000421",
		DocumentNo: "SB000000000042", At: utc(2026, 8, 13, 9, 0)}
}

func partinDoc() PartinDoc {
	return PartinDoc{Envelope: envelope(), ProcessID: "37000",
		Company: "Müller + Söhne's Energie GmbH", Street: "Hof: Nord? 1", PostalCode: "10115", City: "Berlin", Country: "DE",
		ContactName: "Erika Mustermann", Email: "erika.mustermann@mueller-energie.de", Phone: "+49 30 1234567",
		EdifactEmail: "edifact@mueller-energie.de"}
}

func zuordnungDoc() ZuordnungDoc {
	return ZuordnungDoc{Envelope: envelope(), BalancingGroup: "11XACME-ENERGIEZ", BalancingArea: "11YR000000000123",
		Supplier: self, SeriesTypes: []string{"SLS", "TLS", "LGS"}, ValidFrom: time.Date(2026, 9, 1, 15, 30, 0, 0, pipeline.Berlin)}
}

func TestWriteGolden(t *testing.T) {
	bkv := partinDoc()
	bkv.ProcessID = "37003"
	bkv.ContactName, bkv.Email, bkv.Phone = "", "", ""
	bkv.Test = true
	tests := []struct {
		file  string
		write func() ([]byte, error)
	}{
		{"partin_37000.edi", func() ([]byte, error) { return WritePARTIN(partinDoc()) }},
		{"partin_37003_test.edi", func() ([]byte, error) { return WritePARTIN(bkv) }},
		{"zuordnung_55071.edi", func() ([]byte, error) { return WriteZuordnung(zuordnungDoc()) }},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got, err := tc.write()
			if err != nil {
				t.Fatal(err)
			}
			again, err := tc.write()
			if err != nil || !bytes.Equal(got, again) {
				t.Fatalf("second write differs (%v)", err)
			}
			path := filepath.Join("testdata", "golden", tc.file)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (go test -update rewrites it)\ngot  %q\nwant %q", path, got, want)
			}
		})
	}
}

// segmentsOf splits writer output (default separators, no line breaks) at
// unreleased terminators.
func segmentsOf(b []byte) []string {
	var out []string
	start := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '?':
			i++
		case '\'':
			out = append(out, string(b[start:i+1]))
			start = i + 1
		}
	}
	return out
}

// The expected segments are written by hand from the MIG layout the
// writer documents; Latin-1 bytes appear as \x escapes.
func TestWritePARTINSegments(t *testing.T) {
	got, err := WritePARTIN(partinDoc())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"UNA:+.? '",
		"UNB+UNOC:3+9900000000003:500+9907248000001:500+260813:0900+SB000000000042'",
		"UNH+SB0000000421+PARTIN:D:20B:UN:1.0f'",
		"BGM+10+SB000000000042'",
		"DTM+137:202608130900?+00:303'",
		"RFF+Z13:37000'",
		"DTM+157:202608130900?+00:303'",
		"NAD+MS+9900000000003::293'",
		"CTA+IC+:Erika Mustermann'",
		"COM+erika.mustermann@mueller-energie.de:EM'",
		"COM+?+49 30 1234567:TE'",
		"NAD+MR+9907248000001::293'",
		"UNS+D'",
		"NAD+SU+9900000000003++M\xfcller ?+ S\xf6hne?'s Energie GmbH:::::Z02+Hof?: Nord?? 1+Berlin++10115+DE'",
		"NAD+Z10+++M\xfcller ?+ S\xf6hne?'s Energie GmbH:::::Z02+Hof?: Nord?? 1+Berlin++10115+DE'",
		"CTA+IC+:Datenaustausch'",
		"COM+edifact@mueller-energie.de:EM'",
		"UNT+16+SB0000000421'",
		"UNZ+1+SB000000000042'",
	}
	if segs := segmentsOf(got); !reflect.DeepEqual(segs, want) {
		t.Errorf("segments\n%q\nwant\n%q", segs, want)
	}
}

func TestWriteZuordnungSegments(t *testing.T) {
	d := zuordnungDoc()
	d.SeriesTypes = []string{"SLS"}
	got, err := WriteZuordnung(d)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"UNA:+.? '",
		"UNB+UNOC:3+9900000000003:500+9907248000001:500+260813:0900+SB000000000042'",
		"UNH+SB0000000421+UTILMD:D:11A:UN:S2.1'",
		"BGM+Z17+SB000000000042'",
		"DTM+137:202608130900?+00:303'",
		"NAD+MS+9900000000003::293'",
		"NAD+MR+9907248000001::293'",
		"IDE+24+SB000000000042001'",
		// 1 September 2026, 00:00 in Berlin (CEST) is 31 August, 22:00 UTC.
		"DTM+158:202608312200?+00:303'",
		"RFF+Z13:55071'",
		"SEQ+Z22'",
		"CCI+Z20++11YR000000000123'",
		"CCI+Z19++11XACME-ENERGIEZ'",
		"CCI+15++Z21'",
		"CAV+SLS'",
		"NAD+VY+9900000000003::293'",
		"UNT+15+SB0000000421'",
		"UNZ+1+SB000000000042'",
	}
	if segs := segmentsOf(got); !reflect.DeepEqual(segs, want) {
		t.Errorf("segments\n%q\nwant\n%q", segs, want)
	}

	// In winter the German day starts at 23:00 UTC.
	d.ValidFrom = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	got, err = WriteZuordnung(d)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte("'DTM+158:202611302300?+00:303'")) {
		t.Errorf("winter begin missing in %q", got)
	}
}

func TestWriteRoundTrip(t *testing.T) {
	at := utc(2026, 8, 13, 9, 0)
	t.Run("PARTIN", func(t *testing.T) {
		d := partinDoc()
		d.Test = true
		data, err := WritePARTIN(d)
		if err != nil {
			t.Fatal(err)
		}
		ic, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		want := &mako.Interchange{
			Sender: self, SenderQualifier: "500", Receiver: dso, ReceiverQualifier: "500",
			Ref: "SB000000000042", PreparedAt: at, Test: true,
			Messages: []mako.Message{{
				Ref: "SB0000000421", Type: "PARTIN", Version: "D:20B:UN:1.0f", BGM: "10", DocumentNo: "SB000000000042",
				ProcessID: "37000", Date: at,
				References: []mako.Reference{{Qualifier: "Z13", Value: "37000"}},
				Parties: []mako.Party{{Qualifier: "MS", ID: self, CodeList: "293"}, {Qualifier: "MR", ID: dso, CodeList: "293"},
					{Qualifier: "SU", ID: self}},
				SegmentCount: 16,
			}},
		}
		if !reflect.DeepEqual(ic, want) {
			t.Errorf("got\n%s\nwant\n%s", show(ic), show(want))
		}
	})
	t.Run("Zuordnung", func(t *testing.T) {
		data, err := WriteZuordnung(zuordnungDoc())
		if err != nil {
			t.Fatal(err)
		}
		ic, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		z13 := mako.Reference{Qualifier: "Z13", Value: "55071"}
		vy := mako.Party{Qualifier: "VY", ID: self, CodeList: "293"}
		want := &mako.Interchange{
			Sender: self, SenderQualifier: "500", Receiver: dso, ReceiverQualifier: "500",
			Ref: "SB000000000042", PreparedAt: at,
			Messages: []mako.Message{{
				Ref: "SB0000000421", Type: "UTILMD", Version: "D:11A:UN:S2.1", BGM: "Z17", DocumentNo: "SB000000000042",
				ProcessID: "55071", Date: at,
				References: []mako.Reference{z13, z13, z13},
				Parties:    []mako.Party{{Qualifier: "MS", ID: self, CodeList: "293"}, {Qualifier: "MR", ID: dso, CodeList: "293"}, vy, vy, vy},
				// UNH, BGM, DTM, 2 NAD, 3 x 9 transaction segments, UNT.
				SegmentCount: 33,
			}},
		}
		if !reflect.DeepEqual(ic, want) {
			t.Errorf("got\n%s\nwant\n%s", show(ic), show(want))
		}
	})
}

func TestWriteValidation(t *testing.T) {
	partin := func(f func(*PartinDoc)) func() error {
		return func() error {
			d := partinDoc()
			f(&d)
			_, err := WritePARTIN(d)
			return err
		}
	}
	zuordnung := func(f func(*ZuordnungDoc)) func() error {
		return func() error {
			d := zuordnungDoc()
			f(&d)
			_, err := WriteZuordnung(d)
			return err
		}
	}
	tests := []struct {
		name  string
		write func() error
		want  string
	}{
		{"sender", partin(func(d *PartinDoc) { d.Sender = "990000000003" }), `sender "990000000003" is no 13-digit market-partner id`},
		{"receiver", zuordnung(func(d *ZuordnungDoc) { d.Receiver = "99000000000AB" }), `receiver "99000000000AB" is no 13-digit market-partner id`},
		{"interchange ref too long", partin(func(d *PartinDoc) { d.InterchangeRef = "SB0000000000420" }), `interchange reference "SB0000000000420": 1 to 14`},
		{"interchange ref with separator", partin(func(d *PartinDoc) { d.InterchangeRef = "SB+1" }), `interchange reference "SB+1": 1 to 14`},
		{"message ref empty", partin(func(d *PartinDoc) { d.MessageRef = "" }), `message reference "": 1 to 14`},
		{"document number empty", partin(func(d *PartinDoc) { d.DocumentNo = "" }), `document number "": 1 to 35`},
		{"document number too long for IDE", zuordnung(func(d *ZuordnungDoc) { d.DocumentNo = strings.Repeat("1", 33) }), "document number \"" + strings.Repeat("1", 33) + "\": 1 to 32"},
		{"time missing", partin(func(d *PartinDoc) { d.At = time.Time{} }), "preparation time missing"},
		{"process id", partin(func(d *PartinDoc) { d.ProcessID = "37001" }), `process id "37001": a PARTIN of ours is 37000 (supplier) or 37003 (BKV)`},
		{"company missing", partin(func(d *PartinDoc) { d.Company = "" }), "company missing"},
		{"company outside Latin-1", partin(func(d *PartinDoc) { d.Company = "Energie €uro GmbH" }), `'€' is outside the UNOC character set`},
		{"company with line break", partin(func(d *PartinDoc) { d.Company = "Energie\nGmbH" }), "contains a control character"},
		{"company too long", partin(func(d *PartinDoc) { d.Company = strings.Repeat("ä", 71) }), "is longer than 70 characters"},
		{"city blanks", partin(func(d *PartinDoc) { d.City = " Berlin" }), `city " Berlin" has leading or trailing blanks`},
		{"country", partin(func(d *PartinDoc) { d.Country = "Deutschland" }), `country "Deutschland" is no ISO 3166 alpha-2 code`},
		{"email", partin(func(d *PartinDoc) { d.Email = "erika@@x.de" }), `email "erika@@x.de" is no mail address`},
		{"edifact address missing", partin(func(d *PartinDoc) { d.EdifactEmail = "" }), "EDIFACT address missing"},
		{"phone", partin(func(d *PartinDoc) { d.Phone = "call me" }), `phone "call me" is no phone number`},
		{"balancing group type", zuordnung(func(d *ZuordnungDoc) { d.BalancingGroup = "11YR000000000123" }), `balancing group "11YR000000000123" is no EIC of type X`},
		{"balancing area length", zuordnung(func(d *ZuordnungDoc) { d.BalancingArea = "11YR00000000012" }), `balancing area "11YR00000000012" is no EIC of type Y`},
		{"balancing area lower case", zuordnung(func(d *ZuordnungDoc) { d.BalancingArea = "11yr000000000123" }), `balancing area "11yr000000000123" is no EIC of type Y`},
		{"supplier", zuordnung(func(d *ZuordnungDoc) { d.Supplier = "" }), `supplier "" is no 13-digit market-partner id`},
		{"no series type", zuordnung(func(d *ZuordnungDoc) { d.SeriesTypes = nil }), "no series type"},
		{"series type twice", zuordnung(func(d *ZuordnungDoc) { d.SeriesTypes = []string{"SLS", "SLS"} }), "series type SLS twice"},
		{"series type code", zuordnung(func(d *ZuordnungDoc) { d.SeriesTypes = []string{"S+S"} }), `series type "S+S" is no three-character code`},
		{"valid from missing", zuordnung(func(d *ZuordnungDoc) { d.ValidFrom = time.Time{} }), "valid-from date missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.write()
			if err == nil {
				t.Fatal("no error")
			}
			if pipeline.KindOf(err) != pipeline.Invalid || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q (%s), want it to contain %q (invalid)", err, pipeline.KindOf(err), tc.want)
			}
		})
	}
}

// TestWriteValidationNamesAllProblems: one error lists every problem, so an
// operator fixes the configuration in one go.
func TestWriteValidationNamesAllProblems(t *testing.T) {
	d := partinDoc()
	d.Sender, d.Country, d.EdifactEmail = "", "de", ""
	_, err := WritePARTIN(d)
	want := `PARTIN: sender "" is no 13-digit market-partner id; country "de" is no ISO 3166 alpha-2 code; EDIFACT address missing`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestFileName(t *testing.T) {
	e := envelope()
	if got, want := FileName("PARTIN", e), "PARTIN_9900000000003_9907248000001_20260813_SB000000000042.edi"; got != want {
		t.Errorf("FileName = %q, want %q", got, want)
	}
	// 23:30 UTC on 31 December is already 1 January in Germany.
	e.At = utc(2026, 12, 31, 23, 30)
	e.InterchangeRef = "../x"
	if got, want := FileName("UTILMD", e), "UTILMD_9900000000003_9907248000001_20270101_---x.edi"; got != want {
		t.Errorf("FileName = %q, want %q", got, want)
	}
}
