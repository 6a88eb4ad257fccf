package pipeline

import (
	"testing"
	"time"
)

func TestIntervals(t *testing.T) {
	tests := []struct {
		day  string
		want int
	}{
		{"2026-03-29", 92},  // last Sunday of March
		{"2026-10-25", 100}, // last Sunday of October
		{"2026-03-28", 96},
		{"2026-03-22", 96}, // a Sunday, but not the last in March
		{"2025-03-30", 92},
		{"2025-10-26", 100},
		{"2024-02-29", 96},
		{"2027-03-28", 92},
		{"2027-10-31", 100},
	}
	for _, tt := range tests {
		d, err := ParseDay(tt.day)
		if err != nil {
			t.Fatalf("ParseDay(%q): %v", tt.day, err)
		}
		if got := d.Intervals(); got != tt.want {
			t.Errorf("%s: Intervals() = %d, want %d", tt.day, got, tt.want)
		}
	}
}

func TestParseDayRejects(t *testing.T) {
	for _, s := range []string{"", "2026-3-29", "2026-02-30", "2026-03-29T00:00:00", "29.03.2026", "2026-13-01"} {
		if _, err := ParseDay(s); err == nil {
			t.Errorf("ParseDay(%q) succeeded", s)
		} else if KindOf(err) != Invalid {
			t.Errorf("ParseDay(%q) kind = %s", s, KindOf(err))
		}
	}
}

func TestDayStartEndUTC(t *testing.T) {
	d := NewDay(2026, time.March, 29)
	if got := d.Start().UTC().Format(time.RFC3339); got != "2026-03-28T23:00:00Z" {
		t.Errorf("start = %s", got)
	}
	if got := d.End().UTC().Format(time.RFC3339); got != "2026-03-29T22:00:00Z" {
		t.Errorf("end = %s", got)
	}
	if got := d.AddDays(-29).String(); got != "2026-02-28" {
		t.Errorf("AddDays = %s", got)
	}
}

func TestUnitToMW(t *testing.T) {
	if got := MWH.ToMW(1); got != 4 {
		t.Errorf("MWH.ToMW(1) = %v", got)
	}
	if got := KWH.ToMW(250); got != 1 {
		t.Errorf("KWH.ToMW(250) = %v", got)
	}
	if got := MW.ToMW(3.5); got != 3.5 {
		t.Errorf("MW.ToMW(3.5) = %v", got)
	}
}

func TestStageDefaultDay(t *testing.T) {
	today := NewDay(2026, time.March, 1)
	for st, want := range map[Stage]Day{
		StageForecast:    NewDay(2026, time.March, 2),
		StageSchedules:   NewDay(2026, time.March, 2),
		StageChain:       NewDay(2026, time.March, 2),
		StageKalkulation: NewDay(2026, time.February, 28),
	} {
		if got := st.DefaultDay(today); got != want {
			t.Errorf("%s: default day %s, want %s", st, got, want)
		}
	}
	for _, st := range AllStages {
		if got, err := ParseStage(string(st)); err != nil || got != st {
			t.Errorf("ParseStage(%s) = %s, %v", st, got, err)
		}
	}
	if _, err := ParseStage("chain"); err == nil {
		t.Error("chain is not a stage of its own")
	}
}

// TestTSODeadline: 14:30 Berlin the day before, in UTC, on both sides of
// the clock changes (the deadline's own day decides the offset).
func TestTSODeadline(t *testing.T) {
	for _, tc := range []struct {
		day  Day
		want string
	}{
		{NewDay(2026, 11, 27), "2026-11-26T13:30:00Z"}, // winter time
		{NewDay(2026, 7, 1), "2026-06-30T12:30:00Z"},   // summer time
		{NewDay(2026, 3, 29), "2026-03-28T13:30:00Z"},  // the 92-quarter-hour day: due on a winter-time day
		{NewDay(2026, 3, 30), "2026-03-29T12:30:00Z"},  // due on the day of the change, after it
		{NewDay(2026, 10, 26), "2026-10-25T13:30:00Z"}, // due on the 100-quarter-hour day, after the change
	} {
		if got := tc.day.TSODeadline().Format(time.RFC3339); got != tc.want {
			t.Errorf("%s: deadline %s, want %s", tc.day, got, tc.want)
		}
	}
}

// BenchmarkParseDay parses a stored day, as every read of a row with a
// delivery day does; a day that parses allocates nothing.
func BenchmarkParseDay(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseDay("2026-03-29"); err != nil {
			b.Fatal(err)
		}
	}
}
