package lake_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/catalog/catalogtest"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/lake/laketest"
	"github.com/schedbridge/schedbridge/storage/objstore"
)

var errInjected = errors.New("injected fault")

// faultyBucket fails chosen operations, the stand-in for a process that dies
// or a store that breaks at that point, and can hide io.ReaderAt from Get's
// readers like a store without random access.
type faultyBucket struct {
	lake.Bucket
	mu       sync.Mutex
	failPut  func(key string) bool
	failMove func(n int) bool // n counts the moves from 1
	moves    int
	plainGet bool
}

func (f *faultyBucket) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	f.mu.Lock()
	fail := f.failPut != nil && f.failPut(key)
	f.mu.Unlock()
	if fail {
		// Take a little of the body first, as an upload that breaks would.
		_, _ = io.CopyN(io.Discard, r, 100)
		return errInjected
	}
	return f.Bucket.Put(ctx, key, r, size)
}

func (f *faultyBucket) Move(ctx context.Context, src, dst string) error {
	f.mu.Lock()
	f.moves++
	fail := f.failMove != nil && f.failMove(f.moves)
	f.mu.Unlock()
	if fail {
		return errInjected
	}
	return f.Bucket.Move(ctx, src, dst)
}

func (f *faultyBucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := f.Bucket.Get(ctx, key)
	if err != nil || !f.plainGet {
		return rc, err
	}
	return struct{ io.ReadCloser }{rc}, nil
}

func (f *faultyBucket) arm(put func(string) bool, move func(int) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failPut, f.failMove, f.moves = put, move, 0
}

// writeUnpublished writes a run of locs locations whose catalog commit
// fails: its files are at their final keys, but it is not published, as a
// process that died between the two would leave it.
func writeUnpublished(t *testing.T, l *lake.Lake, cat *catalogtest.Hooked, d pipeline.Day, runID int64, locs int) {
	t.Helper()
	writeUnpublishedAs(t, l, cat, d, runID, locs, pipeline.ForecastMaloSchema)
}

// writeUnpublishedAs is writeUnpublished with the timestamps in the unit of
// schema's ts_utc, as the writer wrote them before they were microseconds.
func writeUnpublishedAs(t *testing.T, l *lake.Lake, cat *catalogtest.Hooked, d pipeline.Day, runID int64, locs int, schema *arrow.Schema) {
	t.Helper()
	ctx := ctxT(t)
	failPublish(cat, true)
	defer failPublish(cat, false)
	w, err := l.Create(ctx, fm, d, runID, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	unit := schema.Field(pipeline.FMTS).Type.(*arrow.TimestampType)
	mem := memory.NewGoAllocator()
	for loc := 0; loc < locs; loc += 3 {
		rec := forecastBatch(mem, d, loc, min(3, locs-loc))
		cols := slices.Clone(rec.Columns())
		b := array.NewTimestampBuilder(mem, unit)
		for _, v := range cols[pipeline.FMTS].(*array.Timestamp).Values() {
			b.Append(arrow.Timestamp(arrow.ConvertTimestampValue(arrow.Microsecond, unit.Unit, int64(v))))
		}
		cols[pipeline.FMTS] = b.NewArray()
		conv := array.NewRecordBatch(schema, cols, rec.NumRows())
		err := w.Write(conv)
		conv.Release()
		cols[pipeline.FMTS].Release()
		b.Release()
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit(ctx); !errors.Is(err, errInjected) {
		t.Fatalf("commit of run %d with a failing catalog: %v", runID, err)
	}
}

// failPublish makes the catalog's Publish fail (or succeed again): the
// stand-in for a process that died between moving its parts and the
// catalog's commit.
func failPublish(c *catalogtest.Hooked, fail bool) {
	if !fail {
		c.Set(nil)
		return
	}
	c.Set(func(context.Context, lake.Publication) error { return errInjected })
}

func testCrash(t *testing.T, b objstore.Bucket) {
	cases := []struct {
		name    string
		put     func(string) bool // Puts that fail
		move    func(int) bool    // Moves that fail
		publish bool              // the catalog's commit fails
		abort   bool              // give up before Commit, without a fault
		// what the crash leaves: finished temporary parts, moved parts
		tmp, run bool
	}{
		{name: "aborted while writing", abort: true, tmp: true},
		{name: "part upload fails", put: func(k string) bool { return strings.Contains(k, "/_tmp/") }},
		{name: "second move fails", move: func(n int) bool { return n == 2 }, tmp: true, run: true},
		{name: "catalog commit fails", publish: true, run: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			f := &faultyBucket{Bucket: b}
			cat := &catalogtest.Hooked{Catalog: catalogFor(t, b)}
			l, _ := newLake(t, f, lake.Options{RowGroupRows: 500, PartRows: 1000, Catalog: cat})
			d := day.AddDays(i) // each case has a day of its own in the shared bucket
			first := writeDay(t, l, d, 1, 10)

			f.arm(tc.put, tc.move)
			failPublish(cat, tc.publish)
			w, err := l.Create(ctx, fm, d, 2, pipeline.ForecastMaloSchema)
			if err != nil {
				t.Fatal(err)
			}
			err = writeDayLocs(w, d, 0, 30)
			if err == nil && !tc.abort {
				_, err = w.Commit(ctx)
			}
			w.Abort()
			if tc.abort && err != nil || !tc.abort && !errors.Is(err, errInjected) {
				t.Fatalf("crashed run: %v", err)
			}
			f.arm(nil, nil)
			failPublish(cat, false)

			got, err := l.Latest(ctx, fm, d)
			if err != nil || !snapEqual(got, first) {
				t.Fatalf("after the crash Latest = %+v, %v; want run 1 %+v", got, err, first)
			}
			tmp := listKeys(t, b, "lake/_tmp/forecast_malo/"+d.String()+"/")
			run := listKeys(t, b, "lake/forecast_malo/delivery_day="+d.String()+"/run=2/")
			if tc.tmp != (len(tmp) > 0) || tc.run != (len(run) > 0) {
				t.Errorf("the crash left temporary objects %v and run objects %v", tmp, run)
			}

			// The same run again, smaller, then the next run: both complete.
			retry := writeDay(t, l, d, 2, 12)
			if len(retry.Files) != 2 {
				t.Fatalf("retry %+v, want 2 parts", retry)
			}
			if run := listKeys(t, b, "lake/forecast_malo/delivery_day="+d.String()+"/run=2/"); !slices.Equal(run, fileKeys(retry)) {
				t.Errorf("run folder after the retry holds %v, want only %v", run, fileKeys(retry))
			}
			next := writeDay(t, l, d, 3, 20)
			got, err = l.Latest(ctx, fm, d)
			if err != nil || !snapEqual(got, next) || got.Rows != int64(20*d.Intervals()) {
				t.Fatalf("Latest after the next run = %+v, %v", got, err)
			}
			if rows := countRows(t, l, got); rows != got.Rows {
				t.Errorf("read %d rows of %d", rows, got.Rows)
			}
		})
	}
}

func fileKeys(s lake.Snapshot) []string {
	var keys []string
	for _, f := range s.Files {
		keys = append(keys, f.Key)
	}
	return keys
}

func writeDay(t *testing.T, l *lake.Lake, d pipeline.Day, runID int64, n int) lake.Snapshot {
	t.Helper()
	ctx := ctxT(t)
	w, err := l.Create(ctx, fm, d, runID, pipeline.ForecastMaloSchema)
	if err != nil {
		t.Fatalf("Create run %d: %v", runID, err)
	}
	defer w.Abort()
	if err := writeDayLocs(w, d, 0, n); err != nil {
		t.Fatalf("Write run %d: %v", runID, err)
	}
	s, err := w.Commit(ctx)
	if err != nil {
		t.Fatalf("Commit run %d: %v", runID, err)
	}
	return s
}

// writeDayLocs writes locations [first, first+n) of day d, three at a time.
func writeDayLocs(w *lake.Writer, d pipeline.Day, first, n int) error {
	for loc := first; loc < first+n; loc += 3 {
		rec := forecastBatch(memory.NewGoAllocator(), d, loc, min(3, first+n-loc))
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func countRows(t *testing.T, l *lake.Lake, s lake.Snapshot) int64 {
	t.Helper()
	var n int64
	if err := l.Read(ctxT(t), s, []string{"qh_index"}, func(rec arrow.RecordBatch) error {
		n += rec.NumRows()
		return nil
	}); err != nil {
		t.Fatalf("Read: %v", err)
	}
	return n
}

func testConflict(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	l, _ := newLake(t, b, lake.Options{})
	five := write(t, l, 5, 3)
	for _, id := range []int64{5, 4} {
		if _, err := l.Create(ctx, fm, day, id, pipeline.ForecastMaloSchema); pipeline.KindOf(err) != pipeline.Conflict {
			t.Errorf("Create run %d after run 5 was published: %v, want Conflict", id, err)
		}
	}

	// Run 6 starts, run 7 overtakes it and publishes first.
	w6, err := l.Create(ctx, fm, day, 6, pipeline.ForecastMaloSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer w6.Abort()
	writeLocs(t, w6, 0, 4)
	seven := write(t, l, 7, 5)
	if _, err := w6.Commit(ctx); pipeline.KindOf(err) != pipeline.Conflict {
		t.Fatalf("Commit of run 6 after run 7: %v, want Conflict", err)
	}
	if got, err := l.Latest(ctx, fm, day); err != nil || !snapEqual(got, seven) {
		t.Errorf("Latest = %+v, %v; want run 7", got, err)
	}
	if keys := listKeys(t, b, "lake/_tmp/"); len(keys) != 0 {
		t.Errorf("the conflicting run left %v", keys)
	}
	if keys := listKeys(t, b, "lake/forecast_malo/delivery_day=2026-03-29/run=6/"); len(keys) != 0 {
		t.Errorf("the conflicting run moved %v", keys)
	}
	if keys := listKeys(t, b, "lake/forecast_malo/delivery_day=2026-03-29/run=5/"); !slices.Equal(keys, fileKeys(five)) {
		t.Errorf("run 5 holds %v, want %v", keys, fileKeys(five))
	}

	// A committed writer takes nothing more.
	w8, err := l.Create(ctx, fm, day, 8, pipeline.ForecastMaloSchema)
	if err != nil {
		t.Fatal(err)
	}
	writeLocs(t, w8, 0, 1)
	if _, err := w8.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	w8.Abort() // no-op after Commit
	rec := forecastBatch(memory.NewGoAllocator(), day, 0, 1)
	defer rec.Release()
	if err := w8.Write(rec); pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("Write after Commit: %v", err)
	}
	if _, err := w8.Commit(ctx); pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("second Commit: %v", err)
	}
	if got, err := l.Latest(ctx, fm, day); err != nil || got.RunID != 8 || countRows(t, l, got) != 92 {
		t.Errorf("Latest after run 8 = %+v, %v", got, err)
	}
}

func testSweep(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	// The store stamps objects with the machine's clock, and iceberg-go
	// expires snapshots by it; the lake's clock is set relative to a stamp
	// so that the ages of files are exact.
	if err := b.Put(ctx, "probe", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	info, err := b.Stat(ctx, "probe")
	if err != nil {
		t.Fatal(err)
	}
	base := info.Modified.Add(time.Minute) // later than every object of this test
	if err := b.Delete(ctx, "probe"); err != nil {
		t.Fatal(err)
	}

	cat := &catalogtest.Hooked{Catalog: catalogFor(t, b)}
	l, clk := newLake(t, b, lake.Options{Catalog: cat})
	clk.Set(base)
	first := writeDay(t, l, day, 1, 5)
	clk.Set(base.Add(90 * time.Minute))
	second := writeDay(t, l, day, 2, 6)
	writeUnpublished(t, l, cat, day, 3, 2)
	writeUnpublished(t, l, cat, day.AddDays(1), 10, 2) // a day without any published run
	// The files of an unpublished run are not current.
	if got, err := l.Latest(ctx, fm, day); err != nil || !snapEqual(got, second) {
		t.Fatalf("Latest after run 3 crashed = %+v, %v; want run 2", got, err)
	}
	if got, err := l.Latest(ctx, fm, day.AddDays(1)); pipeline.KindOf(err) != pipeline.NotFound {
		t.Fatalf("Latest of a day with only a crashed run = %+v, %v; want NotFound", got, err)
	}
	// An aborted run leaves two finished temporary parts.
	parted, _ := newLake(t, b, lake.Options{PartRows: 2 * 92})
	w, err := parted.Create(ctx, fm, day, 4, pipeline.ForecastMaloSchema)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeDayLocs(w, day, 0, 5); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	// Objects that are not the lake's stay.
	for _, k := range []string{"lake/README.txt", "lake/forecast_malo/notes.txt"} {
		if err := b.Put(ctx, k, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	if tmp := listKeys(t, b, "lake/_tmp/"); len(tmp) != 2 {
		t.Fatalf("temporary objects %v, want the aborted run's two parts", tmp)
	}
	run1 := "lake/forecast_malo/delivery_day=2026-03-29/run=1/"
	// A commit that a kill or a lost race ended after it had written the
	// table's next metadata file leaves that file behind, referenced by no
	// metadata log. Other files in the folder are not the catalog's.
	tbl, err := cat.LoadTable(ctx, fm)
	if err != nil {
		t.Fatal(err)
	}
	metaDir := "lake/forecast_malo/metadata/"
	cur, _ := strings.CutPrefix(tbl.MetadataLocation(), catalogFor(t, b).URI(""))
	orphan := metaDir + "00099-2b0e4c1c-7d0a-4a8e-9e53-3f1b1c1f0a99.metadata.json"
	laketest.CopyObject(t, b, cur, orphan)
	if err := b.Put(ctx, metaDir+"notes.txt", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	// The local store: a folder that iceberg-go's expiry emptied (older
	// versions of the sweep left them behind).
	local, _ := b.(*objstore.Local)
	emptied := 0
	if local != nil {
		if err := os.MkdirAll(filepath.Join(local.Dir(), "lake", fm, "delivery_day=2026-03-27", "run=7"), 0o750); err != nil {
			t.Fatal(err)
		}
		emptied = 2 // run=7 and its day
	}

	steps := []struct {
		now   time.Duration // after base
		age   time.Duration
		swept lake.Swept
		run1  bool // run 1's files are still there
	}{
		// Everything younger than an hour stays, but the empty folders go.
		{30 * time.Minute, time.Hour, lake.Swept{Folders: emptied}, true},
		// The 2 temporary parts, run 3 and run 10 go, and the orphaned
		// metadata file. Run 1's files are older than the age by the lake's
		// clock, but the snapshot that published run 1 is not older than an
		// hour by the machine's clock: it is kept, and with it run 1's
		// files.
		{2 * time.Hour, time.Hour, lake.Swept{Parts: 2, Unpublished: 2, Metadata: 1}, true},
		// Age 0 expires every snapshot but the current one; the sweep
		// deletes run 1's file and the manifest list and manifests that only
		// the expired snapshot referenced (set below), and counts them.
		{2 * time.Hour, 0, lake.Swept{Snapshots: 1, Expired: 1}, false},
		{4 * time.Hour, time.Hour, lake.Swept{}, false},
	}
	for i, st := range steps {
		if i == 2 {
			st.swept.Metadata = len(onlyExpired(t, cat, fm))
			if st.swept.Metadata == 0 {
				t.Fatal("the expired snapshot has no manifest list or manifest of its own")
			}
		}
		clk.Set(base.Add(st.now))
		got, err := l.Sweep(ctx, st.age)
		if err != nil || got != st.swept {
			t.Fatalf("Sweep(%s) at base+%s removed %+v, %v; want %+v", st.age, st.now, got, err, st.swept)
		}
		if keys := listKeys(t, b, run1); st.run1 != slices.Equal(keys, fileKeys(first)) || !st.run1 && len(keys) > 0 {
			t.Errorf("after Sweep(%s) at base+%s run 1 holds %v; kept = %v", st.age, st.now, keys, st.run1)
		} else if st.run1 {
			// A replaced run stays readable until its snapshot expires.
			if rows := countRows(t, l, first); rows != 5*92 {
				t.Errorf("run 1 read %d rows after the sweep, want %d", rows, 5*92)
			}
		}
		if got, err := l.Latest(ctx, fm, day); err != nil || !snapEqual(got, second) || countRows(t, l, got) != 6*92 {
			t.Errorf("Latest after Sweep(%s) at base+%s = %+v, %v", st.age, st.now, got, err)
		}
		if local != nil {
			if dirs := emptyDirs(t, filepath.Join(local.Dir(), "lake")); len(dirs) > 0 {
				t.Errorf("after Sweep(%s) at base+%s the local store has the empty folders %v", st.age, st.now, dirs)
			}
		}
	}
	// What is left: the current run's files, the objects that are not the
	// lake's, and the files that the table's metadata references.
	want := append([]string{"lake/README.txt"}, fileKeys(second)...)
	want = append(want, "lake/forecast_malo/notes.txt", metaDir+"notes.txt")
	want = append(want, referenced(t, cat, fm)...)
	slices.Sort(want)
	if got := listKeys(t, b, "lake/"); !slices.Equal(got, want) {
		t.Errorf("after the sweeps the lake holds\n%v\nwant\n%v", got, want)
	}
	tbl, err = cat.LoadTable(ctx, fm)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Errorf("after the sweeps the table has %d snapshots, want the current one", n)
	}
	if _, err := l.Sweep(ctx, -time.Second); pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("Sweep with a negative age: %v", err)
	}
}

// testImportPointers: runs that the lake published with _latest pointers,
// before it had a catalog, are published in the catalog by ImportPointers
// (which Sweep calls first) and their files are kept; the pointers go.
func testImportPointers(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	cat := &catalogtest.Hooked{Catalog: catalogFor(t, b)}
	l, _ := newLake(t, b, lake.Options{PartRows: 2 * 92, Catalog: cat})
	// legacy writes a run's files to their final keys, as the old writer
	// did, and the pointer that named them; the commit fails at the
	// catalog, which the old writer did not have.
	legacy := func(d pipeline.Day, runID int64, locs int, schema *arrow.Schema) lake.Snapshot {
		t.Helper()
		writeUnpublishedAs(t, l, cat, d, runID, locs, schema)
		s := lake.Snapshot{Dataset: fm, Day: d, RunID: runID, Rows: int64(locs * d.Intervals())}
		var files []string
		for i, k := range listKeys(t, b, fmt.Sprintf("lake/forecast_malo/delivery_day=%s/run=%d/", d, runID)) {
			info, err := b.Stat(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			rows := min(int64(2*d.Intervals()), s.Rows-int64(2*i*d.Intervals()))
			s.Files = append(s.Files, lake.FileInfo{Key: k, Rows: rows, Bytes: info.Size})
			files = append(files, fmt.Sprintf(`{"key":%q,"rows":%d,"bytes":%d}`, k, rows, info.Size))
		}
		pointer := fmt.Sprintf(`{"dataset":"forecast_malo","delivery_day":%q,"run_id":%d,"files":[%s],"rows":%d,"written_at":"2026-03-28T09:00:00Z"}`,
			d.String(), runID, strings.Join(files, ","), s.Rows)
		if err := b.Put(ctx, pointerKey(d), strings.NewReader(pointer), int64(len(pointer))); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// A day that only a pointer publishes, in two parts.
	old := legacy(day, 3, 3, pipeline.ForecastMaloSchema)
	if len(old.Files) != 2 {
		t.Fatalf("legacy run %+v, want 2 parts", old)
	}
	// A day whose pointer names a run older than the catalog's.
	other := day.AddDays(1)
	stale := legacy(other, 4, 1, pipeline.ForecastMaloSchema)
	// A day written before ts_utc was in microseconds.
	fields := slices.Clone(pipeline.ForecastMaloSchema.Fields())
	fields[pipeline.FMTS].Type = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	millisDay := day.AddDays(2)
	millis := legacy(millisDay, 6, 2, arrow.NewSchema(fields, nil))
	newer := writeDay(t, l, other, 5, 2)
	for _, d := range []pipeline.Day{day, other} {
		if !exists(t, b, pointerKey(d)) {
			t.Fatalf("no pointer for %s", d)
		}
	}
	// The catalog alone says what is current: the pointer is not read.
	if got, err := l.Latest(ctx, fm, day); pipeline.KindOf(err) != pipeline.NotFound {
		t.Fatalf("Latest of a day that only a pointer names = %+v, %v; want NotFound before the import", got, err)
	}

	if _, err := l.Sweep(ctx, time.Hour); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if got, err := l.Latest(ctx, fm, day); err != nil || !snapEqual(got, old) {
		t.Fatalf("Latest after the import = %+v, %v; want the pointer's run %+v", got, err, old)
	}
	if rows := countRows(t, l, old); rows != old.Rows {
		t.Errorf("imported run read %d rows, want %d", rows, old.Rows)
	}
	if got, err := l.Latest(ctx, fm, other); err != nil || !snapEqual(got, newer) {
		t.Errorf("Latest of %s after the import = %+v, %v; want the catalog's run 5", other, got, err)
	}
	// The millisecond run is written again, in place, in microseconds: the
	// same run, rows and instants, now in the unit Iceberg reads.
	got, err := l.Latest(ctx, fm, millisDay)
	if err != nil || got.RunID != 6 || got.Rows != millis.Rows {
		t.Fatalf("Latest of the millisecond run after the import = %+v, %v; want run 6 with %d rows", got, err, millis.Rows)
	}
	ts := millisDay.QuarterStartsMicros()
	var checked int64
	if err := l.Read(ctx, got, []string{"qh_index", "ts_utc"}, func(rec arrow.RecordBatch) error {
		if unit := rec.Column(1).DataType().(*arrow.TimestampType).Unit; unit != arrow.Microsecond {
			t.Fatalf("imported ts_utc in %s, want microseconds", unit)
		}
		qh, at := rec.Column(0).(*array.Int16), rec.Column(1).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			if int64(at.Value(i)) != ts[qh.Value(i)] {
				t.Fatalf("imported row %d at %d, want %d", i, at.Value(i), ts[qh.Value(i)])
			}
			checked++
		}
		return nil
	}); err != nil || checked != millis.Rows {
		t.Errorf("read of the imported millisecond run: %d rows, %v", checked, err)
	}
	for _, d := range []pipeline.Day{day, other, millisDay} {
		if exists(t, b, pointerKey(d)) {
			t.Errorf("the pointer of %s is still there after the import", d)
		}
	}
	for _, f := range append(fileKeys(old), fileKeys(stale)...) {
		if !exists(t, b, f) {
			t.Errorf("the import removed %s, which is younger than the sweep's age", f)
		}
	}
	if n, err := l.ImportPointers(ctx); err != nil || n != 0 {
		t.Errorf("second import published %d runs, %v; want none", n, err)
	}
	// A newer run replaces the imported one as any run does.
	if s := writeDay(t, l, day, 6, 1); s.RunID != 6 {
		t.Fatalf("run after the import: %+v", s)
	}
	if got, err := l.Latest(ctx, fm, day); err != nil || got.RunID != 6 {
		t.Errorf("Latest after run 6 = %+v, %v", got, err)
	}

	// A damaged pointer stops the import, and the sweep, with an error, and
	// stays for a person to look at: its run is not silently dropped.
	d := day.AddDays(40)
	if err := b.Put(ctx, pointerKey(d), strings.NewReader("{not json"), 9); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ImportPointers(ctx); err == nil {
		t.Error("ImportPointers with a damaged pointer succeeded")
	}
	if _, err := l.Sweep(ctx, time.Hour); err == nil {
		t.Error("Sweep with a damaged pointer succeeded")
	}
	if !exists(t, b, pointerKey(d)) {
		t.Error("the damaged pointer was removed")
	}
	if _, err := l.Latest(ctx, fm, d); pipeline.KindOf(err) != pipeline.NotFound {
		t.Errorf("Latest of the damaged pointer's day: %v, want NotFound", err)
	}
}

// pointerKey is where the lake kept a day's _latest pointer before it had
// a catalog.
func pointerKey(d pipeline.Day) string {
	return "lake/forecast_malo/delivery_day=" + d.String() + "/_latest"
}

func exists(t *testing.T, b lake.Bucket, key string) bool {
	t.Helper()
	_, err := b.Stat(ctxT(t), key)
	if err != nil && pipeline.KindOf(err) != pipeline.NotFound {
		t.Fatal(err)
	}
	return err == nil
}

func testSpool(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	missing := filepath.Join(t.TempDir(), "missing")
	direct, _ := newLake(t, b, lake.Options{PartRows: 1000, SpoolDir: missing})
	s := write(t, direct, 1, 25)
	if len(s.Files) != 3 {
		t.Fatalf("snapshot %+v, want 3 parts", s)
	}
	// The stores' readers have random access: no spool file is needed.
	checkAll(t, direct, s, 25)

	plain := &faultyBucket{Bucket: b, plainGet: true}
	noSpool, _ := newLake(t, plain, lake.Options{SpoolDir: missing})
	if err := noSpool.Read(ctx, s, nil, func(arrow.RecordBatch) error { return nil }); err == nil {
		t.Fatal("a stream without ReaderAt was read without a spool directory")
	}
	spool := t.TempDir()
	spooled, _ := newLake(t, plain, lake.Options{SpoolDir: spool})
	checkAll(t, spooled, s, 25)
	if entries, err := os.ReadDir(spool); err != nil || len(entries) != 0 {
		t.Errorf("spool directory holds %v, %v", entries, err)
	}
}

func testInvalid(t *testing.T, b objstore.Bucket) {
	ctx := ctxT(t)
	l, _ := newLake(t, b, lake.Options{})
	creates := []struct {
		name    string
		l       *lake.Lake
		dataset string
		day     pipeline.Day
		runID   int64
		schema  *arrow.Schema
	}{
		{"empty dataset", l, "", day, 1, pipeline.ForecastMaloSchema},
		{"upper case", l, "Forecast", day, 1, pipeline.ForecastMaloSchema},
		{"temporary area", l, "_tmp", day, 1, pipeline.ForecastMaloSchema},
		{"slash", l, "a/b", day, 1, pipeline.ForecastMaloSchema},
		{"no day", l, fm, pipeline.Day{}, 1, pipeline.ForecastMaloSchema},
		{"run 0", l, fm, day, 0, pipeline.ForecastMaloSchema},
		{"no schema", l, fm, day, 1, nil},
		{"unknown codec", lake.New(b, lake.Options{Compression: "brotli", Catalog: catalogFor(t, b)}), fm, day, 1, pipeline.ForecastMaloSchema},
		{"nested column", l, fm, day, 1, arrow.NewSchema([]arrow.Field{{Name: "values", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64)}}, nil)},
	}
	for _, tc := range creates {
		if _, err := tc.l.Create(ctx, tc.dataset, tc.day, tc.runID, tc.schema); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("Create with %s: %v, want Invalid", tc.name, err)
		}
	}

	// A batch of another schema is refused and the writer stays usable.
	w, err := l.Create(ctx, fm, day, 1, pipeline.ForecastMaloSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), pipeline.PositionSchema)
	other := rb.NewRecordBatch()
	rb.Release()
	defer other.Release()
	if err := w.Write(other); pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("Write of a position batch: %v", err)
	}
	// A snapshot without rows has one empty part with the schema.
	s, err := w.Commit(ctx)
	if err != nil || s.Rows != 0 || len(s.Files) != 1 || s.Files[0].Rows != 0 {
		t.Fatalf("empty snapshot %+v, %v", s, err)
	}
	if n := countRows(t, l, s); n != 0 {
		t.Errorf("empty snapshot read %d rows", n)
	}
	for _, cols := range [][]string{{"nope"}, {"malo", "malo"}} {
		if err := l.Read(ctx, s, cols, func(arrow.RecordBatch) error { return nil }); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("Read of columns %v: %v, want Invalid", cols, err)
		}
	}

	// WriteAll publishes small datasets in one call.
	r1 := forecastBatch(memory.NewGoAllocator(), day, 0, 2)
	r2 := forecastBatch(memory.NewGoAllocator(), day, 2, 3)
	defer r1.Release()
	defer r2.Release()
	all, err := lake.WriteAll(ctx, l, fm, day, 2, pipeline.ForecastMaloSchema, r1, r2)
	if err != nil || all.Rows != 5*92 {
		t.Fatalf("WriteAll = %+v, %v", all, err)
	}
	checkAll(t, l, all, 5)

	// A lake without a catalog cannot say what is published.
	bare := lake.New(b, lake.Options{})
	if _, err := bare.Latest(ctx, fm, day); err == nil || pipeline.KindOf(err) == pipeline.NotFound {
		t.Errorf("Latest without a catalog: %v, want an error other than NotFound", err)
	}
	if _, err := bare.Sweep(ctx, time.Hour); err == nil {
		t.Error("Sweep without a catalog succeeded")
	}
}
