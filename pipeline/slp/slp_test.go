package slp

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
)

func day(t testing.TB, s string) pipeline.Day {
	t.Helper()
	d, err := pipeline.ParseDay(s)
	if err != nil {
		t.Fatalf("ParseDay(%q): %v", s, err)
	}
	return d
}

func mustQuarters(t testing.TB, name, d string, dt calendar.DayType) []float64 {
	t.Helper()
	v, err := Quarters(name, day(t, d), dt)
	if err != nil {
		t.Fatalf("Quarters(%s, %s, %s): %v", name, d, dt, err)
	}
	return v
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestCanonical(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" = unknown
	}{
		{"H25", "H25"},
		{"h25", "H25"},
		{"g25", "G25"},
		{"L25", "L25"},
		{"p25", "P25"},
		{"s25", "S25"},
		{"H0", "H0"},
		{"h0", "H0"},
		{"g0", "G0"},
		{"G6", "G6"},
		{"l2", "L2"},
		{" L1 ", "L1"},
		{"G7", ""},
		{"L3", ""},
		{"H26", ""},
		{"H", ""},
		{"", ""},
		{"Y0", ""},
	}
	for _, tt := range tests {
		got, ok := Canonical(tt.in)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
	if got := len(Names()); got != 16 {
		t.Errorf("Names() has %d entries, want 16", got)
	}
}

func TestQuartersInvalid(t *testing.T) {
	tests := []struct {
		name string
		day  pipeline.Day
		dt   calendar.DayType
	}{
		{"H1", pipeline.NewDay(2026, time.June, 3), calendar.Workday},
		{"", pipeline.NewDay(2026, time.June, 3), calendar.Workday},
		{"G25", pipeline.NewDay(2026, time.June, 3), "SO"},
		{"G25", pipeline.NewDay(2026, time.June, 3), ""},
		{"G25", pipeline.Day{}, calendar.Workday},
		{"G0", pipeline.NewDay(2026, time.February, 30), calendar.Workday},
		{"G0", pipeline.NewDay(2026, 13, 1), calendar.Workday},
	}
	tab := NewTable()
	for _, tt := range tests {
		for which, f := range map[string]func(string, pipeline.Day, calendar.DayType) ([]float64, error){
			"Quarters": Quarters, "Table.Quarters": tab.Quarters,
		} {
			v, err := f(tt.name, tt.day, tt.dt)
			if err == nil {
				t.Errorf("%s(%q, %v, %q) = %d values, want error", which, tt.name, tt.day, tt.dt, len(v))
			} else if k := pipeline.KindOf(err); k != pipeline.Invalid {
				t.Errorf("%s(%q, %v, %q) kind = %s (%v), want invalid", which, tt.name, tt.day, tt.dt, k, err)
			}
		}
	}
	if tab.Len() != 0 {
		t.Errorf("errors were cached: %d entries", tab.Len())
	}
}

func TestDynamisation(t *testing.T) {
	// Expected values evaluated from the BDEW polynomial in its published form
	// (power sums, not the Horner scheme used in the code).
	tests := []struct {
		t    int
		want float64
	}{
		{1, 1.242030119608},
		{14, 1.256503820928},
		{100, 1.0288},
		{183, 0.794854896568}, // near the summer minimum
		{200, 0.7848},
		{300, 1.0168},
		{365, 1.257215955},
		{366, 1.259685225088},
	}
	for _, tt := range tests {
		if got := Dynamisation(tt.t); !near(got, tt.want, 1e-9) {
			t.Errorf("Dynamisation(%d) = %.10f, want %.10f", tt.t, got, tt.want)
		}
	}
	for _, tt := range []struct {
		name string
		want bool
	}{{"H0", true}, {"h25", true}, {"P25", true}, {"S25", true}, {"G25", false}, {"L25", false}, {"G0", false}, {"L2", false}, {"X", false}} {
		if got := IsDynamic(tt.name); got != tt.want {
			t.Errorf("IsDynamic(%q) = %v", tt.name, got)
		}
	}
}

// TestValues spot-checks single cells against the CSV files, which also proves
// the column mapping (month, day type, season, weekday) and the 1999 unit
// conversion (x 250) and the dynamisation of single values.
func TestValues(t *testing.T) {
	tests := []struct {
		name string
		day  string
		dt   calendar.DayType
		q    int
		want float64
	}{
		// g25.csv Januar SA/FT/WT, row 00:00-00:15, served on any January day.
		{"G25", "2026-01-14", calendar.Workday, 0, 14.832},
		{"G25", "2026-01-14", calendar.Saturday, 0, 15.045},
		{"G25", "2026-01-14", calendar.SundayHoliday, 0, 14.658},
		// g25.csv Dezember WT, rows 00:15-00:30 and 23:45-00:00.
		{"G25", "2026-12-02", calendar.Workday, 1, 15.337},
		{"G25", "2026-12-02", calendar.Workday, 95, 15.908},
		// s25.csv Januar SA 00:00-00:15 = 48.225, dynamised for 2026-01-01 (t=1).
		{"S25", "2026-01-01", calendar.Saturday, 0, 48.225 * 1.242030119608},
		// 1999 set, H0 winter working day 00:00 = 0.0676 kW (67.6 W) -> 16.9 kWh, t=14.
		{"H0", "2026-01-14", calendar.Workday, 0, 16.9 * 1.256503820928},
		// G0 summer working day 12:00 = 0.20504 kW -> 51.26 kWh.
		{"G0", "2026-07-15", calendar.Workday, 48, 51.26},
		// G0 winter working day 00:00 = 0.06552 kW.
		{"g0", "2026-12-01", calendar.Workday, 0, 16.38},
	}
	for _, tt := range tests {
		v := mustQuarters(t, tt.name, tt.day, tt.dt)
		if !near(v[tt.q], tt.want, 1e-9) {
			t.Errorf("%s %s %s [%d] = %.9f, want %.9f", tt.name, tt.day, tt.dt, tt.q, v[tt.q], tt.want)
		}
	}
}

func TestSeasonOf(t *testing.T) {
	tests := []struct {
		day  string
		want int
	}{
		{"2026-01-01", winter},
		{"2026-03-20", winter},
		{"2026-03-21", transition},
		{"2026-05-14", transition},
		{"2026-05-15", summer},
		{"2026-09-14", summer},
		{"2026-09-15", transition},
		{"2026-10-31", transition},
		{"2026-11-01", winter},
		{"2026-12-31", winter},
		{"2024-02-29", winter},
	}
	for _, tt := range tests {
		if got := seasonOf(day(t, tt.day)); got != tt.want {
			t.Errorf("seasonOf(%s) = %d, want %d", tt.day, got, tt.want)
		}
	}
}

// TestDayTypeSelection shows that the day type argument, not the weekday,
// picks the table column, and that the columns differ.
func TestDayTypeSelection(t *testing.T) {
	tests := []struct {
		name     string
		wed, sat string // a Wednesday and a Saturday in the same month and season
	}{
		{"G25", "2026-08-12", "2026-08-15"},
		{"L25", "2026-08-12", "2026-08-15"},
		{"G0", "2026-08-12", "2026-08-15"},
		{"G1", "2026-01-14", "2026-01-17"},
		{"L0", "2026-01-14", "2026-01-17"},
	}
	for _, tt := range tests {
		wdWT := mustQuarters(t, tt.name, tt.wed, calendar.SLPDayType(day(t, tt.wed), ""))
		saSA := mustQuarters(t, tt.name, tt.sat, calendar.SLPDayType(day(t, tt.sat), ""))
		if slices.Equal(wdWT, saSA) {
			t.Errorf("%s: Wednesday %s and Saturday %s have equal profiles", tt.name, tt.wed, tt.sat)
		}
		// The Saturday column served on the Wednesday is the Saturday's profile.
		if wdSA := mustQuarters(t, tt.name, tt.wed, calendar.Saturday); !slices.Equal(wdSA, saSA) {
			t.Errorf("%s: SA on %s differs from SA on %s", tt.name, tt.wed, tt.sat)
		}
		ft := mustQuarters(t, tt.name, tt.wed, calendar.SundayHoliday)
		if slices.Equal(ft, wdWT) || slices.Equal(ft, saSA) {
			t.Errorf("%s: FT equals WT or SA", tt.name)
		}
	}
	// The 1999 set changes with the season, the 2025 set with the month.
	if slices.Equal(mustQuarters(t, "G0", "2026-01-14", calendar.Workday), mustQuarters(t, "G0", "2026-07-15", calendar.Workday)) {
		t.Error("G0: winter and summer working days are equal")
	}
	if !slices.Equal(mustQuarters(t, "G0", "2026-06-03", calendar.Workday), mustQuarters(t, "G0", "2026-07-15", calendar.Workday)) {
		t.Error("G0: two summer working days differ")
	}
	if slices.Equal(mustQuarters(t, "G25", "2026-06-03", calendar.Workday), mustQuarters(t, "G25", "2026-07-15", calendar.Workday)) {
		t.Error("G25: June and July working days are equal")
	}
}

func TestRowsOf(t *testing.T) {
	seq := func(from, to int) []int { // from..to inclusive
		var s []int
		for i := from; i <= to; i++ {
			s = append(s, i)
		}
		return s
	}
	tests := []struct {
		day  string
		want []int
	}{
		{"2026-03-28", seq(0, 95)},
		{"2026-03-29", slices.Concat(seq(0, 7), seq(12, 95))},              // 02:00-03:00 dropped
		{"2026-10-25", slices.Concat(seq(0, 11), seq(8, 11), seq(12, 95))}, // 02:00-03:00 twice
		{"2025-03-30", slices.Concat(seq(0, 7), seq(12, 95))},
		{"2025-10-26", slices.Concat(seq(0, 11), seq(8, 11), seq(12, 95))},
		{"2024-02-29", seq(0, 95)},
	}
	for _, tt := range tests {
		got, err := rowsOf(day(t, tt.day))
		if err != nil {
			t.Fatalf("rowsOf(%s): %v", tt.day, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("rowsOf(%s) = %v\nwant %v", tt.day, got, tt.want)
		}
	}
}

// TestDSTDays checks lengths for every profile and that the DST days serve the
// table of an ordinary day of the same month and day type with rows 8..11
// dropped (March) or repeated (October).
func TestDSTDays(t *testing.T) {
	for _, name := range Names() {
		for _, tt := range []struct {
			day  string
			want int
		}{{"2026-03-29", 92}, {"2026-03-22", 96}, {"2026-10-25", 100}, {"2027-10-31", 100}} {
			if v := mustQuarters(t, name, tt.day, calendar.SundayHoliday); len(v) != tt.want {
				t.Errorf("%s %s: %d values, want %d", name, tt.day, len(v), tt.want)
			}
		}
	}
	tests := []struct {
		name, dst, ordinary string
		want                func(o []float64) []float64
	}{
		{"G25", "2026-03-29", "2026-03-22", func(o []float64) []float64 { return slices.Concat(o[:8], o[12:]) }},
		{"L25", "2026-10-25", "2026-10-18", func(o []float64) []float64 { return slices.Concat(o[:12], o[8:12], o[12:]) }},
		{"G3", "2026-10-25", "2026-10-18", func(o []float64) []float64 { return slices.Concat(o[:12], o[8:12], o[12:]) }},
		{"G3", "2026-03-29", "2026-03-22", func(o []float64) []float64 { return slices.Concat(o[:8], o[12:]) }},
	}
	for _, tt := range tests {
		got := mustQuarters(t, tt.name, tt.dst, calendar.SundayHoliday)
		want := tt.want(mustQuarters(t, tt.name, tt.ordinary, calendar.SundayHoliday))
		if !slices.Equal(got, want) {
			t.Errorf("%s %s: rows differ from %s with 02:00-03:00 adjusted", tt.name, tt.dst, tt.ordinary)
		}
	}
}

// TestYearSums sums each profile over a whole year with the national holiday
// calendar. The expected sums were computed independently from the CSV files
// with a separate script (same day-type, season, DST and dynamisation rules);
// every profile must also be within 2 % of 1,000,000 kWh.
func TestYearSums(t *testing.T) {
	tests := []struct {
		name string
		year int
		want float64
	}{
		{"H25", 2025, 999900.817},
		{"H25", 2026, 999264.450},
		{"G25", 2025, 1000341.303},
		{"G25", 2026, 1002690.328},
		{"L25", 2025, 1000214.325},
		{"L25", 2026, 1000393.581},
		{"P25", 2025, 1000015.703},
		{"P25", 2026, 1000044.943},
		{"S25", 2025, 1000028.013},
		{"S25", 2026, 1000329.523},
		{"H0", 2025, 998823.239},
		{"H0", 2026, 998145.086},
		{"G0", 2025, 1004621.220},
		{"G1", 2025, 1009087.890},
		{"G1", 2026, 1015602.290},
		{"G2", 2025, 1001747.680},
		{"G3", 2025, 1001527.000},
		{"G4", 2025, 1004532.310},
		{"G5", 2025, 1005252.330},
		{"G6", 2025, 997493.750},
		{"G6", 2026, 996174.250},
		{"L0", 2025, 999935.320},
		{"L1", 2025, 1001662.020},
		{"L2", 2025, 999959.480},
	}
	for _, tt := range tests {
		sum, raw := 0.0, 0.0
		for d := pipeline.NewDay(tt.year, time.January, 1); d.Year == tt.year; d = d.AddDays(1) {
			v, err := Quarters(tt.name, d, calendar.SLPDayType(d, ""))
			if err != nil {
				t.Fatal(err)
			}
			f := 1.0
			if IsDynamic(tt.name) {
				f = Dynamisation(yearDay(d))
			}
			for _, x := range v {
				sum += x
				raw += x / f
			}
		}
		if !near(sum, tt.want, 0.01) {
			t.Errorf("%s %d: sum %.3f kWh, want %.3f", tt.name, tt.year, sum, tt.want)
		}
		if !near(sum, 1e6, 0.02e6) {
			t.Errorf("%s %d: sum %.0f kWh, not within 2 %% of 1,000,000", tt.name, tt.year, sum)
		}
		t.Logf("%s %d: %.0f kWh (%.0f without dynamisation)", tt.name, tt.year, sum, raw)
	}
}

func TestTable(t *testing.T) {
	tab := NewTable()
	d := day(t, "2026-10-25")
	a, err := tab.Quarters("h25", d, calendar.SundayHoliday)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tab.Quarters("H25", d, calendar.SundayHoliday)
	if err != nil {
		t.Fatal(err)
	}
	if &a[0] != &b[0] {
		t.Error("h25 and H25 got different slices; want one shared entry")
	}
	if want := mustQuarters(t, "H25", "2026-10-25", calendar.SundayHoliday); !slices.Equal(a, want) {
		t.Error("cached values differ from Quarters")
	}
	c, err := tab.Quarters("H25", d, calendar.Saturday)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a, c) {
		t.Error("day type is not part of the cache key")
	}
	e, err := tab.Quarters("H25", d.AddDays(-7), calendar.SundayHoliday)
	if err != nil {
		t.Fatal(err)
	}
	if len(e) != 96 || slices.Equal(a[:96], e) {
		t.Error("day is not part of the cache key")
	}
	if tab.Len() != 3 {
		t.Errorf("Len() = %d, want 3", tab.Len())
	}
}

// TestTableConcurrent is meant for -race: many goroutines ask for overlapping
// keys and must all receive the single stored slice per key.
func TestTableConcurrent(t *testing.T) {
	tab := NewTable()
	names := []string{"H25", "g25", "H0", "G0", "l25"}
	days := []pipeline.Day{day(t, "2026-03-29"), day(t, "2026-06-03"), day(t, "2026-10-25")}
	var wg sync.WaitGroup
	results := make([][]*float64, 8)
	for g := range results {
		wg.Go(func() {
			for i := 0; i < 200; i++ {
				for _, n := range names {
					for _, d := range days {
						v, err := tab.Quarters(n, d, calendar.Workday)
						if err != nil {
							t.Error(err)
							return
						}
						if i == 0 {
							results[g] = append(results[g], &v[0])
						}
					}
				}
			}
		})
	}
	wg.Wait()
	for g := 1; g < len(results); g++ {
		if !slices.Equal(results[g], results[0]) {
			t.Fatalf("goroutine %d got other slices than goroutine 0", g)
		}
	}
	// Values fetched once per goroutine in the same order: the slices must be
	// the stored ones, so the table holds exactly names x days entries.
	if got, want := tab.Len(), len(names)*len(days); got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
}

func TestTableBound(t *testing.T) {
	tab := NewTable()
	d := pipeline.NewDay(2000, time.January, 1)
	dts := []calendar.DayType{calendar.Workday, calendar.Saturday, calendar.SundayHoliday}
	n := 0
	for n < maxEntries {
		for _, name := range Names() {
			for _, dt := range dts {
				if n == maxEntries {
					break
				}
				if _, err := tab.Quarters(name, d, dt); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
		d = d.AddDays(1)
	}
	if tab.Len() != maxEntries {
		t.Fatalf("Len() = %d, want %d", tab.Len(), maxEntries)
	}
	if _, err := tab.Quarters("G25", d.AddDays(1), calendar.Workday); err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 1 {
		t.Errorf("Len() after overflow = %d, want 1", tab.Len())
	}
}

// TestParseRejects feeds broken copies of the embedded files to the parsers.
func TestParseRejects(t *testing.T) {
	g25, err := dataFS.ReadFile("data/g25.csv")
	if err != nil {
		t.Fatal(err)
	}
	selp, err := dataFS.ReadFile("data/selp_series_1999.csv")
	if err != nil {
		t.Fatal(err)
	}
	edit := func(b []byte, old, new string) []byte {
		s := string(b)
		if !strings.Contains(s, old) {
			t.Fatalf("%q not in file", old)
		}
		return []byte(strings.Replace(s, old, new, 1))
	}
	for name, b := range map[string][]byte{
		"unknown month":    edit(g25, ",Januar,", ",Janvier,"),
		"repeated column":  edit(g25, "SA,FT,WT,SA,FT,WT", "SA,SA,WT,SA,FT,WT"),
		"unknown day type": edit(g25, "[kWh],SA", "[kWh],SO"),
		"wrong row label":  edit(g25, "00:15-00:30", "00:15-00:45"),
		"bad number":       edit(g25, "14.832", "14,832"),
		"missing last row": g25[:strings.LastIndex(strings.TrimRight(string(g25), "\r\n"), "\n")+1],
	} {
		if _, err := parse2025(b); err == nil {
			t.Errorf("parse2025 (%s) succeeded", name)
		}
	}
	for name, b := range map[string][]byte{
		"unknown period":       edit(selp, ",summer,1,", ",spring,1,"),
		"weekday out of range": edit(selp, ",summer,1,", ",summer,8,"),
		"working days differ":  edit(selp, "2007-01-02 00:00:00,summer,2,0.086360", "2007-01-02 00:00:00,summer,2,0.086361"),
		"repeated row":         edit(selp, "2007-01-01 00:15:00,summer,1,", "2007-01-01 00:00:00,summer,1,"),
		"odd time":             edit(selp, "2007-01-01 00:15:00", "2007-01-01 00:10:00"),
		"header":               edit(selp, ",period,weekday,", ",season,weekday,"),
	} {
		if _, err := parse1999(b); err == nil {
			t.Errorf("parse1999 (%s) succeeded", name)
		}
	}
	// The untouched files parse.
	if _, err := parse2025(g25); err != nil {
		t.Errorf("parse2025(g25.csv): %v", err)
	}
	if _, err := parse1999(selp); err != nil {
		t.Errorf("parse1999(selp_series_1999.csv): %v", err)
	}
}

func BenchmarkTableQuartersHit(b *testing.B) {
	tab := NewTable()
	d := pipeline.NewDay(2026, time.June, 3)
	if _, err := tab.Quarters("H25", d, calendar.Workday); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tab.Quarters("H25", d, calendar.Workday); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTableQuartersHitParallel(b *testing.B) {
	tab := NewTable()
	d := pipeline.NewDay(2026, time.June, 3)
	names := []string{"H25", "G25", "L25", "H0", "G0"}
	for _, n := range names {
		if _, err := tab.Quarters(n, d, calendar.Workday); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := tab.Quarters(names[i%len(names)], d, calendar.Workday); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

func BenchmarkQuartersUncached(b *testing.B) {
	d := pipeline.NewDay(2026, time.October, 25)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Quarters("H25", d, calendar.SundayHoliday); err != nil {
			b.Fatal(err)
		}
	}
}
