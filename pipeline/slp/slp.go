// Package slp serves the BDEW standard load profiles (Standardlastprofile) as
// quarter-hour energies of a delivery day, embedded in the binary.
//
// The tables come from the MIT-licensed oemof/demandlib repository
// (src/demandlib/bdew/bdew_data/, commit 109c1c8; see data/LICENSE-demandlib):
//
//   - The 2025 set (H25, G25, L25, P25, S25): one 96-value day per month and day
//     type (SA, FT, WT), in kWh per quarter-hour for an annual consumption of
//     1,000,000 kWh. The values are used as published. Summed over 2025 with
//     national holidays, G25 gives 1,000,341 kWh and L25 1,000,214. The dynamic
//     ones reach 1,000,000 only with the dynamisation factor: H25 1,003,245 raw
//     and 999,901 dynamised, P25 949,072 raw and 1,000,016 dynamised, S25 888,081
//     raw and 1,000,028 dynamised. So the 2025 tables are normalised to be
//     dynamised, like H0.
//   - The 1999 set (H0, G0..G6, L0..L2) in selp_series_1999.csv: one 96-value day
//     per season (winter 01.11-20.03, summer 15.05-14.09, transition otherwise)
//     and weekday 1 (Monday) to 7 (Sunday). Weekdays 1 to 5 are identical and form
//     the working day (WT), 6 is Saturday (SA), 7 Sunday/holiday (FT). The values
//     are the BDEW table values in kW, i.e. the mean quarter-hour power in W for an
//     annual consumption of 1,000 kWh (H0 winter working day 00:00-00:15 = 0.0676,
//     the BDEW's 67.6 W). They are converted to kWh per quarter-hour for
//     1,000,000 kWh by the fixed factor 1000 (scale) x 0.25 h = 250. The result
//     is not re-normalised per calendar year: like the BDEW tables it sums to about
//     1,000,000 kWh (2025 and 2026 with national holidays: 996,174 for G6 to
//     1,015,602 for G1, dynamised H0 998,823; see TestYearSums).
//
// The dynamic profiles H0, H25, P25 and S25 are multiplied by the BDEW
// dynamisation factor F(t) = -3.92e-10 t^4 + 3.2e-7 t^3 - 7.02e-5 t^2 + 2.1e-3 t +
// 1.24, t the day of the year (1..366). Neither F(t) nor the product is rounded;
// whether a DSO rounds the dynamised values (as some BDEW guidance describes) is
// left to the consumer.
//
// Daylight-saving days follow the wall clock, as SMARD does: each quarter-hour of
// the delivery day takes the table row of its local start time. The 92-quarter-hour
// day in March therefore drops local 02:00-03:00 (rows 8..11) and the
// 100-quarter-hour day in October repeats it (rows 8..11 twice, first in summer
// time, then in winter time). That this is the BDEW's intent is unverified in the
// BDEW texts; the rule lives in rowsOf.
package slp

import (
	"embed"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
)

//go:embed data/h25.csv data/g25.csv data/l25.csv data/p25.csv data/s25.csv data/selp_series_1999.csv data/LICENSE-demandlib
var dataFS embed.FS

// names maps the upper-case spelling of every profile to its canonical name and
// says which ones are dynamised.
var names = map[string]struct {
	file    string // the 2025 set's file; empty for the 1999 set
	dynamic bool
}{
	"H25": {"data/h25.csv", true},
	"G25": {"data/g25.csv", false},
	"L25": {"data/l25.csv", false},
	"P25": {"data/p25.csv", true},
	"S25": {"data/s25.csv", true},
	"H0":  {"", true},
	"G0":  {"", false},
	"G1":  {"", false},
	"G2":  {"", false},
	"G3":  {"", false},
	"G4":  {"", false},
	"G5":  {"", false},
	"G6":  {"", false},
	"L0":  {"", false},
	"L1":  {"", false},
	"L2":  {"", false},
}

// Canonical returns the canonical spelling of a profile name, matched
// case-insensitively and ignoring surrounding blanks, and whether it is known.
func Canonical(name string) (string, bool) {
	c := strings.ToUpper(strings.TrimSpace(name))
	if _, ok := names[c]; !ok {
		return "", false
	}
	return c, true
}

// Names lists the canonical names of all embedded profiles.
func Names() []string {
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Quarters returns the profile's energy in kWh per quarter-hour of the local
// delivery day for an annual consumption of 1,000,000 kWh; len == day.Intervals().
// dt selects the table's day type; the caller derives it with
// calendar.SLPDayType for the location's state. Unknown names, day types and
// days are pipeline.Invalid. The slice is new and owned by the caller.
func Quarters(name string, day pipeline.Day, dt calendar.DayType) ([]float64, error) {
	c, ok := Canonical(name)
	if !ok {
		return nil, pipeline.Errorf(pipeline.Invalid, "load profile %q: unknown (want one of %s)", name, strings.Join(Names(), ", "))
	}
	return quarters(c, day, dt)
}

// quarters is Quarters for a canonical name.
func quarters(name string, day pipeline.Day, dt calendar.DayType) ([]float64, error) {
	dti, ok := dayTypeIndex(dt)
	if !ok {
		return nil, pipeline.Errorf(pipeline.Invalid, "load profile %s: day type %q: want WT, SA or FT", name, dt)
	}
	if !valid(day) {
		return nil, pipeline.Errorf(pipeline.Invalid, "load profile %s: invalid day %s", name, day)
	}
	tabs, err := loadTables()
	if err != nil {
		return nil, fmt.Errorf("load profile %s: %w", name, err)
	}
	var base *[96]float64
	if m, ok := tabs.monthly[name]; ok {
		base = &m[day.Month-1][dti]
	} else {
		base = &tabs.seasonal[name][seasonOf(day)][dti]
	}
	rows, err := rowsOf(day)
	if err != nil {
		return nil, fmt.Errorf("load profile %s %s: %w", name, day, err)
	}
	f := 1.0
	if names[name].dynamic {
		f = Dynamisation(yearDay(day))
	}
	out := make([]float64, len(rows))
	for i, r := range rows {
		out[i] = base[r] * f
	}
	return out, nil
}

// Dynamisation returns the BDEW dynamisation factor F(t) for day of year t
// (1..366), by which the dynamic profiles are multiplied.
func Dynamisation(t int) float64 {
	x := float64(t)
	return (((-3.92e-10*x+3.2e-7)*x-7.02e-5)*x+2.1e-3)*x + 1.24
}

// IsDynamic reports whether the named profile is dynamised; false for unknown names.
func IsDynamic(name string) bool {
	c, ok := Canonical(name)
	return ok && names[c].dynamic
}

// Day type indexes into the tables.
const (
	dtSA = iota
	dtFT
	dtWT
)

func dayTypeIndex(dt calendar.DayType) (int, bool) {
	switch dt {
	case calendar.Saturday:
		return dtSA, true
	case calendar.SundayHoliday:
		return dtFT, true
	case calendar.Workday:
		return dtWT, true
	}
	return 0, false
}

// Seasons of the 1999 set.
const (
	winter = iota
	summer
	transition
)

// seasonOf applies the 1999 set's season boundaries: winter 01.11-20.03,
// summer 15.05-14.09, transition 21.03-14.05 and 15.09-31.10.
func seasonOf(d pipeline.Day) int {
	md := int(d.Month)*100 + d.Dom
	switch {
	case md >= 1101 || md <= 320:
		return winter
	case md >= 515 && md <= 914:
		return summer
	}
	return transition
}

func valid(d pipeline.Day) bool {
	if d.IsZero() || d.Year < 1 || d.Year > 9999 {
		return false
	}
	t := time.Date(d.Year, d.Month, d.Dom, 12, 0, 0, 0, time.UTC)
	return t.Year() == d.Year && t.Month() == d.Month && t.Day() == d.Dom
}

func yearDay(d pipeline.Day) int {
	return time.Date(d.Year, d.Month, d.Dom, 12, 0, 0, 0, time.UTC).YearDay()
}

// rowsOf maps each quarter-hour of the delivery day to the table row (0..95) of
// its local start time. On DST days this drops or repeats local 02:00-03:00.
func rowsOf(d pipeline.Day) ([]int, error) {
	n := d.Intervals()
	start := d.Start()
	rows := make([]int, n)
	for i := range rows {
		t := start.Add(time.Duration(i) * 15 * time.Minute).In(pipeline.Berlin)
		if t.Second() != 0 || t.Minute()%15 != 0 {
			// A zone offset that is not a whole quarter-hour would misalign the table.
			return nil, pipeline.Errorf(pipeline.Internal, "quarter-hour %d starts at %s, not on a quarter-hour", i, t.Format("15:04:05"))
		}
		rows[i] = t.Hour()*4 + t.Minute()/15
	}
	return rows, nil
}
