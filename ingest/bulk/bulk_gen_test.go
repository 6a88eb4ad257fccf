package bulk

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// Generators of bulk files for the tests and benchmarks.

// randomValue is a quantity as suppliers write them: mostly few decimals,
// sometimes full precision, zero, large or tiny.
func randomValue(rng *rand.Rand) float64 {
	switch rng.IntN(10) {
	case 0:
		return 0
	case 1:
		return rng.Float64() * 1000 // 17 significant digits
	case 2:
		return float64(rng.IntN(1e6)) * 1e-9
	case 3:
		return float64(rng.IntN(1e9)) * 1e6
	default:
		v, _ := strconv.ParseFloat(strconv.FormatFloat(rng.Float64()*500, 'f', rng.IntN(4), 64), 64)
		return v
	}
}

// randomMetered makes n valid entries with distinct (malo, day).
func randomMetered(rng *rand.Rand, n int) []pipeline.MeteredEntry {
	days := []pipeline.Day{ingesttest.NormalDay, ingesttest.SpringForward, ingesttest.FallBack, pipeline.NewDay(2026, 1, 1)}
	units := []pipeline.Unit{pipeline.MW, pipeline.MWH, pipeline.KWH}
	es := make([]pipeline.MeteredEntry, n)
	for i := range es {
		d := days[rng.IntN(len(days))]
		e := pipeline.MeteredEntry{Day: d, Malo: fmt.Sprintf("%011d", 10000000000+i*7), Unit: units[rng.IntN(3)]}
		e.Values = make([]float64, d.Intervals())
		for j := range e.Values {
			e.Values[j] = randomValue(rng)
		}
		es[i] = e
	}
	return es
}

func randomProfiles(rng *rand.Rand, n int) []pipeline.ProfileEntry {
	days := []pipeline.Day{ingesttest.NormalDay, ingesttest.SpringForward, ingesttest.FallBack}
	es := make([]pipeline.ProfileEntry, n)
	for i := range es {
		d := days[i%3]
		e := pipeline.ProfileEntry{Day: d, MGA: fmt.Sprintf("MGA Nord %d ü", i/3%5), Profile: fmt.Sprintf("H%d", i/15)}
		e.ValuesKWh = make([]float64, d.Intervals())
		for j := range e.ValuesKWh {
			e.ValuesKWh[j] = randomValue(rng)
		}
		es[i] = e
	}
	return es
}

// formatValue writes a value as Python's json.dumps would (repr), which is
// what most suppliers' exports hold.
func formatValue(f float64) string { return ingest.PyFloatRepr(f) }

// meteredJSON is the API body of the entries, spaced like json.dumps.
func meteredJSON(es []pipeline.MeteredEntry, extra string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"entries": [`)
	for i, e := range es {
		if i > 0 {
			b.WriteString(",\n  ")
		}
		fmt.Fprintf(&b, `{"malo": %q, "day": "%s", "unit": %q, "values": [`, e.Malo, e.Day, e.Unit)
		for j, v := range e.Values {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(formatValue(v))
		}
		b.WriteString("]}")
	}
	b.WriteString("]" + extra + "}")
	return b.Bytes()
}

func profilesJSON(es []pipeline.ProfileEntry) []byte {
	var b bytes.Buffer
	b.WriteString(`{"validate_only": false, "entries": [`)
	for i, e := range es {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"mga": %q, "profile": %q, "day": "%s", "values_kwh": [`, e.MGA, e.Profile, e.Day)
		for j, v := range e.ValuesKWh {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString(formatValue(v))
		}
		b.WriteString("]}")
	}
	b.WriteString("]}")
	return b.Bytes()
}

// parquetStyle chooses the column types of a generated Parquet file.
type parquetStyle struct {
	dayAsString bool
	rowGroup    int64 // rows per row group; 0: 1M
	extra       bool  // an extra column that is ignored
}

// meteredParquet writes the entries with pqarrow.
func meteredParquet(tb testing.TB, es []pipeline.MeteredEntry, st parquetStyle) []byte {
	tb.Helper()
	mem := memory.NewGoAllocator()
	dayType := arrow.DataType(arrow.FixedWidthTypes.Date32)
	if st.dayAsString {
		dayType = arrow.BinaryTypes.String
	}
	fields := []arrow.Field{
		{Name: "malo", Type: arrow.BinaryTypes.String},
		{Name: "day", Type: dayType},
		{Name: "unit", Type: arrow.BinaryTypes.String},
		{Name: "values", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64)},
	}
	if st.extra {
		fields = append([]arrow.Field{{Name: "note", Type: arrow.BinaryTypes.String}}, fields...)
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	off := 0
	if st.extra {
		off = 1
	}
	for _, e := range es {
		if st.extra {
			b.Field(0).(*array.StringBuilder).Append("ignored")
		}
		b.Field(off).(*array.StringBuilder).Append(e.Malo)
		if st.dayAsString {
			b.Field(off + 1).(*array.StringBuilder).Append(e.Day.String())
		} else {
			b.Field(off + 1).(*array.Date32Builder).Append(arrow.Date32FromTime(e.Day.Start().UTC().Add(12 * 3600e9)))
		}
		b.Field(off + 2).(*array.StringBuilder).Append(string(e.Unit))
		lb := b.Field(off + 3).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Float64Builder).AppendValues(e.Values, nil)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return writeParquet(tb, rec, st.rowGroup)
}

func writeParquet(tb testing.TB, rec arrow.RecordBatch, rowGroup int64) []byte {
	tb.Helper()
	if rowGroup == 0 {
		rowGroup = 1 << 20
	}
	var out bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(rowGroup))
	w, err := pqarrow.NewFileWriter(rec.Schema(), &out, props, pqarrow.DefaultWriterProps())
	if err != nil {
		tb.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}

func gzipped(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// decode runs DecodeBulk on a file in memory.
func decode(kind BulkKind, name string, data []byte, opt BulkOptions, emit func(BulkBatch) error) (BulkResult, error) {
	in := BulkInput{Name: name, Body: bytes.NewReader(data), At: bytes.NewReader(data), Size: int64(len(data))}
	return DecodeBulk(context.Background(), kind, in, opt, emit)
}
