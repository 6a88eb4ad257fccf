package kalkulation

import "github.com/schedbridge/schedbridge/pipeline"

// MaxDays is the longest period the calculation covers (contract section 8).
const MaxDays = 31

// DefaultPeriod is the period when none is given: from the first day of the
// month of yesterday up to yesterday, as of today (Europe/Berlin).
func DefaultPeriod(today pipeline.Day) (von, bis pipeline.Day) {
	bis = today.AddDays(-1)
	return pipeline.NewDay(bis.Year, bis.Month, 1), bis
}

// CheckPeriod reports a period that is reversed or longer than MaxDays.
func CheckPeriod(von, bis pipeline.Day) error {
	switch {
	case bis.Before(von):
		return pipeline.Errorf(pipeline.Invalid, "bis (%s) must not be before von (%s)", bis, von)
	case von.AddDays(MaxDays - 1).Before(bis):
		return pipeline.Errorf(pipeline.Invalid, "the period from %s to %s is longer than %d days", von, bis, MaxDays)
	}
	return nil
}
