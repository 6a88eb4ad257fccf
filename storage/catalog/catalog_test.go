package catalog_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/catalog"
	"github.com/schedbridge/schedbridge/storage/catalog/catalogtest"
	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/lake/laketest"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

func TestMain(m *testing.M) {
	os.Exit(objtest.Main(objtest.RunFunc(func() int { return sqltest.Main(m) })))
}

// env is a lake publishing through the catalog, on one database and one
// store.
type env struct {
	db       *sqldb.DB
	bucket   objstore.Bucket
	cat      *catalog.Catalog
	lake     *lake.Lake
	clock    *clocktest.Clock
	alloc    *memory.CheckedAllocator
	localDir string // the local store's root; "" on MinIO
}

func newEnv(t *testing.T, d sqldb.Dialect, minio bool) (*env, *catalogtest.Hooked) {
	t.Helper()
	ctx := context.Background()
	e := &env{db: sqltest.Open(t, d), alloc: memory.NewCheckedAllocator(memory.NewGoAllocator()),
		// The sweep compares its clock with the objects' modification
		// times, which the stores take from the machine's clock.
		clock: clocktest.New(time.Now().UTC())}
	t.Cleanup(func() { e.alloc.AssertSize(t, 0) })
	var err error
	if minio {
		e.bucket, err = objstore.NewS3(ctx, objtest.MinIO(t))
	} else {
		e.localDir = filepath.Join(t.TempDir(), "bucket")
		e.bucket, err = objstore.NewLocal(e.localDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	e.cat = catalogtest.Open(t, e.db, e.bucket)
	p := &catalogtest.Hooked{Catalog: e.cat}
	e.lake = lake.New(e.bucket, lake.Options{Catalog: p, Alloc: e.alloc, Now: e.clock.Now, SpoolDir: t.TempDir()})
	return e, p
}

// positionRecord is a day of position_control_area rows: per control area,
// every quarter-hour has net_mw = base + q/4, so that the area's energy is
// known.
func positionRecord(mem memory.Allocator, day pipeline.Day, base map[string]float64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, pipeline.PositionSchema)
	defer b.Release()
	ts := day.QuarterStartsMicros()
	for _, area := range slices.Sorted(maps.Keys(base)) {
		for q := range day.Intervals() {
			v := base[area] + float64(q)/4
			b.Field(0).(*array.BinaryDictionaryBuilder).AppendString("acme")
			b.Field(1).(*array.Date32Builder).Append(day.Date32())
			b.Field(2).(*array.BinaryDictionaryBuilder).AppendString(area)
			b.Field(3).(*array.Int16Builder).Append(int16(q))
			b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(ts[q]))
			b.Field(5).(*array.Float64Builder).Append(v)
			b.Field(6).(*array.Float64Builder).Append(0)
			b.Field(7).(*array.Float64Builder).Append(v)
			b.Field(8).(*array.BinaryDictionaryBuilder).AppendString("generated")
		}
	}
	return b.NewRecordBatch()
}

// mwh is the energy of an area of positionRecord: sum over q of
// (base + q/4) MW for a quarter of an hour.
func mwh(day pipeline.Day, base float64) float64 {
	n := float64(day.Intervals())
	return (base*n + (n-1)*n/8) / 4
}

func (e *env) publish(t *testing.T, day pipeline.Day, run int64, base map[string]float64) (lake.Snapshot, error) {
	t.Helper()
	rec := positionRecord(e.alloc, day, base)
	defer rec.Release()
	return lake.WriteAll(context.Background(), e.lake, pipeline.DatasetPositionControlArea, day, run, pipeline.PositionSchema, rec)
}

// threeRuns is what publishRuns publishes: per control area the base of
// positionRecord's values, of run 1 and 3 for day and of run 2 for next.
var threeRuns = struct {
	day, next        pipeline.Day
	run1, run2, run3 map[string]float64
}{pipeline.NewDay(2026, time.November, 24), pipeline.NewDay(2026, time.October, 25),
	map[string]float64{"TenneT": 10, "Amprion": 20},
	map[string]float64{"TenneT": 11.5, "Amprion": 2, "50Hertz": 7},
	map[string]float64{"TransnetBW": 3}}

// publishRuns publishes run 1 (threeRuns.run1) and then run 3 (run2) of
// threeRuns.day, and run 2 (run3) of threeRuns.next.
func (e *env) publishRuns(t *testing.T) {
	t.Helper()
	r := threeRuns
	for _, p := range []struct {
		day  pipeline.Day
		run  int64
		base map[string]float64
	}{{r.day, 1, r.run1}, {r.next, 2, r.run3}, {r.day, 3, r.run2}} {
		if _, err := e.publish(t, p.day, p.run, p.base); err != nil {
			t.Fatalf("publish run %d: %v", p.run, err)
		}
	}
}

// scanRows reads the day through iceberg-go's own scan (of the current
// snapshot, or of snapshot id when it is not 0) and checks that it gives
// exactly the rows positionRecord wrote for base: every control area's
// quarter-hours once, each with its value and its UTC start.
func (e *env) scanRows(t *testing.T, day pipeline.Day, id int64, base map[string]float64) {
	t.Helper()
	ctx := context.Background()
	tbl := e.table(t)
	opts := []table.ScanOption{table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("delivery_day"), iceberg.Date(day.Date32())))}
	if id != 0 {
		opts = append(opts, table.WithSnapshotID(id))
	}
	at, err := tbl.Scan(opts...).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	ts := day.QuarterStartsMicros()
	seen := map[string]bool{}
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(name string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
		area, qh := col("control_area"), col("qh_index").(*array.Int32)
		net, start := col("net_mw").(*array.Float64), col("ts_utc").(*array.Timestamp)
		days := col("delivery_day").(*array.Date32)
		for i := range int(rec.NumRows()) {
			a, q := area.ValueStr(i), int(qh.Value(i))
			b, ok := base[a]
			key := fmt.Sprintf("%s/%d", a, q)
			switch {
			case !ok || q < 0 || q >= day.Intervals() || seen[key]:
				t.Errorf("snapshot %d, %s: unexpected or repeated row %s", id, day, key)
			case net.Value(i) != b+float64(q)/4 || int64(start.Value(i)) != ts[q] || days.Value(i) != day.Date32():
				t.Errorf("snapshot %d, %s: row %s = %v MW at %d on %v, want %v MW at %d", id, day, key,
					net.Value(i), start.Value(i), days.Value(i), b+float64(q)/4, ts[q])
			}
			seen[key] = true
		}
	}
	if want := len(base) * day.Intervals(); len(seen) != want {
		t.Errorf("snapshot %d, %s: %d rows, want %d", id, day, len(seen), want)
	}
}

func (e *env) table(t *testing.T) *table.Table {
	t.Helper()
	tbl, err := e.cat.LoadTable(context.Background(), pipeline.DatasetPositionControlArea)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// snapshotOf finds the snapshot that published run for day.
func snapshotOf(t *testing.T, tbl *table.Table, day pipeline.Day, run int64) table.Snapshot {
	t.Helper()
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[catalog.PropRunID] == strconv.FormatInt(run, 10) &&
			s.Summary.Properties[catalog.PropDay] == day.String() {
			return s
		}
	}
	t.Fatalf("no snapshot of run %d for %s", run, day)
	return table.Snapshot{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func checkTotals(t *testing.T, what string, got map[string]float64, day pipeline.Day, base map[string]float64) {
	t.Helper()
	if len(got) != len(base) {
		t.Errorf("%s: areas %v, want %v", what, got, base)
	}
	for area, b := range base {
		if !near(got[area], mwh(day, b)) {
			t.Errorf("%s: %s = %v MWh, want %v", what, area, got[area], mwh(day, b))
		}
	}
}

// TestPublishReplacesTheDay is the catalog's contract on every database and
// store: one snapshot per published run with the run and stage in its
// summary, a re-run replaces only its day, the previous run stays readable
// by time travel, an older run cannot replace a newer one, a failed commit
// leaves the previous run current, and the sweep expires old snapshots and
// removes only what no remaining snapshot references.
func TestPublishReplacesTheDay(t *testing.T) {
	day, next, run1, run2, run3 := threeRuns.day, threeRuns.next, threeRuns.run1, threeRuns.run2, threeRuns.run3
	for _, d := range sqltest.Backends {
		for _, minio := range []bool{false, true} {
			name := string(d) + "/local"
			if minio {
				name = string(d) + "/minio"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				e, pub := newEnv(t, d, minio)
				if _, err := e.lake.Latest(ctx, pipeline.DatasetPositionControlArea, day); pipeline.KindOf(err) != pipeline.NotFound {
					t.Fatalf("Latest before any run: %v, want NotFound", err)
				}
				e.publishRuns(t)

				s, err := e.lake.Latest(ctx, pipeline.DatasetPositionControlArea, day)
				if err != nil || s.RunID != 3 || s.Rows != int64(3*day.Intervals()) || len(s.Files) != 1 ||
					!strings.Contains(s.Files[0].Key, "/delivery_day=2026-11-24/run=3/") {
					t.Fatalf("Latest = %+v, %v; want run 3 with %d rows", s, err, 3*day.Intervals())
				}
				if s, err := e.lake.Latest(ctx, pipeline.DatasetPositionControlArea, next); err != nil || s.RunID != 2 {
					t.Fatalf("Latest of %s = %+v, %v; want run 2", next, s, err)
				}

				tbl := e.table(t)
				if n := len(tbl.Metadata().Snapshots()); n != 3 {
					t.Errorf("%d snapshots, want one per published run (3)", n)
				}
				cur := tbl.CurrentSnapshot()
				if got := cur.Summary.Properties; got[catalog.PropRunID] != "3" || got[catalog.PropStage] != "aggregate" ||
					got[catalog.PropDay] != "2026-11-24" || cur.Summary.Operation != table.OpOverwrite {
					t.Errorf("current snapshot summary %v (%s), want run 3 of aggregate for 2026-11-24, an overwrite", got, cur.Summary.Operation)
				}
				spec := tbl.Spec()
				var fields []string
				for _, f := range spec.Fields() {
					fields = append(fields, f.Transform.String()+"("+f.Name+")")
				}
				if !slices.Equal(fields, []string{"identity(delivery_day)"}) {
					t.Errorf("partition spec %v, want identity(delivery_day)", fields)
				}

				e.scanRows(t, day, 0, run2)
				e.scanRows(t, next, 0, run3)
				old := snapshotOf(t, tbl, day, 1)
				e.scanRows(t, day, old.SnapshotID, run1) // time travel

				if _, err := e.publish(t, day, 2, run1); pipeline.KindOf(err) != pipeline.Conflict {
					t.Errorf("publishing run 2 over run 3: %v, want Conflict", err)
				}
				pub.Set(func(context.Context, lake.Publication) error {
					return fmt.Errorf("process died before the catalog commit")
				})
				if _, err := e.publish(t, day, 4, run1); err == nil {
					t.Fatal("publish with a failing commit succeeded")
				}
				pub.Set(nil)
				if s, err := e.lake.Latest(ctx, pipeline.DatasetPositionControlArea, day); err != nil || s.RunID != 3 {
					t.Errorf("after a failed commit Latest = run %d, %v; want run 3", s.RunID, err)
				}

				if e.localDir != "" {
					e.independentReader(t, day, next, run1, run2, run3)
				}

				// A young snapshot keeps its files; once expired, only what
				// the remaining snapshots reference stays.
				if _, err := e.lake.Sweep(ctx, time.Hour); err != nil {
					t.Fatal(err)
				}
				if !e.exists(t, "lake/position_control_area/delivery_day=2026-11-24/run=1/part-00000.parquet") {
					t.Error("the sweep removed run 1, which an unexpired snapshot references")
				}
				if !e.exists(t, "lake/position_control_area/delivery_day=2026-11-24/run=4/part-00000.parquet") {
					t.Error("the sweep removed run 4's files before they were older than the sweep's age")
				}
				e.clock.Add(2 * time.Minute)
				if _, err := e.lake.Sweep(ctx, time.Minute); err != nil {
					t.Fatal(err)
				}
				if _, err := e.lake.Sweep(ctx, 0); err != nil {
					t.Fatal(err)
				}
				for key, want := range map[string]bool{
					"lake/position_control_area/delivery_day=2026-11-24/run=1/part-00000.parquet": false,
					"lake/position_control_area/delivery_day=2026-11-24/run=3/part-00000.parquet": true,
					"lake/position_control_area/delivery_day=2026-10-25/run=2/part-00000.parquet": true,
					"lake/position_control_area/delivery_day=2026-11-24/run=4/part-00000.parquet": false,
				} {
					if got := e.exists(t, key); got != want {
						t.Errorf("after expiry: %s exists = %v, want %v", key, got, want)
					}
				}
				tbl = e.table(t)
				if n := len(tbl.Metadata().Snapshots()); n != 1 {
					t.Errorf("after expiry: %d snapshots, want the current one", n)
				}
				e.scanRows(t, day, 0, run2)
				e.scanRows(t, next, 0, run3)
			})
		}
	}
}

func (e *env) exists(t *testing.T, key string) bool {
	t.Helper()
	_, err := e.bucket.Stat(context.Background(), key)
	if err != nil && pipeline.KindOf(err) != pipeline.NotFound {
		t.Fatal(err)
	}
	return err == nil
}

// independentReader checks the table without iceberg-go: the metadata
// location from the catalog's JDBC-layout table, the live files of the
// current and the previous snapshot from the Avro manifests (npm avsc), and
// their rows with DuckDB over exactly those files.
func (e *env) independentReader(t *testing.T, day, next pipeline.Day, run1, run2, run3 map[string]float64) {
	t.Helper()
	ctx := context.Background()
	var loc string
	err := e.db.SQL().QueryRowContext(ctx, `SELECT metadata_location FROM iceberg_tables
		WHERE catalog_name = 'schedbridge' AND table_namespace = 'schedbridge' AND table_name = 'position_control_area'`).Scan(&loc)
	if err != nil {
		t.Fatalf("catalog row in the JDBC layout: %v", err)
	}
	path, ok := strings.CutPrefix(loc, "file://")
	if !ok {
		t.Fatalf("metadata location %s is not a local file", loc)
	}
	duck := laketest.DuckDB(t)
	check := func(what, snapshot string, want map[pipeline.Day]map[string]float64, wantRun map[pipeline.Day]string) *laketest.IcebergSnapshot {
		s, err := duck.IcebergFiles(ctx, path, snapshot)
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, f := range s.Files {
			files = append(files, laketest.Quote(f.LocalPath()))
		}
		for d, base := range want {
			for _, f := range s.Files {
				if strings.Contains(f.Path, "delivery_day="+d.String()+"/") && !strings.Contains(f.Path, "/run="+wantRun[d]+"/") {
					t.Errorf("%s: live file %s is not of run %s", what, f.Path, wantRun[d])
				}
			}
			r, err := duck.Query(ctx, fmt.Sprintf(`select control_area, sum(net_mw) / 4 as mwh, count(*) as n
				from read_parquet([%s]) where delivery_day = date '%s' group by 1 order by 1`, strings.Join(files, ", "), d))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for i := range r.Rows {
				v, err := r.Float(i, "mwh")
				if err != nil {
					t.Fatal(err)
				}
				got[r.String(i, "control_area")] = v
			}
			checkTotals(t, what+" with DuckDB, "+d.String(), got, d, base)
		}
		return s
	}
	cur := check("current snapshot", "", map[pipeline.Day]map[string]float64{day: run2, next: run3},
		map[pipeline.Day]string{day: "3", next: "2"})
	if cur.Summary[catalog.PropRunID] != "3" || cur.Summary[catalog.PropStage] != "aggregate" {
		t.Errorf("current snapshot's summary %v, want run 3 of aggregate", cur.Summary)
	}
	var records int64
	for _, f := range cur.Files {
		records += f.Records
	}
	if records != int64(3*day.Intervals()+next.Intervals()) {
		t.Errorf("current snapshot: manifests count %d records, want %d", records, 3*day.Intervals()+next.Intervals())
	}
	old := snapshotOf(t, e.table(t), day, 1)
	check("run 1's snapshot", strconv.FormatInt(old.SnapshotID, 10),
		map[pipeline.Day]map[string]float64{day: run1}, map[pipeline.Day]string{day: "1"})
}

// TestEmptyRun: a run without rows (a portfolio without locations) writes
// one empty file, which has no statistics to give its partition; it is still
// the day's current run, and a later run replaces it.
func TestEmptyRun(t *testing.T) {
	day := pipeline.NewDay(2026, time.March, 29)
	for _, c := range []struct {
		d     sqldb.Dialect
		minio bool
	}{{sqldb.SQLite, false}, {sqldb.Postgres, true}} {
		t.Run(string(c.d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e, _ := newEnv(t, c.d, c.minio)
			if _, err := e.publish(t, day, 1, nil); err != nil {
				t.Fatal(err)
			}
			s, err := e.lake.Latest(ctx, pipeline.DatasetPositionControlArea, day)
			if err != nil || s.RunID != 1 || s.Rows != 0 || len(s.Files) != 1 {
				t.Fatalf("Latest after an empty run = %+v, %v; want run 1 with one empty file", s, err)
			}
			base := map[string]float64{"TenneT": 4}
			if _, err := e.publish(t, day, 2, base); err != nil {
				t.Fatal(err)
			}
			s, err = e.lake.Latest(ctx, pipeline.DatasetPositionControlArea, day)
			if err != nil || s.RunID != 2 || s.Rows != int64(day.Intervals()) || len(s.Files) != 1 {
				t.Fatalf("Latest after run 2 = %+v, %v", s, err)
			}
			e.scanRows(t, day, 0, base)
		})
	}
}

// TestConcurrentPublishers: replicas publishing different days of one table
// at the same moment all land; the catalog's optimistic commit makes the
// losers retry from a fresh load, and no day is lost.
func TestConcurrentPublishers(t *testing.T) {
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e, _ := newEnv(t, d, false)
			// A second replica: its own catalog and lake on the same
			// database and store.
			other := catalogtest.Open(t, e.db, e.bucket)
			lakes := []*lake.Lake{e.lake, lake.New(e.bucket, lake.Options{Catalog: other, Alloc: e.alloc, Now: e.clock.Now, SpoolDir: t.TempDir()})}
			// The table exists before the race, as it does after the first run.
			first := pipeline.NewDay(2026, time.November, 1)
			if _, err := e.publish(t, first, 1, map[string]float64{"TenneT": 1}); err != nil {
				t.Fatal(err)
			}
			errs := make(chan error, 8)
			for i := range 8 {
				go func() {
					day := first.AddDays(1 + i)
					rec := positionRecord(e.alloc, day, map[string]float64{"Amprion": float64(i)})
					defer rec.Release()
					_, err := lake.WriteAll(ctx, lakes[i%2], pipeline.DatasetPositionControlArea, day, int64(10+i), pipeline.PositionSchema, rec)
					errs <- err
				}()
			}
			for range 8 {
				if err := <-errs; err != nil {
					t.Errorf("concurrent publish: %v", err)
				}
			}
			for i := range 8 {
				day := first.AddDays(1 + i)
				if s, err := e.lake.Latest(ctx, pipeline.DatasetPositionControlArea, day); err != nil || s.RunID != int64(10+i) {
					t.Errorf("%s: Latest = run %d, %v; want run %d", day, s.RunID, err, 10+i)
				}
			}
			if s, err := e.lake.Latest(ctx, pipeline.DatasetPositionControlArea, first); err != nil || s.RunID != 1 {
				t.Errorf("the first day after the race: run %d, %v", s.RunID, err)
			}
		})
	}
}
