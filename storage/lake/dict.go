package lake

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
)

// unifyDictionaries returns the batches of one row group with every string
// dictionary column rewritten onto one shared dictionary: the union of the
// batches' dictionaries in order of first appearance, with each batch's
// indices translated. pqarrow then writes the shared dictionary once as the
// column chunk's dictionary page and the indices as they are; with a
// different dictionary per batch (a forecast batch has its own market
// locations) it would fall back to plain encoding after the first batch.
// Only the dictionaries are hashed, not the rows, so this costs one pass over
// the indices. Columns whose batches already share a dictionary, and
// dictionary types other than int32-indexed strings without null entries,
// are passed through unchanged. The caller releases the returned batches.
func unifyDictionaries(mem memory.Allocator, batches []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	if len(batches) == 0 {
		return nil, nil
	}
	schema := batches[0].Schema()
	ncols := int(batches[0].NumCols())
	// cols[b][c] is the column c of batch b in the result; nil means the
	// input column, unchanged.
	cols := make([][]arrow.Array, len(batches))
	for b := range cols {
		cols[b] = make([]arrow.Array, ncols)
	}
	release := func() {
		for _, row := range cols {
			for _, a := range row {
				if a != nil {
					a.Release()
				}
			}
		}
	}
	for c, f := range schema.Fields() {
		dt, ok := f.Type.(*arrow.DictionaryType)
		if !ok || dt.IndexType.ID() != arrow.INT32 || !unifiable(batches, c) {
			continue
		}
		out, err := unifyColumn(mem, dt, batches, c)
		if err != nil {
			release()
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		for b := range batches {
			cols[b][c] = out[b]
		}
	}
	result := make([]arrow.RecordBatch, len(batches))
	for b, rec := range batches {
		row := make([]arrow.Array, ncols)
		for c := range row {
			if cols[b][c] != nil {
				row[c] = cols[b][c]
			} else {
				row[c] = rec.Column(c)
			}
		}
		result[b] = array.NewRecordBatch(schema, row, rec.NumRows())
	}
	release() // the records hold their own references
	return result, nil
}

// stringsOf gives access to the values of a string dictionary.
func stringsOf(a arrow.Array) (func(int) string, bool) {
	switch d := a.(type) {
	case *array.String:
		return d.Value, true
	case *array.LargeString:
		return d.Value, true
	}
	return nil, false
}

// unifiable reports whether column c needs and allows a shared dictionary:
// string values without nulls, and not already one dictionary.
func unifiable(batches []arrow.RecordBatch, c int) bool {
	var first arrow.Array
	same := true
	for _, rec := range batches {
		d, ok := rec.Column(c).(*array.Dictionary)
		if !ok {
			return false
		}
		dict := d.Dictionary()
		if _, ok := stringsOf(dict); !ok || dict.NullN() > 0 {
			return false
		}
		if first == nil {
			first = dict
		} else if same && dict != first && !array.Equal(dict, first) {
			same = false
		}
	}
	return !same
}

func unifyColumn(mem memory.Allocator, dt *arrow.DictionaryType, batches []arrow.RecordBatch, c int) ([]arrow.Array, error) {
	memo := map[string]int32{}
	var values []string // aliases the batches' buffers, which outlive this call
	transposed := make([][]int32, len(batches))
	for b, rec := range batches {
		dict := rec.Column(c).(*array.Dictionary).Dictionary()
		value, _ := stringsOf(dict)
		t := make([]int32, dict.Len())
		for j := range t {
			s := value(j)
			idx, ok := memo[s]
			if !ok {
				idx = int32(len(values))
				memo[s] = idx
				values = append(values, s)
			}
			t[j] = idx
		}
		transposed[b] = t
	}

	db := array.NewBuilder(mem, dt.ValueType)
	defer db.Release()
	appender, ok := db.(interface{ AppendString(string) })
	if !ok {
		return nil, pipeline.Errorf(pipeline.Internal, "no string builder for %s", dt.ValueType)
	}
	for _, s := range values {
		appender.AppendString(s)
	}
	dict := db.NewArray()
	defer dict.Release()

	out := make([]arrow.Array, 0, len(batches))
	fail := func(err error) ([]arrow.Array, error) {
		for _, a := range out {
			a.Release()
		}
		return nil, err
	}
	for b, rec := range batches {
		src := rec.Column(c).(*array.Dictionary)
		idx, err := translate(mem, src.Indices().(*array.Int32), transposed[b])
		if err != nil {
			return fail(err)
		}
		out = append(out, array.NewDictionaryArray(dt, idx, dict))
		idx.Release()
	}
	return out, nil
}

// translate maps every index through t. Null slots keep their validity and
// get index 0.
func translate(mem memory.Allocator, idx *array.Int32, t []int32) (arrow.Array, error) {
	n := idx.Len()
	src := idx.Int32Values()
	if idx.NullN() == 0 {
		buf := memory.NewResizableBuffer(mem)
		defer buf.Release()
		buf.Resize(n * arrow.Int32SizeBytes)
		dst := arrow.Int32Traits.CastFromBytes(buf.Bytes())
		for i, v := range src {
			if uint32(v) >= uint32(len(t)) {
				return nil, pipeline.Errorf(pipeline.Invalid, "dictionary index %d out of range [0, %d)", v, len(t))
			}
			dst[i] = t[v]
		}
		data := array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
		defer data.Release()
		return array.MakeFromData(data), nil
	}
	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	ib.Reserve(n)
	for i, v := range src {
		if idx.IsNull(i) {
			ib.AppendNull()
			continue
		}
		if v < 0 || int(v) >= len(t) {
			return nil, pipeline.Errorf(pipeline.Invalid, "dictionary index %d out of range [0, %d)", v, len(t))
		}
		ib.UnsafeAppend(t[v])
	}
	return ib.NewArray(), nil
}
