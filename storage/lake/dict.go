package lake

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
)

// unifyDictionaries returns the batches of one row group with every string
// dictionary column rewritten onto one shared dictionary: the values that the
// batches' rows reference, in order of first appearance, with each batch's
// indices translated. The Writer then puts the shared dictionary once into
// the column chunk's dictionary page and writes the indices as they are; with
// a different dictionary per batch (a forecast batch has its own market
// locations) the chunk would fall back to plain encoding after the first
// batch. Because the shared dictionary holds only referenced values, its
// minimum and maximum are the column chunk's statistics, which lets the
// Writer skip hashing the indices to find them (see dictState.writeIndices)
// and lets DuckDB skip row groups when filtering on one market location.
// This costs one pass over the indices, hashing only when an entry is first
// referenced. Dictionary types other than int32-indexed strings without null
// entries are passed through unchanged. The caller releases the returned
// batches.
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
// string values without nulls in every batch, and not already one shared
// dictionary whose entries the rows all reference. Batches that share such a
// dictionary (the generator's columns with a fixed set of values: control
// areas, kinds, sources) are written as they are, after one pass that only
// reads their indices; translating them too cost 0.35 of the 0.43 s that
// unifyDictionaries took in the 200k-location chain benchmark. A slice of
// one batch with its own dictionary (market locations) does not reference
// every entry, so it is translated and its statistics stay exact.
func unifiable(batches []arrow.RecordBatch, c int) bool {
	if allReferenced(batches, c) {
		return false
	}
	for _, rec := range batches {
		d, ok := rec.Column(c).(*array.Dictionary)
		if !ok {
			return false
		}
		dict := d.Dictionary()
		if _, ok := stringsOf(dict); !ok || dict.NullN() > 0 {
			return false
		}
	}
	return true
}

// allReferenced reports whether every batch's column c has the same
// dictionary and the rows reference each of its entries.
func allReferenced(batches []arrow.RecordBatch, c int) bool {
	first := batches[0].Column(c).Data().Dictionary()
	if first == nil {
		return false
	}
	for _, rec := range batches[1:] {
		if rec.Column(c).Data().Dictionary() != first {
			return false
		}
	}
	seen := make([]bool, first.Len())
	missing := len(seen)
	for _, rec := range batches {
		d, ok := rec.Column(c).(*array.Dictionary)
		if !ok {
			return false
		}
		idx, ok := d.Indices().(*array.Int32)
		if !ok || idx.NullN() > 0 {
			return false
		}
		prev := int32(-1)
		for _, v := range idx.Int32Values() {
			// A location's rows repeat its indices: a run costs one compare.
			if v == prev {
				continue
			}
			prev = v
			if uint32(v) >= uint32(len(seen)) {
				return false // unifyColumn reports it
			}
			if !seen[v] {
				seen[v] = true
				missing--
			}
		}
	}
	return missing == 0
}

func unifyColumn(mem memory.Allocator, dt *arrow.DictionaryType, batches []arrow.RecordBatch, c int) ([]arrow.Array, error) {
	memo := map[string]int32{}
	var values []string // aliases the batches' buffers, which outlive this call
	out := make([]arrow.Array, 0, len(batches))
	fail := func(err error) ([]arrow.Array, error) {
		for _, a := range out {
			a.Release()
		}
		return nil, err
	}
	// The shared dictionary is known only after every batch's indices are
	// translated; the indices come first and the arrays are made after.
	indices := make([]arrow.Array, 0, len(batches))
	defer func() {
		for _, a := range indices {
			a.Release()
		}
	}()
	for _, rec := range batches {
		src := rec.Column(c).(*array.Dictionary)
		value, _ := stringsOf(src.Dictionary())
		t := make([]int32, src.Dictionary().Len())
		for j := range t {
			t[j] = -1
		}
		lookup := func(v int32) int32 {
			s := value(int(v))
			idx, ok := memo[s]
			if !ok {
				idx = int32(len(values))
				memo[s] = idx
				values = append(values, s)
			}
			t[v] = idx
			return idx
		}
		idx, err := translate(mem, src.Indices().(*array.Int32), t, lookup)
		if err != nil {
			return fail(err)
		}
		indices = append(indices, idx)
	}

	db := array.NewBuilder(mem, dt.ValueType)
	defer db.Release()
	appender, ok := db.(interface{ AppendString(string) })
	if !ok {
		return fail(pipeline.Errorf(pipeline.Internal, "no string builder for %s", dt.ValueType))
	}
	for _, s := range values {
		appender.AppendString(s)
	}
	dict := db.NewArray()
	defer dict.Release()
	for _, idx := range indices {
		out = append(out, array.NewDictionaryArray(dt, idx, dict))
	}
	return out, nil
}

// translate maps every index v through t, calling lookup(v) for an entry
// not yet mapped (t[v] < 0), which sets t[v]. Null slots keep their validity
// and get index 0.
func translate(mem memory.Allocator, idx *array.Int32, t []int32, lookup func(int32) int32) (arrow.Array, error) {
	n := idx.Len()
	src := idx.Int32Values()
	if idx.NullN() == 0 {
		buf := memory.NewResizableBuffer(mem)
		defer buf.Release()
		buf.Resize(n * arrow.Int32SizeBytes)
		dst := arrow.Int32Traits.CastFromBytes(buf.Bytes())
		// The rows of a location come together, so an index mostly repeats
		// the one before: runs are copied without the table lookup.
		prev, prevM := int32(-1), int32(0)
		for i, v := range src {
			if v == prev {
				dst[i] = prevM
				continue
			}
			if uint32(v) >= uint32(len(t)) {
				return nil, pipeline.Errorf(pipeline.Invalid, "dictionary index %d out of range [0, %d)", v, len(t))
			}
			m := t[v]
			if m < 0 {
				m = lookup(v)
			}
			dst[i] = m
			prev, prevM = v, m
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
		m := t[v]
		if m < 0 {
			m = lookup(v)
		}
		ib.UnsafeAppend(m)
	}
	return ib.NewArray(), nil
}
