package kalkulation_test

import (
	"bytes"
	"context"
	"math"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/kalkulation"
)

// TestRecordParquet writes the example's quarter-hours, with a spot price
// taken out, as the kalkulation dataset's Parquet and reads them back: every
// row, nulls exactly where a price is missing or the basis is the schedule,
// and money columns that sum to the quarter-hours' values.
func TestRecordParquet(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := readMengen(t)
	spot := replaceOnce(t, readFile(t, "spot_smard.json"), "[1743400800000,110.45]", "[1743400800000,null]")
	_, qs := kalkulation.Compute(beispielVon, beispielBis, rows, parsePrices(t, spot, readFile(t, "rebap.csv")))

	rec := kalkulation.Record(mem, qs)
	defer rec.Release()
	if !rec.Schema().Equal(pipeline.KalkulationSchema) || int(rec.NumRows()) != len(qs) {
		t.Fatalf("record: %d rows, schema %v", rec.NumRows(), rec.Schema())
	}
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(parquet.WithAllocator(mem)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pr, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if int(tbl.NumRows()) != len(qs) {
		t.Fatalf("read back %d rows, wrote %d", tbl.NumRows(), len(qs))
	}
	// ts_utc is every quarter-hour's start, stored as Iceberg's timestamptz:
	// INT64 microseconds adjusted to UTC.
	tsIdx := tbl.Schema().FieldIndices("ts_utc")
	if len(tsIdx) != 1 {
		t.Fatalf("no column ts_utc")
	}
	lt, ok := pr.MetaData().Schema.Column(tsIdx[0]).LogicalType().(schema.TimestampLogicalType)
	if !ok || lt.TimeUnit() != schema.TimeUnitMicros || !lt.IsAdjustedToUTC() {
		t.Errorf("ts_utc logical type %v, want TIMESTAMP(MICROS, adjusted to UTC)", pr.MetaData().Schema.Column(tsIdx[0]).LogicalType())
	}
	ts := tbl.Column(tsIdx[0]).Data().Chunk(0).(*array.Timestamp)
	unit := ts.DataType().(*arrow.TimestampType).Unit
	for i, q := range qs {
		if got := ts.Value(i).ToTime(unit); !got.Equal(q.TS) {
			t.Fatalf("row %d: ts_utc %s, want %s", i, got.UTC().Format(time.RFC3339), q.TS.UTC().Format(time.RFC3339))
		}
	}
	col := func(name string) *array.Float64 {
		idx := tbl.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("no column %s", name)
		}
		return tbl.Column(idx[0]).Data().Chunk(0).(*array.Float64)
	}
	var wantSpotNull, wantIstNull int
	var wantAE float64
	for _, q := range qs {
		if q.SpotEURMWh == nil {
			wantSpotNull++
		}
		if q.Basis != kalkulation.BasisIst {
			wantIstNull++
		}
		if q.AusgleichEUR != nil {
			wantAE += *q.AusgleichEUR
		}
	}
	if n := col("spot_eur_mwh").NullN(); n != wantSpotNull || n != 8 {
		t.Errorf("spot_eur_mwh has %d nulls, want %d (the 8 quarter-hours of the missing hour)", n, wantSpotNull)
	}
	if n := col("ist_mw").NullN(); n != wantIstNull || n != 96 {
		t.Errorf("ist_mw has %d nulls, want %d (TenneT on 2025-03-31)", n, wantIstNull)
	}
	if n := col("gesamtkosten_eur").NullN(); n != 8 {
		t.Errorf("gesamtkosten_eur has %d nulls, want 8", n)
	}
	ae := col("ausgleichsenergie_eur")
	var got float64
	for i := 0; i < ae.Len(); i++ {
		if ae.IsValid(i) {
			got += ae.Value(i)
		}
	}
	if math.Abs(got-wantAE) > 1e-6 {
		t.Errorf("ausgleichsenergie_eur sums to %.6f in Parquet, %.6f computed", got, wantAE)
	}
}
