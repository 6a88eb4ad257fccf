package position

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
)

// column returns the column of rec named name. Columns are found by name,
// not by position, so that a projected read (only some columns, in any
// order) works the same as a full one.
func column(rec arrow.RecordBatch, name string) (arrow.Array, error) {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil, pipeline.Errorf(pipeline.Invalid, "record has no column %q", name)
	}
	return rec.Column(idx[0]), nil
}

// runsOf turns a string column, dictionary<int32, string> (the schema's
// type), another dictionary or plain strings, into the runs of equal values
// that AddBlock sums. Null values are refused; a null dictionary entry reads
// as "", which no resolver knows.
func runsOf(arr arrow.Array, name string) (Runs, error) {
	if arr.NullN() > 0 {
		return Runs{}, pipeline.Errorf(pipeline.Invalid, "column %s has %d null values", name, arr.NullN())
	}
	var r Runs
	var code func(i int) int32
	switch a := arr.(type) {
	case *array.Dictionary:
		dict, ok := a.Dictionary().(interface {
			Value(int) string
			Len() int
			IsNull(int) bool
		})
		if !ok {
			return Runs{}, pipeline.Errorf(pipeline.Invalid, "column %s: dictionary of %s, want strings", name, a.Dictionary().DataType())
		}
		r.Dict = make([]string, dict.Len())
		for j := range r.Dict {
			if !dict.IsNull(j) {
				r.Dict[j] = dict.Value(j)
			}
		}
		if ix, ok := a.Indices().(*array.Int32); ok {
			appendRuns(&r, ix.Int32Values())
			return r, nil
		}
		code = func(i int) int32 { return int32(a.GetValueIndex(i)) }
	case interface {
		Value(int) string
		Len() int
	}:
		// Plain strings repeat in runs (a location's rows are adjacent), so
		// comparing with the previous row's value avoids most lookups.
		local := map[string]int32{}
		prev, prevCode := "", int32(-1)
		code = func(i int) int32 {
			v := a.Value(i)
			if prevCode >= 0 && v == prev {
				return prevCode
			}
			c, ok := local[v]
			if !ok {
				c = int32(len(r.Dict))
				local[v] = c
				r.Dict = append(r.Dict, v)
			}
			prev, prevCode = v, c
			return c
		}
	default:
		return Runs{}, pipeline.Errorf(pipeline.Invalid, "column %s has type %s, want strings", name, arr.DataType())
	}
	codes := make([]int32, arr.Len())
	for i := range codes {
		codes[i] = code(i)
	}
	appendRuns(&r, codes)
	return r, nil
}

// appendRuns appends the runs of equal codes, one code per row, to r.
func appendRuns(r *Runs, codes []int32) {
	for i := 0; i < len(codes); {
		c, j := codes[i], i+1
		for j < len(codes) && codes[j] == c {
			j++
		}
		r.Codes = append(r.Codes, c)
		r.Ends = append(r.Ends, int32(j))
		i = j
	}
}

func grow(s *[]int32, n int) []int32 {
	if cap(*s) < n {
		*s = make([]int32, n)
	}
	return (*s)[:n]
}

// stringAt returns an accessor for a string column of either encoding, for
// the small records (positions) that are read row by row.
func stringAt(arr arrow.Array) func(i int) string {
	switch a := arr.(type) {
	case *array.Dictionary:
		if d, ok := a.Dictionary().(interface{ Value(int) string }); ok {
			return func(i int) string {
				if a.IsNull(i) {
					return ""
				}
				return d.Value(a.GetValueIndex(i))
			}
		}
	case interface{ Value(int) string }:
		return func(i int) string {
			if arr.IsNull(i) {
				return ""
			}
			return a.Value(i)
		}
	}
	return func(int) string { return "" }
}

// intAt returns an accessor for an integer column (qh_index is int16 in the
// schema; wider types are accepted for hand-made records).
func intAt(arr arrow.Array) (func(i int) int, bool) {
	switch a := arr.(type) {
	case *array.Int16:
		return func(i int) int { return int(a.Value(i)) }, true
	case *array.Int32:
		return func(i int) int { return int(a.Value(i)) }, true
	case *array.Int64:
		return func(i int) int { return int(a.Value(i)) }, true
	}
	return nil, false
}

// areaIndex is the position of a control area in pipeline.ControlAreas, or -1.
func areaIndex(s string) int32 {
	for i, a := range pipeline.ControlAreas {
		if string(a) == s {
			return int32(i)
		}
	}
	return -1
}

// kindIndex is 0 for consumption, 1 for production, -1 otherwise.
func kindIndex(s string) int32 {
	switch pipeline.Kind(s) {
	case pipeline.Consumption:
		return 0
	case pipeline.Production:
		return 1
	}
	return -1
}

// unitKnown reports whether u is one of the units ToMW converts.
func unitKnown(u pipeline.Unit) bool {
	return u == pipeline.MW || u == pipeline.MWH || u == pipeline.KWH
}

// outColumns builds the shared columns of the position records. It uses
// Arrow builders: these records hold a few hundred rows per portfolio, so
// clarity wins over the hand-built buffers of the forecast stage.
type outColumns struct {
	portfolio, area, source *array.BinaryDictionaryBuilder
	day                     *array.Date32Builder
	qh                      *array.Int16Builder
	ts                      *array.TimestampBuilder
	floats                  []*array.Float64Builder
}

var dictType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

func newOutColumns(alloc memory.Allocator, floats int, withSource bool) *outColumns {
	c := &outColumns{
		portfolio: array.NewDictionaryBuilder(alloc, dictType).(*array.BinaryDictionaryBuilder),
		area:      array.NewDictionaryBuilder(alloc, dictType).(*array.BinaryDictionaryBuilder),
		day:       array.NewDate32Builder(alloc),
		qh:        array.NewInt16Builder(alloc),
		ts:        array.NewTimestampBuilder(alloc, pipeline.TimestampUTC),
	}
	if withSource {
		c.source = array.NewDictionaryBuilder(alloc, dictType).(*array.BinaryDictionaryBuilder)
	}
	for range floats {
		c.floats = append(c.floats, array.NewFloat64Builder(alloc))
	}
	return c
}

func (c *outColumns) release() {
	c.portfolio.Release()
	c.area.Release()
	c.day.Release()
	c.qh.Release()
	c.ts.Release()
	if c.source != nil {
		c.source.Release()
	}
	for _, f := range c.floats {
		f.Release()
	}
}

// appendSeries appends one (portfolio, area) block of n quarter-hours; the
// float columns take vals[k][q].
func (c *outColumns) appendSeries(portfolio string, area pipeline.ControlArea, day pipeline.Day, ts []int64, source string, vals ...[]float64) error {
	n := len(ts)
	d := day.Date32()
	for q := range n {
		if err := c.portfolio.AppendString(portfolio); err != nil {
			return err
		}
		if err := c.area.AppendString(string(area)); err != nil {
			return err
		}
		c.day.Append(d)
		c.qh.Append(int16(q))
		c.ts.Append(arrow.Timestamp(ts[q]))
		for k, f := range c.floats {
			f.Append(vals[k][q])
		}
		if c.source != nil {
			if err := c.source.AppendString(source); err != nil {
				return err
			}
		}
	}
	return nil
}

// record assembles the columns in the order of schema, which must be
// portfolio, delivery_day, control_area, qh_index, ts_utc, the floats, and
// source when the builder has one.
func (c *outColumns) record(schema *arrow.Schema) arrow.RecordBatch {
	cols := []arrow.Array{c.portfolio.NewArray(), c.day.NewArray(), c.area.NewArray(), c.qh.NewArray(), c.ts.NewArray()}
	for _, f := range c.floats {
		cols = append(cols, f.NewArray())
	}
	if c.source != nil {
		cols = append(cols, c.source.NewArray())
	}
	rec := array.NewRecordBatch(schema, cols, int64(cols[0].Len()))
	for _, col := range cols {
		col.Release()
	}
	return rec
}
