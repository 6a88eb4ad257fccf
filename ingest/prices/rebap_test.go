package prices

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/price"
)

func TestParseReBAPUTCFallBack(t *testing.T) {
	s := parsed(t, ParseReBAPCSV, readFile(t, "rebap_2026-10-25_utc.csv"))
	day := pipeline.NewDay(2026, time.October, 25)
	checkSource(t, s, price.ReBAP, "netztransparenz-csv")
	// The file has the 100 quarter-hours of the Berlin day in UTC; row 40
	// (file line 42) is N.A.
	if len(s.Points) != 99 || len(s.Missing) != 1 || len(s.Points)+len(s.Missing) != day.Intervals() {
		t.Fatalf("%d points, %d missing; want 99 + 1 = %d", len(s.Points), len(s.Missing), day.Intervals())
	}
	if !s.Points[0].Start.Equal(day.Start()) || !s.Points[0].Start.Equal(utc("2026-10-24T22:00Z")) {
		t.Errorf("first start %s, want %s", s.Points[0].Start, day.Start())
	}
	if last := s.Points[98].Start.Add(15 * time.Minute); !last.Equal(day.End()) {
		t.Errorf("last end %s, want %s", last, day.End())
	}
	if want := day.Start().Add(40 * 15 * time.Minute); !s.Missing[0].Equal(want) {
		t.Errorf("missing %s, want %s", s.Missing[0], want)
	}
	for _, p := range s.Points {
		if p.Minutes != 15 {
			t.Fatalf("point %+v: want minutes 15", p)
		}
	}
	for _, tt := range []struct {
		i           int
		short, long float64
	}{
		{0, 135, 135},         // 135,00
		{5, 1234.56, 1234.56}, // 1.234,56: thousands separator
		{6, -12.5, -12.5},     // -12,5
		{7, 250, -80},         // the two directions differ; 23:45-00:00, bis 00:00 being the next day
		{98, 62.97, 62.97},    // 25.10.2026 22:45-23:00 UTC, the last quarter-hour
	} {
		if p := s.Points[tt.i]; p.Price != tt.short || p.PriceLong != tt.long {
			t.Errorf("point %d at %s = %v/%v, want %v/%v", tt.i, stamp(p.Start), p.Price, p.PriceLong, tt.short, tt.long)
		}
	}
}

func TestParseReBAPSpringForwardCETCEST(t *testing.T) {
	s := parsed(t, ParseReBAPCSV, readFile(t, "rebap_cet_cest.csv"))
	day := pipeline.NewDay(2025, time.March, 30)
	if len(s.Points) != day.Intervals() || len(s.Missing) != 0 {
		t.Fatalf("%d points, %d missing; want %d, 0", len(s.Points), len(s.Missing), day.Intervals())
	}
	for i, p := range s.Points {
		if want := day.Start().Add(time.Duration(i) * 15 * time.Minute); !p.Start.Equal(want) {
			t.Fatalf("point %d at %s, want %s", i, p.Start, want)
		}
	}
	// 01:45 CET and 03:00 CEST are consecutive quarter-hours.
	if !s.Points[7].Start.Equal(utc("2025-03-30T00:45Z")) || !s.Points[8].Start.Equal(utc("2025-03-30T01:00Z")) {
		t.Errorf("around the switch: %s, %s", s.Points[7].Start, s.Points[8].Start)
	}
}

// The zone labels are fixed offsets, whatever the date (see the package doc).
func TestParseReBAPFixedOffsets(t *testing.T) {
	tests := []struct {
		name string
		rows string
		want []string
	}{
		{"02:00 CET on the spring-forward day is 01:00 UTC", "" +
			"30.03.2025;CET;01:45;02:00;1\n" +
			"30.03.2025;CET;02:00;02:15;2\n" +
			"30.03.2025;CEST;03:15;03:30;3\n",
			[]string{"2025-03-30T00:45Z", "2025-03-30T01:00Z", "2025-03-30T01:15Z"}},
		{"the repeated hour of the fall-back day is told apart by its label", "" +
			"26.10.2025;CEST;02:45;03:00;1\n" +
			"26.10.2025;CET;02:00;02:15;2\n" +
			"26.10.2025;CET;02:15;02:30;3\n",
			[]string{"2025-10-26T00:45Z", "2025-10-26T01:00Z", "2025-10-26T01:15Z"}},
		{"MEZ and MESZ, any case", "" +
			"15.01.2025;mez;00:00;00:15;1\n" +
			"15.01.2025;MESZ;01:15;01:30;2\n",
			[]string{"2025-01-14T23:00Z", "2025-01-14T23:15Z"}},
		{"UTC rows across midnight", "" +
			"31.12.2025;UTC;23:45;00:00;1\n" +
			"01.01.2026;UTC;00:00;00:15;2\n",
			[]string{"2025-12-31T23:45Z", "2026-01-01T00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := parsed(t, ParseReBAPCSV, []byte("Datum;Zeitzone;von;bis;reBAP\n"+tt.rows))
			var got []string
			for _, p := range s.Points {
				got = append(got, stamp(p.Start))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || len(s.Missing) != 0 {
				t.Errorf("points %v missing %v, want %v", got, s.Missing, tt.want)
			}
		})
	}
}

func TestParseReBAPWindows1252(t *testing.T) {
	data := readFile(t, "rebap_latin1.csv")
	if !strings.Contains(string(data), "\xfcberdeckt") || !strings.Contains(string(data), "\x80/MWh") {
		t.Fatal("testdata is not Windows-1252")
	}
	s := parsed(t, ParseReBAPCSV, data)
	if len(s.Points) != 3 || len(s.Missing) != 1 || !s.Missing[0].Equal(utc("2025-07-01T00:30Z")) {
		t.Fatalf("points %+v missing %v", s.Points, s.Missing)
	}
	if p := s.Points[1]; p.Price != 1017.4 || p.PriceLong != -3.2 {
		t.Errorf("reBAP überdeckt not read: %+v", p)
	}
}

func TestParseReBAPBOMAndLineEnds(t *testing.T) {
	plain := readFile(t, "rebap_2026-10-25_utc.csv")
	want, err := ParseReBAPCSV(plain)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"BOM":     append([]byte("\xef\xbb\xbf"), plain...),
		"LF":      []byte(strings.ReplaceAll(string(plain), "\r\n", "\n")),
		"padding": []byte("\n\r\n" + strings.ReplaceAll(string(plain), "\r\n", "\n\n ;  ;\n")),
	} {
		got, err := ParseReBAPCSV(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: the series differs from the plain file's", name)
		}
	}
}

func TestParseReBAPColumns(t *testing.T) {
	tests := []struct {
		name        string
		data        string
		short, long float64
		start       string
	}{
		{"older export with a single reBAP column and no zone (UTC)",
			"Datum;von;bis;reBAP [EUR/MWh]\n01.02.2016;00:00;00:15;33,2\n", 33.2, 33.2, "2016-02-01T00:00Z"},
		{"columns in another order, other case, padded, extra columns ignored",
			" REBAP UEBERDECKT ;Datenkategorie; datum ;Von;Reserve;reBAP Unterdeckt\n2;reBAP;02.02.2024;10:15;x;1\n", 1, 2, "2024-02-02T10:15Z"},
		{"umlauts in the header, unit in brackets",
			"Datum;von;reBAP unterdeckt (€/MWh);reBAP Überdeckt (€/MWh)\n02.02.2024;10:15;-1.000.000,5;7\n", -1000000.5, 7, "2024-02-02T10:15Z"},
		{"quoted cells", `"Datum";"von";"reBAP"` + "\n" + `"02.02.2024";"10:15";"1.234,5"` + "\n", 1234.5, 1234.5, "2024-02-02T10:15Z"},
		{"trailing separator", "Datum;von;reBAP\n02.02.2024;10:15;5;\n", 5, 5, "2024-02-02T10:15Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseReBAPCSV([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Points) != 1 || s.Points[0].Price != tt.short || s.Points[0].PriceLong != tt.long || stamp(s.Points[0].Start) != tt.start {
				t.Errorf("points %+v, want %v/%v at %s", s.Points, tt.short, tt.long, tt.start)
			}
		})
	}
}

func TestParseReBAPMissingGapsAndDuplicates(t *testing.T) {
	const header = "Datum;Zeitzone;von;bis;reBAP unterdeckt;reBAP ueberdeckt\n"
	tests := []struct {
		name    string
		rows    string
		points  []string
		missing []string
	}{
		{"missing markers, one missing side counts once", "" +
			"01.07.2025;UTC;00:00;00:15;N.A.;N.A.\n" +
			"01.07.2025;UTC;00:15;00:30;n.e.;N.E.\n" +
			"01.07.2025;UTC;00:30;00:45;-;5\n" +
			"01.07.2025;UTC;00:45;01:00;5;\n" +
			"01.07.2025;UTC;01:00;01:15;0;0\n",
			[]string{"2025-07-01T01:00Z"},
			[]string{"2025-07-01T00:00Z", "2025-07-01T00:15Z", "2025-07-01T00:30Z", "2025-07-01T00:45Z"}},
		{"gaps between rows are missing, in time order with N.A.", "" +
			"01.07.2025;UTC;00:00;00:15;1;1\n" +
			"01.07.2025;UTC;00:30;00:45;N.A.;N.A.\n" +
			"01.07.2025;UTC;01:15;01:30;2;2\n",
			[]string{"2025-07-01T00:00Z", "2025-07-01T01:15Z"},
			[]string{"2025-07-01T00:15Z", "2025-07-01T00:30Z", "2025-07-01T00:45Z", "2025-07-01T01:00Z"}},
		{"rows out of order are sorted; a repeated row is kept once", "" +
			"01.07.2025;UTC;00:30;00:45;3;3\n" +
			"01.07.2025;UTC;00:00;00:15;1;1\n" +
			"01.07.2025;UTC;00:15;00:30;2;2\n" +
			"01.07.2025;UTC;00:30;00:45;3,0;3,00\n" +
			"01.07.2025;UTC;00:45;01:00;N.A.;N.A.\n" +
			"01.07.2025;UTC;00:45;01:00;N.E.;-\n",
			[]string{"2025-07-01T00:00Z", "2025-07-01T00:15Z", "2025-07-01T00:30Z"},
			[]string{"2025-07-01T00:45Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := parsed(t, ParseReBAPCSV, []byte(header+tt.rows))
			var points, missing []string
			for _, p := range s.Points {
				points = append(points, stamp(p.Start))
			}
			for _, m := range s.Missing {
				missing = append(missing, stamp(m))
			}
			if fmt.Sprint(points) != fmt.Sprint(tt.points) || fmt.Sprint(missing) != fmt.Sprint(tt.missing) {
				t.Errorf("points %v missing %v; want %v %v", points, missing, tt.points, tt.missing)
			}
		})
	}
}

func TestParseReBAPProblems(t *testing.T) {
	const header = "Datum;Zeitzone;von;bis;Einheit;reBAP unterdeckt;reBAP ueberdeckt\r\n"
	row := "01.07.2025;UTC;00:00;00:15;EUR/MWh;1;1\r\n"
	tests := []struct {
		name string
		data string
		want []wantProblem
	}{
		{"empty", "", []wantProblem{{"too_short", "body", "the file is empty"}}},
		{"only a BOM and blank lines", "\xef\xbb\xbf\r\n\r\n", []wantProblem{{"too_short", "body", "the file is empty"}}},
		{"only separators", ";;;\n;;\n", []wantProblem{{"too_short", "body", "the file is empty"}}},
		{"no data rows", header + "\r\n", []wantProblem{{"too_short", "body", "header but no data rows"}}},
		{"bad price with the file's line number", header + row + "\r\n" +
			"01.07.2025;UTC;00:15;00:30;EUR/MWh;abc;1\r\n",
			[]wantProblem{{"value_error", "body|line 4|reBAP unterdeckt", "price 'abc' is not a number"}}},
		{"a point is not a decimal separator", header + "01.07.2025;UTC;00:00;00:15;EUR/MWh;12.5;1\r\n",
			[]wantProblem{{"value_error", "body|line 2|reBAP unterdeckt", "price '12.5' is not a number"}}},
		{"missing Datum column", "Zeitzone;von;bis;reBAP\n" + "UTC;00:00;00:15;1\n",
			[]wantProblem{{"missing", "body|line 1|Datum", "required column Datum is missing; the header has Zeitzone, von, bis, reBAP"}}},
		{"missing von and value columns, header after blank lines", "\n\nDatum;bis\n01.07.2025;00:15\n", []wantProblem{
			{"missing", "body|line 3|reBAP unterdeckt", "required column reBAP unterdeckt is missing"},
			{"missing", "body|line 3|von", "required column von is missing"},
		}},
		{"comma-separated", "Datum,von,reBAP\n01.07.2025,00:00,1\n", []wantProblem{
			{"missing", "body|line 1|reBAP unterdeckt", "must be separated by ';'"},
			{"missing", "body|line 1|Datum", ""},
			{"missing", "body|line 1|von", ""},
		}},
		{"only one direction", "Datum;von;reBAP unterdeckt\n01.07.2025;00:00;1\n",
			[]wantProblem{{"missing", "body|line 1|reBAP ueberdeckt", "required column reBAP ueberdeckt is missing"}}},
		{"two reBAP columns of unclear meaning", "Datum;von;reBAP;reBAP alt\n01.07.2025;00:00;1;2\n",
			[]wantProblem{{"csv_header", "body|line 1", "found reBAP, reBAP alt"}}},
		{"a column twice", "Datum;von;Von;reBAP\n01.07.2025;00:00;00:00;1\n",
			[]wantProblem{{"csv_header", "body|line 1|Von", `columns "von" and "Von" are the same column`}}},
		{"zone in an unknown column", "Datum;Zeitzone von;von;reBAP\n01.07.2025;CET;00:00;1\n",
			[]wantProblem{{"csv_header", "body|line 1|Zeitzone von", "must be in a column named Zeitzone"}}},
		{"every bad cell of a file is listed", header + row +
			"31.02.2025;UTC;00:15;00:30;EUR/MWh;1;1\r\n" +
			"2025-07-01;UTC;00:15;00:30;EUR/MWh;1;1\r\n" +
			"01.07.1999;UTC;00:15;00:30;EUR/MWh;1;1\r\n" +
			"01.07.2025;UTC;00:07;00:22;EUR/MWh;1;1\r\n" +
			"01.07.2025;UTC;24:00;00:15;EUR/MWh;1;1\r\n" +
			"01.07.2025;UTC;00:15;00:45;EUR/MWh;1;1\r\n" +
			"01.07.2025;UTC;00:15;0:30;EUR/MWh;1;1\r\n" +
			"01.07.2025;EET;00:15;00:30;EUR/MWh;1;1\r\n" +
			"01.07.2025;;00:15;00:30;EUR/MWh;1;1\r\n" +
			"01.07.2025;UTC;00:15;00:30;ct/kWh;1;1\r\n" +
			"01.07.2025;UTC;00:15;00:30;EUR/MWh;1;1,2,3\r\n" +
			"01.07.2025;UTC;00:15;00:30;EUR/MWh;1\r\n" +
			"01.07.2025;UTC;00:15;00:30;EUR/MWh;1;1;1\r\n",
			[]wantProblem{
				{"value_error", "body|line 3|Datum", "date '31.02.2025' does not exist"},
				{"value_error", "body|line 4|Datum", "date '2025-07-01' is not a date dd.mm.yyyy"},
				{"value_error", "body|line 5|Datum", "outside the years 2000 to 2099"},
				{"value_error", "body|line 6|von", "von '00:07' is not on the quarter-hour grid"},
				{"value_error", "body|line 7|von", "von '24:00' is not a time HH:MM"},
				{"value_error", "body|line 8|bis", "bis '00:45' is not 15 minutes after von '00:15'"},
				{"value_error", "body|line 9|bis", "bis '0:30' is not a time HH:MM"},
				{"value_error", "body|line 10|Zeitzone", "time zone 'EET' is not UTC, CET/MEZ or CEST/MESZ"},
				{"value_error", "body|line 11|Zeitzone", "time zone '' is not"},
				{"value_error", "body|line 12|Einheit", "unit 'ct/kWh' is not EUR/MWh"},
				{"value_error", "body|line 13|reBAP ueberdeckt", "price '1,2,3' is not a number"},
				{"csv_cell_count", "body|line 14", "the line has 6 cells, too few"},
				{"csv_cell_count", "body|line 15", "the line has 8 cells, more than the 7 columns"},
			}},
		{"duplicate interval with a different price", header + row +
			"01.07.2025;UTC;00:15;00:30;EUR/MWh;1;1\r\n" +
			"01.07.2025;CET;01:00;01:15;EUR/MWh;1;2\r\n" +
			"01.07.2025;UTC;00:15;00:30;EUR/MWh;N.A.;N.A.\r\n",
			[]wantProblem{
				{"csv_conflict", "body|line 4|reBAP unterdeckt", "duplicate interval 2025-07-01T00:00Z with a different price than line 2"},
				{"csv_conflict", "body|line 5|reBAP unterdeckt", "duplicate interval 2025-07-01T00:15Z with a different price than line 3"},
			}},
		{"unclosed quote", header + row + `"01.07.2025;UTC` + "\r\n",
			[]wantProblem{{"csv_syntax", "body|line 3", "not valid CSV"}}},
		{"more than five years", "Datum;von;reBAP\n01.01.2001;00:00;1\n01.01.2030;00:00;1\n",
			[]wantProblem{{"value_error", "body", "more than 5 years"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseReBAPCSV([]byte(tt.data))
			checkProblems(t, err, tt.want...)
		})
	}
}

func TestParseReBAPProblemsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("Datum;von;reBAP\n")
	for range 3000 {
		b.WriteString("01.07.2025;00:00;x\n")
	}
	_, err := ParseReBAPCSV([]byte(b.String()))
	if got := len(problemsOf(t, err)); got != ingest.MaxProblems {
		t.Errorf("%d problems, want %d", got, ingest.MaxProblems)
	}
}

func TestParseValue(t *testing.T) {
	tests := []struct {
		in     string
		want   float64
		absent bool
		ok     bool
	}{
		{"148,03", 148.03, false, true},
		{"1.234,56", 1234.56, false, true},
		{"-1.234.567,891", -1234567.891, false, true},
		{"+12", 12, false, true},
		{"-12,5", -12.5, false, true},
		{"0", 0, false, true},
		{"1234,5", 1234.5, false, true},
		{"1.234", 1234, false, true},
		{"", 0, true, true},
		{"-", 0, true, true},
		{"N.A.", 0, true, true},
		{"n.e.", 0, true, true},
		{"12.5", 0, false, false},
		{"1234.567", 0, false, false},
		{"1.23.456", 0, false, false},
		{".123", 0, false, false},
		{"1.", 0, false, false},
		{",5", 0, false, false},
		{"5,", 0, false, false},
		{"1,2,3", 0, false, false},
		{"--1", 0, false, false},
		{"1e5", 0, false, false},
		{"NaN", 0, false, false},
		{"Inf", 0, false, false},
		{strings.Repeat("9", 400), 0, false, false},
	}
	for _, tt := range tests {
		v, absent, ok := parseValue(tt.in)
		if v != tt.want || absent != tt.absent || ok != tt.ok {
			t.Errorf("parseValue(%q) = %v, %v, %v; want %v, %v, %v", tt.in, v, absent, ok, tt.want, tt.absent, tt.ok)
		}
	}
}
