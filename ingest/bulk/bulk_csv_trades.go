package bulk

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/tradeset"
	"github.com/schedbridge/schedbridge/pipeline"
)

// A trades CSV file holds the trade set of one delivery day, one row per
// trade: the key columns delivery_day, control_area, counterparty,
// direction, unit in any order, then the quarter-hour values as in a
// metered-data file. It stands for the bulk JSON document
//
//	{"delivery_day": ..., "trades": [row, ...]}
//
// and so for the body of PUT /v1/process/trades?day=<delivery_day>, and a
// valid file has that body's input hash.
//
// As in a forecast file, each row is validated by the API's own model code
// (tradeset.TradeKeys) as the JSON object it stands for, the value cells by the code
// every CSV file shares, and the business rules (tradeset.TradeFindings) run once
// every row is read, since they are about the whole set. The file is read
// whole, at most MaxDocumentBytes.

// The key columns of a trades file, in the order of the API's problems: the
// document's delivery_day, then the fields of a trade.
const (
	trDeliveryDay = iota
	trControlArea
	trCounterparty
	trDirection
	trUnit
	trKeys
)

// trColumns are the header names of the key columns: the JSON field names.
var trColumns = [trKeys]string{"delivery_day", "control_area", "counterparty", "direction", "unit"}

const trExample = "delivery_day;control_area;counterparty;direction;unit;v1;v2;...;v96"

// trFile is what the rows of a trades file have given so far.
type trFile struct {
	set pipeline.TradeSet // the delivery day and the valid trades so far
	// day is the first row's delivery_day cell, which every row repeats,
	// and dayLine its line; 0 until a row was read.
	day     string
	dayLine int
	lines   []int // the line of each row, by its index
	// Scratch: the row as the Trade object the API would get, and its loc.
	members []ingest.Member
	at      ingest.Path
}

// csvTrades decodes a trades CSV file.
func (r *bulkRun) csvTrades(src io.Reader) error {
	tf := &trFile{at: ingest.BodyPath()}
	whole, err := r.csvWhole(src, func(src io.Reader) error {
		return r.csvKeyed(src, func(h *csvHeader, cells [][]byte, index, line int) error {
			tf.lines = append(tf.lines, line)
			if cells != nil {
				r.trRow(h, tf, cells, index, line)
			}
			return r.pace()
		})
	})
	if err != nil || !whole {
		return err
	}
	r.res.Entries = len(tf.lines)
	if r.failed() {
		return nil // as the API, business rules only for a schema-valid body
	}
	set := &tf.set
	tradeset.TradeFindings(set, r.opt.Rules, func(i int, field, msg string) {
		p := ingest.FileProblem{Line: tf.lines[i], Type: ingest.ProblemBusiness, Loc: []any{"body", "trades", i}, Msg: msg}
		// An inactive control area is the row's control_area cell; an
		// interval count or a duplicate is about the row as a whole.
		if field == "control_area" {
			p.Column = "control_area"
		}
		r.add(p)
	})
	if r.failed() {
		return nil
	}
	// The values take about 8 bytes each in the canonical encoding.
	canonical := tradeset.CanonicalTrades(set, int(r.res.Values)*8)
	r.res.InputHash = ingest.InputHash(canonical)
	return r.emitWhole(BulkBatch{Trades: set, Canonical: canonical})
}

// trRow validates one row (with at least the key cells): the delivery day,
// then the trade it stands for.
func (r *bulkRun) trRow(h *csvHeader, tf *trFile, cells [][]byte, index, line int) {
	cell := func(f int) []byte { return cells[h.key[f]] }
	if day := cell(trDeliveryDay); tf.dayLine == 0 {
		tf.day, tf.dayLine = string(day), line
		r.csvDeliveryDay(day, line, &tf.set.Day)
	} else if string(day) != tf.day {
		r.add(ingest.FileProblem{Line: line, Column: "delivery_day", Type: ingest.ProblemCSVConflict, Loc: []any{"body", "delivery_day"},
			Msg: fmt.Sprintf("line %d: delivery_day %s differs from %s on line %d; a file holds the trades of one day, so all its rows have the same delivery_day",
				line, quoteCell(day), quoteCell([]byte(tf.day)), tf.dayLine),
			Input: validText(day)})
	}

	// The row as the Trade object it stands for: an empty cell is a field
	// left out. A cell that is not UTF-8 cannot be a JSON string: it is
	// left out too and gets its own problem in place of the one its
	// absence would give.
	at := append(tf.at[:0], "body", "trades", strconv.Itoa(index))
	tf.at = at
	tf.members = tf.members[:0]
	var broken []string
	missing := false
	for f := trControlArea; f < trKeys; f++ {
		switch c := cell(f); {
		case len(c) == 0:
			missing = missing || f != trUnit
		case !utf8.Valid(c):
			broken = append(broken, trColumns[f])
		default:
			tf.members = append(tf.members, ingest.Member{Key: trColumns[f], Val: ingest.Node{Kind: ingest.KindString, Str: string(c)}})
		}
	}
	values := cells[trKeys:]
	// The API echoes the whole trade, values included, as the input of a
	// missing field.
	if missing {
		tf.members = append(tf.members, ingest.Member{Key: "values", Val: valuesEcho(values, h.sep == ';')})
	}
	row := ingest.Node{Kind: ingest.KindObject, Members: tf.members}

	t := pipeline.Trade{Unit: pipeline.MW}
	ok := tradeset.TradeKeys(&r.c, &row, at, &t) && len(broken) == 0
	if len(broken) > 0 {
		r.c.Problems = slices.DeleteFunc(r.c.Problems, func(p ingest.Problem) bool {
			return p.Type == "missing" && slices.Contains(broken, p.Loc[len(p.Loc)-1])
		})
		for _, name := range broken {
			f := slices.Index(trColumns[:], name)
			ingest.NotUnicode(&r.c, at.At(name), cell(f))
		}
		// In the field order, as pydantic reports them.
		slices.SortStableFunc(r.c.Problems, func(a, b ingest.Problem) int {
			return slices.Index(trColumns[:], a.Loc[len(a.Loc)-1]) - slices.Index(trColumns[:], b.Loc[len(b.Loc)-1])
		})
	}
	r.takeCheckerColumns(line, 0, trColumn)
	vals, good := r.csvValues(h, values, index, line, "values")
	r.res.Values += int64(len(vals))
	if ok && good && !r.failed() {
		t.Values = slices.Clone(vals)
		tf.set.Trades = append(tf.set.Trades, t)
	}
}

// trColumn names the column of a problem of a row's trade or delivery day
// by its loc.
func trColumn(loc []string) string {
	if last := loc[len(loc)-1]; slices.Contains(trColumns[:], last) {
		return last
	}
	return ""
}

// noTradeRows reports a trades CSV file without rows. The API accepts an
// empty set, but such a file has no row to name the day it would clear.
func (r *bulkRun) noTradeRows() {
	r.add(ingest.FileProblem{Line: 1, Type: "missing", Loc: []any{"body", "delivery_day"},
		Msg: `Field required: the file has a header but no rows, so nothing names its delivery_day; ` +
			`to clear a day's trades, drop a JSON file {"delivery_day": "YYYY-MM-DD", "trades": []}`})
}
