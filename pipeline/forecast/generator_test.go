package forecast_test

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
	"github.com/schedbridge/schedbridge/pipeline/forecast"
	"github.com/schedbridge/schedbridge/pipeline/slp"
)

const tuesday = "2026-11-24"

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func constantProfile(day pipeline.Day, mga, profile string, kwh float64) pipeline.ProfileEntry {
	v := make([]float64, day.Intervals())
	for i := range v {
		v[i] = kwh
	}
	return pipeline.ProfileEntry{Day: day, MGA: mga, Profile: profile, ValuesKWh: v}
}

func slice(mt pipeline.MeteringType, area pipeline.ControlArea, kind pipeline.Kind, mga, profile string, annual *float64) pipeline.Slice {
	return pipeline.Slice{Active: true, ValidFrom: d("2020-01-01"), MeteringType: mt, ControlArea: area, Kind: kind,
		MGA: mga, Profile: profile, AnnualConsumptionKWh: annual}
}

// weekdayHistory is kWh history on every day of the 8 weeks before day: on
// the days of day's class (national holidays) base+slot, with the newest
// similar day an outlier at 10x; on all other days 5000, which would show if
// a day of the wrong class were used.
func weekdayHistory(malo string, day pipeline.Day, base float64, similarDays int) []pipeline.MeteredEntry {
	var out []pipeline.MeteredEntry
	sim := forecast.SimilarDays(day, "", 8)
	for i := 1; i <= 56; i++ {
		h := day.AddDays(-i)
		k := -1
		for j, s := range sim {
			if s == h {
				k = j
			}
		}
		switch {
		case k < 0:
			out = append(out, meteredByClock(malo, h, func(int, int) float64 { return 5000 }))
		case k >= similarDays:
		case k == 0:
			out = append(out, meteredByClock(malo, h, func(s, _ int) float64 { return 10 * (base + float64(s)) }))
		default:
			out = append(out, meteredByClock(malo, h, func(s, _ int) float64 { return base + float64(s) }))
		}
	}
	return out
}

func TestGenerateMethods(t *testing.T) {
	day := d(tuesday)
	table := slp.NewTable()
	g25WT, err := table.Quarters("G25", day, calendar.Workday)
	if err != nil {
		t.Fatal(err)
	}
	l25WT, _ := table.Quarters("L25", day, calendar.Workday)
	dso := []pipeline.ProfileEntry{
		constantProfile(day, "MGA1", "H25", 25),
		constantProfile(day, "MGA1", "G25", 50),
		constantProfile(day, "MGA1", "TLP-HZ", 80),
		constantProfile(day.AddDays(1), "MGA2", "H25", 1000), // another day: ignored
	}
	kwh := func(v float64) float64 { return v * 4 / 1000 }
	cases := []struct {
		name    string
		slice   pipeline.Slice
		history []pipeline.MeteredEntry
		source  string
		want    func(q int) float64 // MW; nil when skipped
		skip    string
	}{
		{
			// 25 kWh per quarter-hour for 1e6 kWh/year; 4,000 kWh/year:
			// 25 x 4000/1e6 = 0.1 kWh = 0.0004 MW.
			name:   "slp with DSO profile",
			slice:  slice(pipeline.SLP, pipeline.TenneT, pipeline.Consumption, "MGA1", "H25", ptr(4000.0)),
			source: pipeline.SourceDSOProfile, want: func(int) float64 { return 0.0004 },
		},
		{
			name:   "profile names match the DSO's regardless of case",
			slice:  slice(pipeline.SLP, pipeline.TenneT, pipeline.Consumption, "MGA1", " h25", ptr(1e6)),
			source: pipeline.SourceDSOProfile, want: func(int) float64 { return 0.1 },
		},
		{
			name:   "tlp with DSO profile",
			slice:  slice(pipeline.TLP, pipeline.Amprion, pipeline.Consumption, "MGA1", "TLP-HZ", ptr(2e6)),
			source: pipeline.SourceDSOProfile, want: func(int) float64 { return 0.64 },
		},
		{
			name:   "slp without DSO profile takes BDEW",
			slice:  slice(pipeline.SLP, pipeline.TenneT, pipeline.Production, "MGA2", "G25", ptr(500_000.0)),
			source: pipeline.SourceBDEWProfile, want: func(q int) float64 { return kwh(g25WT[q] * 0.5) },
		},
		{
			name:  "tlp without DSO profile is skipped",
			slice: slice(pipeline.TLP, pipeline.TenneT, pipeline.Consumption, "MGA2", "TLP-HZ", ptr(1e6)),
			skip:  forecast.SkipUnknownProfile,
		},
		{
			name:  "slp without annual consumption is skipped",
			slice: slice(pipeline.SLP, pipeline.TenneT, pipeline.Consumption, "MGA1", "H25", nil),
			skip:  forecast.SkipNoAnnual,
		},
		{
			name:  "slp without profile name is skipped",
			slice: slice(pipeline.SLP, pipeline.TenneT, pipeline.Consumption, "MGA1", "", ptr(1e6)),
			skip:  forecast.SkipUnknownProfile,
		},
		{
			name:  "unknown control area is skipped",
			slice: slice(pipeline.SLP, "Elia", pipeline.Consumption, "MGA1", "H25", ptr(1e6)),
			skip:  forecast.SkipControlArea,
		},
		{
			name: "inactive slice is skipped",
			slice: func() pipeline.Slice {
				s := slice(pipeline.SLP, pipeline.TenneT, pipeline.Consumption, "MGA1", "H25", ptr(1e6))
				s.Active = false
				return s
			}(),
			skip: forecast.SkipInactive,
		},
		{
			// Eight similar days: 10x(100+slot) on the newest, 100+slot on
			// seven; the trimmed mean drops one 100+slot and the outlier:
			// 100+slot kWh = (100+q) x 0.004 MW. Days of other classes hold
			// 5000 and must not count.
			name:    "rlm from eight weeks of history, trimmed mean",
			slice:   slice(pipeline.RLM, pipeline.TenneT, pipeline.Consumption, "MGA1", "", nil),
			history: weekdayHistory("m", day, 100, 8),
			source:  pipeline.SourceHistory, want: func(q int) float64 { return kwh(100 + float64(q)) },
		},
		{
			// Four days: plain mean (10x(200+s) + 3x(200+s)) / 4 = 3.25 (200+s).
			name:    "imsys with four days, plain mean",
			slice:   slice(pipeline.IMSys, pipeline.FiftyHertz, pipeline.Production, "MGA1", "", nil),
			history: weekdayHistory("m", day, 200, 4),
			source:  pipeline.SourceHistory, want: func(q int) float64 { return kwh(3.25 * (200 + float64(q))) },
		},
		{
			name:    "rlm with two days falls back to its own DSO profile",
			slice:   slice(pipeline.RLM, pipeline.TenneT, pipeline.Consumption, "MGA1", "H25", ptr(1e6)),
			history: weekdayHistory("m", day, 100, 2),
			source:  pipeline.SourceDSOProfile, want: func(int) float64 { return 0.1 },
		},
		{
			name:    "rlm without history and profile falls back to G25 of the DSO",
			slice:   slice(pipeline.RLM, pipeline.TenneT, pipeline.Consumption, "MGA1", "", ptr(3e6)),
			history: nil,
			source:  pipeline.SourceDSOProfile, want: func(int) float64 { return 0.6 },
		},
		{
			name:    "rlm without history falls back to its own BDEW profile",
			slice:   slice(pipeline.RLM, pipeline.TenneT, pipeline.Consumption, "MGA2", "L25", ptr(1e6)),
			history: weekdayHistory("m", day, 100, 2),
			source:  pipeline.SourceBDEWProfile, want: func(q int) float64 { return kwh(l25WT[q]) },
		},
		{
			name:    "rlm with too little history and no annual consumption is skipped",
			slice:   slice(pipeline.RLM, pipeline.TenneT, pipeline.Consumption, "MGA1", "", nil),
			history: weekdayHistory("m", day, 100, 2),
			skip:    forecast.SkipShortHistory + forecast.SkipNoAnnual,
		},
		{
			name:  "rlm history of other days only counts as none",
			slice: slice(pipeline.RLM, pipeline.TenneT, pipeline.Consumption, "MGA1", "", nil),
			history: []pipeline.MeteredEntry{
				meteredByClock("m", day.AddDays(-1), func(int, int) float64 { return 1 }),
				meteredByClock("m", day.AddDays(-2), func(int, int) float64 { return 1 }),
				meteredByClock("m", day.AddDays(-3), func(int, int) float64 { return 1 }),
			},
			skip: forecast.SkipShortHistory + forecast.SkipNoAnnual,
		},
		{
			name:  "rlm history with wrong length, NaN, unknown unit or another malo is not usable",
			slice: slice(pipeline.RLM, pipeline.TenneT, pipeline.Consumption, "MGA1", "", nil),
			history: []pipeline.MeteredEntry{
				{Day: d("2026-11-17"), Malo: "m", Unit: pipeline.KWH, Values: make([]float64, 92)},
				func() pipeline.MeteredEntry {
					e := meteredByClock("m", d("2026-11-10"), func(int, int) float64 { return 1 })
					e.Values[5] = math.NaN()
					return e
				}(),
				func() pipeline.MeteredEntry {
					e := meteredByClock("m", d("2026-11-03"), func(int, int) float64 { return 1 })
					e.Unit = "W"
					return e
				}(),
				meteredByClock("other", d("2026-10-27"), func(int, int) float64 { return 1 }),
				meteredByClock("m", d("2026-10-20"), func(int, int) float64 { return 1 }),
				meteredByClock("m", d("2026-10-20"), func(int, int) float64 { return 1 }), // duplicate day counts once
			},
			skip: forecast.SkipShortHistory + forecast.SkipNoAnnual,
		},
		{
			// MW and MWH entries: 2 MW, 0.5 MWH = 2 MW, 2000/4 kWh... all 2 MW.
			name:  "rlm history in MW and MWH",
			slice: slice(pipeline.RLM, pipeline.TenneT, pipeline.Consumption, "MGA1", "", nil),
			history: []pipeline.MeteredEntry{
				{Day: d("2026-11-17"), Malo: "m", Unit: pipeline.MW, Values: constantValues(96, 2)},
				{Day: d("2026-11-10"), Malo: "m", Unit: pipeline.MWH, Values: constantValues(96, 0.5)},
				{Day: d("2026-11-03"), Malo: "m", Unit: pipeline.KWH, Values: constantValues(96, 500)},
			},
			source: pipeline.SourceHistory, want: func(int) float64 { return 2 },
		},
		{
			name:  "unknown metering type is skipped",
			slice: slice("pauschal", pipeline.TenneT, pipeline.Consumption, "MGA1", "H25", ptr(1e6)),
			skip:  forecast.SkipMeteringType,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checked(t)
			g, s := newGen(t, forecast.Config{Alloc: mem, Profiles: table}, day, dso)
			if err := g.Add("m", tc.slice, tc.history); err != nil {
				t.Fatal(err)
			}
			if err := g.Flush(); err != nil {
				t.Fatal(err)
			}
			st := g.Stats()
			if tc.want == nil {
				if len(s.rows) != 0 || st.Skipped != 1 || st.Reasons[tc.skip] != 1 || st.Examples[tc.skip][0] != "m" || st.Locations != 0 {
					t.Fatalf("want skipped for %q; rows %d, stats %+v", tc.skip, len(s.rows), st)
				}
				return
			}
			locs := s.byMalo("p1", day)
			l := locs["m"]
			if l == nil || l.source != tc.source || l.area != string(tc.slice.ControlArea) || l.kind != string(tc.slice.Kind) || l.meter != string(tc.slice.MeteringType) {
				t.Fatalf("location %+v, want source %s and the slice's attributes", l, tc.source)
			}
			for q, v := range l.mw {
				if !near(v, tc.want(q)) {
					t.Fatalf("qh %d: %.12f MW, want %.12f", q, v, tc.want(q))
				}
			}
			if st.Locations != 1 || st.Rows != 96 || st.Sources[tc.source] != 1 || st.Skipped != 0 || st.Batches != 1 {
				t.Errorf("stats %+v", st)
			}
			fallback := tc.slice.MeteringType == pipeline.RLM && tc.source != pipeline.SourceHistory
			if (st.Fallbacks == 1) != fallback {
				t.Errorf("fallbacks = %d, want fallback %v", st.Fallbacks, fallback)
			}
		})
	}
}

func constantValues(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestHolidayDayType: the BDEW day type follows the state of the MGA. 6.1.2026
// is a working day nationally and a holiday in Bavaria.
func TestHolidayDayType(t *testing.T) {
	day := d("2026-01-06")
	table := slp.NewTable()
	wt, _ := table.Quarters("G25", day, calendar.Workday)
	ft, _ := table.Quarters("G25", day, calendar.SundayHoliday)
	mem := checked(t)
	states := map[string]calendar.State{"MGA-BY": calendar.BY}
	g, s := newGen(t, forecast.Config{Alloc: mem, Profiles: table, StateOf: func(m string) calendar.State { return states[m] }}, day, nil)
	for _, m := range []struct{ malo, mga string }{{"by", "MGA-BY"}, {"nat", "MGA-X"}} {
		if err := g.Add(m.malo, slice(pipeline.SLP, pipeline.TenneT, pipeline.Consumption, m.mga, "G25", ptr(1e6)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	locs := s.byMalo("p1", day)
	for q := range 96 {
		if !near(locs["by"].mw[q], ft[q]*4/1000) || !near(locs["nat"].mw[q], wt[q]*4/1000) {
			t.Fatalf("qh %d: BY %.6f (FT %.6f), national %.6f (WT %.6f)", q, locs["by"].mw[q], ft[q]*4/1000, locs["nat"].mw[q], wt[q]*4/1000)
		}
	}
}

// TestHistoryDST aligns history by local clock time: the history values are a
// function of the local clock slot, so a correct alignment forecasts exactly
// that function on the target day.
func TestHistoryDST(t *testing.T) {
	linear := func(s, _ int) float64 { return 1000 + 10*float64(s) }
	cases := []struct {
		name    string
		day     string
		history []pipeline.MeteredEntry
	}{
		{
			// The fall-back day 25.10. carries 02:00-03:00 twice, once 50 kWh
			// above and once 50 below the clock value: averaged, they give it.
			name: "fall-back day in the history of an ordinary Sunday",
			day:  "2026-11-01",
			history: []pipeline.MeteredEntry{
				meteredByClock("m", d("2026-10-25"), func(s, occ int) float64 {
					if s >= 8 && s < 12 { // 02:00-02:45, summer time then winter time
						return linear(s, 0) + 50 - 100*float64(occ)
					}
					return linear(s, 0)
				}),
				meteredByClock("m", d("2026-10-18"), linear),
				meteredByClock("m", d("2026-10-11"), linear),
				meteredByClock("m", d("2026-10-04"), linear),
			},
		},
		{
			// The spring-forward day 29.3. lacks 02:00-03:00; filled from
			// 01:xx and 03:xx, a linear function is restored exactly.
			name: "spring-forward day in the history of Easter Sunday",
			day:  "2026-04-05",
			history: []pipeline.MeteredEntry{
				meteredByClock("m", d("2026-03-29"), linear),
				meteredByClock("m", d("2026-03-22"), linear),
				meteredByClock("m", d("2026-03-15"), linear),
				meteredByClock("m", d("2026-04-03"), linear), // Good Friday
			},
		},
		{
			name: "spring-forward target from ordinary Sundays",
			day:  "2026-03-29",
			history: []pipeline.MeteredEntry{
				meteredByClock("m", d("2026-03-22"), linear),
				meteredByClock("m", d("2026-03-15"), linear),
				meteredByClock("m", d("2026-03-08"), linear),
			},
		},
		{
			name: "fall-back target from Sundays and the holiday 3.10.",
			day:  "2026-10-25",
			history: []pipeline.MeteredEntry{
				meteredByClock("m", d("2026-10-18"), linear),
				meteredByClock("m", d("2026-10-03"), linear),
				meteredByClock("m", d("2026-09-27"), linear),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checked(t)
			day := d(tc.day)
			g, s := newGen(t, forecast.Config{Alloc: mem}, day, nil)
			if err := g.Add("m", slice(pipeline.RLM, pipeline.TenneT, pipeline.Consumption, "MGA1", "", nil), tc.history); err != nil {
				t.Fatal(err)
			}
			if err := g.Flush(); err != nil {
				t.Fatal(err)
			}
			l := s.byMalo("p1", day)["m"]
			if l == nil || l.source != pipeline.SourceHistory {
				t.Fatalf("location %+v", l)
			}
			for q, v := range l.mw {
				want := linear(clockSlot(day, q), 0) * 4 / 1000
				if !near(v, want) {
					t.Fatalf("qh %d (clock slot %d): %.9f MW, want %.9f", q, clockSlot(day, q), v, want)
				}
			}
		})
	}
}

func TestAddSubmitted(t *testing.T) {
	day := d("2026-03-29")
	mem := checked(t)
	g, s := newGen(t, forecast.Config{Alloc: mem}, day, nil)
	if err := g.AddSubmitted("m1", pipeline.TenneT, pipeline.Consumption, pipeline.MWH, constantValues(92, 0.5)); err != nil {
		t.Fatal(err)
	}
	if err := g.AddSubmitted("m2", pipeline.Amprion, pipeline.Production, pipeline.MW, constantValues(92, 3)); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		call func() error
	}{
		{"wrong length", func() error {
			return g.AddSubmitted("m3", pipeline.TenneT, pipeline.Consumption, pipeline.MW, constantValues(96, 1))
		}},
		{"no area", func() error {
			return g.AddSubmitted("m3", "", pipeline.Consumption, pipeline.MW, constantValues(92, 1))
		}},
		{"bad kind", func() error { return g.AddSubmitted("m3", pipeline.TenneT, "both", pipeline.MW, constantValues(92, 1)) }},
		{"bad unit", func() error {
			return g.AddSubmitted("m3", pipeline.TenneT, pipeline.Consumption, "W", constantValues(92, 1))
		}},
		{"no malo", func() error {
			return g.AddSubmitted("", pipeline.TenneT, pipeline.Consumption, pipeline.MW, constantValues(92, 1))
		}},
		{"NaN", func() error {
			v := constantValues(92, 1)
			v[0] = math.NaN()
			return g.AddSubmitted("m3", pipeline.TenneT, pipeline.Consumption, pipeline.MW, v)
		}},
	}
	for _, b := range bad {
		if err := b.call(); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("%s: err = %v, want invalid", b.name, err)
		}
	}
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	locs := s.byMalo("p1", day)
	if len(locs) != 2 {
		t.Fatalf("locations %v", locs)
	}
	for malo, want := range map[string]location{
		"m1": {area: "TenneT", kind: "consumption", source: "submitted", mw: constantValues(92, 2)},
		"m2": {area: "Amprion", kind: "production", source: "submitted", mw: constantValues(92, 3)},
	} {
		l := locs[malo]
		if l.area != want.area || l.kind != want.kind || l.source != want.source || l.meter != "" || l.mw[0] != want.mw[0] || l.mw[91] != want.mw[91] {
			t.Errorf("%s = %+v, want %+v", malo, *l, want)
		}
	}
	if st := g.Stats(); st.Sources[pipeline.SourceSubmitted] != 2 || st.Locations != 2 || st.Rows != 184 {
		t.Errorf("stats %+v", st)
	}
}

// TestBatches splits the rows into batches of BatchLocations locations and
// checks that each batch has its own malo dictionary and that all memory is
// returned, also for rows never flushed.
func TestBatches(t *testing.T) {
	day := d("2026-10-25")
	dso := []pipeline.ProfileEntry{constantProfile(day, "MGA1", "H25", 25)}
	cases := []struct {
		name    string
		locs    int
		batch   int
		flush   bool
		batches []int
	}{
		{"exact multiple", 6, 3, true, []int{300, 300}},
		{"partial last batch", 7, 3, true, []int{300, 300, 100}},
		{"one large batch grows its buffers", 200, 10_000, true, []int{20_000}},
		{"released without flush", 5, 3, false, []int{300}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checked(t)
			g, s := newGen(t, forecast.Config{Alloc: mem, BatchLocations: tc.batch}, day, dso)
			for i := range tc.locs {
				annual := float64(1000 * (i + 1))
				if err := g.Add(maloName(i), slice(pipeline.SLP, pipeline.TenneT, pipeline.Consumption, "MGA1", "H25", &annual), nil); err != nil {
					t.Fatal(err)
				}
			}
			if tc.flush {
				if err := g.Flush(); err != nil {
					t.Fatal(err)
				}
				locs := s.byMalo("p1", day)
				for i := range tc.locs {
					want := 25 * float64(1000*(i+1)) / 1e6 * 4 / 1000
					if l := locs[maloName(i)]; l == nil || !near(l.mw[99], want) {
						t.Fatalf("location %d: %+v, want %.9f MW", i, l, want)
					}
				}
			}
			if len(s.batches) != len(tc.batches) {
				t.Fatalf("batches %v, want %v", s.batches, tc.batches)
			}
			for i := range tc.batches {
				if s.batches[i] != tc.batches[i] {
					t.Fatalf("batches %v, want %v", s.batches, tc.batches)
				}
			}
		})
	}
}

func maloName(i int) string {
	return "5" + string(rune('0'+i/100%10)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
}

func TestEmitError(t *testing.T) {
	mem := checked(t)
	day := d(tuesday)
	g, s := newGen(t, forecast.Config{Alloc: mem, BatchLocations: 1}, day, []pipeline.ProfileEntry{constantProfile(day, "MGA1", "H25", 25)})
	boom := errors.New("disk full")
	s.err = boom
	err := g.Add("m", slice(pipeline.SLP, pipeline.TenneT, pipeline.Consumption, "MGA1", "H25", ptr(1e6)), nil)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}

func TestNewGeneratorInvalid(t *testing.T) {
	day := d(tuesday)
	emit := (&sink{t: t}).emit
	short := constantProfile(day, "MGA1", "H25", 25)
	short.ValuesKWh = short.ValuesKWh[:92]
	nan := constantProfile(day, "MGA1", "H25", 25)
	nan.ValuesKWh[3] = math.Inf(1)
	cases := []struct {
		name      string
		portfolio string
		dso       []pipeline.ProfileEntry
	}{
		{"no portfolio", "", nil},
		{"DSO profile of wrong length", "p1", []pipeline.ProfileEntry{short}},
		{"DSO profile with infinite value", "p1", []pipeline.ProfileEntry{nan}},
		{"DSO profile twice", "p1", []pipeline.ProfileEntry{constantProfile(day, "MGA1", "H25", 25), constantProfile(day, "MGA1", "h25", 25)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checked(t)
			g, err := forecast.NewGenerator(forecast.Config{Alloc: mem}, tc.portfolio, day, tc.dso, emit)
			if err == nil {
				g.Release()
			}
			if pipeline.KindOf(err) != pipeline.Invalid {
				t.Fatalf("err = %v, want invalid", err)
			}
		})
	}
}

// TestKeptRecords holds some emitted records past later batches, as the
// lake's writer does while it encodes in the background, and releases the
// others at once, so that their buffers are recycled for the next batches:
// a kept record must still hold exactly what it held when it was emitted,
// and everything must be freed once the generator and the records are
// released.
func TestKeptRecords(t *testing.T) {
	day := d("2026-03-29") // 92 quarter-hours
	dso := []pipeline.ProfileEntry{constantProfile(day, "MGA1", "H25", 25)}
	mem := checked(t)
	var kept []arrow.RecordBatch
	var want [][]row
	n := 0
	g, err := forecast.NewGenerator(forecast.Config{Alloc: mem, BatchLocations: 4}, "p1", day, dso, func(rec arrow.RecordBatch) error {
		rows := decode(t, rec)
		if n%3 != 2 {
			rec.Retain()
			kept = append(kept, rec)
			want = append(want, rows)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	areas := pipeline.ControlAreas
	for i := range 30 {
		annual := float64(1000 * (i + 1))
		kind := pipeline.Consumption
		if i%5 == 0 {
			kind = pipeline.Production
		}
		if err := g.Add(maloName(i), slice(pipeline.SLP, areas[i%len(areas)], kind, "MGA1", "H25", &annual), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	g.Release()
	if n != 8 || len(kept) != 6 {
		t.Fatalf("%d batches, %d kept", n, len(kept))
	}
	for i, rec := range kept {
		got := decode(t, rec)
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("kept record %d changed after later batches", i)
		}
		if len(got) == 0 || got[0].qh != 0 || got[len(got)-1].qh != day.Intervals()-1 || got[0].ts != day.QuarterStartsMicros()[0] {
			t.Errorf("kept record %d: first %+v, last %+v", i, got[0], got[len(got)-1])
		}
		rec.Release()
	}
}
