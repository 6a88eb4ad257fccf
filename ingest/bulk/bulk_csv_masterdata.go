package bulk

import (
	"bytes"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/csvfile"
	"github.com/schedbridge/schedbridge/ingest/databody"
	"github.com/schedbridge/schedbridge/pipeline"
)

// A master-data CSV file holds one row per slice of a market location's
// history. The columns are named as the fields of the API's body (malo, then
// the fields of a slice), so that a row reads as the JSON object it stands
// for; an empty cell is a field left out. The rows of one malo are that
// location's slices in file order, and the locations come in the order of
// their first rows: a file is the PUT /v1/master-data body
// {"locations": [{"malo": ..., "slices": [row, ...]}, ...]}.
//
// Each row is turned into the parsed JSON the API's decoder works on and
// validated by the API's own model functions (databody.LocationModel for the
// first row of a location, databody.SliceModel for the others), so the rules,
// problem types, messages and locs are the API's; the business rules are the
// API's databody.MasterDataFindings, and the input hash is that of the
// canonical encoding of the same locations. Like a master-data JSON document,
// the file is validated whole and staged in one batch; what it holds in
// memory is the domain values of its rows, bounded by reading at most
// MaxDocumentBytes.

// The columns of a master-data CSV file, in the models' field order, which
// is the order of the API's problems within a row.
const (
	mdMalo = iota
	mdValidFrom
	mdValidTo
	mdActive
	mdControlArea
	mdMGA
	mdMeteringType
	mdProfile
	mdAnnual
	mdKind
	mdDSOMPID
	mdFields
)

// mdColumns are the header names of the columns: the JSON field names.
var mdColumns = [mdFields]string{
	"malo", "valid_from", "valid_to", "active", "control_area", "mga", "metering_type", "profile",
	"annual_consumption_kwh", "kind", "dso_mp_id",
}

const mdExample = "malo;valid_from;valid_to;control_area;mga;metering_type;profile;annual_consumption_kwh"

// mdInternLimit bounds the interned cell texts: the few distinct dates,
// control areas, MGAs, profiles and literals of a file repeat on every row,
// and sharing them spares an allocation per cell and keeps the held slices
// small; the bound keeps a file of all distinct names from growing the
// table without limit.
const mdInternLimit = 4096

// mdHeader is the validated header of a master-data file.
type mdHeader struct {
	sep   byte
	cell  [mdFields]int // cell index of each column; -1 when the header lacks it
	width int           // the header's columns up to the last named one
}

// cellOf returns the row's cell of column f; nil when the header or the
// row lacks it (a short row leaves its last fields out).
func (h *mdHeader) cellOf(cells [][]byte, f int) []byte {
	if c := h.cell[f]; c >= 0 && c < len(cells) {
		return cells[c]
	}
	return nil
}

// mdHeader reads and checks the header line; ok is false when the file
// cannot be read further (the problem is recorded, or cr.err is set).
func (r *bulkRun) mdHeader(cr *csvfile.Reader) (*mdHeader, bool) {
	names, ok := cr.HeaderLine(mdExample, func(msg string) { r.headerProblem("%s", msg) })
	if !ok {
		return nil, false
	}
	// A cell in an unnamed column at the end is a csv_cell_count problem.
	h := &mdHeader{sep: cr.Sep, width: csvfile.Width(names)}
	for f := range h.cell {
		h.cell[f] = -1
	}
	list := strings.Join(mdColumns[:], ", ")
	for c, name := range names[:h.width] {
		f := slices.IndexFunc(mdColumns[:], func(col string) bool { return strings.EqualFold(col, name) })
		switch {
		case name == "":
			r.headerProblem("column %d of the header has no name; the columns of a master-data file are %s", c+1, list)
			return nil, false
		case f < 0:
			r.headerProblem("column %d of the header is %q, which is not a master-data column; the columns are %s", c+1, name, list)
			return nil, false
		case h.cell[f] >= 0:
			r.headerProblem("column %d of the header repeats %q (column %d)", c+1, mdColumns[f], h.cell[f]+1)
			return nil, false
		}
		h.cell[f] = c
	}
	for _, f := range []int{mdMalo, mdValidFrom} {
		if h.cell[f] < 0 {
			r.headerProblem("the header has no column %s; a master-data file needs at least malo and valid_from, as in %s; it has %s",
				mdColumns[f], mdExample, csvfile.QuoteNames(names))
			return nil, false
		}
	}
	return h, true
}

// mdFile is what the rows of a master-data file have given so far.
type mdFile struct {
	h     *mdHeader
	locs  []databody.GivenLocation
	lines [][]int        // per location, the line of each of its rows
	index map[string]int // location by its malo cell
	strs  map[string]string
	// Scratch: the row and location being validated, as the parsed JSON the
	// API would get, and the row's loc.
	members, locMembers []ingest.Member
	slices              [1]ingest.Node
	at                  ingest.Path
}

// csvMasterData decodes a master-data CSV file.
func (r *bulkRun) csvMasterData(src io.Reader) error {
	var m *mdFile
	whole, err := r.csvWhole(src, func(src io.Reader) (err error) {
		m, err = r.mdRows(src)
		return err
	})
	if err != nil || !whole {
		return err
	}
	if m == nil || r.failed() {
		return nil // as the API, business rules only for a schema-valid body
	}
	databody.MasterDataFindings(m.locs, r.opt.Rules, func(i, j int, field, msg string) {
		p := ingest.FileProblem{Line: m.lines[i][0], Column: field, Type: ingest.ProblemBusiness, Loc: []any{"body", "locations", i}, Msg: msg}
		if j >= 0 {
			p.Line, p.Loc = m.lines[i][j], append(p.Loc, "slices", j)
		}
		r.add(p)
	})
	if r.failed() {
		return nil
	}
	locations := make([]pipeline.Location, len(m.locs))
	for i := range m.locs {
		locations[i] = m.locs[i].Location
	}
	r.hash = newStreamHash("locations")
	for i := range locations {
		r.hash.location(&locations[i])
	}
	return r.emitWhole(BulkBatch{Locations: locations})
}

// mdRows reads the header and validates every row; m is nil when the header
// is unusable.
func (r *bulkRun) mdRows(src io.Reader) (m *mdFile, err error) {
	cr := csvfile.NewReader(src, bulkBufferSize)
	h, ok := r.mdHeader(cr)
	if !ok {
		if cr.Err != nil {
			return nil, r.readFailed(cr.Err)
		}
		return nil, nil
	}
	m = &mdFile{h: h, index: make(map[string]int), strs: make(map[string]string), at: ingest.BodyPath()}
	// A row that cannot be read has no malo to place it by, so its problem
	// points at the list.
	rowLoc := func(int) []any { return []any{"body", "locations"} }
	err = r.csvRows(cr, h.width, "locations", rowLoc, func(cells [][]byte, _, line int) error {
		if cells != nil {
			r.mdRow(m, cells, line)
		}
		return r.pace()
	})
	r.res.Entries = len(m.locs)
	return m, err
}

// mdRow validates one row: the first row of a location as the location
// {"malo": ..., "slices": [row]}, any later one as the location's next slice.
func (r *bulkRun) mdRow(m *mdFile, cells [][]byte, line int) {
	malo := m.h.cellOf(cells, mdMalo)
	i, key, isNew := m.location(malo, line)
	j := len(m.lines[i]) - 1
	// The loc of the location. The validators append to it and copy what
	// they keep, so it is reused from row to row, and what is derived from
	// it is derived anew for each call.
	at := append(m.at[:0], "body", "locations", strconv.Itoa(i))
	m.at = at

	// The row as the JSON object it stands for. A cell that is not UTF-8
	// cannot be a JSON string: like pydantic for a field that fails, it gets
	// its own problem and the model validators of its row do not run.
	comma := m.h.sep == ';'
	var broken uint16
	if !utf8.Valid(malo) {
		broken |= 1 << mdMalo
	}
	m.members = m.members[:0]
	for f := mdValidFrom; f < mdFields; f++ {
		cell := m.h.cellOf(cells, f)
		switch {
		case len(cell) == 0:
			// An empty cell is a field left out.
		case !utf8.Valid(cell):
			broken |= 1 << f
		default:
			m.members = append(m.members, ingest.Member{Key: mdColumns[f], Val: m.value(f, cell, comma)})
		}
	}
	row := ingest.Node{Kind: ingest.KindObject, Members: m.members}

	if isNew {
		m.locMembers = m.locMembers[:0]
		if len(malo) > 0 && broken&(1<<mdMalo) == 0 {
			m.locMembers = append(m.locMembers, ingest.Member{Key: "malo", Val: ingest.Node{Kind: ingest.KindString, Str: key}})
		}
		m.slices[0] = row
		m.locMembers = append(m.locMembers, ingest.Member{Key: "slices", Val: ingest.Node{Kind: ingest.KindArray, Arr: m.slices[:]}})
		loc := ingest.Node{Kind: ingest.KindObject, Members: m.locMembers}
		switch {
		case broken&(1<<mdMalo) != 0:
			ingest.NotUnicode(&r.c, at.At("malo"), malo)
		case broken == 0:
			if l, ok := databody.LocationModel(&r.c, at, &loc); ok {
				m.locs[i] = l
			}
		default:
			// The row's fields fail, but the location's malo is checked
			// as the API checks it before the slices.
			var s string
			ingest.Text(&r.c, &loc, at, "malo", ingest.Required, ingest.MaloRule, &s)
		}
	}
	switch {
	case broken&^(1<<mdMalo) != 0:
		for f := mdValidFrom; f < mdFields; f++ {
			if broken&(1<<f) != 0 {
				ingest.NotUnicode(&r.c, at.At("slices").Index(j).At(mdColumns[f]), m.h.cellOf(cells, f))
			}
		}
	case !isNew || broken != 0:
		// A later row, or the first row of a location whose malo failed:
		// pydantic validates the slices of a location whatever its malo.
		if s, ok := databody.SliceModel(&r.c, at.At("slices").Index(j), &row); ok {
			l := &m.locs[i]
			l.Slices, l.AreaGiven = append(l.Slices, s.Slice), append(l.AreaGiven, s.AreaGiven)
		}
	}
	r.takeCheckerColumns(line, 0, mdColumn)
}

// location finds or adds the location of a malo cell and records the row's
// line; key is the malo as a string. Each row with an empty malo is a
// location of its own, which the API reports as missing its malo.
func (m *mdFile) location(malo []byte, line int) (i int, key string, isNew bool) {
	if len(malo) > 0 {
		if i, ok := m.index[string(malo)]; ok {
			m.lines[i] = append(m.lines[i], line)
			return i, "", false
		}
		key = string(malo)
	}
	i = len(m.locs)
	if key != "" {
		m.index[key] = i
	}
	m.locs = append(m.locs, databody.GivenLocation{})
	m.lines = append(m.lines, []int{line})
	return i, key, true
}

// value is the JSON value that a non-empty cell of column f stands for.
func (m *mdFile) value(f int, cell []byte, comma bool) ingest.Node {
	switch f {
	case mdActive:
		// A CSV cell is text, so the JSON booleans are spelled true and
		// false (in any case, as spreadsheets write TRUE); any other text
		// is a string where the API wants a boolean.
		if bytes.EqualFold(cell, []byte("true")) {
			return ingest.Node{Kind: ingest.KindBool, Bool: true}
		}
		if bytes.EqualFold(cell, []byte("false")) {
			return ingest.Node{Kind: ingest.KindBool}
		}
	case mdAnnual:
		// A number as in the value cells of the other CSV files; text that
		// is not one is a string where the API wants a number. The literal
		// is only the input of a problem, which only a negative or
		// infinite number has.
		if v, ok, _ := csvfile.ParseFloat(cell, comma, true); ok {
			n := ingest.Node{Kind: ingest.KindNumber, Num: v}
			if v < 0 || math.IsInf(v, 0) {
				n.Str = csvfile.Literal(cell)
			}
			return n
		}
	case mdMalo, mdDSOMPID:
		// Identifiers differ from row to row: not worth interning.
	default:
		if s, ok := m.strs[string(cell)]; ok {
			return ingest.Node{Kind: ingest.KindString, Str: s}
		}
		s := string(cell)
		if len(m.strs) < mdInternLimit {
			m.strs[s] = s
		}
		return ingest.Node{Kind: ingest.KindString, Str: s}
	}
	return ingest.Node{Kind: ingest.KindString, Str: string(cell)}
}

// mdColumn names the column of a problem by its loc, which ends in the
// field (the location's malo or a slice's field); a problem of a whole
// slice or location has no column.
func mdColumn(loc []string) string {
	if last := loc[len(loc)-1]; slices.Contains(mdColumns[:], last) {
		return last
	}
	return ""
}
