package slp

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/schedbridge/schedbridge/pipeline"
)

// tables holds the parsed profiles: the 2025 set by month and day type, the
// 1999 set by season and day type, both as kWh per quarter-hour for 1,000,000 kWh/a.
type tables struct {
	monthly  map[string]*[12][3][96]float64
	seasonal map[string]*[3][3][96]float64
}

// selpScale converts the 1999 set's kW per 1,000 kWh/a into kWh per quarter-hour
// for 1,000,000 kWh/a: x 1000 for the annual consumption, x 0.25 h per quarter-hour.
const selpScale = 1000 * 0.25

// loadTables parses the embedded files once. The files are part of the binary,
// so an error here is a build defect; it is reported as Internal rather than a
// panic so that a broken file fails the requests that need it, not the process.
var loadTables = sync.OnceValues(func() (*tables, error) {
	t := &tables{monthly: map[string]*[12][3][96]float64{}}
	for name, p := range names {
		if p.file == "" {
			continue
		}
		b, err := dataFS.ReadFile(p.file)
		if err != nil {
			return nil, pipeline.Errorf(pipeline.Internal, "read %s: %v", p.file, err)
		}
		m, err := parse2025(b)
		if err != nil {
			return nil, pipeline.Errorf(pipeline.Internal, "parse %s: %v", p.file, err)
		}
		t.monthly[name] = m
	}
	b, err := dataFS.ReadFile("data/selp_series_1999.csv")
	if err != nil {
		return nil, pipeline.Errorf(pipeline.Internal, "read selp_series_1999.csv: %v", err)
	}
	if t.seasonal, err = parse1999(b); err != nil {
		return nil, pipeline.Errorf(pipeline.Internal, "parse selp_series_1999.csv: %v", err)
	}
	for name, p := range names {
		if _, ok := t.seasonal[name]; p.file == "" && !ok {
			return nil, pipeline.Errorf(pipeline.Internal, "profile %s missing in selp_series_1999.csv", name)
		}
	}
	return t, nil
})

var months = map[string]int{
	"januar": 0, "februar": 1, "märz": 2, "maerz": 2, "april": 3, "mai": 4, "juni": 5,
	"juli": 6, "august": 7, "september": 8, "oktober": 9, "november": 10, "dezember": 11,
}

var dayTypes = map[string]int{"SA": dtSA, "FT": dtFT, "WT": dtWT}

// parse2025 reads a 2025-set file: a header row of German month names, a header
// row of day types, then 96 rows "hh:mm-hh:mm" with one value per (month, day
// type) column. Columns are found by their headers, not by position, and every
// one of the 36 (month, day type) cells must be present exactly once.
func parse2025(b []byte) (*[12][3][96]float64, error) {
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) != 2+96 {
		return nil, fmt.Errorf("%d rows, want 2 header rows and 96 quarter-hours", len(recs))
	}
	type cell struct{ month, dt int }
	cols := make([]cell, len(recs[0]))
	seen := map[cell]bool{}
	for i := 1; i < len(recs[0]); i++ {
		m, ok := months[strings.ToLower(strings.TrimSpace(recs[0][i]))]
		if !ok {
			return nil, fmt.Errorf("column %d: month %q unknown", i+1, recs[0][i])
		}
		d, ok := dayTypes[strings.TrimSpace(recs[1][i])]
		if !ok {
			return nil, fmt.Errorf("column %d: day type %q unknown", i+1, recs[1][i])
		}
		c := cell{m, d}
		if seen[c] {
			return nil, fmt.Errorf("column %d: %s %s repeated", i+1, recs[0][i], recs[1][i])
		}
		seen[c] = true
		cols[i] = c
	}
	if len(seen) != 12*3 {
		return nil, fmt.Errorf("%d month/day-type columns, want 36", len(seen))
	}
	out := new([12][3][96]float64)
	for q, rec := range recs[2:] {
		if want := quarterLabel(q); strings.TrimSpace(rec[0]) != want {
			return nil, fmt.Errorf("row %d: label %q, want %q", q+3, rec[0], want)
		}
		for i := 1; i < len(rec); i++ {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
			if err != nil {
				return nil, fmt.Errorf("row %d column %d: %v", q+3, i+1, err)
			}
			out[cols[i].month][cols[i].dt][q] = v
		}
	}
	return out, nil
}

// quarterLabel is the 2025 set's row label of quarter-hour q, e.g. "00:15-00:30";
// the last one ends at "00:00".
func quarterLabel(q int) string {
	s, e := q*15, (q+1)*15%(24*60)
	return fmt.Sprintf("%02d:%02d-%02d:%02d", s/60, s%60, e/60, e%60)
}

var seasons = map[string]int{"winter": winter, "summer": summer, "transition": transition}

// parse1999 reads selp_series_1999.csv: "timestamp,period,weekday,<profiles...>"
// with one row per quarter-hour of a sample week per season. The quarter-hour is
// taken from the timestamp's clock time, the season from period, the day type
// from weekday (1..5 WT, 6 SA, 7 FT). The five working days must carry equal
// values, since only one WT day can be served.
func parse1999(b []byte) (map[string]*[3][3][96]float64, error) {
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("no data rows")
	}
	hdr := recs[0]
	if len(hdr) < 4 || strings.TrimSpace(hdr[1]) != "period" || strings.TrimSpace(hdr[2]) != "weekday" {
		return nil, fmt.Errorf("header %q: want \",period,weekday,<profiles>\"", strings.Join(hdr, ","))
	}
	out := map[string]*[3][3][96]float64{}
	profs := make([]*[3][3][96]float64, len(hdr))
	for i := 3; i < len(hdr); i++ {
		n := strings.ToUpper(strings.TrimSpace(hdr[i]))
		if _, dup := out[n]; dup {
			return nil, fmt.Errorf("profile %s repeated", n)
		}
		profs[i] = new([3][3][96]float64)
		out[n] = profs[i]
	}
	type slot struct{ season, weekday, q int }
	seen := map[slot]bool{}
	type wtSlot struct{ season, q int }
	seenWT := map[wtSlot]bool{}
	for r, rec := range recs[1:] {
		line := r + 2
		q, err := quarterOfTimestamp(rec[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		s, ok := seasons[strings.TrimSpace(rec[1])]
		if !ok {
			return nil, fmt.Errorf("line %d: period %q unknown", line, rec[1])
		}
		wd, err := strconv.Atoi(strings.TrimSpace(rec[2]))
		if err != nil || wd < 1 || wd > 7 {
			return nil, fmt.Errorf("line %d: weekday %q, want 1..7", line, rec[2])
		}
		sl := slot{s, wd, q}
		if seen[sl] {
			return nil, fmt.Errorf("line %d: %s weekday %d quarter-hour %d repeated", line, rec[1], wd, q)
		}
		seen[sl] = true
		dt := dtWT
		switch wd {
		case 6:
			dt = dtSA
		case 7:
			dt = dtFT
		}
		checkWT := dt == dtWT && seenWT[wtSlot{s, q}]
		if dt == dtWT {
			seenWT[wtSlot{s, q}] = true
		}
		for i := 3; i < len(rec); i++ {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
			if err != nil {
				return nil, fmt.Errorf("line %d column %s: %v", line, hdr[i], err)
			}
			v *= selpScale
			p := &profs[i][s][dt][q]
			if checkWT && *p != v {
				return nil, fmt.Errorf("line %d column %s: weekday %d differs from an earlier working day (%v vs %v)", line, hdr[i], wd, v, *p)
			}
			*p = v
		}
	}
	if len(seen) != 3*7*96 {
		return nil, fmt.Errorf("%d season/weekday/quarter-hour rows, want %d", len(seen), 3*7*96)
	}
	return out, nil
}

// quarterOfTimestamp returns the quarter-hour index of "YYYY-MM-DD hh:mm:ss".
func quarterOfTimestamp(s string) (int, error) {
	s = strings.TrimSpace(s)
	if len(s) != 19 || s[10] != ' ' || s[13] != ':' || s[16] != ':' {
		return 0, fmt.Errorf("timestamp %q: want YYYY-MM-DD hh:mm:ss", s)
	}
	h, err1 := strconv.Atoi(s[11:13])
	m, err2 := strconv.Atoi(s[14:16])
	if err1 != nil || err2 != nil || h > 23 || m%15 != 0 || m > 45 || s[17:] != "00" {
		return 0, fmt.Errorf("timestamp %q: not the start of a quarter-hour", s)
	}
	return h*4 + m/15, nil
}
