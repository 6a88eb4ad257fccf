package portal

import (
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
)

// WorkingDays counts the days from start to end (inclusive) that are Monday
// to Friday and not a public holiday in state: the days a leave request
// takes from the entitlement.
func WorkingDays(start, end pipeline.Day, state string) int {
	n := 0
	for d := start; !end.Before(d); d = d.AddDays(1) {
		wd := time.Date(d.Year, d.Month, d.Dom, 12, 0, 0, 0, time.UTC).Weekday()
		if wd == time.Saturday || wd == time.Sunday {
			continue
		}
		if _, holiday := calendar.Holiday(d, calendar.State(state)); holiday {
			continue
		}
		n++
	}
	return n
}

// MaskReason says why a compensation value is masked.
type MaskReason string

// Reasons for masking.
const (
	// ReasonHR: HR set the component to maskiert.
	ReasonHR MaskReason = "hr"
	// ReasonMagicLink: magic-link sessions never see amounts.
	ReasonMagicLink MaskReason = "magic_link"
	// ReasonDerived: a total is masked when one of its parts is, because the
	// total minus the visible parts would reveal the masked one.
	ReasonDerived MaskReason = "derived"
)

// ComponentView is a component as the caller may see it: Amount is nil when
// masked.
type ComponentView struct {
	Name       string
	Interval   Interval
	Amount     *int64
	Masked     bool
	MaskReason MaskReason
}

// CompensationView is the caller's compensation after the visibility rules.
type CompensationView struct {
	Components []ComponentView
	// MonthlyTotal sums the monthly components; YearlyTotal is twelve times
	// that plus the yearly and one-time components. Nil when masked.
	MonthlyTotal *int64
	YearlyTotal  *int64
	Masked       bool
	MaskReason   MaskReason
}

// View applies the visibility rules to an employee's components for a
// session signed in by method:
//  1. a magic-link session sees no amount at all;
//  2. otherwise a component is masked when HR set it to maskiert;
//  3. a total is masked when any component in it is masked.
//
// The masked amounts never leave this function, so no later layer can show
// them by mistake.
func View(comps []Component, method Method) CompensationView {
	var v CompensationView
	var monthly, yearly int64
	for _, c := range comps {
		cv := ComponentView{Name: c.Name, Interval: c.Interval}
		switch {
		case method == MethodMagicLink:
			cv.Masked, cv.MaskReason = true, ReasonMagicLink
		case c.Visibility != Visible:
			cv.Masked, cv.MaskReason = true, ReasonHR
		default:
			amount := c.AmountCents
			cv.Amount = &amount
		}
		if cv.Masked && !v.Masked {
			v.Masked, v.MaskReason = true, ReasonDerived
		}
		switch c.Interval {
		case Monthly:
			monthly += c.AmountCents
			yearly += 12 * c.AmountCents
		default:
			yearly += c.AmountCents
		}
		v.Components = append(v.Components, cv)
	}
	if method == MethodMagicLink {
		v.Masked, v.MaskReason = true, ReasonMagicLink
	}
	if !v.Masked {
		v.MonthlyTotal, v.YearlyTotal = &monthly, &yearly
	}
	return v
}
