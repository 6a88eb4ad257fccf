package fahrplan

import (
	"bytes"
	"encoding/xml"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const (
	refTPS = "testdata/reference/ess/20241022_TPS_11X0-1111-0762-I_10XDE-AOE-HTCC-C_001.xml"
	refPPS = "testdata/reference/ess/20240125_PPS_FINGRID_0X1001A1001A264_002.xml"

	ourBG        = "11XSCHEDBRIDGEAE"
	counterparty = "11XCOUNTERPART-R"
	exchange     = "11XEXCHANGE----L"
)

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// testMessage is a schedule to TenneT with a purchase, a sale and an import
// from Amprion. Quantities vary per quarter-hour and some have more than three
// decimals, so rounding shows in the golden files.
func testMessage(day pipeline.Day) Message {
	n := day.Intervals()
	gen := func(f func(i int) float64) []float64 {
		q := make([]float64, n)
		for i := range q {
			q[i] = f(i)
		}
		return q
	}
	tennet, amprion := ControlAreaEIC[pipeline.TenneT], ControlAreaEIC[pipeline.Amprion]
	return Message{
		MessageID: "SB-" + strings.ReplaceAll(day.String(), "-", "") + "-TENNET",
		Version:   1,
		Sender:    ourBG,
		Receiver:  DefaultTSOParty[pipeline.TenneT],
		Created:   day.AddDays(-1).Start().Add(13*time.Hour + 5*time.Minute + 12*time.Second).UTC(),
		Day:       day,
		Domain:    tennet,
		Series: []Series{
			{ID: "SB-PURCHASE-1", BusinessType: "A02", InArea: tennet, OutArea: tennet, InParty: ourBG, OutParty: counterparty,
				Quantities: gen(func(i int) float64 { return 10 + 0.125*float64(i) })},
			{ID: "SB-SALE-1", BusinessType: "A02", InArea: tennet, OutArea: tennet, InParty: exchange, OutParty: ourBG,
				Quantities: gen(func(i int) float64 { return float64(i%4) * 1.23456 })},
			{ID: "SB-AMPRION-1", BusinessType: "A06", InArea: tennet, OutArea: amprion, InParty: ourBG, OutParty: ourBG,
				Quantities: gen(func(i int) float64 { return 0.3333 * float64(i/8) })},
		},
	}
}

func TestMarshalGolden(t *testing.T) {
	tests := []struct {
		name     string
		day      pipeline.Day
		n        int
		interval string
	}{
		{"normal day", pipeline.NewDay(2026, 6, 15), 96, "2026-06-14T22:00Z/2026-06-15T22:00Z"},
		{"spring forward", pipeline.NewDay(2026, 3, 29), 92, "2026-03-28T23:00Z/2026-03-29T22:00Z"},
		{"fall back", pipeline.NewDay(2026, 10, 25), 100, "2026-10-24T22:00Z/2026-10-25T23:00Z"},
		{"winter day", pipeline.NewDay(2026, 1, 15), 96, "2026-01-14T23:00Z/2026-01-15T23:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMessage(tt.day)
			got, err := Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", m.FileName())
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := readFile(t, golden); !bytes.Equal(got, want) {
				t.Fatalf("Marshal differs from %s; run go test -update and review the diff", golden)
			}
			// The facts the golden file must show, checked independently.
			doc := string(got)
			for _, s := range []string{
				`<ScheduleTimeInterval v="` + tt.interval + `"/>`,
				`<TimeInterval v="` + tt.interval + `"/>`,
				`<Pos v="` + strconv.Itoa(tt.n) + `"/>`,
			} {
				if !strings.Contains(doc, s) {
					t.Errorf("missing %s", s)
				}
			}
			if strings.Contains(doc, `<Pos v="`+strconv.Itoa(tt.n+1)+`"/>`) {
				t.Errorf("position %d beyond the day", tt.n+1)
			}
			if c := strings.Count(doc, "<Interval>"); c != 3*tt.n {
				t.Errorf("%d intervals, want %d", c, 3*tt.n)
			}
		})
	}
}

func TestMarshalParseRoundTrip(t *testing.T) {
	for _, day := range []pipeline.Day{pipeline.NewDay(2026, 6, 15), pipeline.NewDay(2026, 3, 29), pipeline.NewDay(2026, 10, 25)} {
		t.Run(day.String(), func(t *testing.T) {
			m := testMessage(day)
			m.Version = 3
			m.Series[0].Version = 2 // a series last changed in version 2
			m.Series[2].CapacityContractType = "A01"
			m.Series[2].CapacityAgreementID = "CAP-2026-001"
			m.MessageID = `SB&"<1>'`
			data, err := Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseSchedule(data)
			if err != nil {
				t.Fatal(err)
			}
			want := m.WithDefaults()
			for i := range want.Series {
				q := make([]float64, len(want.Series[i].Quantities))
				for k, v := range want.Series[i].Quantities {
					q[k], _ = strconv.ParseFloat(FormatQuantity(v), 64)
				}
				want.Series[i].Quantities = q
			}
			if !got.Created.Equal(want.Created) {
				t.Errorf("Created = %v, want %v", got.Created, want.Created)
			}
			got.Created, want.Created = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestMarshalDefaults(t *testing.T) {
	data, err := Marshal(testMessage(pipeline.NewDay(2026, 6, 15)))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, s := range []string{
		`<MessageType v="A01"/>`, `<ProcessType v="A17"/>`, `<ScheduleClassificationType v="A01"/>`,
		`<SenderRole v="A08"/>`, `<ReceiverRole v="A04"/>`, `<Product v="8716867000016"/>`,
		`<ObjectAggregation v="A01"/>`, `<MeasurementUnit v="MAW"/>`, `<SendersTimeSeriesVersion v="1"/>`,
		`<SenderIdentification v="11XSCHEDBRIDGEAE" codingScheme="A01"/>`,
		`<ReceiverIdentification v="10XDE-EON-NETZ-C" codingScheme="A01"/>`,
		`<MessageDateTime v="2026-06-14T11:05:12Z"/>`,
	} {
		if !strings.Contains(doc, s) {
			t.Errorf("missing %s", s)
		}
	}
	// German internal schedules carry neither a capacity contract nor a Domain.
	for _, s := range []string{"CapacityContractType", "CapacityAgreementIdentification", "<Domain"} {
		if strings.Contains(doc, s) {
			t.Errorf("unexpected %s", s)
		}
	}
	m := testMessage(pipeline.NewDay(2026, 6, 15))
	m.Series[0].CapacityContractType = "A01"
	m.Series[0].CapacityAgreementID = "CAP1"
	data, err = Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	doc = string(data)
	i, j, k := strings.Index(doc, "<OutParty"), strings.Index(doc, "<CapacityContractType v=\"A01\"/>\n    <CapacityAgreementIdentification v=\"CAP1\"/>"), strings.Index(doc, "<MeasurementUnit")
	if !(i >= 0 && i < j && j < k) {
		t.Errorf("capacity elements not between OutParty and MeasurementUnit: %d %d %d", i, j, k)
	}
}

// elementPaths lists every element path and attribute of a document, such as
// "ScheduleMessage/ScheduleTimeSeries/InArea@codingScheme".
func elementPaths(t *testing.T, data []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, utf8BOM)))
	set := map[string]bool{}
	var stack []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			stack = append(stack, e.Name.Local)
			p := strings.Join(stack, "/")
			set[p] = true
			for _, a := range e.Attr {
				set[p+"@"+a.Name.Local] = true
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func TestMarshalHasReferenceStructure(t *testing.T) {
	want := elementPaths(t, readFile(t, refTPS))
	data, err := Marshal(testMessage(pipeline.NewDay(2026, 3, 29)))
	if err != nil {
		t.Fatal(err)
	}
	if got := elementPaths(t, data); !reflect.DeepEqual(got, want) {
		t.Fatalf("element paths differ from the reference TPS:\n got %v\nwant %v", got, want)
	}
	// Same prologue as the reference: declaration, DOCTYPE, root attributes.
	ref := string(bytes.TrimPrefix(readFile(t, refTPS), utf8BOM))
	prologue := ref[:strings.Index(ref, "\n  <MessageIdentification")]
	if !strings.HasPrefix(string(data), prologue) {
		t.Fatalf("prologue differs from the reference:\n%s", prologue)
	}
}

// Re-rendering the parsed reference TPS reproduces it byte for byte (apart
// from its byte order mark): element order, indentation, attributes and the
// three-decimal quantities all match the file a German TSO accepted.
func TestWriteReproducesReference(t *testing.T) {
	ref := bytes.TrimPrefix(readFile(t, refTPS), utf8BOM)
	m, err := ParseSchedule(ref)
	if err != nil {
		t.Fatal(err)
	}
	if got := write(m.WithDefaults()); !bytes.Equal(got, ref) {
		g, r := string(got), string(ref)
		i := 0
		for i < len(g) && i < len(r) && g[i] == r[i] {
			i++
		}
		t.Fatalf("differs at byte %d:\n got %q\nwant %q", i, g[max(0, i-80):min(len(g), i+80)], r[max(0, i-80):min(len(r), i+80)])
	}
}

func TestParseScheduleReference(t *testing.T) {
	m, err := ParseSchedule(readFile(t, refTPS))
	if err != nil {
		t.Fatal(err)
	}
	if m.MessageID != "11X0-1111-0762-10XDE-AOE-HTCC241022" || m.Version != 1 || m.MessageType != "A01" ||
		m.ProcessType != "A17" || m.ScheduleClassificationType != "A01" || m.Sender != "11X0-1111-0762-I" ||
		m.SenderRole != "A08" || m.Receiver != "10XDE-AOE-HTCC-C" || m.ReceiverRole != "A04" ||
		m.Day != pipeline.NewDay(2024, 10, 22) || m.Domain != "10YDE-EON------1" ||
		!m.Created.Equal(time.Date(2024, 10, 25, 10, 0, 19, 0, time.UTC)) {
		t.Fatalf("header = %+v", m)
	}
	var ids, types []string
	for _, s := range m.Series {
		ids = append(ids, s.ID)
		types = append(types, s.BusinessType)
		if len(s.Quantities) != 96 || s.Version != 1 || s.MeasurementUnit != "MAW" || s.Product != DefaultProduct {
			t.Errorf("series %s: %d quantities, version %d, unit %s, product %s", s.ID, len(s.Quantities), s.Version, s.MeasurementUnit, s.Product)
		}
	}
	wantIDs := []string{"rr11XEES-K-------9s", "rr11XAXPODE-TC---Hs", "rrs11XFC-CONS-----0", "rrs11XD-SWFLENS-N-F",
		"rr11XFC-PROD-----Es", "r10YDE-VE-------2ss", "r10YDE-ENBW-----Nss", "r10YDE-RWENET---Iss"}
	wantTypes := []string{"A02", "A02", "A04", "A02", "A01", "A06", "A06", "A06"}
	if !reflect.DeepEqual(ids, wantIDs) || !reflect.DeepEqual(types, wantTypes) {
		t.Fatalf("series %v %v", ids, types)
	}
	last := m.Series[7]
	if m.Series[0].Quantities[0] != 22.5 || last.Quantities[61] != 22.788 || last.Quantities[95] != 15.9 {
		t.Errorf("quantities: first %v, last[62] %v, last[96] %v", m.Series[0].Quantities[0], last.Quantities[61], last.Quantities[95])
	}
	if last.InArea != "10YDE-RWENET---I" || last.OutArea != "10YDE-EON------1" || last.InParty != "11X0-0000-0762-I" {
		t.Errorf("last series areas/parties: %+v", last)
	}

	// The ESS 4 ScheduleDocument (a production schedule) reads the same way.
	p, err := ParseSchedule(readFile(t, refPPS))
	if err != nil {
		t.Fatal(err)
	}
	if p.MessageID != "1234" || p.Version != 2 || p.Sender != "FINGRID" || p.Day != pipeline.NewDay(2001, 6, 3) ||
		p.Domain != "2Y000002347651H" || len(p.Series) != 10 || p.ProcessType != "A01" {
		t.Fatalf("PPS header = %+v", p)
	}
	s := p.Series[0]
	if s.CapacityContractType != "A01" || s.CapacityAgreementID != "A1235RT" || s.BusinessType != "A03" ||
		s.Quantities[0] != 45 || s.Quantities[1] != 40 {
		t.Fatalf("PPS first series = %+v", s)
	}
}

func TestParseScheduleRefusesOtherDocuments(t *testing.T) {
	files, err := filepath.Glob("testdata/reference/*/*")
	if err != nil {
		t.Fatal(err)
	}
	parsed := 0
	for _, f := range files {
		if strings.HasSuffix(f, "LICENSE-schleupen") || strings.HasSuffix(f, ".md") {
			continue
		}
		_, err := ParseSchedule(readFile(t, f))
		isSchedule := f == refTPS || f == refPPS
		if isSchedule {
			parsed++
			if err != nil {
				t.Errorf("%s: %v", f, err)
			}
			continue
		}
		if err == nil || pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("%s: ParseSchedule = %v, want an invalid error", f, err)
		}
	}
	if parsed != 2 {
		t.Fatalf("parsed %d schedules, want 2", parsed)
	}
}

func TestParseScheduleInvalid(t *testing.T) {
	good, err := Marshal(testMessage(pipeline.NewDay(2026, 6, 15)))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(good)
	pos5 := "      <Interval>\n        <Pos v=\"5\"/>\n        <Qty v=\"10.500\"/>\n      </Interval>\n"
	if !strings.Contains(doc, pos5) {
		t.Fatal("fixture: position 5 of the first series not found")
	}
	tests := []struct {
		name, doc, want string
	}{
		{"empty", "", "no XML root"},
		{"not XML", "hello", "no XML root"},
		{"truncated", doc[:len(doc)/2], "malformed"},
		{"missing position", strings.Replace(doc, pos5, "", 1), "position 5 of 96 missing"},
		{"duplicate position", strings.Replace(doc, pos5, pos5+pos5, 1), "given twice"},
		{"position beyond period", strings.Replace(doc, `<Pos v="5"/>`, `<Pos v="97"/>`, 1), "want 1..96"},
		{"hourly resolution", strings.Replace(doc, "PT15M", "PT60M", 1), "resolution"},
		{"not a day", strings.Replace(doc, `<ScheduleTimeInterval v="2026-06-14T22:00Z/2026-06-15T22:00Z"/>`,
			`<ScheduleTimeInterval v="2026-06-14T22:00Z/2026-06-15T21:00Z"/>`, 1), "not one delivery day"},
		{"bad quantity", strings.Replace(doc, `<Qty v="10.500"/>`, `<Qty v="ten"/>`, 1), "not a number"},
		{"bad version", strings.Replace(doc, `<MessageVersion v="1"/>`, `<MessageVersion v="x"/>`, 1), "MessageVersion"},
		{"bad time", strings.Replace(doc, `<MessageDateTime v="2026-06-14T11:05:12Z"/>`, `<MessageDateTime v="14.06.2026"/>`, 1), "MessageDateTime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSchedule([]byte(tt.doc))
			if err == nil || pipeline.KindOf(err) != pipeline.Invalid || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseSchedule = %v, want an invalid error with %q", err, tt.want)
			}
		})
	}
}

func TestFormatQuantity(t *testing.T) {
	tests := []struct {
		q    float64
		want string
	}{
		{12.3456, "12.346"},
		{0, "0.000"},
		{math.Copysign(0, -1), "0.000"},
		{22.5, "22.500"},
		{15.9, "15.900"},
		{0.0004, "0.000"},
		{0.0006, "0.001"},
		{1.23456 * 3, "3.704"},
		{1234567.8916, "1234567.892"},
	}
	for _, tt := range tests {
		if got := FormatQuantity(tt.q); got != tt.want {
			t.Errorf("FormatQuantity(%v) = %s, want %s", tt.q, got, tt.want)
		}
	}
}

func TestMarshalValidation(t *testing.T) {
	day := pipeline.NewDay(2026, 6, 15)
	tests := []struct {
		name   string
		mutate func(m *Message)
		want   string
	}{
		{"95 quantities", func(m *Message) { m.Series[0].Quantities = m.Series[0].Quantities[:95] }, "95 quantities"},
		{"96 quantities on the spring day", func(m *Message) { m.Day = pipeline.NewDay(2026, 3, 29) }, "has 92 quarter-hours"},
		{"96 quantities on the fall day", func(m *Message) { m.Day = pipeline.NewDay(2026, 10, 25) }, "has 100 quarter-hours"},
		{"NaN", func(m *Message) { m.Series[1].Quantities[3] = math.NaN() }, "position 4"},
		{"infinity", func(m *Message) { m.Series[1].Quantities[0] = math.Inf(1) }, "not a number"},
		{"negative", func(m *Message) { m.Series[2].Quantities[95] = -0.001 }, "negative"},
		{"sender check character", func(m *Message) { m.Sender = "11XSCHEDBRIDGEAF" }, "SenderIdentification"},
		{"receiver is an area", func(m *Message) { m.Receiver = "10YDE-EON------1" }, "ReceiverIdentification"},
		{"in area is a party", func(m *Message) { m.Series[0].InArea = "10XDE-EON-NETZ-C" }, "InArea"},
		{"out party malformed", func(m *Message) { m.Series[0].OutParty = "11XCOUNTERPART" }, "OutParty"},
		{"in party anonymised", func(m *Message) { m.Series[0].InParty = "11X0-1111-0762-I" }, "InParty"},
		{"version 0", func(m *Message) { m.Version = 0 }, "MessageVersion"},
		{"version 1000", func(m *Message) { m.Version = 1000 }, "MessageVersion"},
		{"series version above message", func(m *Message) { m.Series[0].Version = 2 }, "SendersTimeSeriesVersion"},
		{"no message id", func(m *Message) { m.MessageID = "" }, "MessageIdentification"},
		{"message id too long", func(m *Message) { m.MessageID = strings.Repeat("X", 36) }, "MessageIdentification"},
		{"message id with space", func(m *Message) { m.MessageID = "SB 1" }, "MessageIdentification"},
		{"duplicate series", func(m *Message) { m.Series[1].ID = m.Series[0].ID }, "used twice"},
		{"series id too long", func(m *Message) { m.Series[1].ID = strings.Repeat("S", 36) }, "SendersTimeSeriesIdentification"},
		{"no business type", func(m *Message) { m.Series[0].BusinessType = "" }, "BusinessType"},
		{"bad role", func(m *Message) { m.SenderRole = "BRP" }, "SenderRole"},
		{"bad product", func(m *Message) { m.Series[0].Product = "871686700001X" }, "Product"},
		{"bad unit", func(m *Message) { m.Series[0].MeasurementUnit = "MW" }, "MeasurementUnit"},
		{"bad capacity contract", func(m *Message) { m.Series[0].CapacityContractType = "yearly" }, "CapacityContractType"},
		{"series outside the control area", func(m *Message) { m.Domain = ControlAreaEIC[pipeline.FiftyHertz] }, "control area"},
		{"domain is a party", func(m *Message) { m.Domain = "10XDE-EON-NETZ-C" }, "Domain"},
		{"no day", func(m *Message) { m.Day = pipeline.Day{} }, "delivery day"},
		{"impossible day", func(m *Message) { m.Day = pipeline.NewDay(2026, 2, 30) }, "not a calendar day"},
		{"no creation time", func(m *Message) { m.Created = time.Time{} }, "MessageDateTime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMessage(day)
			tt.mutate(&m)
			_, err := Marshal(m)
			if err == nil || pipeline.KindOf(err) != pipeline.Invalid || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Marshal = %v, want an invalid error with %q", err, tt.want)
			}
		})
	}
	// The unmutated message and the edge values that are allowed.
	m := testMessage(day)
	m.Series[0].Quantities[0] = math.Copysign(0, -1)
	m.Domain = ""
	m.Version = 999
	m.Series = append(m.Series, Series{ID: strings.Repeat("S", 35), BusinessType: "A04", InArea: m.Series[0].InArea, OutArea: m.Series[0].InArea,
		InParty: "11XSBFORECAST--2", OutParty: ourBG, Quantities: make([]float64, 96)})
	if _, err := Marshal(m); err != nil {
		t.Fatalf("valid message refused: %v", err)
	}
	m.Series = nil
	if _, err := Marshal(m); err != nil {
		t.Fatalf("schedule without series refused: %v", err)
	}
}

func BenchmarkMarshal(b *testing.B) {
	m := testMessage(pipeline.NewDay(2026, 10, 25))
	for i := 0; i < 6; i++ { // 21 series of 100 quarter-hours
		for _, s := range m.Series[:3] {
			s.ID += "-" + strconv.Itoa(i)
			m.Series = append(m.Series, s)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseSchedule(b *testing.B) {
	data := readFile(b, refTPS)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseSchedule(data); err != nil {
			b.Fatal(err)
		}
	}
}
