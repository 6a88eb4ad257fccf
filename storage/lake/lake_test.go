package lake_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/catalog"
	"github.com/schedbridge/schedbridge/storage/catalog/catalogtest"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
)

func TestMain(m *testing.M) { os.Exit(objtest.Main(m)) }

// day is the spring-forward day: 92 quarter-hours, so that nothing assumes 96.
var day = pipeline.NewDay(2026, 3, 29)

const fm = pipeline.DatasetForecastMalo

// backend is one object store under the suite. open also opens the
// bucket's catalog (catalogFor), so that it lives as long as the bucket.
type backend struct {
	name string
	open func(t *testing.T) objstore.Bucket
}

var backends = []backend{
	{"local", func(t *testing.T) objstore.Bucket {
		b, err := objstore.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		catalogFor(t, b)
		return b
	}},
	{"minio", func(t *testing.T) objstore.Bucket {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b, err := objstore.NewS3(ctx, objtest.MinIO(t))
		if err != nil {
			t.Fatalf("NewS3: %v", err)
		}
		catalogFor(t, b)
		return b
	}},
}

// catalogs holds the catalog of each bucket under test. Every lake on one
// bucket publishes in the same catalog, as the service's replicas do: two
// catalogs would each keep a table at the same location and expire each
// other's files.
var catalogs sync.Map // lake.Bucket (the store itself) -> *catalog.Catalog

// catalogFor returns the catalog of the store under b (a faultyBucket is
// unwrapped, since the catalog's file IO needs the store itself), opening it
// in a fresh SQLite database for t when the store has none yet.
func catalogFor(t *testing.T, b lake.Bucket) *catalog.Catalog {
	t.Helper()
	for {
		f, ok := b.(*faultyBucket)
		if !ok {
			break
		}
		b = f.Bucket
	}
	if c, ok := catalogs.Load(b); ok {
		return c.(*catalog.Catalog)
	}
	ob, ok := b.(objstore.Bucket)
	if !ok {
		t.Fatalf("no catalog for a %T", b)
	}
	c := catalogtest.OpenSQLite(t, ob)
	catalogs.Store(b, c)
	t.Cleanup(func() { catalogs.Delete(b) })
	return c
}

// TestLake runs the same suite against the directory store and a real MinIO.
func TestLake(t *testing.T) {
	suite := []struct {
		name string
		run  func(t *testing.T, b objstore.Bucket)
	}{
		{"RoundTrip", testRoundTrip},
		{"RowGroupsAndParts", testRowGroups},
		{"KeptFooters", testKeptFooters},
		{"Crash", testCrash},
		{"Conflict", testConflict},
		{"Sweep", testSweep},
		{"ImportPointers", testImportPointers},
		{"Spool", testSpool},
		{"Invalid", testInvalid},
		{"IndependentReaders", testIndependentReaders},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range suite {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, be.open(t)) })
			}
		})
	}
}

var t0 = time.Date(2026, 3, 28, 9, 0, 0, 0, time.UTC)

// newLake returns a lake on b with a checked allocator that must be empty
// when the test ends, and the clock it uses. It publishes in the store's
// catalog unless o names another.
func newLake(t *testing.T, b lake.Bucket, o lake.Options) (*lake.Lake, *clocktest.Clock) {
	t.Helper()
	if o.Catalog == nil {
		o.Catalog = catalogFor(t, b)
	}
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { alloc.AssertSize(t, 0) })
	c := clocktest.New(t0)
	o.Alloc, o.Now = alloc, c.Now
	if o.SpoolDir == "" {
		o.SpoolDir = t.TempDir()
	}
	return lake.New(b, o), c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// write publishes locations [0, n) of forecast_malo as run runID, in batches
// of the given numbers of locations (cycled), and returns the snapshot.
func write(t *testing.T, l *lake.Lake, runID int64, n int, batchLocs ...int) lake.Snapshot {
	t.Helper()
	ctx := ctxT(t)
	w, err := l.Create(ctx, fm, day, runID, pipeline.ForecastMaloSchema)
	if err != nil {
		t.Fatalf("Create run %d: %v", runID, err)
	}
	defer w.Abort()
	writeLocs(t, w, 0, n, batchLocs...)
	s, err := w.Commit(ctx)
	if err != nil {
		t.Fatalf("Commit run %d: %v", runID, err)
	}
	return s
}

// writeLocs writes locations [first, first+n) into w.
func writeLocs(t *testing.T, w *lake.Writer, first, n int, batchLocs ...int) {
	t.Helper()
	if len(batchLocs) == 0 {
		batchLocs = []int{n}
	}
	for loc, i := first, 0; loc < first+n; i++ {
		k := min(batchLocs[i%len(batchLocs)], first+n-loc)
		rec := forecastBatch(memory.NewGoAllocator(), day, loc, k)
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			t.Fatalf("Write: %v", err)
		}
		loc += k
	}
}

// checkAll reads the whole snapshot and compares every row with what
// locations [0, n) must hold; it returns the batch sizes seen.
func checkAll(t *testing.T, l *lake.Lake, s lake.Snapshot, n int) []int64 {
	t.Helper()
	nq := day.Intervals()
	var sizes []int64
	row := 0
	err := l.Read(ctxT(t), s, nil, func(rec arrow.RecordBatch) error {
		if !rec.Schema().Equal(pipeline.ForecastMaloSchema) {
			t.Fatalf("read schema\n%s\nwant\n%s", rec.Schema(), pipeline.ForecastMaloSchema)
		}
		sizes = append(sizes, rec.NumRows())
		for i := 0; i < int(rec.NumRows()); i++ {
			if got, want := rowOf(rec, i), expected(day, row/nq, row%nq); got != want {
				t.Fatalf("row %d = %+v, want %+v", row, got, want)
			}
			row++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if row != n*nq {
		t.Fatalf("read %d rows, want %d", row, n*nq)
	}
	return sizes
}

func testRoundTrip(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	l, clk := newLake(t, b, lake.Options{RowGroupRows: 1000})
	if _, err := l.Latest(ctx, fm, day); pipeline.KindOf(err) != pipeline.NotFound {
		t.Fatalf("Latest of an empty lake: %v, want NotFound", err)
	}
	clk.Set(t0.Add(time.Hour))
	// 37 locations x 92 = 3404 rows in batches of 5, 12 and 20 locations.
	s := write(t, l, 7, 37, 5, 12, 20)
	want := lake.Snapshot{Dataset: fm, Day: day, RunID: 7, Rows: 3404, WrittenAt: t0.Add(time.Hour),
		Files: []lake.FileInfo{{Key: "lake/forecast_malo/delivery_day=2026-03-29/run=7/part-00000.parquet", Rows: 3404}}}
	if len(s.Files) == 1 {
		want.Files[0].Bytes = s.Files[0].Bytes
	}
	if !snapEqual(s, want) || !s.WrittenAt.Equal(want.WrittenAt) || s.Files[0].Bytes < 1000 {
		t.Fatalf("Commit = %+v, want %+v", s, want)
	}
	info, err := b.Stat(ctx, s.Files[0].Key)
	if err != nil || info.Size != s.Files[0].Bytes {
		t.Fatalf("Stat part = %+v, %v; snapshot says %d bytes", info, err, s.Files[0].Bytes)
	}
	got, err := l.Latest(ctx, fm, day)
	if err != nil || !snapEqual(got, s) {
		t.Fatalf("Latest = %+v, %v; want %+v", got, err, s)
	}
	// Latest's WrittenAt is the lake's clock at the commit, which the
	// snapshot's summary carries.
	if !got.WrittenAt.Equal(want.WrittenAt) {
		t.Errorf("Latest's WrittenAt %s, want the lake's clock at the commit %s", got.WrittenAt, want.WrittenAt)
	}
	md := fileMeta(t, b, s.Files[0].Key)
	for g := range md.NumRowGroups() {
		for c := range md.RowGroup(g).NumColumns() {
			cc, err := md.RowGroup(g).ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			checkDictEncoded(t, s.Files[0].Key, cc)
		}
	}
	if sizes := checkAll(t, l, got, 37); !slices.Equal(sizes, []int64{1000, 1000, 1000, 404}) {
		t.Errorf("batches of %v rows, want the row groups 1000, 1000, 1000, 404", sizes)
	}
	if keys := listKeys(t, b, "lake/_tmp/"); len(keys) != 0 {
		t.Errorf("temporary objects left after commit: %v", keys)
	}

	// A projection comes in the order asked for, dictionaries included.
	var sum float64
	var rows int64
	err = l.Read(ctx, s, []string{"power_mw", "malo"}, func(rec arrow.RecordBatch) error {
		if rec.NumCols() != 2 || rec.ColumnName(0) != "power_mw" || rec.ColumnName(1) != "malo" {
			t.Fatalf("projected schema %s", rec.Schema())
		}
		if _, ok := rec.Column(1).(*array.Dictionary); !ok {
			t.Fatalf("malo read as %s, want a dictionary", rec.Column(1).DataType())
		}
		for _, v := range rec.Column(0).(*array.Float64).Float64Values() {
			sum += v
		}
		rows += rec.NumRows()
		return nil
	})
	if err != nil || rows != 3404 || sum != sumPower(0, 37, func(int) bool { return true }) {
		t.Errorf("projection: %d rows, sum %v, %v", rows, sum, err)
	}

	// An error of the callback stops the read and comes back as it is.
	stop := errors.New("enough")
	calls := 0
	err = l.Read(ctx, s, []string{"qh_index"}, func(arrow.RecordBatch) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("Read with a failing callback: %v after %d calls", err, calls)
	}
}

// snapEqual says whether a and b are the same run with the same files
// (testRoundTrip compares WrittenAt on its own).
func snapEqual(a, b lake.Snapshot) bool {
	return a.Dataset == b.Dataset && a.Day == b.Day && a.RunID == b.RunID && a.Rows == b.Rows &&
		slices.EqualFunc(a.Files, b.Files, func(x, y lake.FileInfo) bool {
			return x.Key == y.Key && x.Rows == y.Rows && x.Bytes == y.Bytes && bytes.Equal(x.Footer, y.Footer)
		})
}

func sumPower(first, n int, keep func(loc int) bool) float64 {
	var s float64
	for loc := first; loc < first+n; loc++ {
		if keep(loc) {
			for q := range day.Intervals() {
				s += powerOf(loc, q)
			}
		}
	}
	return s
}

func listKeys(t *testing.T, b lake.Bucket, prefix string) []string {
	t.Helper()
	objs, err := b.List(ctxT(t), prefix, "", 10000)
	if err != nil {
		t.Fatalf("List %s: %v", prefix, err)
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
}

// fileMeta reads the footer of a stored Parquet file.
func fileMeta(t *testing.T, b lake.Bucket, key string) *metadata.FileMetaData {
	t.Helper()
	rc, err := b.Get(ctxT(t), key)
	if err != nil {
		t.Fatalf("Get %s: %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s is no Parquet file: %v", key, err)
	}
	defer pf.Close()
	return pf.MetaData()
}

func testRowGroups(t *testing.T, b objstore.Bucket) {
	// 40 locations x 92 = 3680 rows, cut into batches of batchRows.
	cases := []struct {
		name        string
		opts        lake.Options
		batchRows   int64
		parts       [][]int64 // row-group sizes per part
		compression compress.Compression
	}{
		{"groups of 1000 from batches of 300", lake.Options{RowGroupRows: 1000}, 300,
			[][]int64{{1000, 1000, 1000, 680}}, compress.Codecs.Zstd},
		{"one large batch", lake.Options{RowGroupRows: 500}, 3680,
			[][]int64{{500, 500, 500, 500, 500, 500, 500, 180}}, compress.Codecs.Zstd},
		{"parts of two groups", lake.Options{RowGroupRows: 1000, PartRows: 2000}, 300,
			[][]int64{{1000, 1000}, {1000, 680}}, compress.Codecs.Zstd},
		{"parts between groups", lake.Options{RowGroupRows: 1000, PartRows: 1500, Compression: "snappy"}, 700,
			[][]int64{{1000, 500}, {1000, 500}, {680}}, compress.Codecs.Snappy},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			l, _ := newLake(t, b, tc.opts)
			runID := int64(i + 1)
			w, err := l.Create(ctx, fm, day, runID, pipeline.ForecastMaloSchema)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			// Every batch is cut from a batch of its own, with dictionaries
			// of its own, as the forecast stage's batches come.
			const nq, rows = 92, 40 * 92
			for off := int64(0); off < rows; off += tc.batchRows {
				end := min(off+tc.batchRows, rows)
				first, last := off/nq, (end-1)/nq
				locs := forecastBatch(memory.NewGoAllocator(), day, int(first), int(last-first+1))
				s := locs.NewSlice(off-first*nq, end-first*nq)
				locs.Release()
				err := w.Write(s)
				s.Release()
				if err != nil {
					t.Fatal(err)
				}
			}
			snap, err := w.Commit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Files) != len(tc.parts) || snap.Rows != 3680 {
				t.Fatalf("snapshot %+v, want %d parts of 3680 rows", snap, len(tc.parts))
			}
			for p, f := range snap.Files {
				md := fileMeta(t, b, f.Key)
				var groups []int64
				for g := range md.NumRowGroups() {
					rg := md.RowGroup(g)
					groups = append(groups, rg.NumRows())
					for c := range rg.NumColumns() {
						cc, err := rg.ColumnChunk(c)
						if err != nil {
							t.Fatal(err)
						}
						if cc.Compression() != tc.compression {
							t.Errorf("%s column %s: codec %s, want %s", f.Key, cc.PathInSchema(), cc.Compression(), tc.compression)
						}
						checkDictEncoded(t, f.Key, cc)
					}
				}
				if !slices.Equal(groups, tc.parts[p]) || md.NumRows != f.Rows {
					t.Errorf("%s: row groups %v (%d rows, snapshot says %d), want %v", f.Key, groups, md.NumRows, f.Rows, tc.parts[p])
				}
				if want := fmt.Sprintf("lake/forecast_malo/delivery_day=2026-03-29/run=%d/part-%05d.parquet", runID, p); f.Key != want {
					t.Errorf("part %d key %s, want %s", p, f.Key, want)
				}
			}
			checkAll(t, l, snap, 40)
		})
	}
}

// checkDictEncoded fails when a string column fell back to plain data pages:
// the batches' different dictionaries must have been merged into one.
func checkDictEncoded(t *testing.T, key string, cc *metadata.ColumnChunkMetaData) {
	t.Helper()
	if cc.Type() != parquet.Types.ByteArray {
		return
	}
	if !cc.HasDictionaryPage() {
		t.Errorf("%s column %s has no dictionary page", key, cc.PathInSchema())
	}
	for _, st := range cc.EncodingStats() {
		if st.PageType.String() == "DATA_PAGE" && st.Encoding == parquet.Encodings.Plain {
			t.Errorf("%s column %s has plain-encoded data pages: %+v", key, cc.PathInSchema(), cc.EncodingStats())
		}
	}
}

// testKeptFooters: every staged part keeps the footer its writer wrote, byte
// for byte the end of the object in the bucket (metadata, its length,
// "PAR1"), so that the commit can register it without reading it; the
// snapshot that the commit returns does not carry the footers.
func testKeptFooters(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	l, _ := newLake(t, b, lake.Options{RowGroupRows: 1000, PartRows: 1500})
	w, err := l.Create(ctx, fm, day, 1, pipeline.ForecastMaloSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	writeLocs(t, w, 0, 40, 7)
	pub, err := w.Stage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pub.Files) != 3 {
		t.Fatalf("%d parts, want 3", len(pub.Files))
	}
	for _, f := range pub.Files {
		rc, err := b.Get(ctx, f.Key)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) != f.Bytes {
			t.Fatalf("%s: %d bytes in the bucket, %d counted", f.Key, len(data), f.Bytes)
		}
		if len(f.Footer) < 12 || !bytes.HasSuffix(data, f.Footer) {
			t.Fatalf("%s: kept footer of %d bytes is not the object's end", f.Key, len(f.Footer))
		}
		// The kept bytes are exactly the footer: the metadata's length
		// plus 8, and the metadata parses to the file's row count.
		n := int(f.Footer[len(f.Footer)-8]) | int(f.Footer[len(f.Footer)-7])<<8 | int(f.Footer[len(f.Footer)-6])<<16 | int(f.Footer[len(f.Footer)-5])<<24
		if n+8 != len(f.Footer) {
			t.Fatalf("%s: footer of %d bytes for metadata of %d", f.Key, len(f.Footer), n)
		}
		md, err := metadata.NewFileMetaData(f.Footer[:n], nil)
		if err != nil {
			t.Fatal(err)
		}
		if md.NumRows != f.Rows {
			t.Fatalf("%s: footer says %d rows, the writer %d", f.Key, md.NumRows, f.Rows)
		}
	}
	for _, f := range pub.Snapshot().Files {
		if f.Footer != nil {
			t.Fatalf("the snapshot carries the footer of %s", f.Key)
		}
	}
	cat := catalogFor(t, b)
	if err := cat.Publish(ctx, pub); err != nil {
		t.Fatal(err)
	}
	got, err := l.Latest(ctx, fm, day)
	if err != nil {
		t.Fatal(err)
	}
	if !snapEqual(got, pub.Snapshot()) {
		t.Fatalf("published %+v, committed %+v", got, pub.Snapshot())
	}
}
