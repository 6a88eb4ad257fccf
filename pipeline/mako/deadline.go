package mako

import (
	"sync"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
)

// allStates are the 16 federal states. The market communication counts a
// holiday of any one of them as a holiday everywhere, so every state is asked.
var allStates = []calendar.State{
	calendar.BW, calendar.BY, calendar.BE, calendar.BB, calendar.HB, calendar.HH,
	calendar.HE, calendar.MV, calendar.NI, calendar.NW, calendar.RP, calendar.SL,
	calendar.SN, calendar.ST, calendar.SH, calendar.TH,
}

// deadlineHour is the hour (Europe/Berlin) of the working day by which an
// APERAK is due.
const deadlineHour = 12

// workingDays caches isWorkingDay per day: the overview asks the same
// few days for hundreds of partners, and each answer costs 16 holiday lookups.
// It grows by one entry per distinct day asked, a few hundred per year.
var workingDays sync.Map // pipeline.Day -> bool

// isWorkingDay reports whether d is a working day of the market
// communication: Monday to Friday, not 24 or 31 December, and not a public
// holiday in any German state (a regional holiday such as Fronleichnam or
// Reformationstag stops the clock for every partner).
func isWorkingDay(d pipeline.Day) bool {
	if v, ok := workingDays.Load(d); ok {
		return v.(bool)
	}
	ok := computeWorkingDay(d)
	workingDays.Store(d, ok)
	return ok
}

func computeWorkingDay(d pipeline.Day) bool {
	// Noon UTC keeps the civil day whatever the host zone.
	switch time.Date(d.Year, d.Month, d.Dom, 12, 0, 0, 0, time.UTC).Weekday() {
	case time.Saturday, time.Sunday:
		return false
	}
	if d.Month == time.December && (d.Dom == 24 || d.Dom == 31) {
		return false
	}
	for _, st := range allStates {
		if _, ok := calendar.Holiday(d, st); ok {
			return false
		}
	}
	return true
}

// AnswerDeadline is the APERAK deadline of a message sent at sent: 12:00
// Europe/Berlin on the first market-communication working day after the
// Berlin calendar day of sent (see isWorkingDay). The day is taken in
// Berlin time, so a message sent on Sunday 23:30 UTC (Monday 00:30 in Berlin)
// is due on Tuesday. The result is in the Berlin zone; 12:00 is local time on
// both sides of a DST change.
func AnswerDeadline(sent time.Time) time.Time {
	d := pipeline.DayOf(sent).AddDays(1)
	for !isWorkingDay(d) {
		d = d.AddDays(1)
	}
	return time.Date(d.Year, d.Month, d.Dom, deadlineHour, 0, 0, 0, pipeline.Berlin)
}
