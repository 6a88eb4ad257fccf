package calendar

import (
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

func day(t *testing.T, s string) pipeline.Day {
	t.Helper()
	d, err := pipeline.ParseDay(s)
	if err != nil {
		t.Fatalf("ParseDay(%q): %v", s, err)
	}
	return d
}

func TestEaster(t *testing.T) {
	tests := []struct {
		year int
		want string
	}{
		{1818, "1818-03-22"}, // earliest possible date
		{1943, "1943-04-25"}, // latest possible date
		{2000, "2000-04-23"},
		{2008, "2008-03-23"},
		{2019, "2019-04-21"},
		{2024, "2024-03-31"},
		{2025, "2025-04-20"},
		{2026, "2026-04-05"},
		{2027, "2027-03-28"},
		{2038, "2038-04-25"},
	}
	for _, tt := range tests {
		if got := Easter(tt.year).String(); got != tt.want {
			t.Errorf("Easter(%d) = %s, want %s", tt.year, got, tt.want)
		}
	}
}

func TestParseState(t *testing.T) {
	tests := []struct {
		in      string
		want    State
		wantErr bool
	}{
		{"BY", BY, false},
		{"by", BY, false},
		{" sn ", SN, false},
		{"DE-TH", TH, false},
		{"de-hb", HB, false},
		{"", "", false},
		{"XX", "", true},
		{"DE", "", true},
		{"Bayern", "", true},
		{"B", "", true},
	}
	for _, tt := range tests {
		got, err := ParseState(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseState(%q) = %q, want error", tt.in, got)
			} else if pipeline.KindOf(err) != pipeline.Invalid {
				t.Errorf("ParseState(%q) kind = %s, want invalid", tt.in, pipeline.KindOf(err))
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseState(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, code := range []string{"BW", "BY", "BE", "BB", "HB", "HH", "HE", "MV", "NI", "NW", "RP", "SL", "SN", "ST", "SH", "TH"} {
		if got, err := ParseState(code); err != nil || string(got) != code {
			t.Errorf("ParseState(%q) = %q, %v", code, got, err)
		}
	}
}

func TestHoliday(t *testing.T) {
	tests := []struct {
		day  string
		st   State
		want string // "" = no holiday
	}{
		// National holidays 2026, for the national calendar and any state.
		{"2026-01-01", "", "Neujahr"},
		{"2026-04-03", "", "Karfreitag"},
		{"2026-04-06", "HH", "Ostermontag"},
		{"2026-05-01", "", "Tag der Arbeit"},
		{"2026-05-14", "NW", "Christi Himmelfahrt"},
		{"2026-05-25", "", "Pfingstmontag"},
		{"2026-10-03", "BY", "Tag der Deutschen Einheit"},
		{"2026-12-25", "", "1. Weihnachtstag"},
		{"2026-12-26", "SN", "2. Weihnachtstag"},
		{"2025-04-18", "", "Karfreitag"},
		{"2025-05-29", "", "Christi Himmelfahrt"},
		{"2025-06-09", "", "Pfingstmontag"},
		{"2024-03-29", "", "Karfreitag"},
		{"2024-04-01", "", "Ostermontag"},
		// Not holidays.
		{"2026-04-05", "", ""}, // Easter Sunday: a Sunday, not a national holiday
		{"2026-12-24", "", ""},
		{"2026-12-31", "BY", ""},
		{"2026-04-07", "", ""},
		// Heilige Drei Koenige.
		{"2026-01-06", "BW", "Heilige Drei Koenige"},
		{"2026-01-06", "BY", "Heilige Drei Koenige"},
		{"2026-01-06", "ST", "Heilige Drei Koenige"},
		{"2026-01-06", "NW", ""},
		{"2026-01-06", "", ""},
		// Frauentag: BE since 2019, MV since 2023.
		{"2026-03-08", "BE", "Internationaler Frauentag"},
		{"2019-03-08", "BE", "Internationaler Frauentag"},
		{"2018-03-08", "BE", ""},
		{"2023-03-08", "MV", "Internationaler Frauentag"},
		{"2022-03-08", "MV", ""},
		{"2026-03-08", "BB", ""},
		// Fronleichnam: Easter + 60; parts of SN and TH do not count.
		{"2026-06-04", "BW", "Fronleichnam"},
		{"2026-06-04", "BY", "Fronleichnam"},
		{"2026-06-04", "HE", "Fronleichnam"},
		{"2026-06-04", "NW", "Fronleichnam"},
		{"2026-06-04", "RP", "Fronleichnam"},
		{"2026-06-04", "SL", "Fronleichnam"},
		{"2025-06-19", "NW", "Fronleichnam"},
		{"2026-06-04", "SN", ""},
		{"2026-06-04", "TH", ""},
		{"2026-06-04", "", ""},
		// Mariae Himmelfahrt: SL; parts of BY do not count.
		{"2025-08-15", "SL", "Mariae Himmelfahrt"},
		{"2025-08-15", "BY", ""},
		// Weltkindertag: TH since 2019.
		{"2025-09-20", "TH", "Weltkindertag"},
		{"2018-09-20", "TH", ""},
		{"2025-09-20", "SN", ""},
		// Reformationstag.
		{"2026-10-31", "BB", "Reformationstag"},
		{"2026-10-31", "SN", "Reformationstag"},
		{"2016-10-31", "MV", "Reformationstag"},
		{"2026-10-31", "HB", "Reformationstag"},
		{"2018-10-31", "NI", "Reformationstag"},
		{"2016-10-31", "NI", ""},
		{"2026-10-31", "BY", ""},
		{"2026-10-31", "", ""},
		{"2017-10-31", "", "Reformationstag"}, // nationwide once
		{"2017-10-31", "BY", "Reformationstag"},
		// Allerheiligen.
		{"2026-11-01", "BW", "Allerheiligen"},
		{"2026-11-01", "SL", "Allerheiligen"},
		{"2026-11-01", "SN", ""},
		// Buss- und Bettag: Wednesday before 23 November, Saxony only.
		{"2026-11-18", "SN", "Buss- und Bettag"},
		{"2025-11-19", "SN", "Buss- und Bettag"},
		{"2023-11-22", "SN", "Buss- und Bettag"}, // 22 Nov itself is a Wednesday
		{"2028-11-22", "SN", "Buss- und Bettag"},
		{"2027-11-17", "SN", "Buss- und Bettag"},
		{"2026-11-18", "BY", ""},
		{"2026-11-18", "", ""},
		{"2026-11-25", "SN", ""},
		// One-off Berlin holiday.
		{"2025-05-08", "BE", "Tag der Befreiung"},
		{"2026-05-08", "BE", ""},
		{"2025-05-08", "BB", ""},
		// Brandenburg's statutory Sundays.
		{"2026-04-05", "BB", "Ostersonntag"},
		{"2026-05-24", "BB", "Pfingstsonntag"},
		// An unknown state gets the national calendar.
		{"2026-01-06", "XX", ""},
		{"2026-01-01", "XX", "Neujahr"},
	}
	for _, tt := range tests {
		name, ok := Holiday(day(t, tt.day), tt.st)
		if ok != (tt.want != "") || name != tt.want {
			t.Errorf("Holiday(%s, %q) = %q, %v; want %q", tt.day, tt.st, name, ok, tt.want)
		}
	}
}

// TestHolidayCounts checks whole years: the number of holidays per state in
// 2026 on weekdays and in total, against the published state holiday lists.
func TestHolidayCounts(t *testing.T) {
	tests := []struct {
		st   State
		year int
		want int
	}{
		{"", 2026, 9},
		{BW, 2026, 12}, // + Drei Koenige, Fronleichnam, Allerheiligen
		{BY, 2026, 12}, // + Drei Koenige, Fronleichnam, Allerheiligen
		{BE, 2026, 10}, // + Frauentag
		{BE, 2025, 11}, // + Frauentag, Tag der Befreiung
		{BB, 2026, 12}, // + Ostersonntag, Pfingstsonntag, Reformationstag
		{HB, 2026, 10},
		{HH, 2026, 10},
		{HE, 2026, 10},
		{MV, 2026, 11},
		{NI, 2026, 10},
		{NW, 2026, 11},
		{RP, 2026, 11},
		{SL, 2026, 12},
		{SN, 2026, 11},
		{ST, 2026, 11},
		{SH, 2026, 10},
		{TH, 2026, 11},
		{"", 2017, 10},
		{NI, 2017, 10}, // Reformationstag 2017 counted once
		{SN, 1994, 11}, // Buss- und Bettag national then, plus Reformationstag
		{"", 1994, 10},
	}
	for _, tt := range tests {
		n := 0
		for d := pipeline.NewDay(tt.year, time.January, 1); d.Year == tt.year; d = d.AddDays(1) {
			if _, ok := Holiday(d, tt.st); ok {
				n++
			}
		}
		if n != tt.want {
			t.Errorf("%q %d: %d holidays, want %d", tt.st, tt.year, n, tt.want)
		}
	}
}

func TestSLPDayType(t *testing.T) {
	tests := []struct {
		day  string
		st   State
		want DayType
	}{
		{"2026-08-12", "", Workday},       // Wednesday
		{"2026-08-15", "", Saturday},      // Saturday
		{"2026-08-16", "", SundayHoliday}, // Sunday
		{"2026-05-14", "", SundayHoliday}, // Christi Himmelfahrt, a Thursday
		{"2026-06-04", "BY", SundayHoliday},
		{"2026-06-04", "SN", Workday},
		{"2026-06-04", "", Workday},
		{"2026-11-18", "SN", SundayHoliday},
		{"2026-11-18", "HE", Workday},
		{"2026-12-24", "", Saturday},      // Thursday
		{"2026-12-31", "", Saturday},      // Thursday
		{"2023-12-24", "", SundayHoliday}, // Sunday
		{"2023-12-31", "", SundayHoliday}, // Sunday
		{"2022-12-24", "", Saturday},      // Saturday
		{"2027-12-24", "", Saturday},      // Friday
		{"2026-12-25", "", SundayHoliday},
		{"2027-01-02", "", Saturday},
		{"2025-08-15", "SL", SundayHoliday}, // Friday, Mariae Himmelfahrt
		{"2025-08-15", "BY", Workday},
	}
	for _, tt := range tests {
		if got := SLPDayType(day(t, tt.day), tt.st); got != tt.want {
			t.Errorf("SLPDayType(%s, %q) = %s, want %s", tt.day, tt.st, got, tt.want)
		}
	}
}

// TestSLPDayTypeYear counts the day types of a whole year, which catches an
// off-by-one in weekday or holiday logic that single dates would miss.
func TestSLPDayTypeYear(t *testing.T) {
	count := map[DayType]int{}
	for d := pipeline.NewDay(2026, time.January, 1); d.Year == 2026; d = d.AddDays(1) {
		count[SLPDayType(d, "")]++
	}
	// 2026 has 52 Saturdays and 52 Sundays. None of the 9 national holidays is a
	// Sunday; 3 Oct and 26 Dec are Saturdays and become FT. 24.12 and 31.12 are
	// Thursdays and become SA.
	want := map[DayType]int{SundayHoliday: 52 + 9, Saturday: 52 - 2 + 2, Workday: 365 - 61 - 52}
	for dt, n := range want {
		if count[dt] != n {
			t.Errorf("2026 %s days = %d, want %d", dt, count[dt], n)
		}
	}
}

func BenchmarkSLPDayType(b *testing.B) {
	d := pipeline.NewDay(2026, time.June, 4)
	for b.Loop() {
		_ = SLPDayType(d, BY)
	}
}
