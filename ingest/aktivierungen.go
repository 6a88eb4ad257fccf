package ingest

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
)

// maxActivations bounds an imported set of activation records. A set holds
// about one record per DSO, balancing area, contract, role and series
// type; even a large portfolio stays far below the bound.
const maxActivations = 200_000

// activationFields are the fields of an activation record in the model's
// order, which is the order of its problems; they are also the columns of
// an activation CSV file.
var activationFields = []string{"marktrolle", "netzbetreiber_mp_id", "bilanzierungsgebiet", "bilanzkreis", "zeitreihentyp",
	"aktion", "gueltig_ab", "gueltig_bis", "referenz"}

// activationRequired are the columns an activation CSV file cannot do
// without: the required fields.
var activationRequired = activationFields[:7]

const activationExample = "marktrolle;netzbetreiber_mp_id;bilanzierungsgebiet;bilanzkreis;zeitreihentyp;aktion;gueltig_ab;gueltig_bis;referenz"

var (
	roleEnum       = newLiteral(stringsOf(zeitreihen.Roles)...)
	seriesTypeEnum = newLiteral(stringsOf(zeitreihen.SeriesTypes)...)
	actionEnum     = newLiteral(string(zeitreihen.Aktivierung), string(zeitreihen.Deaktivierung))
)

// DecodeActivations decodes and validates an import of activation records,
// the JSON body {"aktivierungen": [...]}. An empty list is valid: it clears
// the imported set. Like the snapshot's, the models forbid unknown fields;
// two identical records are a problem of the later one. Every problem is
// collected; the error is a *SchemaError.
func DecodeActivations(body []byte) ([]zeitreihen.Activation, error) {
	c, root, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	loc := bodyPath()
	var out []zeitreihen.Activation
	if v, l, _ := c.listField(root, loc, "aktivierungen", required); v != nil {
		out = activationList(c, l, c.elems(v))
	}
	forbidExtra(c, loc, root, []string{"aktivierungen"})
	if err := c.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// activationKey is a record with its optional end as a value, so that
// identical records have equal keys.
type activationKey struct {
	a   zeitreihen.Activation
	bis pipeline.Day
}

func keyOfActivation(a zeitreihen.Activation) activationKey {
	k := activationKey{a: a}
	if a.GueltigBis != nil {
		k.bis, k.a.GueltigBis = *a.GueltigBis, nil
	}
	return k
}

// activationList validates the records of the list at loc; the result is
// nil unless all are valid.
func activationList(c *checker, loc path, elems []node) []zeitreihen.Activation {
	if len(elems) > maxActivations {
		tooLong(c, loc, len(elems), maxActivations)
		return nil
	}
	out := make([]zeitreihen.Activation, 0, len(elems))
	first := make(map[activationKey]int, len(elems))
	for i := range elems {
		if c.full {
			return nil
		}
		at := loc.index(i)
		a, ok := activationModel(c, at, &elems[i])
		if !ok {
			continue
		}
		k := keyOfActivation(a)
		if j, dup := first[k]; dup {
			c.valueError(at, &elems[i], fmt.Sprintf("duplicate of aktivierungen[%d]", j))
			continue
		}
		first[k] = i
		out = append(out, a)
	}
	if len(out) < len(elems) {
		return nil
	}
	return out
}

// activationModel validates one activation record: a JSON object, or a
// CSV row as the object it stands for.
func activationModel(c *checker, loc path, n *node) (zeitreihen.Activation, bool) {
	var a zeitreihen.Activation
	if !c.model(loc, n, "Aktivierung") {
		return a, false
	}
	var bis pipeline.Day
	ok := enum(c, n, loc, "marktrolle", required, roleEnum, &a.Marktrolle)
	ok = text(c, n, loc, "netzbetreiber_mp_id", required, dsoMPRule, &a.NetzbetreiberMPID) && ok
	ok = eic(c, n, loc, "bilanzierungsgebiet", 'Y', &a.Bilanzierungsgebiet) && ok
	ok = eic(c, n, loc, "bilanzkreis", 'X', &a.Bilanzkreis) && ok
	ok = enum(c, n, loc, "zeitreihentyp", required, seriesTypeEnum, &a.Zeitreihentyp) && ok
	ok = enum(c, n, loc, "aktion", required, actionEnum, &a.Aktion) && ok
	ok = c.dateField(n, loc, "gueltig_ab", required, &a.GueltigAb) && ok
	ok = c.dateField(n, loc, "gueltig_bis", optional, &bis) && ok
	ok = text(c, n, loc, "referenz", optional, anyText, &a.Referenz) && ok
	ok = forbidExtra(c, loc, n, activationFields) && ok
	if !ok {
		return a, false
	}
	// The model validator, which pydantic runs only on valid fields.
	if !bis.IsZero() {
		if !a.GueltigAb.Before(bis) {
			c.valueError(loc, n, "gueltig_bis must be after gueltig_ab")
			return a, false
		}
		a.GueltigBis = &bis
	}
	return a, true
}

// DecodeActivationsCSV decodes and validates an import of activation
// records as a CSV file: a header line naming the columns as the JSON
// fields (in any order and case; gueltig_bis and referenz may be left
// out), then one record per row, an empty cell being a field left out. The
// separator is ';' or ',' as the header uses it; the file is UTF-8, with or
// without BOM; cells may be quoted as in RFC 4180. A row's problems have
// the loc ["body", "line <n>", <column>]; the header's are on line 1: an
// unknown column is extra_forbidden (so a malo column rejects the file),
// an unusable header csv_header. A file with a header and no rows is an
// empty set. The error is a *SchemaError.
func DecodeActivationsCSV(data []byte) ([]zeitreihen.Activation, error) {
	c := &checker{}
	cr := newCSVReader(bytes.NewReader(data), defaultCSVBuffer)
	// The header is read by the bulk files' reader, which reports an
	// unusable one.
	var headerProblem string
	names, ok := cr.headerLine(activationExample, func(msg string) { headerProblem = msg })
	if !ok {
		msg := "the file cannot be read"
		if headerProblem != "" {
			msg = headerProblem
		}
		return nil, csvHeaderError(msg)
	}
	// Spreadsheets end lines with separators: unnamed columns at the end
	// are no columns.
	width := len(names)
	for width > 0 && names[width-1] == "" {
		width--
	}
	col := make([]int, len(activationFields)) // field -> cell index, -1: absent
	for f := range col {
		col[f] = -1
	}
	headerLoc := bodyPath().at("line 1")
	for j, name := range names[:width] {
		f := slices.IndexFunc(activationFields, func(field string) bool { return strings.EqualFold(field, name) })
		switch {
		case name == "":
			return nil, csvHeaderError(fmt.Sprintf("column %d of the header has no name; the columns are %s", j+1, strings.Join(activationFields, ", ")))
		case f < 0:
			c.fail(headerLoc.at(name), "extra_forbidden", "Extra inputs are not permitted", &node{kind: kindString, str: name}, nil)
		case col[f] >= 0:
			return nil, csvHeaderError(fmt.Sprintf("column %d of the header repeats %s (column %d)", j+1, activationFields[f], col[f]+1))
		default:
			col[f] = j
		}
	}
	var missing []string
	for f, name := range activationRequired {
		if col[f] < 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, csvHeaderError(fmt.Sprintf("the header lacks the column(s) %s; an activation file has the columns %s, as in %s",
			strings.Join(missing, ", "), strings.Join(activationFields, ", "), activationExample))
	}

	out := []zeitreihen.Activation{}
	firstLine := map[activationKey]int{}
	members := make([]member, 0, len(activationFields))
	rows := 0
	for {
		line := cr.next()
		if line == 0 {
			break
		}
		cells := cr.cells
		if cr.syntax == "" && blankRow(cells) {
			continue
		}
		if rows++; rows > maxActivations || c.full {
			continue // counted for too_long, no longer validated
		}
		at := bodyPath().at("line " + strconv.Itoa(line))
		switch {
		case cr.syntax != "":
			c.add(Problem{Type: ProblemCSVSyntax, Loc: at, Msg: fmt.Sprintf("line %d: %s", line, cr.syntax), Ctx: map[string]any{}})
			continue
		case len(cells) > width && !emptyFrom(cells, width):
			c.add(Problem{Type: ProblemCSVCells, Loc: at, Ctx: map[string]any{},
				Msg: fmt.Sprintf("line %d has %d cells, but the header has %d columns", line, len(cells), width)})
			continue
		}
		// The row as the JSON object it stands for. A cell that is not
		// UTF-8 cannot be a JSON string: it has its own problem.
		members = members[:0]
		broken := false
		for f, j := range col {
			if j < 0 || j >= len(cells) || len(cells[j]) == 0 {
				continue
			}
			if !utf8.Valid(cells[j]) {
				notUnicode(c, at.at(activationFields[f]), cells[j])
				broken = true
				continue
			}
			members = append(members, member{key: activationFields[f], val: node{kind: kindString, str: string(cells[j])}})
		}
		if broken {
			continue
		}
		row := node{kind: kindObject, obj: members}
		a, ok := activationModel(c, at, &row)
		if !ok {
			continue
		}
		k := keyOfActivation(a)
		if first, dup := firstLine[k]; dup {
			c.valueError(at, &row, fmt.Sprintf("duplicate of line %d", first))
			continue
		}
		firstLine[k] = line
		out = append(out, a)
	}
	if rows > maxActivations {
		c = &checker{}
		tooLong(c, bodyPath(), rows, maxActivations)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// csvHeaderError is an unusable header line, after which nothing else of
// the file is checked.
func csvHeaderError(msg string) error {
	return &SchemaError{Problems: []Problem{{Type: ProblemCSVHeader, Loc: []string{"body", "line 1"}, Msg: msg, Ctx: map[string]any{}}}}
}
