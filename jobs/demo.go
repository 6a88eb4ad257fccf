package jobs

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Synthetic portfolios for the demo, the end-to-end tests and the benchmark.
// They are generated, not sampled from real customers: the shapes are
// plausible (a morning and an evening peak for households, office hours for
// businesses), the numbers deterministic for a seed.

// SynthConfig describes a synthetic portfolio.
type SynthConfig struct {
	Portfolio    string
	Locations    int                    // market locations in all
	RLMShare     float64                // share of rlm locations (the rest slp)
	Areas        []pipeline.ControlArea // spread round-robin
	MGAs         int                    // balancing areas (MGAs) to spread over
	HistoryWeeks int                    // weeks of metered history of rlm locations before Day
	Day          pipeline.Day           // the delivery day the history leads up to
	Seed         uint64
}

// SynthMGA names the i-th synthetic MGA (an EIC-like balancing-area code).
func SynthMGA(i int) string { return fmt.Sprintf("11YSB-MGA-%06d", i) }

// SynthMalo is the i-th synthetic market location id: 11 digits.
func SynthMalo(i int) string { return fmt.Sprintf("5%010d", i) }

var slpProfiles = []string{"H25", "H25", "H25", "G25", "L25", "H0", "G0"}

// SynthLocations returns the portfolio's master data, in malo order.
func SynthLocations(c SynthConfig) []pipeline.Location {
	rng := rand.New(rand.NewPCG(c.Seed, 1))
	out := make([]pipeline.Location, c.Locations)
	rlmEvery := 0
	if c.RLMShare > 0 {
		rlmEvery = int(math.Round(1 / c.RLMShare))
	}
	from := c.Day.AddDays(-7*c.HistoryWeeks - 30)
	for i := range out {
		s := pipeline.Slice{
			Active:      true,
			ControlArea: c.Areas[i%len(c.Areas)],
			MGA:         SynthMGA(i % max(1, c.MGAs)),
			Kind:        pipeline.Consumption,
			ValidFrom:   from,
			DSOMPID:     fmt.Sprintf("99%011d", i%max(1, c.MGAs)),
		}
		if rlmEvery > 0 && i%rlmEvery == rlmEvery-1 {
			s.MeteringType = pipeline.RLM
			annual := 200_000 + rng.Float64()*1_800_000
			s.AnnualConsumptionKWh = &annual
			s.Profile = "G25"
		} else {
			s.MeteringType = pipeline.SLP
			annual := 1500 + rng.Float64()*4500
			s.AnnualConsumptionKWh = &annual
			s.Profile = slpProfiles[i%len(slpProfiles)]
		}
		out[i] = pipeline.Location{Malo: SynthMalo(i), Slices: []pipeline.Slice{s}}
	}
	return out
}

// SynthHistory calls fn with the metered history of every rlm location of
// locs: HistoryWeeks weeks of days before Day, in kWh per quarter-hour, in
// malo and day order. A location's load has a weekday office shape, a lower
// weekend, its own level and noise.
func SynthHistory(c SynthConfig, locs []pipeline.Location, fn func(pipeline.MeteredEntry) error) error {
	first := c.Day.AddDays(-7 * c.HistoryWeeks)
	for li, loc := range locs {
		s := loc.Slices[0]
		if s.MeteringType != pipeline.RLM {
			continue
		}
		rng := rand.New(rand.NewPCG(c.Seed, uint64(li)+2))
		// Average kW from the annual consumption.
		avgKW := *s.AnnualConsumptionKWh / 8760
		for d := first; d.Before(c.Day); d = d.AddDays(1) {
			n := d.Intervals()
			vals := make([]float64, n)
			wd := d.Start().Weekday()
			for q := range vals {
				// Local clock hour of the quarter-hour, through UTC so DST days
				// get their real clock times.
				t := d.Start().Add(time.Duration(q) * 15 * time.Minute).In(pipeline.Berlin)
				h := float64(t.Hour()) + float64(t.Minute())/60
				shape := 0.55 + 0.9*math.Max(0, math.Sin((h-6)/12*math.Pi))
				if wd == 0 || wd == 6 {
					shape = 0.5 + 0.2*math.Max(0, math.Sin((h-8)/10*math.Pi))
				}
				kw := avgKW * shape * (1 + 0.05*rng.NormFloat64())
				vals[q] = math.Max(0, kw/4) // kWh in the quarter-hour
			}
			if err := fn(pipeline.MeteredEntry{Day: d, Malo: loc.Malo, Unit: pipeline.KWH, Values: vals}); err != nil {
				return err
			}
		}
	}
	return nil
}

// SynthDSOProfiles returns rolled-out profiles of a DSO for the first mgas
// MGAs and the household profile on day: a flat-topped household shape,
// normalised to 1,000,000 kWh a year, as a DSO's own profile would be.
func SynthDSOProfiles(day pipeline.Day, mgas int) []pipeline.ProfileEntry {
	var out []pipeline.ProfileEntry
	n := day.Intervals()
	for m := range mgas {
		vals := make([]float64, n)
		for q := range vals {
			h := float64(q) / 4
			vals[q] = 20 + 15*math.Max(0, math.Sin((h-5)/17*math.Pi)) + float64(m)
		}
		out = append(out, pipeline.ProfileEntry{Day: day, MGA: SynthMGA(m), Profile: "H25", ValuesKWh: vals})
	}
	return out
}
