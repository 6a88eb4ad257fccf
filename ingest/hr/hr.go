package hr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/csvfile"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
	"github.com/schedbridge/schedbridge/pipeline/portal"
)

// This file decodes the two CSV files HR loads the employees' portal with:
// the employees (one row per employee and the user who signs in for it) and
// their compensation (one row per component). Both are checked whole before
// anything is returned, so that a bad file changes nothing; the rules for a
// single value are exported for the command line, which must apply the same
// ones to its flags.

// The columns of an employees file, in documentation order.
const (
	ColPersonalnummer = "personalnummer"
	ColName           = "name"
	ColEmail          = "email"
	ColAbteilung      = "abteilung"
	ColPosition       = "position"
	ColEintritt       = "eintritt"
	ColBundesland     = "bundesland"
	ColWochenstunden  = "wochenstunden"
	ColUrlaubstage    = "urlaubstage"
	ColSSOSubject     = "sso_subject"
	ColMagicLink      = "magic_link"
	ColRollen         = "rollen"
)

// The columns of a compensation file besides personalnummer.
const (
	ColBestandteil  = "bestandteil"
	ColBetrag       = "betrag"
	ColTurnus       = "turnus"
	ColSichtbarkeit = "sichtbarkeit"
)

// EmployeeColumns and CompensationColumns are the columns the two files may
// have; their first three (employees) and four (compensation) are required.
var (
	EmployeeColumns = []string{ColPersonalnummer, ColName, ColEmail, ColAbteilung, ColPosition, ColEintritt,
		ColBundesland, ColWochenstunden, ColUrlaubstage, ColSSOSubject, ColMagicLink, ColRollen}
	CompensationColumns = []string{ColPersonalnummer, ColBestandteil, ColBetrag, ColTurnus, ColSichtbarkeit}
)

var (
	employeeRequired     = EmployeeColumns[:3]
	compensationRequired = CompensationColumns[:4]
)

const (
	employeeExample     = "personalnummer;name;email;abteilung;position;eintritt;bundesland;wochenstunden;urlaubstage;sso_subject;magic_link;rollen"
	compensationExample = "personalnummer;bestandteil;betrag;turnus;sichtbarkeit"
)

// DefaultLeaveDays is the yearly leave entitlement of an employee whose
// urlaubstage cell is empty: the 30 days most German collective agreements
// grant for a five-day week (the statutory minimum is 20).
const DefaultLeaveDays = 30

// Bounds of the values HR loads.
const (
	MaxWeeklyHours = 60 // the Arbeitszeitgesetz caps a week at 6 x 10 hours
	MaxLeaveDays   = 60
	maxTextLen     = 200 // name, abteilung, position, bestandteil
	maxSubjectLen  = 255 // OpenID Connect caps sub at 255 ASCII characters
	// maxHRRows bounds the rows of one file, so that a wrong file (a
	// database export, say) fails quickly instead of filling memory.
	maxHRRows = 200_000
)

// HREmployee is one row of an employees file: the employee record and the
// user who signs in for it. Link holds the e-mail address, name, roles,
// magic-link permission and SSO subject; its SSOIssuer is left empty, since
// the file does not know the configured identity provider.
type HREmployee struct {
	Employee portal.Employee
	Link     portal.User
}

// HRFileError is an HR file that did not pass. Each problem's Loc is
// ["line <n>", <column>], or ["line <n>"] for a problem of a whole row; the
// header is line 1. It holds at most MaxProblems problems.
type HRFileError struct{ Problems []ingest.Problem }

// Error lists every problem, one per line, so that the command line shows
// all of them at once.
func (e *HRFileError) Error() string {
	var b strings.Builder
	n := len(e.Problems)
	if n == 1 {
		b.WriteString("the file has 1 problem:")
	} else {
		fmt.Fprintf(&b, "the file has %d problems:", n)
	}
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(strings.Join(p.Loc, ", column "))
		b.WriteString(": ")
		b.WriteString(p.Msg)
	}
	if n >= ingest.MaxProblems {
		fmt.Fprintf(&b, "\n  (checking stopped after %d problems)", ingest.MaxProblems)
	}
	return b.String()
}

// Kind classifies the error: the file is bad, whatever the store holds.
func (e *HRFileError) Kind() pipeline.ErrorKind { return pipeline.Invalid }

// Problem types of the HR files besides the CSV ones of bulk.go.
const (
	problemHRValue     = "value_error"
	problemHRMissing   = "missing"
	problemHRUnknown   = "extra_forbidden"
	problemHRDuplicate = "duplicate"
)

// DecodeEmployeesCSV decodes and validates an employees file: a header line
// naming the columns (EmployeeColumns, in any order and case; personalnummer,
// name and email required), then one employee per row. The separator is ';'
// or ',' as the header uses it; the file is UTF-8, with or without BOM;
// cells may be quoted as in RFC 4180 and are trimmed. Empty rows are
// skipped. A personalnummer or e-mail address that appears twice is a
// problem of the later row. Every problem is collected (up to MaxProblems)
// and returned as an *HRFileError; nothing is returned with it.
func DecodeEmployeesCSV(r io.Reader) ([]HREmployee, error) {
	var out []HREmployee
	ids := map[string]int{}
	emails := map[string]int{}
	err := readHRFile(r, EmployeeColumns, employeeRequired, employeeExample, func(c *ingest.Checker, line int, fields map[string]string) {
		e, problems := EmployeeFromFields(fields)
		ok := len(problems) == 0
		for _, p := range problems {
			c.Add(atLine(line, p))
		}
		// The duplicates are looked for even in a row with other problems,
		// so that one run reports them too.
		if id := fields[ColPersonalnummer]; id != "" {
			if first, dup := ids[id]; dup {
				c.Add(hrProblem(line, ColPersonalnummer, problemHRDuplicate, id, fmt.Sprintf("personalnummer %s is already on line %d", id, first)))
				ok = false
			} else {
				ids[id] = line
			}
		}
		if email, err := portal.NormalizeEmail(fields[ColEmail]); err == nil {
			if first, dup := emails[email]; dup {
				c.Add(hrProblem(line, ColEmail, problemHRDuplicate, fields[ColEmail], fmt.Sprintf("e-mail address %s is already on line %d", email, first)))
				ok = false
			} else {
				emails[email] = line
			}
		}
		if ok {
			out = append(out, e)
		}
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []HREmployee{}
	}
	return out, nil
}

// DecodeCompensationCSV decodes and validates a compensation file: a header
// line naming the columns (CompensationColumns, in any order and case;
// sichtbarkeit may be left out), then one component per row, read as
// DecodeEmployeesCSV reads its rows. It returns each employee's components
// in the order of the file and the employees in the order they first
// appear. Two components of one name (case-insensitive) for one employee
// are a problem of the later row. Whether the employees exist is for the
// caller to check. The error is an *HRFileError; nothing is returned with it.
func DecodeCompensationCSV(r io.Reader) (map[string][]portal.Component, []string, error) {
	comps := map[string][]portal.Component{}
	var order []string
	names := map[[2]string]int{} // employee, lower-case component name -> line
	err := readHRFile(r, CompensationColumns, compensationRequired, compensationExample, func(c *ingest.Checker, line int, fields map[string]string) {
		id := fields[ColPersonalnummer]
		ok := true
		switch {
		case id == "":
			c.Add(hrProblem(line, ColPersonalnummer, problemHRMissing, "", "personalnummer is required"))
			ok = false
		case !portal.ValidEmployeeID(id):
			c.Add(hrProblem(line, ColPersonalnummer, problemHRValue, id, invalidIDMsg(id)))
			ok = false
		}
		comp, problems := ComponentFromFields(withoutKey(fields, ColPersonalnummer))
		for _, p := range problems {
			c.Add(atLine(line, p))
		}
		ok = ok && len(problems) == 0
		if comp.Name != "" && id != "" {
			k := [2]string{id, strings.ToLower(comp.Name)}
			if first, dup := names[k]; dup {
				c.Add(hrProblem(line, ColBestandteil, problemHRDuplicate, comp.Name,
					fmt.Sprintf("employee %s already has a component %q on line %d", id, comp.Name, first)))
				ok = false
			} else {
				names[k] = line
			}
		}
		if !ok {
			return
		}
		if _, seen := comps[id]; !seen {
			order = append(order, id)
		}
		comps[id] = append(comps[id], comp)
	})
	if err != nil {
		return nil, nil, err
	}
	if order == nil {
		order = []string{}
	}
	return comps, order, nil
}

// readHRFile reads the header of an HR file and hands every non-blank row to
// row as column -> trimmed cell (absent and empty cells left out). It
// returns the collected problems as an *HRFileError, or a read error.
func readHRFile(r io.Reader, columns, required []string, example string, row func(c *ingest.Checker, line int, fields map[string]string)) error {
	c := &ingest.Checker{}
	cr := csvfile.NewReader(r, csvfile.DefaultBufferSize)
	var headerProblem string
	names, ok := cr.HeaderLine(example, func(msg string) { headerProblem = msg })
	if cr.Err != nil {
		return fmt.Errorf("read the file: %w", cr.Err)
	}
	if !ok {
		msg := "the file is empty; the first line must be the header, for example " + example
		if headerProblem != "" {
			msg = headerProblem
		}
		return &HRFileError{Problems: []ingest.Problem{{Type: ingest.ProblemCSVHeader, Loc: []string{"line 1"}, Msg: msg, Ctx: map[string]any{}}}}
	}
	width := csvfile.Width(names)
	col := make([]int, len(columns)) // column -> cell index, -1: absent
	for f := range col {
		col[f] = -1
	}
	for j, name := range names[:width] {
		f := slices.IndexFunc(columns, func(c string) bool { return strings.EqualFold(c, name) })
		loc := "column " + strconv.Itoa(j+1)
		switch {
		case !utf8.ValidString(name):
			c.Add(hrProblem(1, loc, ingest.ProblemCSVHeader, strings.ToValidUTF8(name, "\uFFFD"), "the column name is not UTF-8 text; save the file as UTF-8"))
		case name == "":
			c.Add(hrProblem(1, loc, ingest.ProblemCSVHeader, "", "the column has no name; the columns are "+strings.Join(columns, ", ")))
		case f < 0:
			c.Add(hrProblem(1, name, problemHRUnknown, name, fmt.Sprintf("unknown column %q; the columns are %s", name, strings.Join(columns, ", "))))
		case col[f] >= 0:
			c.Add(hrProblem(1, name, ingest.ProblemCSVHeader, name, fmt.Sprintf("column %d repeats %s (column %d)", j+1, columns[f], col[f]+1)))
		default:
			col[f] = j
		}
	}
	for _, name := range required {
		if col[slices.Index(columns, name)] < 0 {
			c.Add(hrProblem(1, name, ingest.ProblemCSVHeader, "", fmt.Sprintf("the header lacks the required column %s, as in %s", name, example)))
		}
	}
	if err := c.Err(); err != nil {
		// Without a sound header the rows cannot be read as meant.
		return &HRFileError{Problems: c.Problems}
	}

	rows := 0
	for {
		line := cr.Next()
		if line == 0 {
			break
		}
		cells := cr.Cells
		if cr.Syntax == "" && blankHRRow(cells) {
			continue
		}
		if rows++; rows > maxHRRows {
			c = &ingest.Checker{}
			c.Add(ingest.Problem{Type: "too_long", Loc: []string{"line " + strconv.Itoa(line)}, Ctx: map[string]any{},
				Msg: fmt.Sprintf("the file has more than %d rows; split it", maxHRRows)})
			break
		}
		if c.Full {
			continue // the cap is reached; the rest is only counted
		}
		switch {
		case cr.Syntax != "":
			c.Add(ingest.Problem{Type: ingest.ProblemCSVSyntax, Loc: []string{"line " + strconv.Itoa(line)}, Msg: cr.Syntax, Ctx: map[string]any{}})
			continue
		case len(cells) > width && !csvfile.EmptyFrom(cells, width):
			c.Add(ingest.Problem{Type: ingest.ProblemCSVCells, Loc: []string{"line " + strconv.Itoa(line)}, Ctx: map[string]any{},
				Msg: fmt.Sprintf("the row has %d cells, but the header has %d columns", len(cells), width)})
			continue
		}
		fields := make(map[string]string, len(columns))
		broken := false
		for f, j := range col {
			if j < 0 || j >= len(cells) {
				continue
			}
			if !utf8.Valid(cells[j]) {
				c.Add(hrProblem(line, columns[f], "string_unicode", strings.ToValidUTF8(string(cells[j]), "\uFFFD"),
					"the cell is not UTF-8 text; save the file as UTF-8 (not Windows-1252 or Latin-1)"))
				broken = true
				continue
			}
			if v := strings.TrimSpace(string(cells[j])); v != "" {
				fields[columns[f]] = v
			}
		}
		if !broken {
			row(c, line, fields)
		}
	}
	if cr.Err != nil {
		return fmt.Errorf("read the file: %w", cr.Err)
	}
	if err := c.Err(); err != nil {
		return &HRFileError{Problems: c.Problems}
	}
	return nil
}

// blankHRRow tells whether a row has only empty or blank cells (an empty
// line, or separators as spreadsheets write them): such rows are skipped.
func blankHRRow(cells [][]byte) bool {
	for _, c := range cells {
		if len(bytes.TrimSpace(c)) > 0 {
			return false
		}
	}
	return true
}

// hrProblem is a problem of one cell (or header column) of an HR file.
func hrProblem(line int, column, typ, input, msg string) ingest.Problem {
	return ingest.Problem{Type: typ, Loc: []string{"line " + strconv.Itoa(line), column}, Msg: msg, Input: input, Ctx: map[string]any{}}
}

// atLine puts a field problem of EmployeeFromFields or ComponentFromFields on
// a line of the file.
func atLine(line int, p ingest.Problem) ingest.Problem {
	p.Loc = append([]string{"line " + strconv.Itoa(line)}, p.Loc...)
	return p
}

func withoutKey(m map[string]string, key string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func invalidIDMsg(id string) string {
	return fmt.Sprintf("%q is not a valid personalnummer: 1 to 32 letters, digits, dots, dashes or underscores, starting with a letter or digit", id)
}

// EmployeeFromFields validates one employee given as column -> value (the
// columns of an employees file; an absent or empty value is an empty cell)
// by the rules of DecodeEmployeesCSV. Each problem's Loc is [column].
func EmployeeFromFields(fields map[string]string) (HREmployee, []ingest.Problem) {
	var ps fieldProblems
	ps.unknown(fields, EmployeeColumns)
	get := func(col string) string { return strings.TrimSpace(fields[col]) }
	var h HREmployee
	e, u := &h.Employee, &h.Link

	switch id := get(ColPersonalnummer); {
	case id == "":
		ps.missing(ColPersonalnummer)
	case !portal.ValidEmployeeID(id):
		ps.add(ColPersonalnummer, id, invalidIDMsg(id))
	default:
		e.ID = id
	}
	e.Name = ps.text(ColName, get(ColName), true)
	if v := get(ColEmail); v == "" {
		ps.missing(ColEmail)
	} else if email, err := portal.NormalizeEmail(v); err != nil {
		ps.add(ColEmail, v, pipeline.MessageOf(err))
	} else {
		e.Email = email
	}
	e.Department = ps.text(ColAbteilung, get(ColAbteilung), false)
	e.Position = ps.text(ColPosition, get(ColPosition), false)
	ps.parse(ColEintritt, get(ColEintritt), func(v string) (err error) { e.EntryDate, err = ParseEntryDate(v); return })
	ps.parse(ColBundesland, get(ColBundesland), func(v string) (err error) { e.State, err = ParseState(v); return })
	ps.parse(ColWochenstunden, get(ColWochenstunden), func(v string) (err error) { e.WeeklyHours, err = ParseWeeklyHours(v); return })
	ps.parse(ColUrlaubstage, get(ColUrlaubstage), func(v string) (err error) { e.LeaveDaysPerYear, err = ParseLeaveDays(v); return })
	ps.parse(ColSSOSubject, get(ColSSOSubject), func(v string) (err error) { u.SSOSubject, err = ParseSSOSubject(v); return })
	ps.parse(ColMagicLink, get(ColMagicLink), func(v string) (err error) { u.MagicLink, err = ParseYesNo(v); return })
	ps.parse(ColRollen, get(ColRollen), func(v string) (err error) { u.Roles, err = ParseRoles(v); return })
	if len(ps) > 0 {
		return HREmployee{}, ps
	}
	if u.Roles == nil {
		u.Roles = []string{portal.RoleEmployee}
	}
	u.Email, u.Name = e.Email, e.Name
	return h, nil
}

// ComponentFromFields validates one compensation component given as column
// -> value (bestandteil, betrag, turnus, sichtbarkeit) by the rules of
// DecodeCompensationCSV. Each problem's Loc is [column].
func ComponentFromFields(fields map[string]string) (portal.Component, []ingest.Problem) {
	var ps fieldProblems
	ps.unknown(fields, CompensationColumns[1:])
	get := func(col string) string { return strings.TrimSpace(fields[col]) }
	var c portal.Component
	c.Name = ps.text(ColBestandteil, get(ColBestandteil), true)
	if v := get(ColBetrag); v == "" {
		ps.missing(ColBetrag)
	} else {
		ps.parse(ColBetrag, v, func(v string) (err error) { c.AmountCents, err = ParseEuroCents(v); return })
	}
	if v := get(ColTurnus); v == "" {
		ps.missing(ColTurnus)
	} else {
		ps.parse(ColTurnus, v, func(v string) (err error) { c.Interval, err = ParseInterval(v); return })
	}
	ps.parse(ColSichtbarkeit, get(ColSichtbarkeit), func(v string) (err error) { c.Visibility, err = ParseVisibility(v); return })
	if len(ps) > 0 {
		return portal.Component{}, ps
	}
	return c, nil
}

// fieldProblems collects the problems of one employee or component, each at
// [column].
type fieldProblems []ingest.Problem

func (ps *fieldProblems) add(col, input, msg string) {
	*ps = append(*ps, ingest.Problem{Type: problemHRValue, Loc: []string{col}, Msg: msg, Input: input, Ctx: map[string]any{}})
}

func (ps *fieldProblems) missing(col string) {
	*ps = append(*ps, ingest.Problem{Type: problemHRMissing, Loc: []string{col}, Msg: col + " is required", Input: "", Ctx: map[string]any{}})
}

// unknown reports the keys of fields that are not columns, in sorted order.
func (ps *fieldProblems) unknown(fields map[string]string, columns []string) {
	var extra []string
	for k := range fields {
		if !slices.Contains(columns, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		*ps = append(*ps, ingest.Problem{Type: problemHRUnknown, Loc: []string{k}, Input: fields[k], Ctx: map[string]any{},
			Msg: fmt.Sprintf("unknown column %q; the columns are %s", k, strings.Join(columns, ", "))})
	}
}

// text checks a free-text value by CheckText and records its problem at col.
func (ps *fieldProblems) text(col, v string, required bool) string {
	if v == "" && required {
		ps.missing(col)
		return ""
	}
	out, err := CheckText(col, v, required)
	if err != nil {
		ps.add(col, v, pipeline.MessageOf(err))
	}
	return out
}

// CheckText checks a free-text value such as a name (field names it in the
// message): trimmed, at most 200 characters without control characters,
// and not empty when required.
func CheckText(field, v string, required bool) (string, error) {
	v = strings.TrimSpace(v)
	switch n := utf8.RuneCountInString(v); {
	case v == "" && required:
		return "", pipeline.Errorf(pipeline.Invalid, "%s is required", field)
	case n > maxTextLen:
		return "", pipeline.Errorf(pipeline.Invalid, "%s has %d characters, at most %d are allowed", field, n, maxTextLen)
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		return "", pipeline.Errorf(pipeline.Invalid, "%s contains a control character (a line break or tab)", field)
	}
	return v, nil
}

// parse runs a value parser and records its error at col.
func (ps *fieldProblems) parse(col, v string, parse func(string) error) {
	if err := parse(v); err != nil {
		ps.add(col, v, pipeline.MessageOf(err))
	}
}

var (
	isoDate    = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})$`)
	germanDate = regexp.MustCompile(`^(\d{1,2})\.(\d{1,2})\.(\d{4})$`)
)

// ParseEntryDate parses an entry date written YYYY-MM-DD or DD.MM.YYYY (day
// and month may have one digit); the empty string is no date (the zero Day).
// The year must lie between 1900 and 2100.
func ParseEntryDate(s string) (pipeline.Day, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return pipeline.Day{}, nil
	}
	var y, m, d string
	if g := isoDate.FindStringSubmatch(s); g != nil {
		y, m, d = g[1], g[2], g[3]
	} else if g := germanDate.FindStringSubmatch(s); g != nil {
		y, m, d = g[3], g[2], g[1]
	} else {
		return pipeline.Day{}, pipeline.Errorf(pipeline.Invalid, "%q is not a date: write YYYY-MM-DD or DD.MM.YYYY", s)
	}
	year, _ := strconv.Atoi(y)
	month, _ := strconv.Atoi(m)
	day, _ := strconv.Atoi(d)
	t := time.Date(year, time.Month(month), day, 12, 0, 0, 0, time.UTC)
	if t.Year() != year || int(t.Month()) != month || t.Day() != day {
		return pipeline.Day{}, pipeline.Errorf(pipeline.Invalid, "%q is not a day of the calendar", s)
	}
	if year < 1900 || year > 2100 {
		return pipeline.Day{}, pipeline.Errorf(pipeline.Invalid, "%q: the year must lie between 1900 and 2100", s)
	}
	return pipeline.NewDay(year, time.Month(month), day), nil
}

// ParseState parses a federal state code (BE, by, DE-BY) as
// calendar.ParseState does; the empty string is no state.
func ParseState(s string) (string, error) {
	st, err := calendar.ParseState(s)
	return string(st), err
}

var hoursPattern = regexp.MustCompile(`^\d{1,2}(?:[.,]\d{1,2})?$`)

// ParseWeeklyHours parses the contractual hours per week, with a decimal
// comma or point and at most two decimals ("39,5", "38.75"): more than 0 and
// at most MaxWeeklyHours. The empty string is 0, not known.
func ParseWeeklyHours(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if !hoursPattern.MatchString(s) {
		return 0, pipeline.Errorf(pipeline.Invalid, "%q is not a number of hours such as 40 or 39,5", s)
	}
	h, err := strconv.ParseFloat(strings.Replace(s, ",", ".", 1), 64)
	if err != nil {
		return 0, pipeline.Errorf(pipeline.Invalid, "%q is not a number of hours such as 40 or 39,5", s)
	}
	if h <= 0 || h > MaxWeeklyHours {
		return 0, pipeline.Errorf(pipeline.Invalid, "%s hours a week: want more than 0 and at most %d", s, MaxWeeklyHours)
	}
	return h, nil
}

// ParseLeaveDays parses the yearly leave entitlement in whole days, 0 to
// MaxLeaveDays; the empty string is DefaultLeaveDays.
func ParseLeaveDays(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultLeaveDays, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, pipeline.Errorf(pipeline.Invalid, "%q is not a whole number of days", s)
	}
	if n < 0 || n > MaxLeaveDays {
		return 0, pipeline.Errorf(pipeline.Invalid, "%d leave days: want 0 to %d", n, MaxLeaveDays)
	}
	return n, nil
}

// ParseSSOSubject checks the subject (sub claim) of the employee at the
// identity provider: at most 255 characters without spaces or control
// characters. The empty string is no subject.
func ParseSSOSubject(s string) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case len(s) > maxSubjectLen:
		return "", pipeline.Errorf(pipeline.Invalid, "the SSO subject has %d bytes, at most %d are allowed", len(s), maxSubjectLen)
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "", pipeline.Errorf(pipeline.Invalid, "the SSO subject %q contains a space or control character", s)
	}
	return s, nil
}

// ParseYesNo parses ja/nein, true/false or 1/0 in any case; the empty
// string is no.
func ParseYesNo(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ja", "true", "1":
		return true, nil
	case "nein", "false", "0", "":
		return false, nil
	}
	return false, pipeline.Errorf(pipeline.Invalid, "%q: want ja or nein (also true/false, 1/0)", s)
}

var rolePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// ParseRoles parses a list of roles separated by ',' or '|' ("mitarbeiter|hr").
// Roles are lower-cased; each is a letter followed by up to 31 letters,
// digits, dashes or underscores. Empty items are skipped and repeated ones
// dropped; a list without any role is nil, for the caller's default.
func ParseRoles(s string) ([]string, error) {
	var out []string
	for _, r := range strings.FieldsFunc(s, func(c rune) bool { return c == ',' || c == '|' }) {
		r = strings.ToLower(strings.TrimSpace(r))
		if r == "" || slices.Contains(out, r) {
			continue
		}
		if !rolePattern.MatchString(r) {
			return nil, pipeline.Errorf(pipeline.Invalid, "%q is not a role: a letter, then up to 31 letters, digits, - or _", r)
		}
		out = append(out, r)
	}
	return out, nil
}

var errAmount = errors.New("not an amount")

// ParseEuroCents parses a euro amount into cents without going through a
// float. The decimal separator is ',' or '.', with at most two decimals;
// thousands may be grouped with the other one: "5200,00", "5.200,00",
// "5200.00", "5,200.00", "5200". A single '.' followed by exactly three
// digits ("5.200") is refused as ambiguous, and so is "5,200" (three
// decimals). A leading '-' makes a deduction (Entgeltumwandlung, say).
// Amounts of a billion euro or more are refused.
func ParseEuroCents(s string) (int64, error) {
	s = strings.TrimSpace(s)
	cents, err := parseEuroCents(s)
	switch {
	case errors.Is(err, errAmount):
		return 0, pipeline.Errorf(pipeline.Invalid, "%q is not a euro amount such as 5200,00 or 5.200,00 or 5200.00 (no currency sign)", s)
	case err != nil:
		return 0, pipeline.Errorf(pipeline.Invalid, "%q: %v", s, err)
	}
	return cents, nil
}

func parseEuroCents(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && c != '.' && c != ',' {
			return 0, errAmount
		}
	}
	// The decimal separator is the last separator when both kinds appear,
	// a single comma, or a single point not followed by exactly three
	// digits; otherwise the separators group thousands.
	dec, group := -1, byte(0)
	lastDot, lastComma := strings.LastIndexByte(s, '.'), strings.LastIndexByte(s, ',')
	nDot, nComma := strings.Count(s, "."), strings.Count(s, ",")
	switch {
	case nDot > 0 && nComma > 0:
		dec = max(lastDot, lastComma)
		group = '.'
		if s[dec] == '.' {
			group = ','
		}
		if strings.Count(s, s[dec:dec+1]) != 1 {
			return 0, errAmount
		}
	case nComma == 1:
		dec = lastComma
	case nComma > 1:
		group = ','
	case nDot == 1 && len(s)-lastDot-1 == 3:
		return 0, errors.New("ambiguous: write 5200, 5200,00 or 5.200,00 for five thousand two hundred euro")
	case nDot == 1:
		dec = lastDot
	case nDot > 1:
		group = '.'
	}
	intPart, frac := s, ""
	if dec >= 0 {
		intPart, frac = s[:dec], s[dec+1:]
		if strings.ContainsAny(frac, ".,") || frac == "" {
			return 0, errAmount
		}
		if len(frac) > 2 {
			return 0, errors.New("at most two decimals (cents) are allowed")
		}
	}
	if group != 0 {
		groups := strings.Split(intPart, string(group))
		if len(groups[0]) < 1 || len(groups[0]) > 3 {
			return 0, errAmount
		}
		for _, g := range groups[1:] {
			if len(g) != 3 {
				return 0, errAmount
			}
		}
		intPart = strings.Join(groups, "")
	}
	if intPart == "" {
		return 0, errAmount
	}
	intPart = strings.TrimLeft(intPart, "0")
	if len(intPart) > 9 {
		return 0, errors.New("more than 999,999,999.99 euro")
	}
	frac += strings.Repeat("0", 2-len(frac))
	euros, _ := strconv.ParseInt("0"+intPart, 10, 64)
	c, _ := strconv.ParseInt(frac, 10, 64)
	cents := euros*100 + c
	if neg {
		cents = -cents
	}
	return cents, nil
}

// ParseInterval parses the interval of a component: monatlich, jaehrlich
// (or jährlich) or einmalig, in any case.
func ParseInterval(s string) (portal.Interval, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "jährlich" {
		v = string(portal.Yearly)
	}
	return portal.ParseEnum("turnus", v, []portal.Interval{portal.Monthly, portal.Yearly, portal.Once})
}

// ParseVisibility parses the visibility of a component, sichtbar or
// maskiert in any case. The empty string is maskiert: an amount is shown to
// the employee only when HR says so.
func ParseVisibility(s string) (portal.Visibility, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "" {
		return portal.Masked, nil
	}
	return portal.ParseEnum("sichtbarkeit", v, []portal.Visibility{portal.Visible, portal.Masked})
}
