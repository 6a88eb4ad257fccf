package kalkulation

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Record builds the kalkulation dataset (pipeline.KalkulationSchema) from
// computed quarter-hours. The caller owns the record and releases it.
func Record(mem memory.Allocator, qs []Quarter) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, pipeline.KalkulationSchema)
	defer b.Release()
	b.Reserve(len(qs))
	dict := func(i int) *array.BinaryDictionaryBuilder { return b.Field(i).(*array.BinaryDictionaryBuilder) }
	f64 := func(i int) *array.Float64Builder { return b.Field(i).(*array.Float64Builder) }
	opt := func(i int, v *float64) {
		if v == nil {
			f64(i).AppendNull()
			return
		}
		f64(i).Append(*v)
	}
	portfolio, area, basis := dict(0), dict(2), dict(5)
	date := b.Field(1).(*array.Date32Builder)
	qh := b.Field(3).(*array.Int16Builder)
	ts := b.Field(4).(*array.TimestampBuilder)
	spotFehlt := b.Field(22).(*array.BooleanBuilder)
	rebapFehlt := b.Field(23).(*array.BooleanBuilder)
	for i := range qs {
		q := &qs[i]
		_ = portfolio.AppendString(q.Portfolio)
		date.Append(q.Day.Date32())
		_ = area.AppendString(string(q.ControlArea))
		qh.Append(int16(q.QH))
		ts.Append(arrow.Timestamp(q.TS.UnixMicro()))
		_ = basis.AppendString(string(q.Basis))
		f64(6).Append(q.BoughtMW)
		f64(7).Append(q.SoldMW)
		if q.Basis == BasisIst {
			f64(8).Append(q.IstMW)
		} else {
			f64(8).AppendNull()
		}
		f64(9).Append(q.FahrplanKaufKWh)
		f64(10).Append(q.FahrplanVerkaufKWh)
		f64(11).Append(q.KundenmengeKWh)
		f64(12).Append(q.AusgleichKWh)
		opt(13, q.SpotEURMWh)
		opt(14, q.ReBAPEURMWh)
		opt(15, q.FahrplanKaufEUR)
		opt(16, q.FahrplanVerkaufEUR)
		opt(17, q.KundenmengeSpotEUR)
		opt(18, q.AusgleichEUR)
		opt(19, q.AusgleichSpotEUR)
		opt(20, q.AusgleichMehrkosten)
		opt(21, q.GesamtkostenEUR)
		spotFehlt.Append(q.SpotFehlt)
		rebapFehlt.Append(q.ReBAPFehlt)
	}
	return b.NewRecordBatch()
}
