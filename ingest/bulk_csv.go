package ingest

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/pipeline"
)

// CSV bulk files hold one entry per row: the key columns (malo, day, unit for
// metered data; mga, profile, day for profiles) in any order, then the
// quarter-hour values. The separator is ';' or ',', found in the header line;
// with ';' a value may use a decimal comma. Fields may be quoted as in RFC
// 4180. Rows without quotes, the common case, are split and their values
// parsed straight from the read buffer without copying or allocating.
//
// The reader and parseCSVFloat are hand-written because they are measurably
// faster than the libraries on this work (BenchmarkCSVReader: 20,000 rows of
// 3 key cells and 96 values, ';' and decimal comma, CPU time of one pass,
// 2026-11-26). Splitting the rows and converting the values took 37 ms here,
// 62 ms with encoding/csv (ReuseRecord) and 60 ms with
// github.com/fikrimohammad/go-zerocsv, both given parseCSVFloat for the
// numbers; splitting alone took 22 ms against 49 ms and 47 ms.
// github.com/tonistiigi/go-csvvalue splits one line in 27 ms (41 ms with the
// values) but reads no stream and no quoted cell across lines. With
// strconv.ParseFloat on a copy whose decimal comma is replaced, the pass took
// 85 ms instead of 37 ms.

// csvReader reads the rows of a CSV file.
type csvReader struct {
	src      io.Reader
	buf      []byte
	pos, end int // buf[pos:end] is unread
	eof      bool
	err      error // a read error other than EOF
	line     int   // physical line of buf[pos]
	sep      byte

	cells   [][]byte // the current row's cells (into buf or scratch)
	scratch []byte   // unquoted cells of a row with quotes
	bounds  []int
	syntax  string // the current row's first syntax problem, "" if none
}

func newCSVReader(src io.Reader) *csvReader {
	return &csvReader{src: src, buf: make([]byte, bulkBufferSize), line: 1}
}

// fill reads more input, keeping buf[pos:end]; it grows the buffer when the
// unread part fills it. It returns false when nothing more was read.
func (r *csvReader) fill() bool {
	if r.eof || r.err != nil {
		return false
	}
	if r.pos > 0 {
		r.end = copy(r.buf, r.buf[r.pos:r.end])
		r.pos = 0
	}
	if r.end == len(r.buf) {
		grown := make([]byte, 2*len(r.buf))
		copy(grown, r.buf[:r.end])
		r.buf = grown
	}
	for {
		n, err := r.src.Read(r.buf[r.end:])
		r.end += n
		if err == io.EOF {
			r.eof = true
		} else if err != nil {
			r.err = err
		}
		if n > 0 || r.eof || r.err != nil {
			return n > 0
		}
	}
}

// more is called when the unread data ends inside a row: it reads on and
// reports whether the row can be looked at again.
func (r *csvReader) more() bool {
	r.fill()
	return r.err == nil
}

const (
	msgRowTooLong    = "the row is longer than 1 MiB"
	msgBareQuote     = `a " in an unquoted cell (quote the whole cell and double each " inside it)`
	msgAfterQuote    = `unexpected character after the closing " of a quoted cell (a " inside a quoted cell must be doubled)`
	msgUnclosedQuote = `a quoted cell is not closed: the " that opens it has no closing "`
	msgQuotedTooLong = `a quoted cell is not closed within 1 MiB: the " that opens it has no closing "`
	rowLimit         = maxEntryBytes
)

// next reads the next row into cells and returns the line it starts on, or
// 0 at the end of the input (or on a read error, see err). A row that cannot
// be split has no cells and its problem in syntax.
func (r *csvReader) next() int {
	r.syntax = ""
	for {
		data := r.buf[r.pos:r.end]
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 && !r.eof {
			if len(data) > rowLimit {
				return r.skipLine(msgRowTooLong)
			}
			if !r.more() {
				return 0
			}
			continue
		}
		if len(data) == 0 {
			return 0
		}
		row := data
		if nl >= 0 {
			row = data[:nl]
		}
		if bytes.IndexByte(row, '"') >= 0 {
			return r.quotedRow()
		}
		line := r.line
		r.line++
		r.pos += len(row)
		if nl >= 0 {
			r.pos++
		}
		if n := len(row); n > 0 && row[n-1] == '\r' {
			row = row[:n-1]
		}
		r.split(row)
		return line
	}
}

// split cuts a row without quotes into cells.
func (r *csvReader) split(row []byte) {
	cells := r.cells[:0]
	sep := r.sep
	for {
		i := bytes.IndexByte(row, sep)
		if i < 0 {
			break
		}
		cells = append(cells, row[:i])
		row = row[i+1:]
	}
	r.cells = append(cells, row)
}

// skipLine drops the rest of the physical line at pos and returns its number
// with the problem in syntax.
func (r *csvReader) skipLine(problem string) int {
	line := r.line
	r.line++
	for {
		if i := bytes.IndexByte(r.buf[r.pos:r.end], '\n'); i >= 0 {
			r.pos += i + 1
			break
		}
		r.pos = r.end
		if !r.fill() {
			break
		}
	}
	r.cells = r.cells[:0]
	r.syntax = problem
	return line
}

// quotedRow reads a row that has a '"' on its first line, by RFC 4180: a
// quoted cell may hold separators, doubled quotes and line breaks.
func (r *csvReader) quotedRow() int {
	for {
		line, complete := r.tryQuoted()
		if complete {
			return line
		}
		if r.end-r.pos > rowLimit {
			return r.skipLine(msgQuotedTooLong)
		}
		if !r.more() {
			return 0
		}
	}
}

// tryQuoted splits the row at pos; complete is false when the unread data
// ends before the row does.
func (r *csvReader) tryQuoted() (line int, complete bool) {
	data := r.buf[r.pos:r.end]
	r.scratch, r.bounds = r.scratch[:0], r.bounds[:0]
	syntax := ""
	lines := 0
	sep := r.sep
	i := 0
	for {
		r.bounds = append(r.bounds, len(r.scratch))
		// One cell at data[i:]; rowEnd is set when the row ends after it.
		rowEnd := false
		literal := false // the rest of the cell is taken as it is
		if i < len(data) && data[i] == '"' {
			i++
			for {
				j := bytes.IndexByte(data[i:], '"')
				if j < 0 {
					if !r.eof {
						return 0, false
					}
					lines += bytes.Count(data[i:], []byte{'\n'})
					r.scratch = append(r.scratch, data[i:]...)
					i = len(data)
					if syntax == "" {
						syntax = msgUnclosedQuote
					}
					break
				}
				lines += bytes.Count(data[i:i+j], []byte{'\n'})
				r.scratch = append(r.scratch, data[i:i+j]...)
				i += j + 1
				if i == len(data) && !r.eof {
					return 0, false // "" or the end of the cell?
				}
				if i < len(data) && data[i] == '"' {
					r.scratch = append(r.scratch, '"')
					i++
					continue
				}
				break
			}
			switch {
			case i == len(data):
				rowEnd = true
			case data[i] == sep:
				i++
			case data[i] == '\n':
				i++
				rowEnd = true
			case data[i] == '\r' && i+1 == len(data) && !r.eof:
				return 0, false
			case data[i] == '\r' && (i+1 == len(data) || data[i+1] == '\n'):
				i = min(i+2, len(data))
				rowEnd = true
			default:
				if syntax == "" {
					syntax = msgAfterQuote
				}
				literal = true
			}
		} else {
			literal = true
		}
		if literal {
			k := i
			for k < len(data) && data[k] != sep && data[k] != '\n' {
				k++
			}
			if k == len(data) && !r.eof {
				return 0, false
			}
			cell := data[i:k]
			if k == len(data) || data[k] == '\n' {
				rowEnd = true
				if n := len(cell); n > 0 && cell[n-1] == '\r' {
					cell = cell[:n-1]
				}
			}
			if bytes.IndexByte(cell, '"') >= 0 && syntax == "" {
				syntax = msgBareQuote
			}
			r.scratch = append(r.scratch, cell...)
			i = min(k+1, len(data))
		}
		if rowEnd {
			break
		}
	}
	r.bounds = append(r.bounds, len(r.scratch))
	cells := r.cells[:0]
	for k := 0; k+1 < len(r.bounds); k++ {
		cells = append(cells, r.scratch[r.bounds[k]:r.bounds[k+1]])
	}
	r.cells = cells
	line = r.line
	r.line += 1 + lines
	r.pos += i
	r.syntax = syntax
	return line, true
}

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
func (r *bulkRun) csvHeader(cr *csvReader) (*csvHeader, bool) {
	layout := csvLayouts[r.kind]
	keys, example := layout.keys, layout.example
	names, ok := r.csvHeaderLine(cr, example)
	if !ok {
		return nil, false
	}
	n := len(keys)
	h := &csvHeader{sep: cr.sep, key: make([]int, n), keys: keys, list: layout.list, width: len(names), names: names}
	if len(h.names) <= n {
		r.headerProblem("the header must have the columns %s (in any order) and then at least one value column, as in %s; it has %s",
			strings.Join(keys, ", "), example, quoteNames(h.names))
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

// csvHeaderLine reads the header line of any CSV file: it skips a BOM, takes
// the separator from the line and splits it. It returns the column names
// without surrounding spaces; ok is false when the file cannot be read
// further (the problem is recorded, or cr.err is set). example is a valid
// header, for the messages.
func (r *bulkRun) csvHeaderLine(cr *csvReader, example string) ([]string, bool) {
	for cr.end < 3 && cr.fill() {
	}
	if cr.end >= 3 && cr.buf[0] == 0xef && cr.buf[1] == 0xbb && cr.buf[2] == 0xbf {
		cr.pos = 3
	}
	// The separator is the first of ';' and ',' found outside quotes on the
	// header's first line.
	var first []byte
	for {
		data := cr.buf[cr.pos:cr.end]
		if i := bytes.IndexByte(data, '\n'); i >= 0 || cr.eof || len(data) > rowLimit {
			if i >= 0 {
				data = data[:i]
			}
			first = data
			break
		}
		if !cr.more() {
			return nil, false
		}
	}
	if cr.err != nil {
		return nil, false
	}
	if len(bytes.TrimSpace(first)) == 0 {
		r.headerProblem("the first line must be the header, for example %s; it is empty", example)
		return nil, false
	}
	for _, quotes := range []bool{true, false} {
		quoted := false
		for _, c := range first {
			if c == '"' && quotes {
				quoted = !quoted
			} else if !quoted && (c == ';' || c == ',') {
				cr.sep = c
				break
			}
		}
		if cr.sep != 0 {
			break
		}
	}
	if cr.sep == 0 {
		r.headerProblem("the header has a single column: separate the columns with ; or , as in %s", example)
		return nil, false
	}
	if cr.next() == 0 {
		return nil, false
	}
	if cr.syntax != "" {
		r.headerProblem("the header line is malformed: %s", cr.syntax)
		return nil, false
	}
	names := make([]string, len(cr.cells))
	for i, c := range cr.cells {
		names[i] = strings.TrimSpace(string(c))
	}
	return names, true
}

// headerProblem records the problem of an unusable header, after which
// nothing else of the file is checked.
func (r *bulkRun) headerProblem(format string, args ...any) {
	r.add(FileProblem{Line: 1, Type: ProblemCSVHeader, Msg: fmt.Sprintf(format, args...)})
}

func quoteNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
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
	cr := newCSVReader(src)
	h, ok := r.csvHeader(cr)
	if !ok {
		if cr.err != nil {
			return r.readFailed(cr.err)
		}
		return nil
	}
	rowLoc := func(index int) []any { return []any{"body", h.list, index} }
	return r.csvRows(cr, h.width, h.list, rowLoc, func(cells [][]byte, index, line int) error {
		if cells != nil && len(cells) < len(h.keys) {
			r.add(FileProblem{Line: line, Type: ProblemCSVCells, Loc: rowLoc(index),
				Msg: fmt.Sprintf("line %d has %s; a row needs at least the columns %s, then its values",
					line, plural(len(cells), "cell"), strings.Join(h.keys, ", "))})
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
func (r *bulkRun) csvRows(cr *csvReader, width int, list string, rowLoc func(index int) []any, entry func(cells [][]byte, index, line int) error) error {
	index := 0
	for {
		line := cr.next()
		if line == 0 {
			break
		}
		cells := cr.cells
		if cr.syntax == "" && blankRow(cells) {
			continue
		}
		switch {
		case cr.syntax != "":
			r.add(FileProblem{Line: line, Type: ProblemCSVSyntax, Loc: rowLoc(index),
				Msg: fmt.Sprintf("line %d: %s", line, cr.syntax)})
			cells = nil
		case len(cells) > width && !emptyFrom(cells, width):
			r.add(FileProblem{Line: line, Type: ProblemCSVCells, Loc: rowLoc(index),
				Msg: fmt.Sprintf("line %d has %d cells, but the header has %d columns", line, len(cells), width)})
			cells = nil
		}
		if err := entry(cells, index, line); err != nil {
			return err
		}
		index++
	}
	if cr.err != nil {
		return r.readFailed(cr.err)
	}
	if index == 0 && r.kind == BulkTrades {
		r.noTradeRows()
	} else if index == 0 {
		r.add(FileProblem{Line: 1, Type: "too_short", Loc: []any{"body", list},
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

// emptyFrom tells whether the cells from i on are all empty: empty cells
// beyond the header's columns (trailing separators) are allowed.
func emptyFrom(cells [][]byte, i int) bool {
	for _, c := range cells[i:] {
		if len(c) > 0 {
			return false
		}
	}
	return true
}

// blankRow tells whether a row has no content (an empty line, or only
// separators as spreadsheets write them): such rows are skipped.
func blankRow(cells [][]byte) bool {
	if len(cells[0]) > 0 {
		return false
	}
	for _, c := range cells {
		if len(c) > 0 {
			return false
		}
	}
	return true
}

// fieldLoc is the loc of a field of entries[index].
func fieldLoc(index int, field string) path {
	return bodyPath().at("entries").index(index).at(field)
}

// csvDay validates a day cell.
func (r *bulkRun) csvDay(cell []byte, index, line int, dst *pipeline.Day) bool {
	if d, p := parseDate(string(cell)); p == nil {
		*dst = d
		return true
	}
	r.c.dateValue(fieldLoc(index, "day"), &node{kind: kindString, str: string(cell)}, dst)
	r.takeChecker(line, 0, "day")
	return false
}

// csvMetered validates one metered-data row.
func (r *bulkRun) csvMetered(h *csvHeader, cells [][]byte, index, line int) error {
	var e pipeline.MeteredEntry
	ok := true
	if malo := cells[h.key[0]]; isDigitsBytes(malo, 11) {
		e.Malo = string(malo)
	} else {
		r.c.text(fieldLoc(index, "malo"), &node{kind: kindString, str: string(malo)}, maloRule)
		r.takeChecker(line, 0, "malo")
		ok = false
	}
	ok = r.csvDay(cells[h.key[1]], index, line, &e.Day) && ok
	switch unit := cells[h.key[2]]; string(unit) {
	case "MW":
		e.Unit = pipeline.MW
	case "MWH":
		e.Unit = pipeline.MWH
	case "KWH":
		e.Unit = pipeline.KWH
	default:
		choiceValue(&r.c, fieldLoc(index, "unit"), &node{kind: kindString, str: string(unit)}, meteredUnits, &e.Unit)
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
		good := r.csvText(mga, index, line, "mga", mgaRule)
		good = r.csvText(profile, index, line, "profile", profileRule) && good
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
func (r *bulkRun) csvText(cell []byte, index, line int, field string, rule textRule) bool {
	if !utf8.Valid(cell) {
		r.c.notUnicode(fieldLoc(index, field), cell)
		r.takeChecker(line, 0, field)
		return false
	}
	if _, ok := r.c.text(fieldLoc(index, field), &node{kind: kindString, str: string(cell)}, rule); !ok {
		r.takeChecker(line, 0, field)
		return false
	}
	return true
}

// notUnicode reports a CSV cell that is not UTF-8, with the type pydantic
// gives bytes that do not decode; the input shows the cell with its broken
// bytes replaced, since a problem must render as JSON.
func (c *checker) notUnicode(loc path, cell []byte) {
	c.fail(loc, "string_unicode", "Input should be a valid string, unable to parse raw data as a unicode string",
		&node{kind: kindString, str: strings.ToValidUTF8(string(cell), "\uFFFD")}, nil)
}

// lookupPair finds an interned (mga, profile) pair by its bytes.
func (r *bulkRun) lookupPair(mga, profile []byte) (uint32, bool) {
	k := r.pairKey[:0]
	k = strconv.AppendInt(k, int64(len(mga)), 10)
	k = append(k, ':')
	k = append(k, mga...)
	k = append(k, profile...)
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
		f, good, canon := parseCSVFloat(cell, comma, need)
		if good && f >= 0 && f <= math.MaxFloat64 {
			vals = append(vals, f)
			if hashing {
				if j > 0 {
					text = append(text, ',')
				}
				if canon == notCanonical {
					text = appendJSONFloat(text, f)
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
	loc := bodyPath().at(h.list).index(index).at(field).index(j)
	switch {
	case len(cell) == 0:
		r.c.fail(loc, "missing", "Field required: the value cell is empty, but later cells of the row hold values (only trailing cells may be empty)",
			&node{kind: kindNull}, nil)
	case !parsed:
		r.c.quantity(loc, &node{kind: kindString, str: strings.ToValidUTF8(string(cell), "\uFFFD")})
	default:
		r.c.quantity(loc, &node{kind: kindNumber, num: f, str: csvLiteral(cell)})
	}
	r.takeChecker(line, 0, h.column(j))
}

// isDigitsBytes is isDigits for bytes.
func isDigitsBytes(b []byte, n int) bool {
	if len(b) != n {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Values of parseCSVFloat's canon: whether the cell, with '.' as its
// decimal mark, is exactly the value's canonical JSON text.
const (
	notCanonical  = -2 // it is not
	canonicalText = -1 // it is, and has no decimal mark; >= 0: the mark's index
)

// parseCSVFloat parses a value cell: [+-] digits [. digits] [e [+-] digits],
// where the digits before or after the decimal mark may be left out (not
// both) and the mark is '.', or also ',' when comma is set. The result is
// what strconv.ParseFloat makes of the cell with '.' as the mark; -0 becomes
// 0, as in the API. ok is false if the cell is not such a number.
//
// canon tells whether the cell is spelled as the canonical encoding spells
// the value (appendJSONFloat): no sign, no leading or trailing zeros, no
// exponent, at most 6 decimals and 15 significant digits. Such a decimal is
// the shortest that rounds to its float64, since float64 tells all decimals
// of up to 15 digits apart, so it is what appendShortDecimal writes; copying
// it spares the formatting of the value, which is most of the cost of
// hashing a file.
//
// Without need, a canonical cell is only checked, not converted: it is a
// valid quantity (no sign, finite), and the hash copies its text.
func parseCSVFloat(b []byte, comma, need bool) (f float64, ok bool, canon int) {
	n := len(b)
	if n == 0 {
		return 0, false, notCanonical
	}
	i := 0
	canon = canonicalText
	neg := false
	if c := b[0]; c == '-' || c == '+' {
		neg = c == '-'
		canon = notCanonical
		i = 1
	}
	// All digits go into mant; with more than 19 of them it may have
	// overflowed and strconv converts.
	var mant uint64
	start := i
	for i < n && b[i]-'0' <= 9 {
		mant = mant*10 + uint64(b[i]-'0')
		i++
	}
	intDigits := i - start
	if intDigits != 1 && (intDigits == 0 || b[start] == '0') {
		canon = notCanonical
	}
	frac := 0
	if i < n && (b[i] == '.' || comma && b[i] == ',') {
		if canon == canonicalText {
			canon = i
		}
		i++
		start := i
		for i < n && b[i]-'0' <= 9 {
			mant = mant*10 + uint64(b[i]-'0')
			i++
		}
		frac = i - start
		switch {
		case frac == 0 && intDigits == 0:
			return 0, false, notCanonical
		case frac == 0 || frac > 6 || b[i-1] == '0':
			canon = notCanonical
		}
	} else if intDigits == 0 {
		return 0, false, notCanonical
	}
	exp := 0
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		canon = notCanonical
		i++
		eneg := false
		if i < n && (b[i] == '-' || b[i] == '+') {
			eneg = b[i] == '-'
			i++
		}
		start := i
		for i < n && b[i]-'0' <= 9 {
			if exp < 100000 {
				exp = exp*10 + int(b[i]-'0')
			}
			i++
		}
		if i == start {
			return 0, false, notCanonical
		}
		if eneg {
			exp = -exp
		}
	}
	if i != n {
		return 0, false, notCanonical
	}
	if mant >= 1e15 {
		canon = notCanonical
	}
	if !need && canon != notCanonical {
		return 0, true, canon
	}
	if intDigits+frac <= 19 {
		f, ok = exactFloat(mant, exp-frac)
	}
	if !ok {
		s := string(b)
		if comma {
			s = strings.Replace(s, ",", ".", 1)
		}
		// The grammar above is a subset of ParseFloat's; out of range gives
		// ±Inf (reported as not finite) or 0.
		f, _ = strconv.ParseFloat(s, 64)
		neg = false
		if intDigits+frac > 19 {
			canon = notCanonical
		}
	}
	if neg {
		f = -f
	}
	if f == 0 {
		f = 0
	}
	return f, true, canon
}

// csvLiteral spells a parsed value cell as a JSON number, for the input of a
// problem: the sign, the digits without leading zeros and '.' as the mark.
func csvLiteral(cell []byte) string {
	s := strings.Replace(string(cell), ",", ".", 1)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	mantissa, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, fracPart, hasFrac := strings.Cut(mantissa, ".")
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(intPart)
	if hasFrac {
		if fracPart == "" {
			fracPart = "0"
		}
		b.WriteString("." + fracPart)
	}
	if hasExp {
		b.WriteString("e" + exp)
	}
	return b.String()
}
