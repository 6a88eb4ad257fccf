package prices

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/schedbridge/schedbridge/pipeline/price"
)

// ParseSMARD reads SMARD chart JSON ({"meta_data": {...}, "series":
// [[epoch_ms, EUR/MWh or null], ...]}), day-ahead spot prices (DE-LU). Kind
// price.Spot, Format "smard-json".
//
// epoch_ms is the UTC start of the interval. The resolution is the smallest
// positive spacing between consecutive points and must be 15 or 60 minutes; a
// file of one point is quarter-hourly from delivery 1 October 2025 on and
// hourly before. Points must ascend and lie on the grid of that resolution.
// A null price and every interval skipped between the first and the last
// point go to Missing. meta_data is ignored.
func ParseSMARD(data []byte) (price.Series, error) {
	var ps problems
	raw, ok := smardSeries(&ps, trimBOM(data))
	if !ok {
		return price.Series{}, ps.err()
	}

	// Phase 1: each element on its own.
	type point struct {
		i     int
		start time.Time
		price float64
		null  bool
	}
	pts := make([]point, 0, len(raw))
	var pair [][]byte
	for i, el := range raw {
		if ps.full() {
			break
		}
		if el[0] != '[' {
			ps.add(problemValue, seriesLoc(i), jsonInput(el), "point must be an array [epoch_ms, price], not %s", jsonKind(el))
			continue
		}
		if pair = splitArray(pair[:0], el); len(pair) != 2 {
			ps.add(problemValue, seriesLoc(i), jsonInput(el), "point must be an array [epoch_ms, price] of 2 elements, not %d", len(pair))
			continue
		}
		start, okStart := smardStart(&ps, i, pair[0])
		value, null, okValue := smardPrice(&ps, i, pair[1])
		if okStart && okValue {
			pts = append(pts, point{i: i, start: start, price: value, null: null})
		}
	}
	// Phase 2: the order of the points that could be read.
	for k := 1; k < len(pts); k++ {
		if prev, p := pts[k-1], pts[k]; !p.start.After(prev.start) {
			what := "before"
			if p.start.Equal(prev.start) {
				what = "the same as"
			}
			ps.add(problemValue, seriesLoc(p.i, "0"), p.start.UnixMilli(),
				"points must be in ascending order: %s is %s the previous point (series[%d])", stamp(p.start), what, prev.i)
		}
	}
	if len(ps.list) > 0 {
		return price.Series{}, ps.err()
	}

	// Phase 3: resolution, grid and span, which need all points.
	var step time.Duration
	for k := 1; k < len(pts); k++ {
		if d := pts[k].start.Sub(pts[k-1].start); step == 0 || d < step {
			step = d
		}
	}
	switch {
	case len(pts) == 1 && !pts[0].start.Before(quarterHourly):
		step = 15 * time.Minute
	case len(pts) == 1:
		step = time.Hour
	case step != 15*time.Minute && step != time.Hour:
		ps.add(problemValue, []string{"body", "series"}, nil,
			"the smallest spacing between points is %s; it must be 15 or 60 minutes", step)
		return price.Series{}, ps.err()
	}
	for _, p := range pts {
		if p.start.UnixMilli()%step.Milliseconds() != 0 {
			ps.add(problemValue, seriesLoc(p.i, "0"), p.start.UnixMilli(),
				"point %s is not on the %d-minute grid of the file", stamp(p.start), int(step.Minutes()))
		}
	}
	checkSpan(&ps, pts[0].start, pts[len(pts)-1].start)
	if len(ps.list) > 0 {
		return price.Series{}, ps.err()
	}

	s := price.Series{Kind: price.Spot, Format: formatSMARD, Points: make([]price.Point, 0, len(pts))}
	for _, p := range pts {
		if p.null {
			s.Missing = append(s.Missing, p.start)
			continue
		}
		s.Points = append(s.Points, price.Point{Start: p.start, Minutes: int(step.Minutes()), Price: p.price, PriceLong: p.price})
	}
	s.Missing = fillGaps(s.Points, s.Missing, step)
	return s, nil
}

// smardSeries decodes the document down to the raw elements of its series.
func smardSeries(ps *problems, data []byte) ([][]byte, bool) {
	if len(bytes.TrimSpace(data)) == 0 {
		ps.add(problemTooShort, []string{"body"}, nil, "the file is empty")
		return nil, false
	}
	var doc map[string]json.RawMessage
	err := json.Unmarshal(data, &doc)
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		ps.add(problemJSON, []string{"body"}, nil, "the file is not valid JSON: %v (at byte %d)", err, syn.Offset)
		return nil, false
	case err != nil || doc == nil:
		ps.add(problemValue, []string{"body"}, nil, "the file must be a JSON object with a series array, not %s", jsonKind(data))
		return nil, false
	}
	series, ok := doc["series"]
	if !ok {
		ps.add(problemMissing, []string{"body", "series"}, nil, "field series is missing: a SMARD chart file has \"series\": [[epoch_ms, price], ...]")
		return nil, false
	}
	if series[0] != '[' {
		ps.add(problemValue, []string{"body", "series"}, nil, "series must be an array of [epoch_ms, price] points, not %s", jsonKind(series))
		return nil, false
	}
	raw := splitArray(nil, series)
	if len(raw) == 0 {
		ps.add(problemTooShort, []string{"body", "series"}, []any{}, "series has no points")
		return nil, false
	}
	return raw, true
}

// smardStart reads an interval start in epoch milliseconds. SMARD writes
// integers; an integral number in exponent form is accepted as well.
func smardStart(ps *problems, i int, raw []byte) (time.Time, bool) {
	if !isJSONNumber(raw) {
		ps.add(problemValue, seriesLoc(i, "0"), jsonInput(raw), "epoch_ms must be a number of milliseconds, not %s", jsonKind(raw))
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(raw), 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
			ps.add(problemValue, seriesLoc(i, "0"), jsonInput(raw), "epoch_ms %s is not a whole number of milliseconds", raw)
			return time.Time{}, false
		}
		ms = int64(f)
	}
	t := time.UnixMilli(ms).UTC()
	if t.Before(minStart) || !t.Before(maxStart) {
		ps.add(problemValue, seriesLoc(i, "0"), jsonInput(raw),
			"epoch_ms %d is %s, outside the years 2000 to 2099 (seconds instead of milliseconds?)", ms, t.Format(time.RFC3339))
		return time.Time{}, false
	}
	return t, true
}

// smardPrice reads a price in EUR/MWh or null, which SMARD writes for an
// interval that is not published yet.
func smardPrice(ps *problems, i int, raw []byte) (value float64, null, ok bool) {
	if string(raw) == "null" {
		return 0, true, true
	}
	if !isJSONNumber(raw) {
		ps.add(problemValue, seriesLoc(i, "1"), jsonInput(raw), "price %s is not a number or null", raw)
		return 0, false, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		ps.add(problemValue, seriesLoc(i, "1"), jsonInput(raw), "price %s is out of range", raw)
		return 0, false, false
	}
	return f, false, true
}

// seriesLoc is the loc of element i of the series, or of its part.
func seriesLoc(i int, part ...string) []string {
	return append([]string{"body", "series", strconv.Itoa(i)}, part...)
}

// splitArray appends the elements of raw, a valid JSON array, to dst. The
// document has been validated as a whole, so that the scan only needs to
// find where each element ends; it spares encoding/json a decoding pass
// and an allocation per point.
func splitArray(dst [][]byte, raw []byte) [][]byte {
	i := skipSpace(raw, 1)
	if raw[i] == ']' {
		return dst
	}
	for {
		end := skipValue(raw, i)
		dst = append(dst, raw[i:end])
		i = skipSpace(raw, end)
		if raw[i] == ']' {
			return dst
		}
		i = skipSpace(raw, i+1) // the comma
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the end of the valid JSON value that starts at b[i].
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '[', '{':
			depth++
		case ']', '}':
			if depth == 0 {
				return i // the end of a scalar inside an array or object
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// isJSONNumber reports whether raw, a valid JSON value, is a number.
func isJSONNumber(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// jsonKind names the JSON type of a valid value for messages.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// jsonInput is the offending value as decoded JSON, numbers kept verbatim.
func jsonInput(raw []byte) any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return string(raw)
	}
	return v
}
