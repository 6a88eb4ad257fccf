package forecast_test

import (
	"slices"
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
	"github.com/schedbridge/schedbridge/pipeline/forecast"
)

// The expected lists are worked out from a 2025/2026 calendar by hand; the
// window of 8 weeks is the 56 days before the target day.
func TestSimilarDays(t *testing.T) {
	cases := []struct {
		name  string
		day   string
		st    calendar.State
		weeks int
		want  []pipeline.Day
	}{
		{
			// Easter 2026 is 5 April: Good Friday 3.4., Easter Monday 6.4.
			// The Tuesday after Easter Monday is an ordinary Tuesday.
			name: "Tuesday after Easter Monday", day: "2026-04-07", weeks: 8,
			want: days("2026-03-31", "2026-03-24", "2026-03-17", "2026-03-10", "2026-03-03", "2026-02-24", "2026-02-17", "2026-02-10"),
		},
		{
			name: "Monday after Easter: Easter Monday is not a Monday", day: "2026-04-13", weeks: 8,
			want: days("2026-03-30", "2026-03-23", "2026-03-16", "2026-03-09", "2026-03-02", "2026-02-23", "2026-02-16"),
		},
		{
			name: "Sunday after Easter: Sundays with Good Friday and Easter Monday", day: "2026-04-12", weeks: 8,
			want: days("2026-04-06", "2026-04-05", "2026-04-03", "2026-03-29", "2026-03-22", "2026-03-15", "2026-03-08",
				"2026-03-01", "2026-02-22", "2026-02-15"),
		},
		{
			// 24.12.2025 is a Wednesday and counts as a Saturday.
			name: "Saturday after Christmas: Saturdays and 24.12.", day: "2025-12-27", weeks: 8,
			want: days("2025-12-24", "2025-12-20", "2025-12-13", "2025-12-06", "2025-11-29", "2025-11-22", "2025-11-15", "2025-11-08", "2025-11-01"),
		},
		{
			name: "Friday after Christmas: 26.12. is a holiday", day: "2026-01-02", weeks: 8,
			want: days("2025-12-19", "2025-12-12", "2025-12-05", "2025-11-28", "2025-11-21", "2025-11-14", "2025-11-07"),
		},
		{
			name: "Wednesday without 24.12. and 31.12.", day: "2026-01-07", weeks: 8,
			want: days("2025-12-17", "2025-12-10", "2025-12-03", "2025-11-26", "2025-11-19", "2025-11-12"),
		},
		{
			name: "Tuesday, national: 6.1. is a Tuesday", day: "2026-01-13", weeks: 8,
			want: days("2026-01-06", "2025-12-30", "2025-12-23", "2025-12-16", "2025-12-09", "2025-12-02", "2025-11-25", "2025-11-18"),
		},
		{
			name: "Tuesday in Bavaria: 6.1. is a holiday", day: "2026-01-13", st: calendar.BY, weeks: 8,
			want: days("2025-12-30", "2025-12-23", "2025-12-16", "2025-12-09", "2025-12-02", "2025-11-25", "2025-11-18"),
		},
		{
			name: "Sunday in Bavaria: Sundays, 6.1., 1.1., 26.12., 25.12.", day: "2026-01-11", st: calendar.BY, weeks: 8,
			want: days("2026-01-06", "2026-01-04", "2026-01-01", "2025-12-28", "2025-12-26", "2025-12-25", "2025-12-21",
				"2025-12-14", "2025-12-07", "2025-11-30", "2025-11-23", "2025-11-16"),
		},
		{
			name: "fall-back Sunday: 3.10. (a Saturday) counts as a Sunday", day: "2026-10-25", weeks: 8,
			want: days("2026-10-18", "2026-10-11", "2026-10-04", "2026-10-03", "2026-09-27", "2026-09-20", "2026-09-13", "2026-09-06", "2026-08-30"),
		},
		{
			name: "one week", day: "2026-11-24", weeks: 1,
			want: days("2026-11-17"),
		},
		{
			name: "weeks below 1 means the default 8", day: "2026-11-24", weeks: 0,
			want: days("2026-11-17", "2026-11-10", "2026-11-03", "2026-10-27", "2026-10-20", "2026-10-13", "2026-10-06", "2026-09-29"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := forecast.SimilarDays(d(tc.day), tc.st, tc.weeks)
			if !slices.Equal(got, tc.want) {
				t.Errorf("SimilarDays(%s, %q, %d)\n got %v\nwant %v", tc.day, tc.st, tc.weeks, got, tc.want)
			}
		})
	}
}

func TestClassOf(t *testing.T) {
	cases := []struct {
		day  string
		st   calendar.State
		want forecast.DayClass
	}{
		{"2026-11-23", "", forecast.Monday},
		{"2026-11-27", "", forecast.Friday},
		{"2026-11-28", "", forecast.Saturday},
		{"2026-11-29", "", forecast.SundayHoliday},
		{"2026-12-24", "", forecast.Saturday},      // Thursday
		{"2028-12-24", "", forecast.SundayHoliday}, // a Sunday
		{"2026-12-25", "", forecast.SundayHoliday},
		{"2026-11-18", "", forecast.Wednesday},
		{"2026-11-18", calendar.SN, forecast.SundayHoliday}, // Buss- und Bettag
	}
	for _, tc := range cases {
		if got := forecast.ClassOf(d(tc.day), tc.st); got != tc.want {
			t.Errorf("ClassOf(%s, %q) = %s, want %s", tc.day, tc.st, got, tc.want)
		}
	}
}

func TestActiveSlice(t *testing.T) {
	s1 := pipeline.Slice{Active: true, ValidFrom: d("2026-01-01"), ValidTo: ptr(d("2026-06-01")), Profile: "H25"}
	s2 := pipeline.Slice{Active: false, ValidFrom: d("2026-06-01"), ValidTo: ptr(d("2026-09-01")), Profile: "G25"}
	s3 := pipeline.Slice{Active: true, ValidFrom: d("2026-09-01"), Profile: "L25"}
	loc := pipeline.Location{Malo: "m", Slices: []pipeline.Slice{s3, s1, s2}}
	cases := []struct {
		day     string
		profile string
		ok      bool
	}{
		{"2025-12-31", "", false},
		{"2026-01-01", "H25", true},
		{"2026-05-31", "H25", true},
		{"2026-06-01", "", false}, // ValidTo is exclusive; the next slice is inactive
		{"2026-08-31", "", false},
		{"2026-09-01", "L25", true},
		{"2030-01-01", "L25", true}, // open-ended
	}
	for _, tc := range cases {
		s, ok := forecast.ActiveSlice(loc, d(tc.day))
		if ok != tc.ok || s.Profile != tc.profile {
			t.Errorf("%s: slice %q, %v; want %q, %v", tc.day, s.Profile, ok, tc.profile, tc.ok)
		}
	}
}
