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

func TestParseSMARDSpringForwardHourly(t *testing.T) {
	s := parsed(t, ParseSMARD, readFile(t, "smard_2025-03-30_hourly.json"))
	day := pipeline.NewDay(2025, time.March, 30)
	checkSource(t, s, price.Spot, "smard-json")
	if len(s.Points) != 23 || len(s.Missing) != 0 {
		t.Fatalf("%d points, %d missing; want 23, 0", len(s.Points), len(s.Missing))
	}
	first, last := s.Points[0], s.Points[22]
	if !first.Start.Equal(day.Start()) || !first.Start.Equal(utc("2025-03-29T23:00Z")) {
		t.Errorf("first start %s, want the day's start %s", first.Start, day.Start())
	}
	if end := last.Start.Add(time.Duration(last.Minutes) * time.Minute); !end.Equal(day.End()) || !end.Equal(utc("2025-03-30T22:00Z")) {
		t.Errorf("last end %s, want the day's end %s", end, day.End())
	}
	for _, p := range s.Points {
		if p.Minutes != 60 || p.Price != p.PriceLong {
			t.Fatalf("point %+v: want minutes 60 and price_long = price", p)
		}
	}
	if first.Price != 92.15 || s.Points[12].Price != -0.01 || s.Points[13].Price != -5.12 {
		t.Errorf("prices %v %v %v", first.Price, s.Points[12].Price, s.Points[13].Price)
	}
	if q := price.QuarterHours(s.Points); len(q) != day.Intervals() {
		t.Errorf("%d quarter-hours, want %d", len(q), day.Intervals())
	}
}

func TestParseSMARDFallBackQuarterHourly(t *testing.T) {
	s := parsed(t, ParseSMARD, readFile(t, "smard_2026-10-25_qh.json"))
	day := pipeline.NewDay(2026, time.October, 25)
	if len(s.Points) != 100 || len(s.Points) != day.Intervals() || len(s.Missing) != 0 {
		t.Fatalf("%d points, %d missing; want %d, 0", len(s.Points), len(s.Missing), day.Intervals())
	}
	for i, p := range s.Points {
		if want := day.Start().Add(time.Duration(i) * 15 * time.Minute); !p.Start.Equal(want) || p.Minutes != 15 {
			t.Fatalf("point %d: %s/%d, want %s/15", i, p.Start, p.Minutes, want)
		}
	}
	if !s.Points[0].Start.Equal(utc("2026-10-24T22:00Z")) || !s.Points[99].Start.Add(15*time.Minute).Equal(day.End()) {
		t.Errorf("points span %s to %s", s.Points[0].Start, s.Points[99].Start)
	}
}

// smardDoc builds a chart document from points; a nil price is null.
func smardDoc(points ...any) []byte {
	var b strings.Builder
	b.WriteString(`{"meta_data": {"version": 1}, "series": [`)
	for i := 0; i < len(points); i += 2 {
		if i > 0 {
			b.WriteString(", ")
		}
		v := "null"
		if points[i+1] != nil {
			v = fmt.Sprint(points[i+1])
		}
		fmt.Fprintf(&b, "[%d, %s]", utc(points[i].(string)).UnixMilli(), v)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

func TestParseSMARDMissingAndResolution(t *testing.T) {
	tests := []struct {
		name    string
		doc     []byte
		minutes int
		points  []string
		missing []string
	}{
		{"null is missing, never zero", smardDoc("2025-06-01T00:00Z", 10.5, "2025-06-01T01:00Z", nil, "2025-06-01T02:00Z", 0),
			60, []string{"2025-06-01T00:00Z", "2025-06-01T02:00Z"}, []string{"2025-06-01T01:00Z"}},
		{"hourly gap", smardDoc("2025-06-01T00:00Z", 1, "2025-06-01T01:00Z", 2, "2025-06-01T04:00Z", 3),
			60, []string{"2025-06-01T00:00Z", "2025-06-01T01:00Z", "2025-06-01T04:00Z"}, []string{"2025-06-01T02:00Z", "2025-06-01T03:00Z"}},
		{"quarter-hourly gap and trailing nulls in time order", smardDoc("2025-11-01T00:00Z", 1, "2025-11-01T00:15Z", 2, "2025-11-01T00:45Z", 3, "2025-11-01T01:00Z", nil, "2025-11-01T01:15Z", nil),
			15, []string{"2025-11-01T00:00Z", "2025-11-01T00:15Z", "2025-11-01T00:45Z"}, []string{"2025-11-01T00:30Z", "2025-11-01T01:00Z", "2025-11-01T01:15Z"}},
		{"single point before quarter-hourly delivery", smardDoc("2025-09-30T21:00Z", 80),
			60, []string{"2025-09-30T21:00Z"}, nil},
		{"single point from delivery 1 October 2025", smardDoc("2025-09-30T22:00Z", 80),
			15, []string{"2025-09-30T22:00Z"}, nil},
		{"hourly points after October 2025 stay hourly", smardDoc("2025-12-01T10:00Z", -3.5, "2025-12-01T11:00Z", 4),
			60, []string{"2025-12-01T10:00Z", "2025-12-01T11:00Z"}, nil},
		{"only nulls", smardDoc("2025-12-01T10:00Z", nil, "2025-12-01T10:30Z", nil, "2025-12-01T10:45Z", nil),
			15, nil, []string{"2025-12-01T10:00Z", "2025-12-01T10:15Z", "2025-12-01T10:30Z", "2025-12-01T10:45Z"}},
		{"BOM and integral exponent", []byte("\xef\xbb\xbf" + `{"series": [[1.7532e12, 5e1]]}`),
			60, []string{"2025-07-22T16:00Z"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := parsed(t, ParseSMARD, tt.doc)
			var points, missing []string
			for _, p := range s.Points {
				if p.Minutes != tt.minutes || p.Price != p.PriceLong {
					t.Errorf("point %+v: want minutes %d", p, tt.minutes)
				}
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

func TestParseSMARDPrices(t *testing.T) {
	s, err := ParseSMARD(smardDoc("2025-06-01T00:00Z", -500, "2025-06-01T01:00Z", 4000.125, "2025-06-01T02:00Z", 0))
	if err != nil {
		t.Fatal(err)
	}
	if got := []float64{s.Points[0].Price, s.Points[1].Price, s.Points[2].Price}; fmt.Sprint(got) != "[-500 4000.125 0]" {
		t.Errorf("prices %v", got)
	}
}

func TestParseSMARDProblems(t *testing.T) {
	ms := func(s string) int64 { return utc(s).UnixMilli() }
	tests := []struct {
		name string
		doc  string
		want []wantProblem
	}{
		{"empty", " \n", []wantProblem{{"too_short", "body", "the file is empty"}}},
		{"not JSON", `{"series": [[1, 2]`, []wantProblem{{"json_invalid", "body", "not valid JSON"}}},
		{"not an object", `[[1743289200000, 1]]`, []wantProblem{{"value_error", "body", "must be a JSON object with a series array, not an array"}}},
		{"no series", `{"meta_data": {}}`, []wantProblem{{"missing", "body|series", "field series is missing"}}},
		{"series not an array", `{"series": {"a": 1}}`, []wantProblem{{"value_error", "body|series", "not an object"}}},
		{"series null", `{"series": null}`, []wantProblem{{"value_error", "body|series", "not null"}}},
		{"no points", `{"series": []}`, []wantProblem{{"too_short", "body|series", "no points"}}},
		{"element not an array", `{"series": [5]}`, []wantProblem{{"value_error", "body|series|0", "not a number"}}},
		{"element of 3", `{"series": [[1743289200000, 1, 2]]}`, []wantProblem{{"value_error", "body|series|0", "of 2 elements, not 3"}}},
		{"epoch a string", `{"series": [["1743289200000", 1]]}`, []wantProblem{{"value_error", "body|series|0|0", "epoch_ms must be a number of milliseconds, not a string"}}},
		{"epoch null", `{"series": [[null, 1]]}`, []wantProblem{{"value_error", "body|series|0|0", "not null"}}},
		{"epoch fraction", `{"series": [[1743289200000.5, 1]]}`, []wantProblem{{"value_error", "body|series|0|0", "not a whole number"}}},
		{"epoch seconds", `{"series": [[1743289200, 1]]}`, []wantProblem{{"value_error", "body|series|0|0", "seconds instead of milliseconds"}}},
		{"price a string", `{"series": [[1743289200000, "abc"]]}`, []wantProblem{{"value_error", "body|series|0|1", `price "abc" is not a number or null`}}},
		{"price too large", `{"series": [[1743289200000, 1e999]]}`, []wantProblem{{"value_error", "body|series|0|1", "out of range"}}},
		{"every bad element is listed", `{"series": [[1743289200000, "x"], [1743292800000, 1], ["y", 2], true]}`, []wantProblem{
			{"value_error", "body|series|0|1", `price "x"`},
			{"value_error", "body|series|2|0", "not a string"},
			{"value_error", "body|series|3", "not a boolean"},
		}},
		{"descending", fmt.Sprintf(`{"series": [[%d, 1], [%d, 2], [%d, 3]]}`, ms("2025-06-01T01:00Z"), ms("2025-06-01T00:00Z"), ms("2025-06-01T02:00Z")),
			[]wantProblem{{"value_error", "body|series|1|0", "ascending order: 2025-06-01T00:00Z is before the previous point (series[0])"}}},
		{"repeated", fmt.Sprintf(`{"series": [[%d, 1], [%d, 1]]}`, ms("2025-06-01T01:00Z"), ms("2025-06-01T01:00Z")),
			[]wantProblem{{"value_error", "body|series|1|0", "is the same as the previous point"}}},
		{"30-minute spacing", fmt.Sprintf(`{"series": [[%d, 1], [%d, 2]]}`, ms("2025-06-01T01:00Z"), ms("2025-06-01T01:30Z")),
			[]wantProblem{{"value_error", "body|series", "smallest spacing between points is 30m0s; it must be 15 or 60 minutes"}}},
		{"off the hourly grid", fmt.Sprintf(`{"series": [[%d, 1], [%d, 2]]}`, ms("2025-06-01T01:30Z"), ms("2025-06-01T02:30Z")),
			[]wantProblem{
				{"value_error", "body|series|0|0", "point 2025-06-01T01:30Z is not on the 60-minute grid"},
				{"value_error", "body|series|1|0", "not on the 60-minute grid"},
			}},
		{"off the quarter-hour grid", fmt.Sprintf(`{"series": [[%d, 1]]}`, ms("2025-11-01T01:05Z")),
			[]wantProblem{{"value_error", "body|series|0|0", "not on the 15-minute grid"}}},
		{"more than five years", fmt.Sprintf(`{"series": [[%d, 1], [%d, 2], [%d, 2]]}`, ms("2001-01-01T00:00Z"), ms("2001-01-01T01:00Z"), ms("2030-01-01T00:00Z")),
			[]wantProblem{{"value_error", "body", "spans 2001-01-01T00:00Z to 2030-01-01T00:00Z, more than 5 years"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSMARD([]byte(tt.doc))
			checkProblems(t, err, tt.want...)
		})
	}
}

func TestParseSMARDProblemInput(t *testing.T) {
	_, err := ParseSMARD([]byte(`{"series": [[1743289200000, "12,5"]]}`))
	if p := problemsOf(t, err)[0]; p.Input != "12,5" {
		t.Errorf("input %#v, want the offending string", p.Input)
	}
}

func TestParseSMARDProblemsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"series": [`)
	for i := range 2500 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`[1743289200000, "x"]`)
	}
	b.WriteString("]}")
	_, err := ParseSMARD([]byte(b.String()))
	if got := len(problemsOf(t, err)); got != ingest.MaxProblems {
		t.Errorf("%d problems, want %d", got, ingest.MaxProblems)
	}
}
