package forecast

import (
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
)

// DayClass groups the days whose load is alike: each weekday from Monday to
// Friday is a class of its own, Saturday is one, and Sundays and public
// holidays are one.
type DayClass int

// The day classes.
const (
	Monday DayClass = iota
	Tuesday
	Wednesday
	Thursday
	Friday
	Saturday
	SundayHoliday
)

var classNames = [...]string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun/holiday"}

func (c DayClass) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return "unknown"
	}
	return classNames[c]
}

// MarshalText implements encoding.TextMarshaler, so that classes are readable
// map keys in JSON.
func (c DayClass) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// ClassOf returns the day class of day in state st. It follows the SLP day
// types, so that holidays of the state are Sundays and 24 and 31 December are
// Saturdays unless they fall on a Sunday; a working day keeps its weekday.
func ClassOf(day pipeline.Day, st calendar.State) DayClass {
	switch calendar.SLPDayType(day, st) {
	case calendar.SundayHoliday:
		return SundayHoliday
	case calendar.Saturday:
		return Saturday
	}
	wd := time.Date(day.Year, day.Month, day.Dom, 12, 0, 0, 0, time.UTC).Weekday()
	return DayClass(wd - time.Monday)
}

// DefaultHistoryWeeks is the look-back of SimilarDays when none is given.
const DefaultHistoryWeeks = 8

// SimilarDays returns the days of day's class among the weeks*7 days before
// it, newest first. These are all the days the history method may use, so
// a caller can load exactly these. weeks < 1 means DefaultHistoryWeeks.
func SimilarDays(day pipeline.Day, st calendar.State, weeks int) []pipeline.Day {
	if weeks < 1 {
		weeks = DefaultHistoryWeeks
	}
	want := ClassOf(day, st)
	var out []pipeline.Day
	for i := 1; i <= weeks*7; i++ {
		d := day.AddDays(-i)
		if ClassOf(d, st) == want {
			out = append(out, d)
		}
	}
	return out
}

// ActiveSlice returns the slice of loc whose [ValidFrom, ValidTo) contains day
// and that is active. Slices do not overlap in valid master data; should they,
// the one that starts latest wins, as the most recent statement.
func ActiveSlice(loc pipeline.Location, day pipeline.Day) (pipeline.Slice, bool) {
	var best pipeline.Slice
	found := false
	for _, s := range loc.Slices {
		if !covers(s, day) {
			continue
		}
		if !found || best.ValidFrom.Before(s.ValidFrom) {
			best, found = s, true
		}
	}
	if !found || !best.Active {
		return pipeline.Slice{}, false
	}
	return best, true
}

func covers(s pipeline.Slice, day pipeline.Day) bool {
	return !day.Before(s.ValidFrom) && (s.ValidTo == nil || day.Before(*s.ValidTo))
}

// slotsPerDay is the number of local clock quarter-hours 00:00 .. 23:45.
const slotsPerDay = 96

// clockSlots returns, for each quarter-hour of day, its local clock slot
// (hour*4 + minute/15, 0..95). On the spring-forward day the slots of the
// skipped hour are absent; on the fall-back day those of the repeated hour
// occur twice. It is computed from the zone rules, not from the DST dates.
func clockSlots(day pipeline.Day) []int8 {
	n := day.Intervals()
	out := make([]int8, n)
	start := day.Start()
	for q := range out {
		t := start.Add(time.Duration(q) * 15 * time.Minute).In(pipeline.Berlin)
		out[q] = int8(t.Hour()*4 + t.Minute()/15)
	}
	return out
}
