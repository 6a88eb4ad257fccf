package bulk

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// Parquet metered-data files have one row per MaLo and day: malo (string),
// day (DATE, or a string YYYY-MM-DD), unit (string) and values
// (LIST<DOUBLE>). Other columns are ignored. They are read in record batches
// of BatchSize rows through pqarrow, so memory stays bounded by a batch and
// the column chunks being decoded.

// atReader remembers the errors of the file's own ReaderAt, which tells an
// I/O error from a file that is not Parquet.
type atReader struct {
	r   io.ReaderAt
	err error
}

func (a *atReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := a.r.ReadAt(p, off)
	if err != nil && err != io.EOF {
		a.err = err
	}
	return n, err
}

// parquetColumns are the columns read, in the model's field order.
var parquetColumns = []string{"malo", "day", "unit", "values"}

const parquetExpected = "malo (string), day (date32 or string YYYY-MM-DD), unit (string), values (list<double>)"

// parquetFailed turns an error of the Parquet reader into DecodeBulk's result.
func (r *bulkRun) parquetFailed(at *atReader, err error) error {
	if at.err != nil {
		return fmt.Errorf("read %s: %w", r.name, at.err)
	}
	if errors.Is(err, r.ctx.Err()) && r.ctx.Err() != nil {
		return err
	}
	r.add(ingest.FileProblem{Type: ingest.ProblemParquet, Msg: "the file is not readable Parquet: " + err.Error()})
	return nil
}

// parquetMetered decodes a metered-data Parquet file.
func (r *bulkRun) parquetMetered(in BulkInput) error {
	if in.At == nil {
		return fmt.Errorf("ingest: Parquet file %q needs BulkInput.At and Size", in.Name)
	}
	at := &atReader{r: in.At}
	props := parquet.NewReaderProperties(r.opt.Alloc)
	pf, err := file.NewParquetReader(io.NewSectionReader(at, 0, in.Size), file.WithReadProps(props))
	if err != nil {
		return r.parquetFailed(at, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(r.opt.BatchSize)}, r.opt.Alloc)
	if err != nil {
		return r.parquetFailed(at, err)
	}
	schema, err := fr.Schema()
	if err != nil {
		return r.parquetFailed(at, err)
	}
	var leaves []int
	for _, name := range parquetColumns {
		i := parquetField(schema, name)
		if i < 0 {
			r.add(ingest.FileProblem{Column: name, Type: ingest.ProblemParquetSchema,
				Msg: fmt.Sprintf("the file has no column %q; the columns must be %s", name, parquetExpected)})
			continue
		}
		if msg := parquetTypeProblem(name, schema.Field(i).Type); msg != "" {
			r.add(ingest.FileProblem{Column: name, Type: ingest.ProblemParquetSchema, Msg: msg})
			continue
		}
		leaves = appendLeaves(leaves, &fr.Manifest.Fields[i])
	}
	if r.failed() {
		return nil
	}
	rr, err := fr.GetRecordReader(r.ctx, leaves, nil)
	if err != nil {
		return r.parquetFailed(at, err)
	}
	defer rr.Release()
	row := 0
	for rr.Next() {
		rec := rr.RecordBatch()
		cols, err := parquetRecordColumns(rec)
		if err != nil {
			return r.parquetFailed(at, err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			row++
			if err := r.parquetRow(&cols, i, row); err != nil {
				return err
			}
		}
	}
	if err := rr.Err(); err != nil {
		return r.parquetFailed(at, err)
	}
	if row == 0 {
		r.add(ingest.FileProblem{Type: "too_short", Loc: []any{"body", "entries"},
			Msg:   "List should have at least 1 item after validation, not 0: the file has no rows",
			Input: []any{}, Ctx: map[string]any{"field_type": "List", "min_length": 1, "actual_length": 0}})
	}
	return nil
}

// parquetField finds a top-level column by name, exactly or else ignoring case.
func parquetField(s *arrow.Schema, name string) int {
	if idx := s.FieldIndices(name); len(idx) > 0 {
		return idx[0]
	}
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

func appendLeaves(leaves []int, f *pqarrow.SchemaField) []int {
	if f.IsLeaf() {
		return append(leaves, f.ColIndex)
	}
	for i := range f.Children {
		leaves = appendLeaves(leaves, &f.Children[i])
	}
	return leaves
}

func isStringType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return true
	case arrow.DICTIONARY:
		return isStringType(t.(*arrow.DictionaryType).ValueType)
	}
	return false
}

// parquetTypeProblem checks a column's Arrow type.
func parquetTypeProblem(name string, t arrow.DataType) string {
	ok := false
	want := "string"
	switch name {
	case "malo", "unit":
		ok = isStringType(t)
	case "day":
		ok = t.ID() == arrow.DATE32 || isStringType(t)
		want = "date32 (Parquet DATE) or string (YYYY-MM-DD)"
	case "values":
		want = "list<double>"
		if l, isList := t.(arrow.ListLikeType); isList {
			ok = l.Elem().ID() == arrow.FLOAT64
		}
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("column %q is %s; expected %s", name, t, want)
}

// parquetCols are the columns of one record batch.
type parquetCols struct {
	malo, day, unit stringColumn
	date            *array.Date32 // day as DATE, else day is set
	values          array.ListLike
	floats          *array.Float64
}

// stringColumn reads a string column, plain or dictionary-encoded. Values
// alias the record's buffers: clone what is kept.
type stringColumn struct {
	plain array.StringLike
	dict  *array.Dictionary
	words array.StringLike
}

func newStringColumn(a arrow.Array) (stringColumn, bool) {
	if d, ok := a.(*array.Dictionary); ok {
		words, ok := d.Dictionary().(array.StringLike)
		return stringColumn{dict: d, words: words}, ok
	}
	s, ok := a.(array.StringLike)
	return stringColumn{plain: s}, ok
}

func (c *stringColumn) isNull(i int) bool {
	if c.dict != nil {
		return c.dict.IsNull(i)
	}
	return c.plain.IsNull(i)
}

func (c *stringColumn) value(i int) string {
	if c.dict != nil {
		return c.words.Value(c.dict.GetValueIndex(i))
	}
	return c.plain.Value(i)
}

func parquetRecordColumns(rec arrow.RecordBatch) (parquetCols, error) {
	var cols parquetCols
	get := func(name string) arrow.Array {
		return rec.Column(parquetField(rec.Schema(), name))
	}
	var ok [3]bool
	cols.malo, ok[0] = newStringColumn(get("malo"))
	cols.unit, ok[1] = newStringColumn(get("unit"))
	ok[2] = true
	day := get("day")
	if d, isDate := day.(*array.Date32); isDate {
		cols.date = d
	} else {
		cols.day, ok[2] = newStringColumn(day)
	}
	l, isList := get("values").(array.ListLike)
	if !isList || !ok[0] || !ok[1] || !ok[2] {
		return cols, errors.New("unexpected column types in a record batch")
	}
	cols.values = l
	cols.floats, isList = l.ListValues().(*array.Float64)
	if !isList {
		return cols, errors.New("unexpected list element type in a record batch")
	}
	return cols, nil
}

// parquetRow validates row i of a batch, the file's row-th.
func (r *bulkRun) parquetRow(cols *parquetCols, i, row int) error {
	index := row - 1
	var e pipeline.MeteredEntry
	ok := true
	null := &ingest.Node{Kind: ingest.KindNull}
	if cols.malo.isNull(i) {
		r.c.Text(fieldLoc(index, "malo"), null, ingest.MaloRule)
		r.takeChecker(0, row, "malo")
		ok = false
	} else if s := cols.malo.value(i); ingest.IsDigits(s, 11) {
		e.Malo = strings.Clone(s)
	} else {
		r.c.Text(fieldLoc(index, "malo"), &ingest.Node{Kind: ingest.KindString, Str: strings.Clone(s)}, ingest.MaloRule)
		r.takeChecker(0, row, "malo")
		ok = false
	}
	switch {
	case cols.date != nil && cols.date.IsNull(i), cols.date == nil && cols.day.isNull(i):
		r.c.DateValue(fieldLoc(index, "day"), null, &e.Day)
		r.takeChecker(0, row, "day")
		ok = false
	case cols.date != nil:
		t := cols.date.Value(i).ToTime()
		if y := t.Year(); y < 0 || y > 9999 {
			// A date the API's YYYY-MM-DD cannot spell.
			r.c.Fail(fieldLoc(index, "day"), "date_parsing", "Input should be a valid date in the format YYYY-MM-DD, the year is outside 0000-9999",
				&ingest.Node{Kind: ingest.KindString, Str: t.Format("2006-01-02")}, map[string]any{"error": "the year is outside 0000-9999"})
			r.takeChecker(0, row, "day")
			ok = false
			break
		}
		e.Day = pipeline.NewDay(t.Year(), t.Month(), t.Day())
	default:
		s := cols.day.value(i)
		if d, p := ingest.ParseDate(s); p == nil {
			e.Day = d
		} else {
			r.c.DateValue(fieldLoc(index, "day"), &ingest.Node{Kind: ingest.KindString, Str: strings.Clone(s)}, &e.Day)
			r.takeChecker(0, row, "day")
			ok = false
		}
	}
	unit := null
	if !cols.unit.isNull(i) {
		if s := cols.unit.value(i); !meteredUnit(s, &e.Unit) {
			unit = &ingest.Node{Kind: ingest.KindString, Str: strings.Clone(s)}
		}
	}
	if e.Unit == "" {
		ingest.ChoiceValue(&r.c, fieldLoc(index, "unit"), unit, ingest.MeteredUnits, &e.Unit)
		r.takeChecker(0, row, "unit")
		ok = false
	}
	values, good := r.parquetValues(cols, i, index, row)
	if err := r.counted(len(values)); err != nil {
		return err
	}
	if !ok || !good {
		return nil
	}
	e.Values = values
	return r.meteredEntry(e, origin{index: index, row: row}, false, nil)
}

// parquetValues checks the values of row i; the slice is scratch.
func (r *bulkRun) parquetValues(cols *parquetCols, i, index, row int) ([]float64, bool) {
	if cols.values.IsNull(i) {
		r.c.Fail(fieldLoc(index, "values"), "list_type", "Input should be a valid list", &ingest.Node{Kind: ingest.KindNull}, nil)
		r.takeChecker(0, row, "values")
		return nil, false
	}
	start, end := cols.values.ValueOffsets(i)
	raw := cols.floats.Float64Values()[start:end]
	vals := append(r.vals[:0], raw...)
	r.vals = vals
	ok := true
	nulls := cols.floats.NullN() > 0
	for j, f := range vals {
		if f >= 0 && f <= math.MaxFloat64 && !(nulls && cols.floats.IsNull(int(start)+j)) {
			if f == 0 {
				vals[j] = 0 // -0 is 0, as in the API
			}
			continue
		}
		ok = false
		l := fieldLoc(index, "values").Index(j)
		switch {
		case nulls && cols.floats.IsNull(int(start)+j):
			r.c.Quantity(l, &ingest.Node{Kind: ingest.KindNull})
		case math.IsNaN(f) || math.IsInf(f, 0):
			r.c.Fail(l, "finite_number", "Input should be a finite number", &ingest.Node{Kind: ingest.KindString, Str: strings.TrimPrefix(strings.ToLower(strconv.FormatFloat(f, 'g', -1, 64)), "+")}, nil)
		default:
			r.c.Quantity(l, &ingest.Node{Kind: ingest.KindNumber, Num: f, Str: strconv.FormatFloat(f, 'g', -1, 64)})
		}
		r.takeChecker(0, row, "values")
	}
	return vals, ok
}
