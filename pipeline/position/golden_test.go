package position_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/forecast"
	"github.com/schedbridge/schedbridge/pipeline/position"
	"github.com/schedbridge/schedbridge/pipeline/slp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// The golden portfolio and its hand-computed expectations are described in
// testdata/golden.md; keep the two in step.

func annual(v float64) *float64 { return &v }

func goldenLocations() []pipeline.Location {
	loc := func(malo string, mt pipeline.MeteringType, area pipeline.ControlArea, kind pipeline.Kind, mga, profile string, a *float64) pipeline.Location {
		// An older, different slice shows that the active one is taken.
		old := pipeline.Slice{Active: true, ValidFrom: pipeline.NewDay(2020, 1, 1), ValidTo: &pipeline.Day{Year: 2026, Month: 1, Dom: 1},
			MeteringType: pipeline.SLP, ControlArea: pipeline.TransnetBW, Kind: pipeline.Consumption, MGA: "MGA1", Profile: "H25", AnnualConsumptionKWh: annual(9e9)}
		cur := pipeline.Slice{Active: true, ValidFrom: pipeline.NewDay(2026, 1, 1), MeteringType: mt, ControlArea: area, Kind: kind,
			MGA: mga, Profile: profile, AnnualConsumptionKWh: a}
		return pipeline.Location{Malo: malo, Slices: []pipeline.Slice{old, cur}}
	}
	return []pipeline.Location{
		loc("slp-dso-h25", pipeline.SLP, pipeline.TenneT, pipeline.Consumption, "MGA1", "H25", annual(1e6)),
		loc("slp-dso-g25", pipeline.SLP, pipeline.TenneT, pipeline.Consumption, "MGA1", "G25", annual(2e6)),
		loc("rlm-long", pipeline.RLM, pipeline.TenneT, pipeline.Consumption, "MGA1", "", nil),
		loc("slp-bdew-h25", pipeline.SLP, pipeline.Amprion, pipeline.Consumption, "MGA2", "H25", annual(3e6)),
		loc("slp-bdew-g25", pipeline.SLP, pipeline.Amprion, pipeline.Production, "MGA2", "G25", annual(5e5)),
		loc("rlm-short", pipeline.RLM, pipeline.Amprion, pipeline.Consumption, "MGA1", "", annual(1e6)),
		loc("slp-50hz", pipeline.SLP, pipeline.FiftyHertz, pipeline.Consumption, "MGA1", "H25", annual(1e6)),
		loc("tlp-unknown", pipeline.TLP, pipeline.TenneT, pipeline.Consumption, "MGA2", "TLP-X", annual(1e6)),
	}
}

// goldenDay is one delivery day of the golden test with its similar days as
// worked out by hand (newest first) and the hand-computed check points.
type goldenDay struct {
	day     pipeline.Day
	similar []pipeline.Day
	bonus   map[pipeline.Day]float64 // extra kWh on a similar day
	checks  []check
}

// check is one hand-computed quarter-hour of a control area.
type check struct {
	area                   pipeline.ControlArea
	qh                     int
	consumption, prod, opn float64
}

func parse(s string) pipeline.Day {
	d, err := pipeline.ParseDay(s)
	if err != nil {
		panic(err)
	}
	return d
}

func dayList(ss ...string) []pipeline.Day {
	out := make([]pipeline.Day, len(ss))
	for i, s := range ss {
		out[i] = parse(s)
	}
	return out
}

var goldenDays = []goldenDay{
	{
		day:     parse("2026-11-24"),
		similar: dayList("2026-11-17", "2026-11-10", "2026-11-03", "2026-10-27", "2026-10-20", "2026-10-13", "2026-10-06", "2026-09-29"),
		checks: []check{
			{pipeline.FiftyHertz, 0, 6, 0, 0},
			{pipeline.Amprion, 0, 0.465848050051, 0.028472, 0.337376050051},
			{pipeline.Amprion, 48, 0.554821553602, 0.126302, 0.328519553602},
			{pipeline.TenneT, 0, 1.5, 0, 0.7},
			{pipeline.TenneT, 48, 1.692, 0, 0.892},
			{pipeline.TenneT, 95, 1.5 + 0.004*95, 0, 1.5 + 0.004*95 - 0.8},
		},
	},
	{
		day:     parse("2026-03-29"),
		similar: dayList("2026-03-22", "2026-03-15", "2026-03-08", "2026-03-01", "2026-02-22", "2026-02-15", "2026-02-08", "2026-02-01"),
		checks: []check{
			{pipeline.FiftyHertz, 91, 6, 0, 0},
			{pipeline.Amprion, 0, 0.493146170438, 0.028702, 0.364444170438},
			{pipeline.Amprion, 44, 0.746997922680, 0.037702, 0.609295922680},
			{pipeline.TenneT, 7, 1.5 + 0.004*7, 0, 1.5 + 0.004*7 - 0.8},
			{pipeline.TenneT, 8, 1.548, 0, 0.748},
			{pipeline.TenneT, 44, 1.692, 0, 0.892},
		},
	},
	{
		day: parse("2026-10-25"),
		similar: dayList("2026-10-18", "2026-10-11", "2026-10-04", "2026-10-03", "2026-09-27", "2026-09-20", "2026-09-13",
			"2026-09-06", "2026-08-30"),
		bonus: map[pipeline.Day]float64{parse("2026-10-03"): 70},
		checks: []check{
			{pipeline.FiftyHertz, 99, 6, 0, 0},
			{pipeline.Amprion, 0, 0.485166106317, 0.026348, 0.358818106317},
			{pipeline.Amprion, 52, 0.765865522200, 0.035388, 0.630477522200},
			{pipeline.TenneT, 0, 1.54, 0, 0.74},
			{pipeline.TenneT, 8, 1.572, 0, 0.772},
			{pipeline.TenneT, 12, 1.572, 0, 0.772},
			{pipeline.TenneT, 52, 1.732, 0, 0.932},
		},
	},
}

// clockEntry builds a kWh day whose value is f(local clock slot).
func clockEntry(malo string, day pipeline.Day, f func(slot int) float64) pipeline.MeteredEntry {
	n := day.Intervals()
	start := day.Start()
	v := make([]float64, n)
	for q := range v {
		t := start.Add(time.Duration(q) * 15 * time.Minute).In(pipeline.Berlin)
		v[q] = f(t.Hour()*4 + t.Minute()/15)
	}
	return pipeline.MeteredEntry{Day: day, Malo: malo, Unit: pipeline.KWH, Values: v}
}

// goldenHistory is the metered history of the rlm locations over the 8 weeks
// before the day (see testdata/golden.md).
func goldenHistory(g goldenDay) map[string][]pipeline.MeteredEntry {
	rank := map[pipeline.Day]int{}
	for i, d := range g.similar {
		rank[d] = i + 1
	}
	out := map[string][]pipeline.MeteredEntry{}
	for i := 1; i <= 56; i++ {
		d := g.day.AddDays(-i)
		r := rank[d]
		switch {
		case r == 0:
			out["rlm-long"] = append(out["rlm-long"], clockEntry("rlm-long", d, func(int) float64 { return 5000 }))
			continue
		case r == 1:
			out["rlm-long"] = append(out["rlm-long"], clockEntry("rlm-long", d, func(s int) float64 { return 10 * (250 + float64(s)) }))
		default:
			out["rlm-long"] = append(out["rlm-long"], clockEntry("rlm-long", d, func(s int) float64 { return 250 + g.bonus[d] + float64(s) }))
		}
		if r <= 2 {
			out["rlm-short"] = append(out["rlm-short"], clockEntry("rlm-short", d, func(int) float64 { return 999 }))
		}
	}
	return out
}

func fillN(n int, v float64) []float64 { return fill(n, v) }

// goldenOutput is the whole result of a golden day, as stored in testdata.
type goldenOutput struct {
	Day       string         `json:"delivery_day"`
	Stats     forecast.Stats `json:"forecast_stats"`
	Positions []goldenBlock  `json:"positions"`
	Open      []goldenBlock  `json:"open_position"`
}

type goldenBlock struct {
	Portfolio   string    `json:"portfolio"`
	ControlArea string    `json:"control_area"`
	Source      string    `json:"source,omitempty"`
	Consumption []float64 `json:"consumption_mw,omitempty"`
	Production  []float64 `json:"production_mw,omitempty"`
	Net         []float64 `json:"net_mw"`
	Bought      []float64 `json:"bought_mw,omitempty"`
	Sold        []float64 `json:"sold_mw,omitempty"`
	Open        []float64 `json:"open_mw,omitempty"`
}

func TestGolden(t *testing.T) {
	table := slp.NewTable()
	for _, g := range goldenDays {
		t.Run(g.day.String(), func(t *testing.T) {
			mem := checked(t)
			day, n := g.day, g.day.Intervals()
			if got := forecast.SimilarDays(day, "", 8); fmt.Sprint(got) != fmt.Sprint(g.similar) {
				t.Fatalf("similar days %v, the hand-made list %v", got, g.similar)
			}
			dso := []pipeline.ProfileEntry{
				{Day: day, MGA: "MGA1", Profile: "H25", ValuesKWh: fillN(n, 25)},
				{Day: day, MGA: "MGA1", Profile: "G25", ValuesKWh: fillN(n, 50)},
			}
			sub := position.Submitted{Portfolio: "acme", Forecast: pipeline.Forecast{
				DeliveryDay: day,
				MaloMapping: map[string]pipeline.ControlArea{"sub-malo": pipeline.FiftyHertz},
				Series: []pipeline.Series{
					{ControlArea: pipeline.FiftyHertz, Kind: pipeline.Consumption, Unit: pipeline.MW, Values: fillN(n, 5)},
					{Malo: "sub-malo", Kind: pipeline.Consumption, Unit: pipeline.MWH, Values: fillN(n, 0.25)},
				},
			}}
			trades := []pipeline.TradeSet{{Portfolio: "acme", Day: day, Trades: []pipeline.Trade{
				{ControlArea: pipeline.TenneT, Direction: pipeline.Buy, Unit: pipeline.MW, Values: fillN(n, 1)},
				{ControlArea: pipeline.TenneT, Direction: pipeline.Sell, Unit: pipeline.MWH, Values: fillN(n, 0.05)},
				{ControlArea: pipeline.Amprion, Direction: pipeline.Buy, Unit: pipeline.MWH, Values: fillN(n, 0.025)},
				{ControlArea: pipeline.FiftyHertz, Direction: pipeline.Buy, Unit: pipeline.MWH, Values: fillN(n, 1.5)},
			}}}

			// Forecast: batches of three locations go straight into the
			// Aggregator, as the stages pass them through the lake.
			agg := position.NewAggregator(day)
			gen, err := forecast.NewGenerator(forecast.Config{Alloc: mem, BatchLocations: 3, Profiles: table}, "acme", day, dso,
				func(rec arrow.RecordBatch) error { return agg.Add(rec) })
			if err != nil {
				t.Fatal(err)
			}
			defer gen.Release()
			hist := goldenHistory(g)
			for _, loc := range goldenLocations() {
				s, ok := forecast.ActiveSlice(loc, day)
				if !ok {
					t.Fatalf("%s has no active slice", loc.Malo)
				}
				if err := gen.Add(loc.Malo, s, hist[loc.Malo]); err != nil {
					t.Fatal(err)
				}
			}
			for _, se := range sub.Forecast.Series {
				if se.Malo != "" {
					if err := gen.AddSubmitted(se.Malo, sub.Forecast.MaloMapping[se.Malo], se.Kind, se.Unit, se.Values); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := gen.Flush(); err != nil {
				t.Fatal(err)
			}
			stats := gen.Stats()
			want := map[string]int{pipeline.SourceDSOProfile: 4, pipeline.SourceBDEWProfile: 2, pipeline.SourceHistory: 1, pipeline.SourceSubmitted: 1}
			if fmt.Sprint(stats.Sources) != fmt.Sprint(want) || stats.Skipped != 1 || stats.Reasons[forecast.SkipUnknownProfile] != 1 ||
				stats.Fallbacks != 1 || stats.Batches != 3 || stats.Rows != int64(8*n) {
				t.Fatalf("stats %+v", stats)
			}
			if agg.SubmittedRows() != int64(n) {
				t.Fatalf("submitted forecast_malo rows left out: %d, want %d", agg.SubmittedRows(), n)
			}

			pos, err := agg.Positions(mem, []position.Submitted{sub})
			if err != nil {
				t.Fatal(err)
			}
			defer pos.Release()
			open, err := position.Open(mem, pos, trades)
			if err != nil {
				t.Fatal(err)
			}
			defer open.Release()

			out := goldenOutput{Day: day.String(), Stats: stats, Positions: positionBlocks(position.PositionRows(pos)), Open: openBlocks(position.OpenRows(open))}
			checkHand(t, g, out)
			compareGolden(t, filepath.Join("testdata", "golden_"+day.String()+".json"), out)
		})
	}
}

func positionBlocks(rows []pipeline.PositionRow) []goldenBlock {
	var out []goldenBlock
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].Portfolio != r.Portfolio || out[len(out)-1].ControlArea != string(r.ControlArea) {
			out = append(out, goldenBlock{Portfolio: r.Portfolio, ControlArea: string(r.ControlArea), Source: r.Source})
		}
		b := &out[len(out)-1]
		b.Consumption = append(b.Consumption, r.ConsumptionMW)
		b.Production = append(b.Production, r.ProductionMW)
		b.Net = append(b.Net, r.NetMW)
	}
	return out
}

func openBlocks(rows []pipeline.OpenPositionRow) []goldenBlock {
	var out []goldenBlock
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].Portfolio != r.Portfolio || out[len(out)-1].ControlArea != string(r.ControlArea) {
			out = append(out, goldenBlock{Portfolio: r.Portfolio, ControlArea: string(r.ControlArea)})
		}
		b := &out[len(out)-1]
		b.Net = append(b.Net, r.NetMW)
		b.Bought = append(b.Bought, r.BoughtMW)
		b.Sold = append(b.Sold, r.SoldMW)
		b.Open = append(b.Open, r.OpenMW)
	}
	return out
}

// checkHand compares the hand-computed quarter-hours of testdata/golden.md.
func checkHand(t *testing.T, g goldenDay, out goldenOutput) {
	t.Helper()
	order := []string{"50Hertz", "Amprion", "TenneT"}
	if len(out.Positions) != 3 || len(out.Open) != 3 {
		t.Fatalf("%d position blocks, %d open blocks; want 3 each", len(out.Positions), len(out.Open))
	}
	for i, area := range order {
		wantSource := "generated"
		if area == "50Hertz" {
			wantSource = "submitted"
		}
		if out.Positions[i].ControlArea != area || out.Open[i].ControlArea != area || out.Positions[i].Source != wantSource {
			t.Fatalf("block %d: %s/%s source %s, want %s %s", i, out.Positions[i].ControlArea, out.Open[i].ControlArea, out.Positions[i].Source, area, wantSource)
		}
	}
	const tol = 5e-12
	for _, c := range g.checks {
		i := map[pipeline.ControlArea]int{pipeline.FiftyHertz: 0, pipeline.Amprion: 1, pipeline.TenneT: 2}[c.area]
		p, o := out.Positions[i], out.Open[i]
		if math.Abs(p.Consumption[c.qh]-c.consumption) > tol || math.Abs(p.Production[c.qh]-c.prod) > tol ||
			math.Abs(p.Net[c.qh]-(c.consumption-c.prod)) > tol || math.Abs(o.Open[c.qh]-c.opn) > tol {
			t.Errorf("%s qh %d: consumption %.12f production %.12f net %.12f open %.12f; hand-computed %.12f %.12f %.12f %.12f",
				c.area, c.qh, p.Consumption[c.qh], p.Production[c.qh], p.Net[c.qh], o.Open[c.qh], c.consumption, c.prod, c.consumption-c.prod, c.opn)
		}
	}
}

// compareGolden compares out with the golden file within a tolerance that
// allows for summation order, or rewrites the file with -update.
func compareGolden(t *testing.T, path string, out goldenOutput) {
	t.Helper()
	got, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	var want goldenOutput
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(want.Stats) != fmt.Sprint(out.Stats) || want.Day != out.Day || len(want.Positions) != len(out.Positions) || len(want.Open) != len(out.Open) {
		t.Fatalf("%s: header differs:\n got %s %+v\nwant %s %+v", path, out.Day, out.Stats, want.Day, want.Stats)
	}
	blocks := func(name string, w, g []goldenBlock) {
		for i := range w {
			if w[i].Portfolio != g[i].Portfolio || w[i].ControlArea != g[i].ControlArea || w[i].Source != g[i].Source {
				t.Fatalf("%s %s block %d: %s/%s/%s, want %s/%s/%s", path, name, i, g[i].Portfolio, g[i].ControlArea, g[i].Source, w[i].Portfolio, w[i].ControlArea, w[i].Source)
			}
			for _, col := range []struct {
				name string
				w, g []float64
			}{{"consumption", w[i].Consumption, g[i].Consumption}, {"production", w[i].Production, g[i].Production}, {"net", w[i].Net, g[i].Net},
				{"bought", w[i].Bought, g[i].Bought}, {"sold", w[i].Sold, g[i].Sold}, {"open", w[i].Open, g[i].Open}} {
				if len(col.w) != len(col.g) {
					t.Fatalf("%s %s %s/%s %s: %d values, want %d", path, name, g[i].Portfolio, g[i].ControlArea, col.name, len(col.g), len(col.w))
				}
				for q := range col.w {
					if math.Abs(col.w[q]-col.g[q]) > 1e-9 {
						t.Fatalf("%s %s %s/%s %s qh %d: %.12f, want %.12f", path, name, g[i].Portfolio, g[i].ControlArea, col.name, q, col.g[q], col.w[q])
					}
				}
			}
		}
	}
	blocks("positions", want.Positions, out.Positions)
	blocks("open", want.Open, out.Open)
}
