package lake_test

import (
	"context"
	"errors"
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
	"github.com/schedbridge/schedbridge/storage/lake"
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

func testCrash(t *testing.T, b objstore.Bucket) {
	cases := []struct {
		name  string
		put   func(string) bool // Puts that fail
		move  func(int) bool    // Moves that fail
		abort bool              // give up before Commit, without a fault
		// what the crash leaves: finished temporary parts, moved parts
		tmp, run bool
	}{
		{name: "aborted while writing", abort: true, tmp: true},
		{name: "part upload fails", put: func(k string) bool { return strings.Contains(k, "/_tmp/") }},
		{name: "second move fails", move: func(n int) bool { return n == 2 }, tmp: true, run: true},
		{name: "pointer not written", put: func(k string) bool { return strings.HasSuffix(k, "/_latest") }, run: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			f := &faultyBucket{Bucket: b}
			l, _ := newLake(t, f, lake.Options{RowGroupRows: 500, PartRows: 1000})
			d := day.AddDays(i) // each case has a day of its own in the shared bucket
			first := writeDay(t, l, d, 1, 10)

			f.arm(tc.put, tc.move)
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
	// The store stamps objects with its own clock; the lake's clock is set
	// relative to that stamp so that ages are exact.
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

	f := &faultyBucket{Bucket: b}
	l, clk := newLake(t, f, lake.Options{})
	clk.Set(base)
	writeDay(t, l, day, 1, 5)
	clk.Set(base.Add(90 * time.Minute))
	second := writeDay(t, l, day, 2, 6)
	failPointer := func(k string) bool { return strings.HasSuffix(k, "/_latest") }
	crash := func(d pipeline.Day, runID int64) {
		f.arm(failPointer, nil)
		defer f.arm(nil, nil)
		w, err := l.Create(ctx, fm, d, runID, pipeline.ForecastMaloSchema)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		if err := writeDayLocs(w, d, 0, 2); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(ctx); !errors.Is(err, errInjected) {
			t.Fatalf("crashed commit: %v", err)
		}
	}
	crash(day, 3)
	crash(day.AddDays(1), 10) // a day without any published run
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

	steps := []struct {
		now     time.Duration // after base
		removed int
	}{
		{30 * time.Minute, 0}, // everything younger than an hour
		{2 * time.Hour, 4},    // 2 temporary parts, run 3, run 10; run 1 was replaced only 30 minutes ago
		{3 * time.Hour, 1},    // run 1
		{4 * time.Hour, 0},
	}
	for _, st := range steps {
		clk.Set(base.Add(st.now))
		n, err := l.Sweep(ctx, time.Hour)
		if err != nil || n != st.removed {
			t.Fatalf("Sweep at base+%s removed %d, %v; want %d", st.now, n, err, st.removed)
		}
	}
	want := append([]string{"lake/README.txt", "lake/forecast_malo/delivery_day=2026-03-29/_latest"}, fileKeys(second)...)
	want = append(want, "lake/forecast_malo/notes.txt")
	slices.Sort(want)
	if got := listKeys(t, b, "lake/"); !slices.Equal(got, want) {
		t.Errorf("after the sweeps the lake holds\n%v\nwant\n%v", got, want)
	}
	if got, err := l.Latest(ctx, fm, day); err != nil || !snapEqual(got, second) || countRows(t, l, got) != 6*92 {
		t.Errorf("Latest after the sweeps = %+v, %v", got, err)
	}
	if _, err := l.Sweep(ctx, -time.Second); pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("Sweep with a negative age: %v", err)
	}
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
		{"unknown codec", lake.New(b, lake.Options{Compression: "brotli"}), fm, day, 1, pipeline.ForecastMaloSchema},
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

	// A damaged pointer is an error, not "no snapshot".
	d := day.AddDays(40)
	key := "lake/forecast_malo/delivery_day=" + d.String() + "/_latest"
	if err := b.Put(ctx, key, strings.NewReader("{not json"), 9); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Latest(ctx, fm, d); err == nil || pipeline.KindOf(err) == pipeline.NotFound {
		t.Errorf("Latest with a damaged pointer: %v", err)
	}
	if _, err := l.Create(ctx, fm, d, 1, pipeline.ForecastMaloSchema); err == nil {
		t.Error("Create over a damaged pointer succeeded")
	}
}
