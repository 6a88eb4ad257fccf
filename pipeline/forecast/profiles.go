package forecast

import (
	"fmt"
	"math"
	"strings"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
	"github.com/schedbridge/schedbridge/pipeline/slp"
)

// mwPerAnnualKWh turns a profile value (kWh per quarter-hour for an annual
// consumption of 1,000,000 kWh) into MW per kWh of annual consumption:
// x / 1e6 for the annual scale, x 4 / 1000 from kWh per quarter-hour to MW.
// Precomputing it per profile leaves one multiply per value.
func mwPerAnnualKWh(kwh float64) float64 { return kwh * 4 / 1000 / 1e6 }

// curveKey names a profile of an MGA as a location states it.
type curveKey struct{ mga, profile string }

// curve is a resolved profile: MW per kWh of annual consumption for each
// quarter-hour of the day, and its source; or, when it cannot be had, the
// reason the location is skipped.
type curve struct {
	mw     []float64
	source int32
	skip   string
}

// profileName normalises a profile name for matching a location's profile
// with the DSO's: the canonical BDEW name where the name is a BDEW profile
// (so that "h25" finds the DSO's "H25"), else the trimmed name as it is.
func profileName(name string) string {
	if c, ok := slp.Canonical(name); ok {
		return c
	}
	return strings.TrimSpace(name)
}

// profiles resolves the curves of one delivery day, once per (MGA, profile).
type profiles struct {
	day     pipeline.Day
	table   *slp.Table
	stateOf func(mga string) calendar.State
	dso     map[curveKey][]float64 // keyed by normalised profile name
	bdew    map[string]*curve      // keyed by canonical name + "/" + day type
	curves  map[curveKey]*curve
}

func newProfiles(day pipeline.Day, table *slp.Table, stateOf func(string) calendar.State, entries []pipeline.ProfileEntry) (*profiles, error) {
	p := &profiles{day: day, table: table, stateOf: stateOf, dso: map[curveKey][]float64{},
		bdew: map[string]*curve{}, curves: map[curveKey]*curve{}}
	n := day.Intervals()
	for _, e := range entries {
		if e.Day != day {
			continue
		}
		k := curveKey{e.MGA, profileName(e.Profile)}
		if len(e.ValuesKWh) != n {
			return nil, pipeline.Errorf(pipeline.Invalid, "DSO profile %s of MGA %s for %s has %d values, the day has %d quarter-hours", e.Profile, e.MGA, day, len(e.ValuesKWh), n)
		}
		if _, dup := p.dso[k]; dup {
			return nil, pipeline.Errorf(pipeline.Invalid, "DSO profile %s of MGA %s for %s is given twice", e.Profile, e.MGA, day)
		}
		mw := make([]float64, n)
		for q, v := range e.ValuesKWh {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, pipeline.Errorf(pipeline.Invalid, "DSO profile %s of MGA %s for %s: value %v at quarter-hour %d", e.Profile, e.MGA, day, v, q)
			}
			mw[q] = mwPerAnnualKWh(v)
		}
		p.dso[k] = mw
	}
	return p, nil
}

// curve returns the resolved profile of (mga, name); the result is cached,
// so a portfolio with a million locations in a few profiles resolves each
// profile once.
func (p *profiles) curve(mga, name string) (*curve, error) {
	k := curveKey{mga, name}
	if c, ok := p.curves[k]; ok {
		return c, nil
	}
	c, err := p.resolve(mga, name)
	if err != nil {
		return nil, err
	}
	p.curves[k] = c
	return c, nil
}

func (p *profiles) resolve(mga, name string) (*curve, error) {
	norm := profileName(name)
	if norm == "" {
		return &curve{skip: SkipUnknownProfile}, nil
	}
	if mw, ok := p.dso[curveKey{mga, norm}]; ok {
		return &curve{mw: mw, source: srcDSO}, nil
	}
	canon, ok := slp.Canonical(name)
	if !ok || p.table == nil {
		return &curve{skip: SkipUnknownProfile}, nil
	}
	var st calendar.State
	if p.stateOf != nil {
		st = p.stateOf(mga)
	}
	dt := calendar.SLPDayType(p.day, st)
	bk := canon + "/" + string(dt)
	if c, ok := p.bdew[bk]; ok {
		return c, nil
	}
	// The name is a BDEW profile, so a failure here is a fault of the
	// tables, not of the location: it stops the stage instead of skipping.
	q, err := p.table.Quarters(canon, p.day, dt)
	if err != nil {
		return nil, fmt.Errorf("BDEW profile %s for %s (%s): %w", canon, p.day, dt, err)
	}
	if len(q) != p.day.Intervals() {
		return nil, pipeline.Errorf(pipeline.Internal, "BDEW profile %s for %s has %d values, the day has %d quarter-hours", canon, p.day, len(q), p.day.Intervals())
	}
	c := &curve{source: srcBDEW, mw: make([]float64, len(q))}
	for i, v := range q {
		c.mw[i] = mwPerAnnualKWh(v)
	}
	p.bdew[bk] = c
	return c, nil
}
