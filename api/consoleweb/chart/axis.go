package chart

import (
	"fmt"
	"time"
)

// QuarterHourAxis returns the per-point labels ("HH:MM" in loc) and the hour
// ticks for one delivery day, given the UTC start of every quarter-hour (96,
// or 92 and 100 on the days the clocks change) in ascending order. A nil loc
// is UTC.
//
// A clock time that occurs twice (02:00 to 02:45 on the fall-back day) gets
// its zone in the label, "02:00 MESZ" and then "02:00 MEZ", and its hour tick
// the letter A or B: "02A", "02B". Hours divisible by three and the end of the
// day ("24") are labelled, and so is the first hour after the clocks jump; the
// other full hours are minor ticks without a label.
func QuarterHourAxis(starts []time.Time, loc *time.Location) (labels []string, ticks []Tick) {
	if loc == nil {
		loc = time.UTC
	}
	local := make([]time.Time, len(starts))
	seen := map[string]int{}
	for i, s := range starts {
		local[i] = s.In(loc)
		seen[local[i].Format("15:04")]++
	}
	labels = make([]string, len(starts))
	hourSeen := map[int]int{}
	for i, t := range local {
		hm := t.Format("15:04")
		repeated := seen[hm] > 1
		labels[i] = hm
		if repeated {
			labels[i] = hm + " " + zoneName(t)
		}
		if t.Minute() != 0 || t.Second() != 0 {
			continue
		}
		h := t.Hour()
		// The clocks jumped (or a point is missing) when the previous point is
		// not 15 minutes earlier on the wall clock.
		jumped := i > 0 && wallMinutes(t)-wallMinutes(local[i-1]) != 15
		label := ""
		switch {
		case repeated:
			label = fmt.Sprintf("%02d%c", h, 'A'+rune(hourSeen[h]))
		case h%3 == 0 || jumped:
			label = fmt.Sprintf("%02d", h)
		}
		hourSeen[h]++
		ticks = append(ticks, Tick{Index: i, Label: label})
	}
	if n := len(local); n > 0 {
		end := local[n-1].Add(15 * time.Minute).In(loc)
		if end.Hour() == 0 && end.Minute() == 0 && end.Second() == 0 {
			ticks = append(ticks, Tick{Index: n, Label: "24"})
		}
	}
	return labels, ticks
}

// wallMinutes is t's wall-clock time in minutes since local midnight.
func wallMinutes(t time.Time) int { return t.Hour()*60 + t.Minute() }

// zoneName is the German abbreviation of t's zone where there is one (MEZ,
// MESZ) and the zone's own abbreviation otherwise.
func zoneName(t time.Time) string {
	name, _ := t.Zone()
	switch name {
	case "CET":
		return "MEZ"
	case "CEST":
		return "MESZ"
	}
	return name
}
