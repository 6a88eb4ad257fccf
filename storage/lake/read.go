package lake

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Read streams the snapshot's rows to fn, one record batch per row group,
// file by file in order. columns names the columns to read, in the order the
// batches should have them (nil: all). fn does not own the batch: it is
// released when fn returns, so fn retains what it keeps. An error from fn
// stops the read and is returned as it is.
//
// Parquet needs random access (the footer first, then the wanted column
// chunks). When the bucket's reader offers io.ReaderAt, Read uses it: the
// directory store reads its file in place, and the S3 store sends one ranged
// GET per column chunk, so reading one column moves only that column's bytes.
// Other readers are spooled to a temporary file in Options.SpoolDir, removed
// when the file is read.
func (l *Lake) Read(ctx context.Context, s Snapshot, columns []string, fn func(arrow.RecordBatch) error) error {
	if err := checkTarget(s.Dataset, s.Day); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, c := range columns {
		if seen[c] {
			return pipeline.Errorf(pipeline.Invalid, "lake %s %s: column %q asked for twice", s.Dataset, s.Day, c)
		}
		seen[c] = true
	}
	for _, f := range s.Files {
		if err := l.readFile(ctx, f, columns, fn); err != nil {
			return err
		}
	}
	return nil
}

// fnError marks errors of the callback, which Read returns unwrapped.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

func (l *Lake) readFile(ctx context.Context, f FileInfo, columns []string, fn func(arrow.RecordBatch) error) error {
	err := l.withReaderAt(ctx, f, func(ra io.ReaderAt, size int64) error {
		return l.readParquet(ctx, io.NewSectionReader(ra, 0, size), columns, fn)
	})
	if fe, ok := err.(fnError); ok {
		return fe.err
	}
	if err != nil {
		return fmt.Errorf("lake read %s: %w", f.Key, err)
	}
	return nil
}

// withReaderAt opens the object for random access and checks that it is as
// large as the snapshot says, which catches a replaced or truncated object
// before Parquet misreads it.
func (l *Lake) withReaderAt(ctx context.Context, f FileInfo, use func(io.ReaderAt, int64) error) error {
	info, err := l.b.Stat(ctx, f.Key)
	if err != nil {
		return err
	}
	if info.Size != f.Bytes {
		return pipeline.Errorf(pipeline.Internal, "object %s has %d bytes, the snapshot says %d", f.Key, info.Size, f.Bytes)
	}
	rc, err := l.b.Get(ctx, f.Key)
	if err != nil {
		return err
	}
	defer rc.Close()
	if ra, ok := rc.(io.ReaderAt); ok {
		return use(ra, f.Bytes)
	}
	tmp, err := os.CreateTemp(l.opts.SpoolDir, "lake-spool-*.parquet")
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	n, err := io.Copy(tmp, rc)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if n != f.Bytes {
		return pipeline.Errorf(pipeline.Internal, "object %s gave %d bytes, the snapshot says %d", f.Key, n, f.Bytes)
	}
	return use(tmp, n)
}

func (l *Lake) readParquet(ctx context.Context, r parquet.ReaderAtSeeker, columns []string, fn func(arrow.RecordBatch) error) error {
	pf, err := file.NewParquetReader(r, file.WithReadProps(parquet.NewReaderProperties(l.opts.Alloc)))
	if err != nil {
		return err
	}
	defer pf.Close()
	// Parallel reads the row group's columns concurrently; BatchSize only
	// matters to record readers, which Read does not use.
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true, BatchSize: l.opts.RowGroupRows}, l.opts.Alloc)
	if err != nil {
		return err
	}
	sc := pf.MetaData().Schema
	var indices []int
	if columns == nil {
		indices = make([]int, sc.NumColumns())
		for i := range indices {
			indices[i] = i
		}
	} else {
		indices = make([]int, len(columns))
		for i, c := range columns {
			if indices[i] = sc.ColumnIndexByName(c); indices[i] < 0 {
				return pipeline.Errorf(pipeline.Invalid, "no column %q", c)
			}
		}
	}
	for rg := 0; rg < pf.NumRowGroups(); rg++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		tbl, err := fr.ReadRowGroups(ctx, indices, []int{rg})
		if err != nil {
			return fmt.Errorf("row group %d: %w", rg, err)
		}
		err = eachBatch(tbl, fn)
		tbl.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// eachBatch hands fn the table's rows as record batches (one, unless a
// column came in several chunks), under the schema that was written.
func eachBatch(tbl arrow.Table, fn func(arrow.RecordBatch) error) error {
	schema := withoutFieldIDs(tbl.Schema())
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		out := array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())
		err := fn(out)
		out.Release()
		if err != nil {
			return fnError{err}
		}
	}
	return tr.Err()
}

// fieldIDKey is the field metadata that pqarrow adds on reading.
const fieldIDKey = "PARQUET:field_id"

// withoutFieldIDs drops the Parquet field ids that pqarrow attaches to every
// field, so that batches read back have the schema they were written with
// (arrow.Schema.Equal compares field metadata) and can be written again.
func withoutFieldIDs(sc *arrow.Schema) *arrow.Schema {
	fields := sc.Fields()
	changed := false
	for i, f := range fields {
		if f.Metadata.FindKey(fieldIDKey) < 0 {
			continue
		}
		var keys, values []string
		for j, k := range f.Metadata.Keys() {
			if k != fieldIDKey {
				keys = append(keys, k)
				values = append(values, f.Metadata.Values()[j])
			}
		}
		fields[i].Metadata = arrow.NewMetadata(keys, values)
		changed = true
	}
	if !changed {
		return sc
	}
	md := sc.Metadata()
	return arrow.NewSchema(fields, &md)
}

// fileSchema returns the Arrow schema stored in a file of the lake.
func (l *Lake) fileSchema(ctx context.Context, key string) (*arrow.Schema, error) {
	info, err := l.b.Stat(ctx, key)
	if err != nil {
		return nil, err
	}
	var schema *arrow.Schema
	err = l.withReaderAt(ctx, FileInfo{Key: key, Bytes: info.Size}, func(ra io.ReaderAt, n int64) error {
		pf, err := file.NewParquetReader(io.NewSectionReader(ra, 0, n), file.WithReadProps(parquet.NewReaderProperties(l.opts.Alloc)))
		if err != nil {
			return err
		}
		defer pf.Close()
		schema, err = pqarrow.FromParquet(pf.MetaData().Schema, nil, pf.MetaData().KeyValueMetadata())
		return err
	})
	return schema, err
}
