package bulk

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/csvfile"
	"github.com/schedbridge/schedbridge/ingest/databody"
	"github.com/schedbridge/schedbridge/pipeline"
)

// A forecast CSV file holds one forecast, one row per series: the key
// columns delivery_day, control_area, malo, kind, unit in any order, then the
// quarter-hour values as in a metered-data file. It stands for the
// POST /v1/forecasts body
//
//	{"delivery_day": ..., "series": [row, ...], "malo_mapping": {...}}
//
// where a row is the series {control_area or malo, kind, unit, values}. The
// API's series names either a control area or a MaLo, and gives a MaLo's
// control area apart, in malo_mapping. So that a file needs no section of
// its own for the mapping, the control_area cell of a row with a malo is the
// MaLo's malo_mapping entry rather than a field of the series. Every file
// thus stands for a body of the API, and a valid file has that body's input
// hash.
//
// Like the master-data file, each row is validated by the API's own model
// functions (databody.SeriesKeys and databody.SeriesRule, the parts of
// seriesModel) as the JSON object it stands for, so the problems are the
// API's; the value cells are checked by the code every CSV file shares. The
// business rules are the API's databody.ForecastFindings, run once every row
// is read, since they are about the whole forecast. The file is read whole,
// at most MaxDocumentBytes.

// The key columns of a forecast file, in the order of the API's problems:
// the body's delivery_day, then the fields of a series.
const (
	fcDeliveryDay = iota
	fcControlArea
	fcMalo
	fcKind
	fcUnit
	fcKeys
)

// fcColumns are the header names of the key columns: the JSON field names.
var fcColumns = [fcKeys]string{"delivery_day", "control_area", "malo", "kind", "unit"}

const fcExample = "delivery_day;control_area;malo;kind;unit;v1;v2;...;v96"

// fcFile is what the rows of a forecast file have given so far.
type fcFile struct {
	f pipeline.Forecast // the delivery day and the valid series so far
	// day is the first row's delivery_day cell, which every row repeats,
	// and dayLine its line; 0 until a row was read.
	day     string
	dayLine int
	lines   []int                // the line of each row, by its index
	mapping map[string]fcMapping // the malo_mapping entries, by MaLo
	// Scratch: the row as the Series object the API would get, and its loc.
	members []ingest.Member
	at      ingest.Path
}

// fcMapping is a malo_mapping entry and the row that gave it first.
type fcMapping struct {
	area string // the control_area cell as it is
	line int
}

// csvForecast decodes a forecast CSV file.
func (r *bulkRun) csvForecast(src io.Reader) error {
	fc := &fcFile{mapping: make(map[string]fcMapping), at: ingest.BodyPath()}
	whole, err := r.csvWhole(src, func(src io.Reader) error {
		return r.csvKeyed(src, func(h *csvHeader, cells [][]byte, index, line int) error {
			fc.lines = append(fc.lines, line)
			if cells != nil {
				r.fcRow(h, fc, cells, index, line)
			}
			return r.pace()
		})
	})
	if err != nil || !whole {
		return err
	}
	if len(fc.lines) > 0 {
		r.res.Entries = 1
	}
	if r.failed() {
		return nil // as the API, business rules only for a schema-valid body
	}
	f := &fc.f
	f.MaloMapping = make(map[string]pipeline.ControlArea, len(fc.mapping))
	for malo, m := range fc.mapping {
		f.MaloMapping[malo] = pipeline.ControlArea(m.area)
	}
	databody.ForecastFindings(f, r.opt.Rules, func(i int, malo, field, msg string) {
		p := ingest.FileProblem{Type: ingest.ProblemBusiness, Msg: msg}
		if i >= 0 {
			p.Line, p.Loc = fc.lines[i], []any{"body", "series", i}
		} else {
			p.Line, p.Loc = fc.mapping[malo].line, []any{"body", "malo_mapping", malo}
		}
		// A series' missing malo_mapping entry and an entry's control area
		// are both the control_area cell of a MaLo's row; an interval count
		// or a duplicate is about the row as a whole.
		if field == "control_area" || field == "malo_mapping" {
			p.Column = "control_area"
		}
		r.add(p)
	})
	if r.failed() {
		return nil
	}
	// The values take about 8 bytes each in the canonical encoding.
	canonical := databody.CanonicalForecast(f, int(r.res.Values)*8)
	r.res.InputHash = ingest.InputHash(canonical)
	return r.emitWhole(BulkBatch{Forecast: f, Canonical: canonical})
}

// fcRow validates one row (with at least the key cells): the delivery day,
// the series it stands for, then the malo_mapping entry it gives.
func (r *bulkRun) fcRow(h *csvHeader, fc *fcFile, cells [][]byte, index, line int) {
	cell := func(f int) []byte { return cells[h.key[f]] }
	if day := cell(fcDeliveryDay); fc.dayLine == 0 {
		fc.day, fc.dayLine = string(day), line
		r.csvDeliveryDay(day, line, &fc.f.DeliveryDay)
	} else if string(day) != fc.day {
		r.add(ingest.FileProblem{Line: line, Column: "delivery_day", Type: ingest.ProblemCSVConflict, Loc: []any{"body", "delivery_day"},
			Msg: fmt.Sprintf("line %d: delivery_day %s differs from %s on line %d; a file holds one forecast, so all its rows have the same delivery_day",
				line, quoteCell(day), quoteCell([]byte(fc.day)), fc.dayLine),
			Input: validText(day)})
	}

	// The row as the Series object it stands for: an empty cell is a field
	// left out, and the control_area cell is a field only on a row without
	// a malo. A cell that is not UTF-8 cannot be a JSON string: it gets its
	// own problem and is left out too, except kind, whose absence would be
	// a problem of its own and which gets a valid stand-in; either way the
	// model validator does not run, as pydantic skips it when a field fails.
	area, malo, kind, unit := cell(fcControlArea), cell(fcMalo), cell(fcKind), cell(fcUnit)
	at := append(fc.at[:0], "body", "series", strconv.Itoa(index))
	fc.at = at
	var broken []int
	fc.members = fc.members[:0]
	field := func(f int, c []byte) {
		switch {
		case len(c) == 0:
		case !utf8.Valid(c):
			broken = append(broken, f)
			if f == fcKind {
				fc.members = append(fc.members, ingest.Member{Key: "kind", Val: ingest.Node{Kind: ingest.KindString, Str: ingest.SeriesKinds.Options[0]}})
			}
		default:
			fc.members = append(fc.members, ingest.Member{Key: fcColumns[f], Val: ingest.Node{Kind: ingest.KindString, Str: string(c)}})
		}
	}
	if len(malo) == 0 {
		field(fcControlArea, area)
	}
	field(fcMalo, malo)
	field(fcKind, kind)
	field(fcUnit, unit)
	values := cells[fcKeys:]
	// The values are only read by the API's model code when it reports the
	// whole series as the input of a problem: a missing kind, or neither
	// control_area nor malo set.
	if len(kind) == 0 || len(area) == 0 && len(malo) == 0 {
		fc.members = append(fc.members, ingest.Member{Key: "values", Val: valuesEcho(values, h.sep == ';')})
	}
	row := ingest.Node{Kind: ingest.KindObject, Members: fc.members}

	s := pipeline.Series{Unit: pipeline.MW}
	ok := databody.SeriesKeys(&r.c, &row, at, &s) && len(broken) == 0
	if len(broken) > 0 {
		for _, f := range broken {
			ingest.NotUnicode(&r.c, at.At(fcColumns[f]), cell(f))
		}
		// In the field order, as pydantic reports them.
		slices.SortStableFunc(r.c.Problems, func(a, b ingest.Problem) int {
			return slices.Index(fcColumns[:], a.Loc[len(a.Loc)-1]) - slices.Index(fcColumns[:], b.Loc[len(b.Loc)-1])
		})
	}
	r.takeCheckerColumns(line, 0, fcColumn)
	vals, good := r.csvValues(h, values, index, line, "values")
	r.res.Values += int64(len(vals))
	ok = good && ok && databody.SeriesRule(&r.c, at, &row)
	r.takeCheckerColumns(line, 0, fcColumn)
	if ok && !r.failed() {
		s.Values = slices.Clone(vals)
		fc.f.Series = append(fc.f.Series, s)
	}

	// The malo_mapping entry. A malo that is not 11 digits has its problem
	// at the series; the API would report it as a malo_mapping key as well,
	// which says nothing new about the row.
	if len(area) == 0 || !csvfile.IsDigits(malo, 11) {
		return
	}
	if m, given := fc.mapping[string(malo)]; given {
		if string(area) != m.area {
			r.add(ingest.FileProblem{Line: line, Column: "control_area", Type: ingest.ProblemCSVConflict, Loc: []any{"body", "malo_mapping", string(malo)},
				Msg: fmt.Sprintf("line %d: control area %s of MaLo %s differs from %s on line %d; the rows of a MaLo give its one malo_mapping entry",
					line, quoteCell(area), malo, quoteCell([]byte(m.area)), m.line),
				Input: validText(area)})
		}
		return
	}
	fc.mapping[string(malo)] = fcMapping{area: string(area), line: line}
	if !utf8.Valid(area) {
		ingest.NotUnicode(&r.c, ingest.BodyPath().At("malo_mapping").At(string(malo)), area)
		r.takeChecker(line, 0, "control_area")
	}
}

// csvDeliveryDay validates the first row's delivery_day cell of a forecast
// or trades file as the body's delivery_day, into dst.
func (r *bulkRun) csvDeliveryDay(day []byte, line int, dst *pipeline.Day) {
	loc := ingest.BodyPath().At("delivery_day")
	switch {
	case len(day) == 0:
		// The API echoes the whole body as the input of a missing field;
		// a file has no such object, so the input is left out.
		r.c.Fail(loc, "missing", "Field required", &ingest.Node{Kind: ingest.KindNull}, nil)
	case !utf8.Valid(day):
		ingest.NotUnicode(&r.c, loc, day)
	default:
		r.c.DateValue(loc, &ingest.Node{Kind: ingest.KindString, Str: string(day)}, dst)
	}
	r.takeChecker(line, 0, "delivery_day")
}

// valuesEcho is the JSON list that the value cells of a row stand for, as
// the API would echo it: numbers with their literal, other cells as strings
// and an empty cell before the last value as null; trailing empty cells are
// not values.
func valuesEcho(cells [][]byte, comma bool) ingest.Node {
	n := len(cells)
	for n > 0 && len(cells[n-1]) == 0 {
		n--
	}
	arr := make([]ingest.Node, n)
	for j, c := range cells[:n] {
		f, ok, _ := csvfile.ParseFloat(c, comma, true)
		switch {
		case len(c) == 0:
			arr[j] = ingest.Node{Kind: ingest.KindNull}
		case ok:
			arr[j] = ingest.Node{Kind: ingest.KindNumber, Num: f, Str: csvfile.Literal(c)}
		default:
			arr[j] = ingest.Node{Kind: ingest.KindString, Str: validText(c)}
		}
	}
	return ingest.Node{Kind: ingest.KindArray, Arr: arr}
}

// fcColumn names the column of a problem of a row's series or delivery day
// by its loc; a problem of the whole series has none.
func fcColumn(loc []string) string {
	if last := loc[len(loc)-1]; slices.Contains(fcColumns[:], last) {
		return last
	}
	return ""
}

// validText is a cell as a problem's text: broken bytes replaced, since a
// problem must render as JSON.
func validText(c []byte) string { return strings.ToValidUTF8(string(c), "\uFFFD") }

// quoteCell quotes a cell for a message, so that an empty one shows.
func quoteCell(c []byte) string { return strconv.Quote(validText(c)) }
