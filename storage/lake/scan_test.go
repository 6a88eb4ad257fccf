package lake_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/position"
	"github.com/schedbridge/schedbridge/storage/catalog/catalogtest"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/lake/laketest"
	"github.com/schedbridge/schedbridge/storage/objstore"
)

// aggColumns are the columns the aggregate stage scans.
var aggColumns = lake.ScanColumns{Strings: []string{"portfolio", "control_area", "kind", "source"},
	Int32s: []string{"qh_index"}, Float64s: []string{"power_mw"}}

// checkScan scans the snapshot and compares every row with what locations
// [0, n) must hold; it returns the row-group sizes seen.
func checkScan(t *testing.T, l *lake.Lake, s lake.Snapshot, n int, cols lake.ScanColumns) []int {
	t.Helper()
	nq := day.Intervals()
	var sizes []int
	row := 0
	err := l.Scan(ctxT(t), s, cols, func(b *lake.Block) error {
		sizes = append(sizes, b.Rows)
		var strs [4][]string
		for c, r := range b.Strings {
			if len(r.Codes) != len(r.Ends) || len(r.Ends) == 0 || int(r.Ends[len(r.Ends)-1]) != b.Rows {
				t.Fatalf("column %d: runs %v end at %v, block of %d rows", c, r.Codes, r.Ends, b.Rows)
			}
			prev := int32(0)
			for k, end := range r.Ends {
				if end <= prev && k > 0 {
					t.Fatalf("column %d: run ends %v do not rise", c, r.Ends)
				}
				for range end - prev {
					strs[c] = append(strs[c], r.Dict[r.Codes[k]])
				}
				prev = end
			}
		}
		if len(b.Int32s[0]) != b.Rows || len(b.Float64s[0]) != b.Rows {
			t.Fatalf("block of %d rows with %d qh_index and %d power_mw values", b.Rows, len(b.Int32s[0]), len(b.Float64s[0]))
		}
		for i := range b.Rows {
			want := expected(day, row/nq, row%nq)
			got := want
			got.portfolio, got.area, got.kind, got.source = strs[0][i], strs[1][i], strs[2][i], strs[3][i]
			got.qh, got.power = int16(b.Int32s[0][i]), b.Float64s[0][i]
			if got != want {
				t.Fatalf("row %d = %+v, want %+v", row, got, want)
			}
			row++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if row != n*nq {
		t.Fatalf("scanned %d rows, want %d", row, n*nq)
	}
	return sizes
}

// TestScanLakeFiles scans what the lake's writer writes: several parts of
// several row groups each, with one to three workers, from a store with
// random access and from one that needs the spool.
func TestScanLakeFiles(t *testing.T) {
	b, err := objstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, _ := newLake(t, b, lake.Options{RowGroupRows: 1000, PartRows: 2500})
	s := write(t, l, 1, 40, 7, 13)
	if len(s.Files) != 2 {
		t.Fatalf("snapshot of %d parts, want 2", len(s.Files))
	}
	want := fmt.Sprint([]int{1000, 1000, 500, 1000, 180})
	for workers := 1; workers <= 3; workers++ {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			cols := aggColumns
			cols.Workers = workers
			if got := fmt.Sprint(checkScan(t, l, s, 40, cols)); got != want {
				t.Errorf("row groups %s, want %s", got, want)
			}
		})
	}
	t.Run("spool", func(t *testing.T) {
		spool := t.TempDir()
		spooled, _ := newLake(t, &faultyBucket{Bucket: b, plainGet: true}, lake.Options{SpoolDir: spool})
		checkScan(t, spooled, s, 40, aggColumns)
	})
}

// TestScanEncodings scans files that other writers (or future settings of
// ours) may produce: plain strings, a dictionary that falls back to plain
// encoding within a column chunk, data pages v2, BYTE_STREAM_SPLIT floats,
// DELTA_BINARY_PACKED integers, many small pages, one row group per file.
func TestScanEncodings(t *testing.T) {
	const n = 30 // locations
	cases := []struct {
		name  string
		props []parquet.WriterProperty
		// batchLocs cuts the rows into batches of their own dictionaries;
		// pqarrow falls back to plain encoding at the second batch of a
		// row group.
		batchLocs int
		// plainStrings writes the string columns as Arrow strings, not
		// dictionaries, so that the Parquet writer builds the dictionary
		// and falls back to plain encoding when it outgrows its limit.
		plainStrings bool
		fallback     bool
	}{
		{"plain", []parquet.WriterProperty{parquet.WithDictionaryDefault(false)}, n, false, false},
		{"dictionary fallback", []parquet.WriterProperty{parquet.WithDictionaryPageSizeLimit(15), parquet.WithBatchSize(100), parquet.WithDataPageSize(1)}, n, true, true},
		{"v2 pages, byte stream split, delta", []parquet.WriterProperty{
			parquet.WithDataPageVersion(parquet.DataPageV2),
			parquet.WithDictionaryFor("power_mw", false), parquet.WithEncodingFor("power_mw", parquet.Encodings.ByteStreamSplit),
			parquet.WithDictionaryFor("qh_index", false), parquet.WithEncodingFor("qh_index", parquet.Encodings.DeltaBinaryPacked),
			parquet.WithDataPageSize(1024)}, n, false, false},
		{"v2 pages, dictionary, small groups", []parquet.WriterProperty{
			parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithMaxRowGroupLength(333), parquet.WithDataPageSize(256)}, n, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := objstore.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			l, _ := newLake(t, b, lake.Options{})
			var buf bytes.Buffer
			props := parquet.NewWriterProperties(append([]parquet.WriterProperty{parquet.WithMaxRowGroupLength(1 << 20)}, tc.props...)...)
			schema := pipeline.ForecastMaloSchema
			if tc.plainStrings {
				schema = withPlainStrings(schema)
			}
			fw, err := pqarrow.NewFileWriter(schema, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
			if err != nil {
				t.Fatal(err)
			}
			fw.NewBufferedRowGroup()
			for loc := 0; loc < n; loc += tc.batchLocs {
				rec := forecastBatch(memory.NewGoAllocator(), day, loc, min(tc.batchLocs, n-loc))
				if tc.plainStrings {
					plain := plainStringsOf(rec, schema)
					rec.Release()
					rec = plain
				}
				err := fw.WriteBuffered(rec)
				rec.Release()
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := fw.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.fallback {
				assertFallback(t, buf.Bytes(), "control_area")
			}
			key := "lake/" + fm + "/" + day.String() + "/other.parquet"
			if err := b.Put(ctxT(t), key, bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
				t.Fatal(err)
			}
			s := lake.Snapshot{Dataset: fm, Day: day, RunID: 1, Rows: int64(n * day.Intervals()),
				Files: []lake.FileInfo{{Key: key, Rows: int64(n * day.Intervals()), Bytes: int64(buf.Len())}}}
			checkScan(t, l, s, n, aggColumns)
		})
	}
}

// assertFallback checks that the column's chunk has dictionary-encoded and
// plain data pages, so that the case tests what it says.
func assertFallback(t *testing.T, data []byte, column string) {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	rg := pf.MetaData().RowGroup(0)
	cc, err := rg.ColumnChunk(pf.MetaData().Schema.ColumnIndexByName(column))
	if err != nil {
		t.Fatal(err)
	}
	var dict, plain bool
	for _, st := range cc.EncodingStats() {
		if st.PageType.String() != "DATA_PAGE" {
			continue
		}
		switch st.Encoding {
		case parquet.Encodings.Plain:
			plain = true
		case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
			dict = true
		}
	}
	if !dict || !plain {
		t.Fatalf("column %s: page encodings %+v, want dictionary and plain pages", column, cc.EncodingStats())
	}
}

// TestScanErrors: a missing or mistyped column, a callback's error, a file
// of another size than the snapshot says.
func TestScanErrors(t *testing.T) {
	b, err := objstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, _ := newLake(t, b, lake.Options{RowGroupRows: 500})
	s := write(t, l, 1, 20)
	ctx := ctxT(t)
	nop := func(*lake.Block) error { return nil }
	for name, cols := range map[string]lake.ScanColumns{
		"missing":    {Strings: []string{"nope"}},
		"mistyped":   {Strings: []string{"qh_index"}},
		"not int32":  {Int32s: []string{"power_mw"}},
		"twice":      {Strings: []string{"kind"}, Float64s: []string{"kind"}},
		"not double": {Float64s: []string{"ts_utc"}},
	} {
		if err := l.Scan(ctx, s, cols, nop); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("%s: Scan = %v, want Invalid", name, err)
		}
	}
	stop := errors.New("stop")
	calls := 0
	err = l.Scan(ctx, s, aggColumns, func(*lake.Block) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("Scan = %v after %d calls, want the callback's error after 1", err, calls)
	}
	cctx, cancel := context.WithCancel(ctx)
	calls = 0
	err = l.Scan(cctx, s, aggColumns, func(*lake.Block) error { calls++; cancel(); return nil })
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("Scan cancelled in the first block = %v after %d calls, want context.Canceled after 1", err, calls)
	}
	empty := write(t, l, 2, 0)
	calls = 0
	if err := l.Scan(ctx, empty, aggColumns, func(*lake.Block) error { calls++; return nil }); err != nil || calls != 0 {
		t.Errorf("Scan of a snapshot without rows = %v after %d calls", err, calls)
	}
	bad := s
	bad.Files = append([]lake.FileInfo(nil), s.Files...)
	bad.Files[0].Bytes++
	if err := l.Scan(ctx, bad, aggColumns, nop); pipeline.KindOf(err) != pipeline.Internal {
		t.Errorf("Scan of a file of another size = %v, want Internal", err)
	}
}

// withPlainStrings is schema with strings in place of string dictionaries.
func withPlainStrings(schema *arrow.Schema) *arrow.Schema {
	fields := schema.Fields()
	for i, f := range fields {
		if _, ok := f.Type.(*arrow.DictionaryType); ok {
			fields[i].Type = arrow.BinaryTypes.String
		}
	}
	return arrow.NewSchema(fields, nil)
}

// plainStringsOf is rec with its dictionary columns as plain strings.
func plainStringsOf(rec arrow.RecordBatch, schema *arrow.Schema) arrow.RecordBatch {
	cols := make([]arrow.Array, rec.NumCols())
	for c, col := range rec.Columns() {
		d, ok := col.(*array.Dictionary)
		if !ok {
			col.Retain()
			cols[c] = col
			continue
		}
		sb := array.NewStringBuilder(memory.NewGoAllocator())
		values := d.Dictionary().(*array.String)
		for i := range d.Len() {
			sb.Append(values.Value(d.GetValueIndex(i)))
		}
		cols[c] = sb.NewArray()
		sb.Release()
	}
	out := array.NewRecordBatch(schema, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

// BenchmarkScan is the quick loop of the aggregate stage's read: a
// forecast_malo snapshot of SCHEDBRIDGE_BENCH_LAKE_LOCATIONS locations
// (default 100,000: 9.6 million rows) written once by the lake's writer,
// then per iteration Scan of the stage's columns into a position.Aggregator
// and DuckDB's aggregation to totals per portfolio, control area, kind and
// quarter-hour over the same files. It reports scan-vs-duckdb, the ratio of
// the two times measured in the same run.
func BenchmarkScan(b *testing.B) {
	locations := benchLocations(b, 100_000)
	d := pipeline.NewDay(2026, 6, 15)
	ctx := context.Background()
	bucket, err := objstore.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	l := lake.New(bucket, lake.Options{Catalog: catalogtest.OpenSQLite(b, bucket)})
	w, err := l.Create(ctx, fm, d, 1, pipeline.ForecastMaloSchema)
	if err != nil {
		b.Fatal(err)
	}
	for first := 0; first < locations; first += 10_000 {
		rec := forecastBatch(memory.DefaultAllocator, d, first, min(10_000, locations-first))
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
	}
	snap, err := w.Commit(ctx)
	if err != nil {
		b.Fatal(err)
	}
	duck := laketest.DuckDB(b)
	query := `select portfolio, control_area, kind, qh_index, sum(power_mw) as mw from read_parquet(` +
		laketest.Quote(filepath.Join(bucketDir(bucket), "lake", fm, "*", "*", "*.parquet")) + `) group by all`
	var ours, theirs time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		agg := position.NewAggregator(d)
		var rows int64
		err := l.Scan(ctx, snap, aggColumns, func(blk *lake.Block) error {
			rows += int64(blk.Rows)
			return agg.AddBlock(position.Block{Rows: blk.Rows,
				Portfolio: position.Runs(blk.Strings[0]), ControlArea: position.Runs(blk.Strings[1]),
				Kind: position.Runs(blk.Strings[2]), Source: position.Runs(blk.Strings[3]),
				QH: blk.Int32s[0], PowerMW: blk.Float64s[0]})
		})
		ours += time.Since(start)
		if err != nil || rows != snap.Rows {
			b.Fatalf("scanned %d of %d rows: %v", rows, snap.Rows, err)
		}
		b.StopTimer()
		r, err := duck.Query(ctx, query)
		if err != nil || len(r.Rows) == 0 {
			b.Fatalf("DuckDB: %v", err)
		}
		theirs += r.Elapsed
		b.StartTimer()
	}
	iters := float64(b.N)
	b.ReportMetric(float64(snap.Rows)*iters/ours.Seconds(), "rows/s")
	b.ReportMetric(theirs.Seconds()/iters*1000, "duckdb-ms")
	b.ReportMetric(ours.Seconds()/theirs.Seconds(), "scan-vs-duckdb")
}
