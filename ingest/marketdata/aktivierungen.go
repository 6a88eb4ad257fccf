package marketdata

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/csvfile"
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
	roleEnum       = ingest.NewLiteral(stringsOf(zeitreihen.Roles)...)
	seriesTypeEnum = ingest.NewLiteral(stringsOf(zeitreihen.SeriesTypes)...)
	actionEnum     = ingest.NewLiteral(string(zeitreihen.Aktivierung), string(zeitreihen.Deaktivierung))
)

// DecodeActivations decodes and validates an import of activation records,
// the JSON body {"aktivierungen": [...]}. An empty list is valid: it clears
// the imported set. Like the snapshot's, the models forbid unknown fields;
// two identical records are a problem of the later one. Every problem is
// collected; the error is an *ingest.SchemaError.
func DecodeActivations(body []byte) ([]zeitreihen.Activation, error) {
	c, root, err := ingest.DecodeObject(body)
	if err != nil {
		return nil, err
	}
	loc := ingest.BodyPath()
	var out []zeitreihen.Activation
	if v, l, _ := c.ListField(root, loc, "aktivierungen", ingest.Required); v != nil {
		out = activationList(c, l, c.Elems(v))
	}
	forbidExtra(c, loc, root, []string{"aktivierungen"})
	if err := c.Err(); err != nil {
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
func activationList(c *ingest.Checker, loc ingest.Path, elems []ingest.Node) []zeitreihen.Activation {
	if len(elems) > maxActivations {
		tooLong(c, loc, len(elems), maxActivations)
		return nil
	}
	out := make([]zeitreihen.Activation, 0, len(elems))
	first := make(map[activationKey]int, len(elems))
	for i := range elems {
		if c.Full {
			return nil
		}
		at := loc.Index(i)
		a, ok := activationModel(c, at, &elems[i])
		if !ok {
			continue
		}
		k := keyOfActivation(a)
		if j, dup := first[k]; dup {
			c.ValueError(at, &elems[i], fmt.Sprintf("duplicate of aktivierungen[%d]", j))
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
func activationModel(c *ingest.Checker, loc ingest.Path, n *ingest.Node) (zeitreihen.Activation, bool) {
	var a zeitreihen.Activation
	if !c.Model(loc, n, "Aktivierung") {
		return a, false
	}
	var bis pipeline.Day
	ok := enum(c, n, loc, "marktrolle", ingest.Required, roleEnum, &a.Marktrolle)
	ok = ingest.Text(c, n, loc, "netzbetreiber_mp_id", ingest.Required, ingest.DSOMPRule, &a.NetzbetreiberMPID) && ok
	ok = eic(c, n, loc, "bilanzierungsgebiet", 'Y', &a.Bilanzierungsgebiet) && ok
	ok = eic(c, n, loc, "bilanzkreis", 'X', &a.Bilanzkreis) && ok
	ok = enum(c, n, loc, "zeitreihentyp", ingest.Required, seriesTypeEnum, &a.Zeitreihentyp) && ok
	ok = enum(c, n, loc, "aktion", ingest.Required, actionEnum, &a.Aktion) && ok
	ok = c.DateField(n, loc, "gueltig_ab", ingest.Required, &a.GueltigAb) && ok
	ok = c.DateField(n, loc, "gueltig_bis", ingest.Optional, &bis) && ok
	ok = ingest.Text(c, n, loc, "referenz", ingest.Optional, ingest.AnyText, &a.Referenz) && ok
	ok = forbidExtra(c, loc, n, activationFields) && ok
	if !ok {
		return a, false
	}
	// The model validator, which pydantic runs only on valid fields.
	if !bis.IsZero() {
		if !a.GueltigAb.Before(bis) {
			c.ValueError(loc, n, "gueltig_bis must be after gueltig_ab")
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
// empty set. The error is an *ingest.SchemaError.
func DecodeActivationsCSV(data []byte) ([]zeitreihen.Activation, error) {
	c := &ingest.Checker{}
	cr := csvfile.NewReader(bytes.NewReader(data), csvfile.DefaultBufferSize)
	// The header is read by the bulk files' reader, which reports an
	// unusable one.
	var headerProblem string
	names, ok := cr.HeaderLine(activationExample, func(msg string) { headerProblem = msg })
	if !ok {
		msg := "the file cannot be read"
		if headerProblem != "" {
			msg = headerProblem
		}
		return nil, csvHeaderError(msg)
	}
	width := csvfile.Width(names)
	col := make([]int, len(activationFields)) // field -> cell index, -1: absent
	for f := range col {
		col[f] = -1
	}
	headerLoc := ingest.BodyPath().At("line 1")
	for j, name := range names[:width] {
		f := slices.IndexFunc(activationFields, func(field string) bool { return strings.EqualFold(field, name) })
		switch {
		case name == "":
			return nil, csvHeaderError(fmt.Sprintf("column %d of the header has no name; the columns are %s", j+1, strings.Join(activationFields, ", ")))
		case f < 0:
			c.Fail(headerLoc.At(name), "extra_forbidden", "Extra inputs are not permitted", &ingest.Node{Kind: ingest.KindString, Str: name}, nil)
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
	members := make([]ingest.Member, 0, len(activationFields))
	rows := 0
	for {
		line := cr.NextContent()
		if line == 0 {
			break
		}
		cells := cr.Cells
		if rows++; rows > maxActivations || c.Full {
			continue // counted for too_long, no longer validated
		}
		at := ingest.BodyPath().At("line " + strconv.Itoa(line))
		switch {
		case cr.Syntax != "":
			c.Add(ingest.Problem{Type: ingest.ProblemCSVSyntax, Loc: at, Msg: fmt.Sprintf("line %d: %s", line, cr.Syntax), Ctx: map[string]any{}})
			continue
		case len(cells) > width && !csvfile.EmptyFrom(cells, width):
			c.Add(ingest.Problem{Type: ingest.ProblemCSVCells, Loc: at, Ctx: map[string]any{},
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
				ingest.NotUnicode(c, at.At(activationFields[f]), cells[j])
				broken = true
				continue
			}
			members = append(members, ingest.Member{Key: activationFields[f], Val: ingest.Node{Kind: ingest.KindString, Str: string(cells[j])}})
		}
		if broken {
			continue
		}
		row := ingest.Node{Kind: ingest.KindObject, Members: members}
		a, ok := activationModel(c, at, &row)
		if !ok {
			continue
		}
		k := keyOfActivation(a)
		if first, dup := firstLine[k]; dup {
			c.ValueError(at, &row, fmt.Sprintf("duplicate of line %d", first))
			continue
		}
		firstLine[k] = line
		out = append(out, a)
	}
	if rows > maxActivations {
		c = &ingest.Checker{}
		tooLong(c, ingest.BodyPath(), rows, maxActivations)
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// csvHeaderError is an unusable header line, after which nothing else of
// the file is checked.
func csvHeaderError(msg string) error {
	return &ingest.SchemaError{Problems: []ingest.Problem{{Type: ingest.ProblemCSVHeader, Loc: []string{"body", "line 1"}, Msg: msg, Ctx: map[string]any{}}}}
}
