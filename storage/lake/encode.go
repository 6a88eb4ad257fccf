package lake

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/schedbridge/schedbridge/pipeline"
)

// The Writer encodes a row group's column chunks in parallel, one column per
// goroutine at a time, instead of through pqarrow.FileWriter, which encodes
// them one after the other on the caller's goroutine. Each column chunk of a
// buffered row group has its own encoder and page buffer, so the chunks are
// independent until the row group is closed and they are copied to the file
// in column order; the file is the same whatever the order in which the
// columns finished. On the shared 2-core machine this, the background
// encoding (see Writer.flushGroup) and the encodings chosen in Create took
// the wall time of writing forecast_malo rows from 335-717 to 137-260 ns per
// row, and BenchmarkForecastMalo's write-rows/s from 3.1 to 4.1-9.3 million
// (docs/benchmarks.md).

// encoding is what a Writer needs to encode the parts of one snapshot: the
// Parquet schema and file metadata, computed once in Create, and the order in
// which the workers take the columns.
type encoding struct {
	schema   *arrow.Schema
	pq       *pqschema.Schema
	meta     metadata.KeyValueMetadata
	props    *parquet.WriterProperties
	aprops   pqarrow.ArrowWriterProperties
	nullable []bool
	order    []int // columns, most expensive first
	workers  int
}

// newEncoding prepares the encoding of schema. It writes what
// pqarrow.NewFileWriter writes with WithStoreSchema: the schema's metadata
// and the serialized Arrow schema under ARROW:schema, so that readers get
// dictionary columns and the timestamps' zone back. Only flat schemas are
// supported (no lists, structs or maps): the lake's datasets are flat, and
// the column writes here pass no repetition levels.
func newEncoding(schema *arrow.Schema, props *parquet.WriterProperties, aprops pqarrow.ArrowWriterProperties) (*encoding, error) {
	e := &encoding{schema: schema, props: props, aprops: aprops, workers: runtime.GOMAXPROCS(0)}
	for _, f := range schema.Fields() {
		t := f.Type
		if d, ok := t.(*arrow.DictionaryType); ok {
			t = d.ValueType
		}
		if arrow.IsNested(t.ID()) || t.ID() == arrow.EXTENSION {
			return nil, pipeline.Errorf(pipeline.Invalid, "lake: column %s: nested and extension types are not supported", f.Name)
		}
		e.nullable = append(e.nullable, f.Nullable)
	}
	pq, err := pqarrow.ToParquet(schema, props, aprops)
	if err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	e.pq = pq
	md := schema.Metadata()
	for i, k := range md.Keys() {
		e.meta.Append(k, md.Values()[i])
	}
	e.meta.Append("ARROW:schema", base64.StdEncoding.EncodeToString(flight.SerializeSchema(schema, props.Allocator())))
	// The widest values cost the most to encode and compress (power_mw and
	// ts_utc of forecast_malo); starting them first keeps the workers busy
	// to the end of the row group.
	e.order = make([]int, schema.NumFields())
	for i := range e.order {
		e.order[i] = i
	}
	slices.SortStableFunc(e.order, func(a, b int) int { return costOf(schema.Field(b).Type) - costOf(schema.Field(a).Type) })
	return e, nil
}

func costOf(t arrow.DataType) int {
	if _, ok := t.(*arrow.DictionaryType); ok {
		return 4
	}
	if fw, ok := t.(arrow.FixedWidthDataType); ok {
		return fw.BitWidth() / 8
	}
	return 16 // strings and binaries
}

// newFile starts a Parquet file on w.
func (e *encoding) newFile(w io.Writer) (*file.Writer, error) {
	return file.NewParquetWriterWithError(w, e.pq.Root(), file.WithWriterProps(e.props), file.WithWriteMetadata(e.meta))
}

// writeGroup encodes batches as one row group of fw and writes it into fw's
// sink. The caller keeps ownership of the batches.
func (e *encoding) writeGroup(fw *file.Writer, batches []arrow.RecordBatch) error {
	rgw, err := fw.AppendBufferedRowGroupChecked()
	if err != nil {
		return err
	}
	ncols := len(e.order)
	errs := make([]error, ncols)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(e.workers, ncols) {
		wg.Go(func() {
			ctx := pqarrow.NewArrowWriteContext(context.Background(), &e.aprops)
			for {
				i := int(next.Add(1) - 1)
				if i >= ncols {
					return
				}
				c := e.order[i]
				if err := e.writeColumn(ctx, rgw, c, batches); err != nil {
					errs[c] = fmt.Errorf("column %s: %w", e.schema.Field(c).Name, err)
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return rgw.Close()
}

func (e *encoding) writeColumn(ctx context.Context, rgw file.BufferedRowGroupWriter, c int, batches []arrow.RecordBatch) error {
	cw, err := rgw.Column(c)
	if err != nil {
		return err
	}
	var dict dictState
	for _, b := range batches {
		col := b.Column(c)
		if d, ok := col.(*array.Dictionary); ok && !e.nullable[c] {
			done, err := dict.writeIndices(cw, d)
			if err != nil {
				return err
			}
			if done {
				continue
			}
		}
		var def []int16
		if e.nullable[c] {
			def = make([]int16, col.Len())
			for i := range def {
				if col.IsValid(i) {
					def[i] = 1
				}
			}
		}
		if err := pqarrow.WriteArrowToColumn(ctx, cw, col, def, nil, e.nullable[c]); err != nil {
			return err
		}
	}
	return nil
}

// dictEncoder is the part of arrow-go's dictionary encoders (an internal
// package) that writeIndices uses.
type dictEncoder interface {
	Encoding() parquet.Encoding
	PutDictionary(arrow.Array) error
	PreservedDictionary() arrow.Array
	NumEntries() int
}

// dictState follows the dictionary of one column chunk.
type dictState struct {
	dict arrow.ArrayData // the dictionary put into the chunk's encoder
}

// writeIndices writes the indices of a string dictionary column as they are,
// when its dictionary is the one the column chunk's encoder holds (every
// batch of a row group shares it, see unifyDictionaries). pqarrow does the
// same, but first hashes every index of every batch (compute.Unique) to find
// the dictionary entries the batch references, for the min/max statistics;
// that was 1.54 of the 4.09 s that BenchmarkForecastMalo's CPU profile
// spent in the writer. unifyDictionaries
// leaves only referenced entries in the shared dictionary, so the
// dictionary's own min and max are the column chunk's. It reports false when
// pqarrow must write the batch: an encoder that fell back to plain encoding,
// a different dictionary, nulls, values that are not strings.
func (s *dictState) writeIndices(cw file.ColumnChunkWriter, d *array.Dictionary) (bool, error) {
	enc, ok := cw.CurrentEncoder().(dictEncoder)
	if !ok || d.NullN() > 0 || cw.Descr().MaxDefinitionLevel() != 0 {
		return false, nil
	}
	if e := enc.Encoding(); e != parquet.Encodings.PlainDict && e != parquet.Encodings.RLEDict {
		return false, nil
	}
	values := d.Dictionary()
	if _, ok := values.(*array.String); !ok || values.NullN() > 0 {
		return false, nil
	}
	switch {
	case enc.PreservedDictionary() == nil:
		if err := enc.PutDictionary(values); err != nil {
			return false, err
		}
		if enc.NumEntries() != values.Len() {
			// Duplicate entries: the encoder's indices no longer match
			// the batch's, so pqarrow writes plain values (as it does).
			cw.FallbackToPlain()
			return false, nil
		}
		s.dict = d.Data().Dictionary()
	case d.Data().Dictionary() != s.dict:
		return false, nil
	}
	if st := cw.PageStatistics(); st != nil {
		st.IncNulls(0)
		st.IncNumValues(int64(d.Len()))
		if err := st.UpdateFromArrow(values, false); err != nil {
			return false, err
		}
	}
	return true, cw.WriteDictIndices(d.Indices(), nil, nil)
}
