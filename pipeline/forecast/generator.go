package forecast

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
	"github.com/schedbridge/schedbridge/pipeline/slp"
)

// Config tunes forecast generation. Zero values take the defaults noted.
type Config struct {
	Alloc memory.Allocator // default memory.DefaultAllocator
	// BatchLocations is the number of locations per emitted batch (default
	// 10,000, about 960,000 rows).
	BatchLocations int
	// HistoryWeeks is the look-back for similar days (default 8).
	HistoryWeeks int
	// MinHistoryDays is the least number of usable similar days for the
	// history method; with fewer the location falls back to a profile
	// (default 3).
	MinHistoryDays int
	// StateOf maps an MGA to the state whose holidays its DSO applies; nil
	// means national holidays only.
	StateOf func(mga string) calendar.State
	// Profiles are the BDEW standard profiles (default slp.NewTable()).
	Profiles *slp.Table
	// FallbackProfile is the BDEW profile of rlm and imsys locations without
	// usable history and without a profile of their own (default "G25").
	FallbackProfile string
}

// Defaults of Config.
const (
	DefaultBatchLocations  = 10_000
	DefaultMinHistoryDays  = 3
	DefaultFallbackProfile = "G25"
)

func (c Config) withDefaults() Config {
	if c.Alloc == nil {
		c.Alloc = memory.DefaultAllocator
	}
	if c.BatchLocations <= 0 {
		c.BatchLocations = DefaultBatchLocations
	}
	if c.HistoryWeeks <= 0 {
		c.HistoryWeeks = DefaultHistoryWeeks
	}
	if c.MinHistoryDays <= 0 {
		c.MinHistoryDays = DefaultMinHistoryDays
	}
	if c.Profiles == nil {
		c.Profiles = slp.NewTable()
	}
	if c.FallbackProfile == "" {
		c.FallbackProfile = DefaultFallbackProfile
	}
	return c
}

func (c Config) stateOf(mga string) calendar.State {
	if c.StateOf == nil {
		return ""
	}
	return c.StateOf(mga)
}

// Reasons for which a location gets no forecast. They are the keys of
// Stats.Reasons.
const (
	SkipInactive       = "slice not active on the day"
	SkipControlArea    = "no valid control area"
	SkipKind           = "no valid kind"
	SkipMeteringType   = "no valid metering type"
	SkipNoAnnual       = "no annual consumption"
	SkipUnknownProfile = "profile neither sent by the DSO nor a BDEW profile"
	// SkipShortHistory prefixes the reason why an rlm or imsys location with
	// too little history could not fall back to a profile either.
	SkipShortHistory = "too little history and "
)

// maxExamples is how many skipped market locations Stats names per reason.
const maxExamples = 5

// Stats describes what a Generator produced.
type Stats struct {
	Locations int            `json:"locations"` // locations (and submitted series) with rows
	Rows      int64          `json:"rows"`
	Batches   int            `json:"batches"`
	Sources   map[string]int `json:"sources"` // locations per source
	// Fallbacks counts rlm and imsys locations forecast from a profile for
	// lack of usable history; they are also counted under their source.
	Fallbacks int            `json:"history_fallbacks"`
	Skipped   int            `json:"skipped"`
	Reasons   map[string]int `json:"skip_reasons,omitempty"`
	// Examples names up to five skipped market locations per reason.
	Examples map[string][]string `json:"skip_examples,omitempty"`
}

// Generator builds the forecast_malo batches of one portfolio and delivery
// day. It is not safe for concurrent use.
type Generator struct {
	cfg       Config
	portfolio string
	day       pipeline.Day
	n         int
	emit      func(arrow.RecordBatch) error

	date arrow.Date32
	qh   []int16
	ts   []int64

	prof   *profiles
	hist   *historian
	states map[string]calendar.State
	dicts  *dicts
	b      *batch
	stats  Stats
}

// NewGenerator returns a generator for the portfolio and day. dso holds the
// DSOs' rolled-out profiles; entries of other days are ignored. emit receives
// each full batch (and the last one at Flush); it must not keep the record,
// which the generator releases when emit returns.
func NewGenerator(cfg Config, portfolio string, day pipeline.Day, dso []pipeline.ProfileEntry, emit func(arrow.RecordBatch) error) (*Generator, error) {
	if portfolio == "" || day.IsZero() || emit == nil {
		return nil, pipeline.Errorf(pipeline.Invalid, "forecast generator needs a portfolio, a day and an emit function")
	}
	cfg = cfg.withDefaults()
	prof, err := newProfiles(day, cfg.Profiles, cfg.StateOf, dso)
	if err != nil {
		return nil, err
	}
	n := day.Intervals()
	g := &Generator{
		cfg: cfg, portfolio: portfolio, day: day, n: n, emit: emit,
		date: day.Date32(), ts: day.QuarterStartsMicros(), qh: make([]int16, n),
		prof: prof, hist: newHistorian(cfg.HistoryWeeks), states: map[string]calendar.State{},
		dicts: newDicts(cfg.Alloc, portfolio),
		b:     newBatch(cfg.Alloc, n, cfg.BatchLocations),
		stats: Stats{Sources: map[string]int{}, Reasons: map[string]int{}, Examples: map[string][]string{}},
	}
	for q := range g.qh {
		g.qh[q] = int16(q)
	}
	return g, nil
}

// Add generates the forecast of one location from its active slice (see
// ActiveSlice) and, for rlm and imsys, its metered entries on (some of) the
// similar days; entries of other days are ignored. A location that cannot be
// forecast is skipped and counted in Stats. Add emits a batch when it is full.
func (g *Generator) Add(malo string, s pipeline.Slice, history []pipeline.MeteredEntry) error {
	if malo == "" {
		return pipeline.Errorf(pipeline.Invalid, "forecast %s: location without malo", g.day)
	}
	if !s.Active || !covers(s, g.day) {
		return g.skip(malo, SkipInactive)
	}
	area := areaIndex(s.ControlArea)
	if area < 0 {
		return g.skip(malo, SkipControlArea)
	}
	kind := kindIndex(s.Kind)
	if kind < 0 {
		return g.skip(malo, SkipKind)
	}
	meter := meterIndex(s.MeteringType)
	switch s.MeteringType {
	case pipeline.SLP, pipeline.TLP:
		return g.addProfile(malo, s, area, kind, meter, s.Profile, "")
	case pipeline.RLM, pipeline.IMSys:
		return g.addHistory(malo, s, area, kind, meter, history)
	}
	return g.skip(malo, SkipMeteringType)
}

// addProfile forecasts from the named profile. prefix goes before a skip
// reason, so that a failed history fallback says so.
func (g *Generator) addProfile(malo string, s pipeline.Slice, area, kind, meter int32, name, prefix string) error {
	a := s.AnnualConsumptionKWh
	if a == nil || *a < 0 || math.IsNaN(*a) || math.IsInf(*a, 0) {
		return g.skip(malo, prefix+SkipNoAnnual)
	}
	c, err := g.prof.curve(s.MGA, name)
	if err != nil {
		return fmt.Errorf("forecast %s malo %s: %w", g.day, malo, err)
	}
	if c.skip != "" {
		return g.skip(malo, prefix+c.skip)
	}
	annual := *a
	dst := g.b.add(malo, area, kind, meter, c.source)
	for q, v := range c.mw {
		dst[q] = annual * v
	}
	if prefix != "" {
		g.stats.Fallbacks++
	}
	return g.added(c.source)
}

func (g *Generator) addHistory(malo string, s pipeline.Slice, area, kind, meter int32, history []pipeline.MeteredEntry) error {
	st, ok := g.states[s.MGA]
	if !ok {
		st = g.cfg.stateOf(s.MGA)
		g.states[s.MGA] = st
	}
	similar := g.hist.similarSet(g.day, st)
	k := g.hist.collect(malo, history, func(d pipeline.Day) bool { return similar[d] })
	if k < g.cfg.MinHistoryDays {
		name := s.Profile
		if name == "" {
			name = g.cfg.FallbackProfile
		}
		return g.addProfile(malo, s, area, kind, meter, name, SkipShortHistory)
	}
	g.hist.estimate(k, true)
	dst := g.b.add(malo, area, kind, meter, srcHistory)
	g.hist.spread(g.day, dst)
	return g.added(srcHistory)
}

// AddSubmitted adds a malo-tagged series of a submitted forecast (source
// "submitted", no metering type), converted to MW.
func (g *Generator) AddSubmitted(malo string, area pipeline.ControlArea, kind pipeline.Kind, unit pipeline.Unit, values []float64) error {
	ai, ki := areaIndex(area), kindIndex(kind)
	switch {
	case malo == "":
		return pipeline.Errorf(pipeline.Invalid, "forecast %s: submitted series without malo", g.day)
	case ai < 0:
		return pipeline.Errorf(pipeline.Invalid, "forecast %s: submitted series of malo %s: control area %q is not known", g.day, malo, area)
	case ki < 0:
		return pipeline.Errorf(pipeline.Invalid, "forecast %s: submitted series of malo %s: kind %q is not known", g.day, malo, kind)
	case unit != pipeline.MW && unit != pipeline.MWH && unit != pipeline.KWH:
		return pipeline.Errorf(pipeline.Invalid, "forecast %s: submitted series of malo %s: unit %q is not known", g.day, malo, unit)
	case len(values) != g.n:
		return pipeline.Errorf(pipeline.Invalid, "forecast %s: submitted series of malo %s has %d values, the day has %d quarter-hours", g.day, malo, len(values), g.n)
	}
	for q, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return pipeline.Errorf(pipeline.Invalid, "forecast %s: submitted series of malo %s: value %v at quarter-hour %d", g.day, malo, v, q)
		}
	}
	dst := g.b.add(malo, ai, ki, meterNone, srcSubmitted)
	for q, v := range values {
		dst[q] = unit.ToMW(v)
	}
	return g.added(srcSubmitted)
}

func (g *Generator) added(src int32) error {
	g.stats.Locations++
	g.stats.Rows += int64(g.n)
	g.stats.Sources[sourceNames[src]]++
	if g.b.locs >= g.cfg.BatchLocations {
		return g.flush()
	}
	return nil
}

func (g *Generator) skip(malo, reason string) error {
	g.stats.Skipped++
	g.stats.Reasons[reason]++
	if ex := g.stats.Examples[reason]; len(ex) < maxExamples {
		g.stats.Examples[reason] = append(ex, malo)
	}
	return nil
}

// Flush emits the last, partial batch, if there is one.
func (g *Generator) Flush() error {
	if g.b.locs == 0 {
		return nil
	}
	return g.flush()
}

func (g *Generator) flush() error {
	rec := g.b.record(g.dicts, g.date, g.qh, g.ts)
	defer rec.Release()
	g.stats.Batches++
	if err := g.emit(rec); err != nil {
		return fmt.Errorf("forecast %s %s: emit batch %d: %w", g.portfolio, g.day, g.stats.Batches, err)
	}
	return nil
}

// Stats returns what the generator produced so far.
func (g *Generator) Stats() Stats {
	s := g.stats
	s.Sources = maps.Clone(s.Sources)
	s.Reasons = maps.Clone(s.Reasons)
	s.Examples = make(map[string][]string, len(g.stats.Examples))
	for k, v := range g.stats.Examples {
		s.Examples[k] = slices.Clone(v)
	}
	return s
}

// Release frees the generator's buffers, including rows not yet flushed. It
// may be called more than once; the generator must not be used after it.
func (g *Generator) Release() {
	if g.b != nil {
		g.b.release()
		g.b = nil
	}
	if g.dicts != nil {
		g.dicts.release()
		g.dicts = nil
	}
}
