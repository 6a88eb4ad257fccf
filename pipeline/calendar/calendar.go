// Package calendar knows the German public holidays per federal state and the
// day types of the BDEW standard load profiles (SLP).
//
// Scope decisions, each easy to change in the rules table below:
//
//   - A holiday counts for a state only if it holds in the whole state. Holidays
//     that hold in parts of a state are not holidays at state level: Fronleichnam
//     in parts of Saxony (SN) and Thuringia (TH), Mariae Himmelfahrt in the mainly
//     Catholic communes of Bavaria (BY) and the Augsburger Friedensfest (city of
//     Augsburg). A DSO whose grid lies in such a part must map its locations to a
//     state whose rules fit, or the profile day type will be wrong on those days.
//   - Holidays with a start year are modelled from that year on: Frauentag in
//     Berlin from 2019 and in Mecklenburg-Vorpommern from 2023, Weltkindertag in
//     Thuringia from 2019, Reformationstag in HB, HH, NI and SH from 2018. In 2017
//     Reformationstag was a one-off holiday in every state, so it is national in
//     that year. Berlin's one-off Tag der Befreiung (8 May 2020 and 2025) is
//     included.
//   - Buss- und Bettag is national before 1995 and a Saxon holiday from 1995 on.
//     Rules before 1995 are otherwise not modelled: the 1990s are not delivery days.
//   - Ostersonntag and Pfingstsonntag are statutory holidays in Brandenburg; they
//     are listed for completeness and change no day type, as they are Sundays.
//
// Market-communication deadlines count working days differently (a holiday in
// any state counts everywhere, 24.12 and 31.12 are holidays); that rule is not
// part of this package.
package calendar

import (
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// State is a German federal state by its ISO 3166-2 subdivision code without the
// "DE-" prefix. The empty State means "national holidays only".
type State string

// The 16 federal states.
const (
	BW State = "BW" // Baden-Wuerttemberg
	BY State = "BY" // Bayern
	BE State = "BE" // Berlin
	BB State = "BB" // Brandenburg
	HB State = "HB" // Bremen
	HH State = "HH" // Hamburg
	HE State = "HE" // Hessen
	MV State = "MV" // Mecklenburg-Vorpommern
	NI State = "NI" // Niedersachsen
	NW State = "NW" // Nordrhein-Westfalen
	RP State = "RP" // Rheinland-Pfalz
	SL State = "SL" // Saarland
	SN State = "SN" // Sachsen
	ST State = "ST" // Sachsen-Anhalt
	SH State = "SH" // Schleswig-Holstein
	TH State = "TH" // Thueringen
)

var states = map[State]bool{
	BW: true, BY: true, BE: true, BB: true, HB: true, HH: true, HE: true, MV: true,
	NI: true, NW: true, RP: true, SL: true, SN: true, ST: true, SH: true, TH: true,
}

// ParseState parses a state code case-insensitively; the ISO form "DE-BY" is
// accepted as well. The empty string parses to the national-only State.
func ParseState(s string) (State, error) {
	c := strings.ToUpper(strings.TrimSpace(s))
	c = strings.TrimPrefix(c, "DE-")
	if c == "" {
		return "", nil
	}
	if !states[State(c)] {
		return "", pipeline.Errorf(pipeline.Invalid, "state %q: want one of the 16 German state codes (BW, BY, BE, ...)", s)
	}
	return State(c), nil
}

// Easter returns Gregorian Easter Sunday of the year (anonymous Gregorian
// algorithm, also known as Meeus/Jones/Butcher).
func Easter(year int) pipeline.Day {
	a := year % 19
	b := year / 100
	c := year % 100
	d := b / 4
	e := b % 4
	f := (b + 8) / 25
	g := (b - f + 1) / 3
	h := (19*a + b - d - g + 15) % 30
	i := c / 4
	k := c % 4
	l := (32 + 2*e + 2*i - h - k) % 7
	m := (a + 11*h + 22*l) / 451
	month := (h + l - 7*m + 114) / 31
	dom := (h+l-7*m+114)%31 + 1
	return pipeline.NewDay(year, time.Month(month), dom)
}

// rule is one holiday. date returns the holiday's day in a year, given that
// year's Easter Sunday so that Holiday computes Easter once per call; the rule holds
// in the listed states (all states and the national calendar when national is
// set) for years in [from, to] (zero means unbounded) or only in the listed years.
type rule struct {
	name     string
	date     func(year int, easter pipeline.Day) pipeline.Day
	national bool
	states   []State
	from, to int
	only     []int
	// extra lists further states for a limited span of years, so that a
	// holiday's older and newer state sets stay one rule.
	extra []span
}

type span struct {
	states []State
	from   int
}

func fixed(month time.Month, dom int) func(int, pipeline.Day) pipeline.Day {
	return func(y int, _ pipeline.Day) pipeline.Day { return pipeline.NewDay(y, month, dom) }
}

func easterOffset(days int) func(int, pipeline.Day) pipeline.Day {
	return func(_ int, easter pipeline.Day) pipeline.Day { return easter.AddDays(days) }
}

// bussUndBettag is the Wednesday before 23 November, i.e. the Wednesday in 16..22 November.
func bussUndBettag(y int, _ pipeline.Day) pipeline.Day {
	d := pipeline.NewDay(y, time.November, 22)
	back := (int(weekday(d)) - int(time.Wednesday) + 7) % 7
	return d.AddDays(-back)
}

var rules = []rule{
	{name: "Neujahr", date: fixed(time.January, 1), national: true},
	{name: "Heilige Drei Koenige", date: fixed(time.January, 6), states: []State{BW, BY, ST}},
	{name: "Internationaler Frauentag", date: fixed(time.March, 8), extra: []span{{[]State{BE}, 2019}, {[]State{MV}, 2023}}},
	{name: "Karfreitag", date: easterOffset(-2), national: true},
	{name: "Ostersonntag", date: easterOffset(0), states: []State{BB}},
	{name: "Ostermontag", date: easterOffset(1), national: true},
	{name: "Tag der Arbeit", date: fixed(time.May, 1), national: true},
	{name: "Tag der Befreiung", date: fixed(time.May, 8), states: []State{BE}, only: []int{2020, 2025}},
	{name: "Christi Himmelfahrt", date: easterOffset(39), national: true},
	{name: "Pfingstsonntag", date: easterOffset(49), states: []State{BB}},
	{name: "Pfingstmontag", date: easterOffset(50), national: true},
	{name: "Fronleichnam", date: easterOffset(60), states: []State{BW, BY, HE, NW, RP, SL}},
	{name: "Mariae Himmelfahrt", date: fixed(time.August, 15), states: []State{SL}},
	{name: "Weltkindertag", date: fixed(time.September, 20), extra: []span{{[]State{TH}, 2019}}},
	{name: "Tag der Deutschen Einheit", date: fixed(time.October, 3), national: true},
	{name: "Reformationstag", date: fixed(time.October, 31), national: true, only: []int{2017}},
	{name: "Reformationstag", date: fixed(time.October, 31), states: []State{BB, MV, SN, ST, TH},
		extra: []span{{[]State{HB, HH, NI, SH}, 2018}}},
	{name: "Allerheiligen", date: fixed(time.November, 1), states: []State{BW, BY, NW, RP, SL}},
	{name: "Buss- und Bettag", date: bussUndBettag, national: true, to: 1994},
	{name: "Buss- und Bettag", date: bussUndBettag, states: []State{SN}, from: 1995},
	{name: "1. Weihnachtstag", date: fixed(time.December, 25), national: true},
	{name: "2. Weihnachtstag", date: fixed(time.December, 26), national: true},
}

// holds reports whether r applies in year y for state st.
func (r rule) holds(y int, st State) bool {
	if r.from != 0 && y < r.from || r.to != 0 && y > r.to {
		return false
	}
	if len(r.only) > 0 && !contains(r.only, y) {
		return false
	}
	if r.national {
		return true
	}
	if st == "" {
		return false
	}
	if contains(r.states, st) {
		return true
	}
	for _, e := range r.extra {
		if y >= e.from && contains(e.states, st) {
			return true
		}
	}
	return false
}

func contains[T comparable](xs []T, x T) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Holiday reports whether day is a public holiday in state st and returns its
// German name (ASCII transliterated). National holidays hold for every st,
// including the empty State; regional ones only for the states that have them.
// An unknown st gets the national holidays only.
func Holiday(day pipeline.Day, st State) (name string, ok bool) {
	easter := Easter(day.Year)
	for _, r := range rules {
		if r.date(day.Year, easter) == day && r.holds(day.Year, st) {
			return r.name, true
		}
	}
	return "", false
}

// DayType is the day type of the BDEW standard load profiles, spelled as in the
// BDEW 2025 profile tables.
type DayType string

// The three SLP day types.
const (
	Workday       DayType = "WT" // Werktag, Monday to Friday
	Saturday      DayType = "SA" // Samstag
	SundayHoliday DayType = "FT" // Sonn- und Feiertag
)

// SLPDayType returns the profile day type of day in state st: Sundays and public
// holidays are FT, Saturdays SA, 24 and 31 December SA unless they fall on a
// Sunday (then FT), every other day WT.
func SLPDayType(day pipeline.Day, st State) DayType {
	wd := weekday(day)
	if wd == time.Sunday {
		return SundayHoliday
	}
	if _, ok := Holiday(day, st); ok {
		return SundayHoliday
	}
	if wd == time.Saturday || day.Month == time.December && (day.Dom == 24 || day.Dom == 31) {
		return Saturday
	}
	return Workday
}

// weekday is computed at noon UTC so that neither the host zone nor DST can
// shift the civil day.
func weekday(d pipeline.Day) time.Weekday {
	return time.Date(d.Year, d.Month, d.Dom, 12, 0, 0, 0, time.UTC).Weekday()
}
