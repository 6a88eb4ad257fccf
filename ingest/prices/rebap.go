package prices

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline/price"
)

// rebapColumns are the positions of the columns that ParseReBAPCSV reads,
// -1 when the file does not have one.
type rebapColumns struct {
	names                                    []string // the header cells as in the file, trimmed
	datum, von, bis, zone, unit, short, long int
	line                                     int // the header's line
}

// need is the number of cells a row must have to hold every column read.
func (c *rebapColumns) need() int {
	return max(c.datum, c.von, c.bis, c.zone, c.unit, c.short, c.long) + 1
}

// rebapEntry is one data row that could be read.
type rebapEntry struct {
	start       time.Time
	short, long float64
	missing     bool
	line        int
}

// ParseReBAPCSV reads a netztransparenz reBAP CSV export. Kind price.ReBAP,
// Format "netztransparenz-csv".
//
// The file is ';'-separated with decimal commas and '.' as the thousands
// separator, UTF-8 (with or without BOM) or Windows-1252, with CRLF or LF
// line ends; blank lines are skipped. Columns are found by header name,
// case-insensitive with umlauts spelt out: Datum (dd.mm.yyyy) and von (HH:MM)
// are required; bis, Zeitzone and Einheit are checked when present;
// "reBAP unterdeckt" gives Price and "reBAP ueberdeckt" PriceLong, and an
// older export's single reBAP column gives both. Every point is a
// quarter-hour. Intervals without a value and those the file skips between
// its first and its last row go to Missing; a row repeated with the same
// values is kept once.
func ParseReBAPCSV(data []byte) (price.Series, error) {
	var ps problems
	data = trimBOM(data)
	if !utf8.Valid(data) {
		// Spreadsheet exports without a BOM are Windows-1252, a superset of
		// ISO-8859-1 that also has € (0x80). Decoding a single-byte charset
		// cannot fail.
		data, _ = charmap.Windows1252.NewDecoder().Bytes(data)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		ps.add(problemTooShort, []string{"body"}, nil, "the file is empty")
		return price.Series{}, ps.err()
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.Comma = ';'
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true

	var header []string
	for header == nil {
		rec, err := cr.Read()
		switch {
		case errors.Is(err, io.EOF):
			ps.add(problemTooShort, []string{"body"}, nil, "the file is empty")
			return price.Series{}, ps.err()
		case err != nil:
			csvSyntax(&ps, err)
			return price.Series{}, ps.err()
		case !blank(rec):
			header = slices.Clone(rec)
		}
	}
	line, _ := cr.FieldPos(0)
	cols, ok := rebapHeader(&ps, header, line)
	if !ok {
		return price.Series{}, ps.err()
	}

	r := rowReader{cols: cols, ps: &ps}
	// One entry a line, sized up front: a year has 35,040 rows.
	entries := make([]rebapEntry, 0, min(bytes.Count(data, []byte("\n"))+1, 1<<20))
	rows := 0
	for !ps.full() {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			csvSyntax(&ps, err)
			break
		}
		if blank(rec) {
			continue
		}
		rows++
		line, _ := cr.FieldPos(0)
		if e, ok := r.read(rec, line); ok {
			entries = append(entries, e)
		}
	}
	if rows == 0 && len(ps.list) == 0 {
		ps.add(problemTooShort, []string{"body"}, nil, "the file has a header but no data rows")
	}
	if len(ps.list) > 0 {
		return price.Series{}, ps.err()
	}
	return rebapSeries(&ps, cols, entries)
}

// rebapSeries orders the rows, drops repeated ones and lists the gaps.
func rebapSeries(ps *problems, cols rebapColumns, entries []rebapEntry) (price.Series, error) {
	byStart := func(a, b rebapEntry) int { return a.start.Compare(b.start) }
	if !slices.IsSortedFunc(entries, byStart) {
		// Stable, so that of two rows for one interval the later in the
		// file is the one reported.
		slices.SortStableFunc(entries, byStart)
	}
	s := price.Series{Kind: price.ReBAP, Format: formatCSV, Points: make([]price.Point, 0, len(entries))}
	for k, e := range entries {
		if k > 0 && e.start.Equal(entries[k-1].start) {
			prev := entries[k-1]
			if prev.missing != e.missing || !e.missing && (prev.short != e.short || prev.long != e.long) {
				ps.add(ingest.ProblemCSVConflict, []string{"body", lineName(e.line), cols.names[cols.short]}, nil,
					"duplicate interval %s with a different price than line %d", stamp(e.start), prev.line)
			}
			// Keep comparing the interval's later rows with its first.
			entries[k] = prev
			continue
		}
		if e.missing {
			s.Missing = append(s.Missing, e.start)
		} else {
			s.Points = append(s.Points, price.Point{Start: e.start, Minutes: 15, Price: e.short, PriceLong: e.long})
		}
	}
	checkSpan(ps, entries[0].start, entries[len(entries)-1].start)
	if len(ps.list) > 0 {
		return price.Series{}, ps.err()
	}
	s.Missing = fillGaps(s.Points, s.Missing, 15*time.Minute)
	return s, nil
}

// rebapHeader finds the columns by name.
func rebapHeader(ps *problems, header []string, line int) (rebapColumns, bool) {
	c := rebapColumns{line: line, datum: -1, von: -1, bis: -1, zone: -1, unit: -1, short: -1, long: -1}
	c.names = make([]string, len(header))
	var others []int // further columns named reBAP...
	for j, h := range header {
		c.names[j] = strings.TrimSpace(h)
	}
	set := func(dst *int, j int) {
		if *dst >= 0 {
			ps.add(ingest.ProblemCSVHeader, []string{"body", lineName(line), c.names[j]}, c.names[j],
				"columns %q and %q are the same column", c.names[*dst], c.names[j])
			return
		}
		*dst = j
	}
	for j := range header {
		switch key := normHeader(c.names[j]); {
		case key == "datum":
			set(&c.datum, j)
		case key == "von":
			set(&c.von, j)
		case key == "bis":
			set(&c.bis, j)
		case key == "zeitzone":
			set(&c.zone, j)
		case key == "einheit":
			set(&c.unit, j)
		case key == "rebap unterdeckt":
			set(&c.short, j)
		case key == "rebap ueberdeckt":
			set(&c.long, j)
		case strings.HasPrefix(key, "zeitzone"):
			// Reading such a file as UTC could shift every price by hours.
			ps.add(ingest.ProblemCSVHeader, []string{"body", lineName(line), c.names[j]}, c.names[j],
				"column %q is not understood: the time zone must be in a column named Zeitzone", c.names[j])
		case strings.HasPrefix(key, "rebap"):
			others = append(others, j)
		}
	}
	switch {
	case c.short >= 0 && c.long < 0:
		missingColumn(ps, &c, "reBAP ueberdeckt", "it must come with reBAP unterdeckt")
	case c.short < 0 && c.long >= 0:
		missingColumn(ps, &c, "reBAP unterdeckt", "it must come with reBAP ueberdeckt")
	case c.short < 0 && len(others) == 1:
		c.short, c.long = others[0], others[0]
	case c.short < 0 && len(others) > 1:
		names := make([]string, len(others))
		for k, j := range others {
			names[k] = c.names[j]
		}
		ps.add(ingest.ProblemCSVHeader, []string{"body", lineName(line)}, nil,
			"the reBAP columns are not clear: want reBAP unterdeckt and reBAP ueberdeckt, or a single reBAP column, found %s", strings.Join(names, ", "))
	case c.short < 0:
		missingColumn(ps, &c, "reBAP unterdeckt", "with reBAP ueberdeckt, or a single reBAP column")
	}
	if c.datum < 0 {
		missingColumn(ps, &c, "Datum", "")
	}
	if c.von < 0 {
		missingColumn(ps, &c, "von", "")
	}
	return c, len(ps.list) == 0
}

func missingColumn(ps *problems, c *rebapColumns, name, hint string) {
	msg := "required column " + name + " is missing"
	if hint != "" {
		msg += " (" + hint + ")"
	}
	msg += "; the header has " + strings.Join(c.names, ", ")
	if len(c.names) == 1 && strings.ContainsAny(c.names[0], ",\t") {
		msg += ": the file must be separated by ';'"
	}
	ps.add(problemMissing, []string{"body", lineName(c.line), name}, nil, "%s", msg)
}

// normHeader makes a header cell comparable: lower case, umlauts spelt out,
// inner spaces collapsed and a trailing unit such as "[EUR/MWh]" dropped.
func normHeader(s string) string {
	s = strings.Join(strings.Fields(strings.ToLower(s)), " ")
	s = umlauts.Replace(s)
	if n := len(s); n > 0 && (s[n-1] == ']' || s[n-1] == ')') {
		if k := strings.LastIndexAny(s, "(["); k > 0 {
			s = strings.TrimSpace(s[:k])
		}
	}
	return s
}

var umlauts = strings.NewReplacer("ä", "ae", "ö", "oe", "ü", "ue", "ß", "ss")

// rowReader reads data rows. It caches the last date, zone and unit, which
// repeat over 96 rows a day.
type rowReader struct {
	cols rebapColumns
	ps   *problems

	lastDatum string
	lastDay   time.Time
	lastZone  string
	lastOff   time.Duration
	lastUnit  string
}

// read checks one row and returns its entry when it has no problem.
func (r *rowReader) read(rec []string, line int) (rebapEntry, bool) {
	c := &r.cols
	if len(rec) < c.need() {
		r.ps.add(ingest.ProblemCSVCells, []string{"body", lineName(line)}, nil,
			"the line has %d cells, too few for the %d columns of the header", len(rec), len(c.names))
		return rebapEntry{}, false
	}
	for j := len(c.names); j < len(rec); j++ {
		if strings.TrimSpace(rec[j]) != "" {
			r.ps.add(ingest.ProblemCSVCells, []string{"body", lineName(line)}, nil,
				"the line has %d cells, more than the %d columns of the header", len(rec), len(c.names))
			return rebapEntry{}, false
		}
	}
	ok := true
	bad := func(col int, input string, format string, args ...any) {
		ok = false
		r.ps.add(problemValue, []string{"body", lineName(line), c.names[col]}, input, format, args...)
	}

	datum := strings.TrimSpace(rec[c.datum])
	day := r.lastDay
	if datum != r.lastDatum || day.IsZero() {
		var msg string
		if day, msg = parseDatum(datum); msg != "" {
			bad(c.datum, datum, "date '%s' %s", datum, msg)
		} else {
			r.lastDatum, r.lastDay = datum, day
		}
	}

	von := strings.TrimSpace(rec[c.von])
	from, okFrom := parseClock(von, false)
	switch {
	case !okFrom:
		bad(c.von, von, "von '%s' is not a time HH:MM", von)
	case from%15 != 0:
		bad(c.von, von, "von '%s' is not on the quarter-hour grid", von)
	}
	if c.bis >= 0 {
		bis := strings.TrimSpace(rec[c.bis])
		to, okTo := parseClock(bis, true)
		if to == 0 {
			to = 24 * 60 // bis 00:00 ends the interval at midnight of the next day
		}
		switch {
		case !okTo:
			bad(c.bis, bis, "bis '%s' is not a time HH:MM", bis)
		case okFrom && to-from != 15:
			bad(c.bis, bis, "bis '%s' is not 15 minutes after von '%s'", bis, von)
		}
	}

	off := time.Duration(0)
	if c.zone >= 0 {
		zone := strings.TrimSpace(rec[c.zone])
		if zone == r.lastZone && zone != "" {
			off = r.lastOff
		} else if o, okZone := zoneOffset(zone); okZone {
			off, r.lastZone, r.lastOff = o, zone, o
		} else {
			bad(c.zone, zone, "time zone '%s' is not UTC, CET/MEZ or CEST/MESZ", zone)
		}
	}
	if c.unit >= 0 {
		unit := strings.TrimSpace(rec[c.unit])
		if unit != r.lastUnit || unit == "" {
			if strings.EqualFold(unit, "EUR/MWh") || strings.EqualFold(unit, "€/MWh") {
				r.lastUnit = unit
			} else {
				bad(c.unit, unit, "unit '%s' is not EUR/MWh", unit)
			}
		}
	}

	e := rebapEntry{line: line}
	cell := strings.TrimSpace(rec[c.short])
	if v, absent, okV := parseValue(cell); !okV {
		bad(c.short, cell, "price '%s' is not a number", cell)
	} else {
		e.short, e.missing = v, absent
	}
	if c.long == c.short {
		e.long = e.short
	} else {
		cell := strings.TrimSpace(rec[c.long])
		if v, absent, okV := parseValue(cell); !okV {
			bad(c.long, cell, "price '%s' is not a number", cell)
		} else {
			e.long = v
			e.missing = e.missing || absent
		}
	}
	if !ok {
		return rebapEntry{}, false
	}
	e.start = day.Add(time.Duration(from)*time.Minute - off)
	return e, true
}

// parseDatum reads dd.mm.yyyy as midnight UTC of that date; msg says what is
// wrong with it otherwise.
func parseDatum(s string) (time.Time, string) {
	if len(s) != 10 || s[2] != '.' || s[5] != '.' {
		return time.Time{}, "is not a date dd.mm.yyyy"
	}
	d, ok1 := digits(s[0:2])
	m, ok2 := digits(s[3:5])
	y, ok3 := digits(s[6:10])
	if !ok1 || !ok2 || !ok3 {
		return time.Time{}, "is not a date dd.mm.yyyy"
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if m < 1 || m > 12 || d < 1 || t.Day() != d {
		return time.Time{}, "does not exist"
	}
	if t.Before(minStart) || !t.Before(maxStart) {
		return time.Time{}, "is outside the years 2000 to 2099"
	}
	return t, ""
}

// parseClock reads HH:MM as minutes after midnight; 24:00 only when
// endOfDay allows it.
func parseClock(s string, endOfDay bool) (int, bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	h, ok1 := digits(s[0:2])
	m, ok2 := digits(s[3:5])
	switch {
	case !ok1 || !ok2 || m > 59:
		return 0, false
	case h == 24 && m == 0 && endOfDay:
		return 24 * 60, true
	case h > 23:
		return 0, false
	}
	return h*60 + m, true
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// zoneOffset reads a zone label as a fixed offset (see the package doc).
func zoneOffset(s string) (time.Duration, bool) {
	switch strings.ToUpper(s) {
	case "UTC":
		return 0, true
	case "CET", "MEZ":
		return time.Hour, true
	case "CEST", "MESZ":
		return 2 * time.Hour, true
	}
	return 0, false
}

// parseValue reads a German decimal such as "1.234,56" or "-12,5". absent
// reports a cell that stands for no value: empty, "-", N.A. or N.E.
func parseValue(s string) (v float64, absent, ok bool) {
	if s == "" || s == "-" || strings.EqualFold(s, "N.A.") || strings.EqualFold(s, "N.E.") {
		return 0, true, true
	}
	// Rewrite into Go syntax: drop the thousands separators, which must
	// group three digits, and turn the decimal comma into a point. A
	// point that does not group three digits ("12.5") is rejected rather
	// than read as either a decimal point or a thousands separator.
	var buf [40]byte
	b := buf[:0]
	i := 0
	if s[0] == '-' || s[0] == '+' {
		b = append(b, s[0])
		i++
	}
	intDigits, group := 0, -1 // group: digits since the last '.', -1 before the first
	for ; i < len(s) && s[i] != ','; i++ {
		switch ch := s[i]; {
		case ch >= '0' && ch <= '9':
			b = append(b, ch)
			intDigits++
			if group >= 0 {
				group++
			}
		case ch == '.' && intDigits > 0 && (group == -1 && intDigits <= 3 || group == 3):
			group = 0
		default:
			return 0, false, false
		}
	}
	if intDigits == 0 || group >= 0 && group != 3 {
		return 0, false, false
	}
	if i < len(s) { // the decimal comma
		i++
		if i == len(s) {
			return 0, false, false
		}
		b = append(b, '.')
		for ; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false, false
			}
			b = append(b, s[i])
		}
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, false, false // beyond float64's range
	}
	return v, false, true
}

func blank(rec []string) bool {
	for _, f := range rec {
		if strings.TrimSpace(f) != "" {
			return false
		}
	}
	return true
}

func lineName(n int) string { return "line " + strconv.Itoa(n) }

// csvSyntax reports a quoting error, which ends the reading of the file.
func csvSyntax(ps *problems, err error) {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		ps.add(ingest.ProblemCSVSyntax, []string{"body", lineName(pe.Line)}, nil, "the line is not valid CSV: %v", pe.Err)
		return
	}
	ps.add(ingest.ProblemCSVSyntax, []string{"body"}, nil, "the file is not valid CSV: %v", err)
}
