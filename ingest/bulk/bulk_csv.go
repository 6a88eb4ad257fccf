package bulk

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/csvfile"
	"github.com/schedbridge/schedbridge/pipeline"
)

// CSV bulk files hold one entry per row: the key columns (malo, day, unit for
// metered data; mga, profile, day for profiles) in any order, then the
// quarter-hour values. The separator is ';' or ',', found in the header line;
// with ';' a value may use a decimal comma. Fields may be quoted as in RFC
// 4180. Rows without quotes, the common case, are split and their values
// parsed straight from the read buffer without copying or allocating.
//
// csvHeader is the validated header line of a file whose rows have key
// columns and then quarter-hour values (metered data, profiles, forecasts,
// trades).
type csvHeader struct {
	sep   byte
	key   []int    // cell index of each key field, in the model's field order
	keys  []string // the key fields' names, in the model's field order
	list  string   // the body's list whose items the rows are: "entries", "series" or "trades"
	names []string // column names as given (trimmed)
	width int
}

// column names the value column j (0-based) for problems.
func (h *csvHeader) column(j int) string {
	c := len(h.keys) + j
	if c < len(h.names) && h.names[c] != "" {
		return h.names[c]
	}
	return "column " + strconv.Itoa(c+1)
}

// csvLayout is what a kind's rows hold before their values.
type csvLayout struct {
	keys    []string // the key columns, in the model's field order
	list    string   // the body's list a row is an item of
	example string   // a valid header, for the messages
}

var csvLayouts = map[BulkKind]csvLayout{
	BulkMetered:   {[]string{"malo", "day", "unit"}, "entries", "malo;day;unit;v1;v2;...;v96"},
	BulkProfiles:  {[]string{"mga", "profile", "day"}, "entries", "mga;profile;day;v1;v2;...;v96"},
	BulkForecasts: {fcColumns[:], "series", fcExample},
	BulkTrades:    {trColumns[:], "trades", trExample},
}

// countWords spell the numbers of key columns in the header's messages.
var countWords = [...]string{3: "three", 5: "five"}

// csvHeader reads and checks the header line of a metered-data, profile,
// forecast or trades file; ok is false when the file cannot be read further (the
// problem is recorded, or cr.err is set).
func (r *bulkRun) csvHeader(cr *csvfile.Reader) (*csvHeader, bool) {
	layout := csvLayouts[r.kind]
	keys, example := layout.keys, layout.example
	names, ok := cr.HeaderLine(example, func(msg string) { r.headerProblem("%s", msg) })
	if !ok {
		return nil, false
	}
	n := len(keys)
	h := &csvHeader{sep: cr.Sep, key: make([]int, n), keys: keys, list: layout.list, width: len(names), names: names}
	if len(h.names) <= n {
		r.headerProblem("the header must have the columns %s (in any order) and then at least one value column, as in %s; it has %s",
			strings.Join(keys, ", "), example, csvfile.QuoteNames(h.names))
		return nil, false
	}
	found := make([]bool, n)
	for c := 0; c < n; c++ {
		k := -1
		for i, key := range keys {
			if strings.EqualFold(h.names[c], key) {
				k = i
			}
		}
		if k < 0 || found[k] {
			r.headerProblem("the first %s columns of the header must be %s in any order, as in %s; column %d is %q",
				countWords[n], strings.Join(keys, ", "), example, c+1, h.names[c])
			return nil, false
		}
		found[k] = true
		h.key[k] = c
	}
	return h, true
}

// csvEntries decodes a metered-data or profile CSV file.
func (r *bulkRun) csvEntries(src io.Reader) error {
	return r.csvKeyed(src, func(h *csvHeader, cells [][]byte, index, line int) error {
		switch {
		case cells == nil:
			return r.counted(0)
		case r.kind == BulkMetered:
			return r.csvMetered(h, cells, index, line)
		}
		return r.csvProfile(h, cells, index, line)
	})
}

// csvKeyed reads a file of key columns and then values: the header, then
// each row, which it hands to row with its 0-based index. A row too short
// for the key columns is reported here and, like a row that cannot be read
// (see csvRows), handed to row with nil cells, so that row can count it.
func (r *bulkRun) csvKeyed(src io.Reader, row func(h *csvHeader, cells [][]byte, index, line int) error) error {
	cr := csvfile.NewReader(src, bulkBufferSize)
	h, ok := r.csvHeader(cr)
	if !ok {
		if cr.Err != nil {
			return r.readFailed(cr.Err)
		}
		return nil
	}
	rowLoc := func(index int) []any { return []any{"body", h.list, index} }
	return r.csvRows(cr, h.width, h.list, rowLoc, func(cells [][]byte, index, line int) error {
		if cells != nil && len(cells) < len(h.keys) {
			r.add(ingest.FileProblem{Line: line, Type: ingest.ProblemCSVCells, Loc: rowLoc(index),
				Msg: fmt.Sprintf("line %d has %s; a row needs at least the columns %s, then its values",
					line, ingest.Plural(len(cells), "cell"), strings.Join(h.keys, ", "))})
			cells = nil
		}
		return row(h, cells, index, line)
	})
}

// csvRows reads the data rows after the header, skipping blank ones, and
// hands each to entry with its 0-based index. The problems every kind shares
// are reported here: a row that cannot be split (csv_syntax) or that has
// more non-empty cells than the header has columns (csv_cell_count) gets
// the loc that rowLoc gives its index, and is handed to entry with nil cells
// so that entry still counts it. A file without rows is the API's too_short
// problem of the list named list. A read error ends the rows: it is returned,
// or recorded when it is a broken gzip stream.
func (r *bulkRun) csvRows(cr *csvfile.Reader, width int, list string, rowLoc func(index int) []any, entry func(cells [][]byte, index, line int) error) error {
	index := 0
	for {
		line := cr.NextContent()
		if line == 0 {
			break
		}
		cells := cr.Cells
		switch {
		case cr.Syntax != "":
			r.add(ingest.FileProblem{Line: line, Type: ingest.ProblemCSVSyntax, Loc: rowLoc(index),
				Msg: fmt.Sprintf("line %d: %s", line, cr.Syntax)})
			cells = nil
		case len(cells) > width && !csvfile.EmptyFrom(cells, width):
			r.add(ingest.FileProblem{Line: line, Type: ingest.ProblemCSVCells, Loc: rowLoc(index),
				Msg: fmt.Sprintf("line %d has %d cells, but the header has %d columns", line, len(cells), width)})
			cells = nil
		}
		if err := entry(cells, index, line); err != nil {
			return err
		}
		index++
	}
	if cr.Err != nil {
		return r.readFailed(cr.Err)
	}
	if index == 0 && r.kind == BulkTrades {
		r.noTradeRows()
	} else if index == 0 {
		r.add(ingest.FileProblem{Line: 1, Type: "too_short", Loc: []any{"body", list},
			Msg:   "List should have at least 1 item after validation, not 0: the file has a header but no rows",
			Input: []any{}, Ctx: map[string]any{"field_type": "List", "min_length": 1, "actual_length": 0}})
	}
	return nil
}

// csvWhole reads a CSV file that is validated whole (master data, a
// forecast) through rows, at most MaxDocumentBytes of it. whole is false when
// the file is over the limit: its one problem is then file_too_large.
func (r *bulkRun) csvWhole(src io.Reader, rows func(io.Reader) error) (whole bool, err error) {
	lim := &io.LimitedReader{R: src, N: r.opt.MaxDocumentBytes + 1}
	if err := rows(lim); err != nil {
		return false, err
	}
	if lim.N > 0 {
		return true, nil
	}
	// The problems of the rows read so far are dropped: a file over the
	// limit gets the one answer a JSON document over it gets.
	r.problems, r.count, r.held = r.problems[:0], 0, nil
	r.res.Entries, r.res.Values = 0, 0
	r.tooLarge()
	return false, nil
}

// fieldLoc is the loc of a field of entries[index].
func fieldLoc(index int, field string) ingest.Path {
	return ingest.BodyPath().At("entries").Index(index).At(field)
}

// csvDay validates a day cell.
func (r *bulkRun) csvDay(cell []byte, index, line int, dst *pipeline.Day) bool {
	if d, p := ingest.ParseDate(string(cell)); p == nil {
		*dst = d
		return true
	}
	r.c.DateValue(fieldLoc(index, "day"), &ingest.Node{Kind: ingest.KindString, Str: string(cell)}, dst)
	r.takeChecker(line, 0, "day")
	return false
}

// csvMetered validates one metered-data row.
func (r *bulkRun) csvMetered(h *csvHeader, cells [][]byte, index, line int) error {
	var e pipeline.MeteredEntry
	ok := true
	if malo := cells[h.key[0]]; csvfile.IsDigits(malo, 11) {
		e.Malo = string(malo)
	} else {
		r.c.Text(fieldLoc(index, "malo"), &ingest.Node{Kind: ingest.KindString, Str: string(malo)}, ingest.MaloRule)
		r.takeChecker(line, 0, "malo")
		ok = false
	}
	ok = r.csvDay(cells[h.key[1]], index, line, &e.Day) && ok
	if unit := cells[h.key[2]]; !meteredUnit(string(unit), &e.Unit) {
		ingest.ChoiceValue(&r.c, fieldLoc(index, "unit"), &ingest.Node{Kind: ingest.KindString, Str: string(unit)}, ingest.MeteredUnits, &e.Unit)
		r.takeChecker(line, 0, "unit")
		ok = false
	}
	values, good := r.csvValues(h, cells[3:], index, line, "values")
	if err := r.counted(len(values)); err != nil {
		return err
	}
	if !ok || !good {
		return nil
	}
	e.Values = values
	return r.meteredEntry(e, origin{index: index, line: line}, false, r.text)
}

// csvProfile validates one load-profile row.
func (r *bulkRun) csvProfile(h *csvHeader, cells [][]byte, index, line int) error {
	var e pipeline.ProfileEntry
	mga, profile := cells[h.key[0]], cells[h.key[1]]
	id, ok := r.lookupPair(mga, profile)
	if ok {
		e.MGA, e.Profile = r.pairNames[id][0], r.pairNames[id][1]
	} else {
		e.MGA, e.Profile = string(mga), string(profile)
		good := r.csvText(mga, index, line, "mga", ingest.MGARule)
		good = r.csvText(profile, index, line, "profile", ingest.ProfileRule) && good
		if good {
			id, e.MGA, e.Profile = r.pair(e.MGA, e.Profile)
			ok = true
		}
	}
	ok = r.csvDay(cells[h.key[2]], index, line, &e.Day) && ok
	values, good := r.csvValues(h, cells[3:], index, line, "values_kwh")
	if err := r.counted(len(values)); err != nil {
		return err
	}
	if !ok || !good {
		return nil
	}
	e.ValuesKWh = values
	return r.profileEntry(e, id, origin{index: index, line: line}, false, r.text)
}

// csvText validates a free-text cell.
func (r *bulkRun) csvText(cell []byte, index, line int, field string, rule ingest.TextRule) bool {
	if !utf8.Valid(cell) {
		ingest.NotUnicode(&r.c, fieldLoc(index, field), cell)
		r.takeChecker(line, 0, field)
		return false
	}
	if _, ok := r.c.Text(fieldLoc(index, field), &ingest.Node{Kind: ingest.KindString, Str: string(cell)}, rule); !ok {
		r.takeChecker(line, 0, field)
		return false
	}
	return true
}

// lookupPair finds an interned (mga, profile) pair by its bytes.
func (r *bulkRun) lookupPair(mga, profile []byte) (uint32, bool) {
	k := appendPairKey(r.pairKey[:0], mga, profile)
	r.pairKey = k
	id, ok := r.pairs[string(k)]
	return id, ok
}

// csvValues parses the value cells of a row; trailing empty cells are not
// values. The returned slice is scratch, valid until the next row.
func (r *bulkRun) csvValues(h *csvHeader, cells [][]byte, index, line int, field string) ([]float64, bool) {
	n := len(cells)
	for n > 0 && len(cells[n-1]) == 0 {
		n--
	}
	comma := h.sep == ';'
	vals := r.vals[:0]
	text := r.text[:0]
	hashing := !r.failed() && r.hash != nil
	// The values themselves are only needed for the batches; the
	// validation pass checks them and hashes their text. A forecast or a
	// trade set is checked and hashed whole, from its values.
	need := r.emit != nil || r.kind == BulkForecasts || r.kind == BulkTrades
	ok := true
	for j := 0; j < n; j++ {
		cell := cells[j]
		f, good, canon := csvfile.ParseFloat(cell, comma, need)
		if good && f >= 0 && f <= math.MaxFloat64 {
			vals = append(vals, f)
			if hashing {
				if j > 0 {
					text = append(text, ',')
				}
				if canon == csvfile.NotCanonical {
					text = ingest.AppendJSONFloat(text, f)
				} else {
					text = append(text, cell...)
					if canon >= 0 {
						text[len(text)-len(cell)+canon] = '.'
					}
				}
			}
			continue
		}
		vals = append(vals, 0)
		ok, hashing = false, false
		r.csvValueProblem(h, cell, f, good, index, line, field, j)
	}
	r.vals, r.text = vals, text
	return vals, ok
}

// csvValueProblem reports a value cell that is not a valid quantity.
func (r *bulkRun) csvValueProblem(h *csvHeader, cell []byte, f float64, parsed bool, index, line int, field string, j int) {
	loc := ingest.BodyPath().At(h.list).Index(index).At(field).Index(j)
	switch {
	case len(cell) == 0:
		r.c.Fail(loc, "missing", "Field required: the value cell is empty, but later cells of the row hold values (only trailing cells may be empty)",
			&ingest.Node{Kind: ingest.KindNull}, nil)
	case !parsed:
		r.c.Quantity(loc, &ingest.Node{Kind: ingest.KindString, Str: strings.ToValidUTF8(string(cell), "\uFFFD")})
	default:
		r.c.Quantity(loc, &ingest.Node{Kind: ingest.KindNumber, Num: f, Str: csvfile.Literal(cell)})
	}
	r.takeChecker(line, 0, h.column(j))
}

// headerProblem records the problem of an unusable header, after which
// nothing else of the file is checked.
func (r *bulkRun) headerProblem(format string, args ...any) {
	r.add(ingest.FileProblem{Line: 1, Type: ingest.ProblemCSVHeader, Msg: fmt.Sprintf(format, args...)})
}
