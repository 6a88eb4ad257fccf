package lake_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	xsource "github.com/xitongsys/parquet-go-source/local"
	xparquet "github.com/xitongsys/parquet-go/parquet"
	xreader "github.com/xitongsys/parquet-go/reader"

	"github.com/schedbridge/schedbridge/storage/lake"
	"github.com/schedbridge/schedbridge/storage/lake/laketest"
	"github.com/schedbridge/schedbridge/storage/objstore"
)

// testIndependentReaders checks the stored bytes with two readers that share
// no code with arrow-go: xitongsys/parquet-go and DuckDB.
func testIndependentReaders(t *testing.T, b objstore.Bucket) {
	l, _ := newLake(t, b, lake.Options{RowGroupRows: 1000, PartRows: 2000})
	s := write(t, l, 7, 37, 5, 12, 20) // 3404 rows: parts of 2000 and 1404
	if len(s.Files) != 2 {
		t.Fatalf("snapshot %+v, want 2 parts", s)
	}
	dir := mirror(t, b)
	t.Run("xitongsys", func(t *testing.T) { checkXitongsys(t, dir, s) })
	t.Run("duckdb", func(t *testing.T) { checkDuckDB(t, dir, s) })
}

// mirror copies the lake's objects into a directory, keys as paths, so that
// file-based readers see the store's bytes and layout.
func mirror(t *testing.T, b lake.Bucket) string {
	t.Helper()
	dir := t.TempDir()
	for _, k := range listKeys(t, b, "lake/") {
		rc, err := b.Get(ctxT(t), k)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(f, rc)
		rc.Close()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func checkXitongsys(t *testing.T, dir string, s lake.Snapshot) {
	nq := day.Intervals()
	row := 0
	for _, f := range s.Files {
		pf, err := xsource.NewLocalFileReader(filepath.Join(dir, filepath.FromSlash(f.Key)))
		if err != nil {
			t.Fatal(err)
		}
		defer pf.Close()
		pr, err := xreader.NewParquetColumnReader(pf, 1)
		if err != nil {
			t.Fatalf("%s: %v", f.Key, err)
		}
		n := pr.GetNumRows()
		if n != f.Rows {
			t.Fatalf("%s: %d rows, snapshot says %d", f.Key, n, f.Rows)
		}
		// The footer as written: UTC-adjusted microsecond timestamps (the
		// Parquet type of Iceberg's timestamptz) and zstd everywhere.
		for i, info := range pr.SchemaHandler.Infos {
			if info.ExName != "ts_utc" {
				continue
			}
			lt := pr.Footer.Schema[i].GetLogicalType()
			if lt == nil || !lt.IsSetTIMESTAMP() || !lt.TIMESTAMP.IsAdjustedToUTC || !lt.TIMESTAMP.Unit.IsSetMICROS() {
				t.Errorf("%s: ts_utc logical type %v, want TIMESTAMP(MICROS, adjusted to UTC)", f.Key, lt)
			}
		}
		for ri, rg := range pr.Footer.RowGroups {
			tsChecked := false
			for _, c := range rg.Columns {
				if c.MetaData.Codec != xparquet.CompressionCodec_ZSTD {
					t.Errorf("%s: column %v codec %s", f.Key, c.MetaData.PathInSchema, c.MetaData.Codec)
				}
				// xitongsys capitalizes the paths it reads (Ts_utc).
				if p := c.MetaData.PathInSchema; len(p) == 1 && strings.EqualFold(p[0], "ts_utc") {
					checkTSStatistics(t, fmt.Sprintf("%s row group %d", f.Key, ri), c.MetaData.Statistics)
					tsChecked = true
				}
			}
			if !tsChecked {
				t.Errorf("%s row group %d: no ts_utc column chunk", f.Key, ri)
			}
		}
		col := func(name string) []any {
			vals, _, _, err := pr.ReadColumnByPath(pr.SchemaHandler.GetRootExName()+"\x01"+name, n)
			if err != nil || int64(len(vals)) != n {
				t.Fatalf("%s: column %s: %d values, %v", f.Key, name, len(vals), err)
			}
			return vals
		}
		malos, areas, days, qhs, ts, power := col("malo"), col("control_area"), col("delivery_day"), col("qh_index"), col("ts_utc"), col("power_mw")
		for i := range int(n) {
			want := expected(day, row/nq, row%nq)
			got := expectedRow{
				portfolio: want.portfolio, kind: want.kind, metering: want.metering, source: want.source,
				malo: malos[i].(string), area: areas[i].(string), day: dateOf(days[i]),
				qh: int16(qhs[i].(int32)), ts: ts[i].(int64), power: power[i].(float64),
			}
			if got != want {
				t.Fatalf("%s row %d: xitongsys reads %+v, want %+v", f.Key, i, got, want)
			}
			row++
		}
	}
	if row != int(s.Rows) {
		t.Errorf("xitongsys read %d rows, want %d", row, s.Rows)
	}
}

func dateOf(v any) arrow.Date32 { return arrow.Date32(v.(int32)) }

// checkTSStatistics checks the raw footer statistics of a ts_utc column
// chunk. iceberg-go's AddFiles copies them into the manifest as the column's
// lower and upper bounds, which Iceberg engines read as microseconds since
// the epoch: they must be the first and last quarter-hour start of the day
// in that unit. Every row group here holds at least one location's whole
// day, and the day is 2026-03-29, whose local midnight is 23:00 UTC and
// whose last quarter-hour (of 92, the clocks go forward) starts at 21:45 UTC.
func checkTSStatistics(t *testing.T, where string, st *xparquet.Statistics) {
	t.Helper()
	if day.String() != "2026-03-29" {
		t.Fatalf("the expected statistics are those of 2026-03-29, the test writes %s", day)
	}
	first := time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC)
	last := time.Date(2026, 3, 29, 21, 45, 0, 0, time.UTC)
	if st == nil || len(st.MinValue) != 8 || len(st.MaxValue) != 8 {
		t.Errorf("%s: ts_utc statistics %+v, want 8-byte min and max values", where, st)
		return
	}
	lo, hi := int64(binary.LittleEndian.Uint64(st.MinValue)), int64(binary.LittleEndian.Uint64(st.MaxValue))
	if lo != first.UnixMicro() || hi != last.UnixMicro() {
		t.Errorf("%s: ts_utc statistics %d..%d (%s..%s as microseconds), want %d..%d (%s..%s)", where,
			lo, hi, time.UnixMicro(lo).UTC().Format(time.RFC3339), time.UnixMicro(hi).UTC().Format(time.RFC3339),
			first.UnixMicro(), last.UnixMicro(), first.Format(time.RFC3339), last.Format(time.RFC3339))
	}
}

func checkDuckDB(t *testing.T, dir string, s lake.Snapshot) {
	ctx := ctxT(t)
	duck := laketest.DuckDB(t)
	glob := laketest.Quote(filepath.Join(dir, "lake", "forecast_malo", "*", "*", "*.parquet"))
	num := func(r *laketest.Result, row int, col string) float64 {
		t.Helper()
		v, err := r.Float(row, col)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	rs, err := duck.QueryAll(ctx,
		`select count(*) as n, sum(power_mw) as s, min(typeof(ts_utc)) as ts_type,
			min(typeof(malo)) as malo_type, epoch_ms(min(ts_utc)) as first_ms, count(distinct malo) as malos,
			strftime(timezone('UTC', min(ts_utc)), '%Y-%m-%dT%H:%M:%SZ') as first_utc,
			strftime(timezone('UTC', max(ts_utc)), '%Y-%m-%dT%H:%M:%SZ') as last_utc,
			count(*) filter (where ts_utc <> '2026-03-28 23:00:00+00'::timestamptz + qh_index * interval 15 minutes) as off_quarter
			from read_parquet(`+glob+`)`,
		`select control_area, sum(power_mw) as s from read_parquet(`+glob+`) group by control_area order by control_area`,
		`select file_name, row_group_id, min(row_group_num_rows) as n, string_agg(distinct compression, ',') as codecs
			from parquet_metadata(`+glob+`) group by all order by all`,
		`select delivery_day::varchar as d, run, typeof(run) as run_type, count(*) as n
			from read_parquet(`+glob+`, hive_partitioning = true) group by all order by all`,
		`select file_name, row_group_id, stats_min_value as lo, stats_max_value as hi
			from parquet_metadata(`+glob+`) where path_in_schema = 'malo' order by all`)
	if err != nil {
		t.Fatal(err)
	}

	r := rs[0]
	if n := num(r, 0, "n"); n != float64(s.Rows) {
		t.Errorf("DuckDB count(*) = %v, want %d", n, s.Rows)
	}
	if sum, want := num(r, 0, "s"), sumPower(0, 37, func(int) bool { return true }); sum != want {
		t.Errorf("DuckDB sum(power_mw) = %v, want %v", sum, want)
	}
	if got := r.String(0, "ts_type"); got != "TIMESTAMP WITH TIME ZONE" {
		t.Errorf("DuckDB typeof(ts_utc) = %s", got)
	}
	if got := r.String(0, "malo_type"); got != "VARCHAR" {
		t.Errorf("DuckDB typeof(malo) = %s", got)
	}
	if got := num(r, 0, "first_ms"); got != float64(day.Start().UnixMilli()) {
		t.Errorf("DuckDB min(ts_utc) = %v ms, want local midnight %d", got, day.Start().UnixMilli())
	}
	// The instants as DuckDB reads them, in UTC: the day is 2026-03-29, whose
	// local midnight is 23:00 UTC the day before and whose 92 quarter-hours
	// (the clocks go forward) end with the one starting at 21:45 UTC; every
	// row's ts_utc is its qh_index quarter-hours after the first.
	if got := r.String(0, "first_utc"); got != "2026-03-28T23:00:00Z" {
		t.Errorf("DuckDB min(ts_utc) = %s, want 2026-03-28T23:00:00Z", got)
	}
	if got := r.String(0, "last_utc"); got != "2026-03-29T21:45:00Z" {
		t.Errorf("DuckDB max(ts_utc) = %s, want 2026-03-29T21:45:00Z", got)
	}
	if got := num(r, 0, "off_quarter"); got != 0 {
		t.Errorf("DuckDB: %v rows whose ts_utc is not the start of their qh_index", got)
	}
	if got := num(r, 0, "malos"); got != 37 {
		t.Errorf("DuckDB count(distinct malo) = %v", got)
	}

	r = rs[1]
	if len(r.Rows) != len(controlAreas) {
		t.Fatalf("DuckDB found areas %v", r.Rows)
	}
	for i, area := range controlAreas { // sorted
		a := i
		want := sumPower(0, 37, func(loc int) bool { return areaOf(loc) == a })
		if r.String(i, "control_area") != area || num(r, i, "s") != want {
			t.Errorf("DuckDB row %d = %v, want %s %v", i, r.Rows[i], area, want)
		}
	}

	r = rs[2]
	var groups []string
	for i := range r.Rows {
		groups = append(groups, fmt.Sprintf("%s#%s:%s %s", filepath.Base(r.String(i, "file_name")), r.String(i, "row_group_id"), r.String(i, "n"), r.String(i, "codecs")))
	}
	want := []string{"part-00000.parquet#0:1000 ZSTD", "part-00000.parquet#1:1000 ZSTD", "part-00001.parquet#0:1000 ZSTD", "part-00001.parquet#1:404 ZSTD"}
	if !slices.Equal(groups, want) {
		t.Errorf("DuckDB parquet_metadata: %v, want %v", groups, want)
	}

	// The hive partition keys of the path become columns.
	r = rs[3]
	if len(r.Rows) != 1 || r.String(0, "d") != day.String() || r.String(0, "run") != "7" || r.String(0, "run_type") != "BIGINT" || num(r, 0, "n") != float64(s.Rows) {
		t.Errorf("DuckDB hive partitions: %v %v", r.Columns, r.Rows)
	}

	// Every row group's malo statistics are the least and greatest market
	// location it holds, not those of the batches it was cut from: they are
	// what lets DuckDB skip row groups when filtering on one malo.
	r = rs[4]
	var stats []string
	for i := range r.Rows {
		stats = append(stats, fmt.Sprintf("%s#%s:%s-%s", filepath.Base(r.String(i, "file_name")), r.String(i, "row_group_id"), r.String(i, "lo"), r.String(i, "hi")))
	}
	nq := day.Intervals()
	var wantStats []string
	for _, g := range []struct {
		file         string
		id, first, n int
	}{{"part-00000.parquet", 0, 0, 1000}, {"part-00000.parquet", 1, 1000, 1000}, {"part-00001.parquet", 0, 2000, 1000}, {"part-00001.parquet", 1, 3000, 404}} {
		wantStats = append(wantStats, fmt.Sprintf("%s#%d:%s-%s", g.file, g.id, malo(g.first/nq), malo((g.first+g.n-1)/nq)))
	}
	if !slices.Equal(stats, wantStats) {
		t.Errorf("DuckDB malo statistics: %v, want %v", stats, wantStats)
	}
}
