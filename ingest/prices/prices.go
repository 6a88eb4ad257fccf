// Package prices parses the two public market-price files into
// price.Series: the SMARD chart JSON of the day-ahead spot price (DE-LU) and
// the netztransparenz CSV export of the reBAP.
//
// Both parsers check the whole file and report every problem at once (up to
// ingest.MaxProblems) as an *ingest.SchemaError, so that a file is either taken
// whole or not at all. A problem's Loc is ["body","series","<i>"(,"0"|"1")]
// for SMARD and ["body","line <n>","<column header>"] for the CSV, with
// 1-based physical line numbers. The problem types are json_invalid,
// wrong_format, missing, too_short and value_error, plus ingest's
// csv_header, csv_cell_count, csv_syntax and csv_conflict.
//
// An interval without a price is never a price of zero: SMARD's null, the
// CSV's N.A., N.E., "-" or an empty cell, and every interval that the file
// skips between its first and its last point go to Series.Missing.
//
// Time zones in the CSV are read as fixed offsets: UTC, CET/MEZ as UTC+01:00
// and CEST/MESZ as UTC+02:00, whatever the date. The export labels each row
// with the offset it was written in, so "30.03.2025 CET 02:00" is taken as
// 01:00 UTC although 02:00 does not exist on the Berlin wall clock that day,
// and the two 02:00 rows of the autumn switch are told apart by CEST and CET.
// Reading the label as Europe/Berlin would instead make such rows ambiguous
// or invalid. A file without a Zeitzone column is UTC, as current exports are.
package prices

import (
	"bytes"
	"fmt"
	"time"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/price"
)

// Formats of the parsed files, as Series.Format.
const (
	formatSMARD = "smard-json"
	formatCSV   = "netztransparenz-csv"
)

// Problem types of this package that ingest does not define.
const (
	problemJSON        = "json_invalid"
	problemWrongFormat = "wrong_format"
	problemMissing     = "missing"
	problemTooShort    = "too_short"
	problemValue       = "value_error"
)

// The plausible range of a price interval. It catches epoch seconds passed
// as milliseconds, and together with maxSpan it bounds the gap list: a file
// of two points decades apart must not make a Missing list of millions.
var (
	minStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxStart = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

// maxSpan is the longest period one file may cover, first to last point.
// Exports are a week (SMARD) up to a year or two (netztransparenz); five
// years leave room and keep the gap list of a sparse file below 200,000
// entries.
const maxSpan = 5 * 366 * 24 * time.Hour

// quarterHourly is the first delivery with quarter-hourly day-ahead prices,
// 1 October 2025 in Berlin.
var quarterHourly = pipeline.NewDay(2025, time.October, 1).Start()

// Parse reads a file of the kind: spot -> SMARD JSON, rebap ->
// netztransparenz CSV. A file of the other format gets a clear error saying
// which format the kind expects; it is told by its first non-space byte,
// '{' meaning JSON.
func Parse(kind price.Kind, data []byte) (price.Series, error) {
	isJSON := sniffJSON(data)
	switch kind {
	case price.Spot:
		if !isJSON && len(bytes.TrimSpace(trimBOM(data))) > 0 {
			return price.Series{}, wrongFormat("a spot price file must be SMARD chart JSON ({\"meta_data\": ..., \"series\": [[epoch_ms, price], ...]}); " +
				"this file does not start with '{' and looks like CSV, which is the format of kind rebap")
		}
		return ParseSMARD(data)
	case price.ReBAP:
		if isJSON {
			return price.Series{}, wrongFormat("a rebap price file must be a netztransparenz reBAP CSV export (Datum;Zeitzone;von;bis;...;reBAP unterdeckt;reBAP ueberdeckt); " +
				"this file starts with '{' and looks like JSON, which is the format of kind spot (SMARD)")
		}
		return ParseReBAPCSV(data)
	}
	return price.Series{}, pipeline.Errorf(pipeline.Invalid, "price kind %q: want spot or rebap", kind)
}

func wrongFormat(msg string) error {
	return &ingest.SchemaError{Problems: []ingest.Problem{{
		Type: problemWrongFormat, Loc: []string{"body"}, Msg: msg, Ctx: map[string]any{},
	}}}
}

func sniffJSON(data []byte) bool {
	data = bytes.TrimLeft(trimBOM(data), " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}

func trimBOM(data []byte) []byte { return bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) }

// problems collects the problems of one file, at most ingest.MaxProblems
// of them, as ingest bounds those of a request body.
type problems struct {
	list []ingest.Problem
}

func (p *problems) full() bool { return len(p.list) >= ingest.MaxProblems }

func (p *problems) add(typ string, loc []string, input any, format string, args ...any) {
	if p.full() {
		return
	}
	p.list = append(p.list, ingest.Problem{Type: typ, Loc: loc, Msg: fmt.Sprintf(format, args...), Input: input, Ctx: map[string]any{}})
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &ingest.SchemaError{Problems: p.list}
}

// stamp formats an interval start for messages, e.g. 2025-10-26T01:00Z.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04Z07:00") }

// checkSpan reports a file whose points lie further apart than maxSpan.
func checkSpan(ps *problems, first, last time.Time) {
	if last.Sub(first) > maxSpan {
		ps.add(problemValue, []string{"body"}, nil,
			"the file spans %s to %s, more than 5 years; split it into smaller files", stamp(first), stamp(last))
	}
}

// fillGaps returns missing with every step-spaced start between first and
// last that is neither a point nor already missing, in time order. Both
// inputs must be sorted.
func fillGaps(points []price.Point, missing []time.Time, step time.Duration) []time.Time {
	var first, last time.Time
	switch {
	case len(points) == 0 && len(missing) == 0:
		return missing
	case len(points) == 0:
		first, last = missing[0], missing[len(missing)-1]
	case len(missing) == 0:
		first, last = points[0].Start, points[len(points)-1].Start
	default:
		first, last = points[0].Start, points[len(points)-1].Start
		first = earliest(first, missing[0])
		if m := missing[len(missing)-1]; m.After(last) {
			last = m
		}
	}
	n := int(last.Sub(first)/step) + 1
	if n == len(points)+len(missing) {
		return missing // the common case: no gaps
	}
	// Every start that is not a point is missing, whether the file listed it
	// without a price or skipped it.
	out := make([]time.Time, 0, n-len(points))
	i := 0
	for t := first; !t.After(last); t = t.Add(step) {
		for i < len(points) && points[i].Start.Before(t) {
			i++
		}
		if i < len(points) && points[i].Start.Equal(t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
