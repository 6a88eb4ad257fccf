package sqldb

import (
	"math"
	"slices"
	"testing"
)

// TestSeriesRoundTrip checks that every series comes back bit for bit from
// its stored form, that the form is the decimal one exactly where a scale
// up to maxSeriesScale holds every value, and the stored size of typical
// series.
func TestSeriesRoundTrip(t *testing.T) {
	// A variable, so that the sum is taken in doubles at run time: Go adds
	// constants exactly, and 0.1 + 0.2 would be 0.3.
	tenth := 0.1
	smooth := make([]float64, 96)
	for i := range smooth {
		smooth[i] = 1250.125 + float64(i%7)*0.25
	}
	thirds := make([]float64, 96)
	for i := range thirds {
		thirds[i] = float64(i) / 3
	}
	for _, tc := range []struct {
		name  string
		vals  []float64
		form  byte
		scale byte
		size  int // stored bytes; 0 leaves it unchecked
	}{
		{"empty", nil, seriesDecimal, 0, 3},
		{"integers", []float64{0, 1, 2, 3, -4}, seriesDecimal, 0, 8},
		{"kWh with three places", []float64{0.25, 4999.999, 0.001, 1234.5}, seriesDecimal, 3, 0},
		{"MW with six places", []float64{0.000001, 12.5, -3.141592}, seriesDecimal, 6, 0},
		{"nine places", []float64{1e-9, 0.123456789}, seriesDecimal, 9, 0},
		{"ten places fall back", []float64{1e-10}, seriesRaw, 0, 9},
		{"0.1+0.2 is no short decimal", []float64{tenth + 0.2}, seriesRaw, 0, 9},
		{"thirds", thirds, seriesRaw, 0, 1 + 8*96},
		{"smallest denormal", []float64{math.SmallestNonzeroFloat64}, seriesRaw, 0, 9},
		{"largest double", []float64{math.MaxFloat64}, seriesRaw, 0, 9},
		{"2^53 is too large for the decimal form", []float64{1 << 53}, seriesRaw, 0, 9},
		{"just below 2^53", []float64{1<<53 - 1}, seriesDecimal, 0, 0},
		{"negative and mixed scale", []float64{-7, 0.5, -0.05, 100}, seriesDecimal, 2, 0},
		// A smooth day of 96 values with three places: the first value
		// takes 4 bytes, and each difference after it at most 2.
		{"smooth day", smooth, seriesDecimal, 3, 3 + 4 + 95*2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := appendSeries([]byte("prefix"), tc.vals)
			if string(b[:6]) != "prefix" {
				t.Fatalf("appendSeries overwrote the buffer's start")
			}
			b = b[6:]
			if b[0] != tc.form || (tc.form == seriesDecimal && b[1] != tc.scale) {
				t.Errorf("form %d scale %d, want %d scale %d", b[0], b[1], tc.form, tc.scale)
			}
			if tc.size != 0 && len(b) > tc.size {
				t.Errorf("stored in %d bytes, want at most %d", len(b), tc.size)
			}
			got, err := decodeSeries(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.vals) {
				t.Fatalf("decoded %d values, want %d", len(got), len(tc.vals))
			}
			for i, v := range tc.vals {
				if math.Float64bits(got[i]) != math.Float64bits(v) {
					t.Errorf("value %d = %v (%x), want %v (%x)", i, got[i], math.Float64bits(got[i]), v, math.Float64bits(v))
				}
			}
		})
	}
}

// TestSeriesNegativeZero checks that -0 is stored as 0 in both forms, as
// appendValues does, so that it reads back as the zero the content hash saw.
func TestSeriesNegativeZero(t *testing.T) {
	for _, vals := range [][]float64{{math.Copysign(0, -1), 1}, {math.Copysign(0, -1), 1.0 / 3}} {
		got, err := decodeSeries(appendSeries(nil, vals))
		if err != nil || math.Signbit(got[0]) || got[1] != vals[1] {
			t.Errorf("%v read back as %v, %v", vals, got, err)
		}
	}
}

// TestSeriesDamaged checks that damaged stored values are reported, never
// read as other values.
func TestSeriesDamaged(t *testing.T) {
	good := appendSeries(nil, []float64{1.5, 2.25, 3})
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"unknown form", []byte{7, 0, 0}},
		{"raw not whole doubles", []byte{seriesRaw, 1, 2, 3}},
		{"scale out of range", []byte{seriesDecimal, maxSeriesScale + 1, 1, 0}},
		{"no count", []byte{seriesDecimal, 2}},
		{"count beyond the bytes", []byte{seriesDecimal, 0, 50, 2}},
		{"truncated", good[:len(good)-1]},
		{"trailing bytes", append(slices.Clone(good), 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := decodeSeries(tc.b); err == nil {
				t.Errorf("decoded %v, want an error", got)
			}
		})
	}
}

// BenchmarkSeries measures encoding and decoding a day of 96 metered values
// with three places, beside appendValues and decodeValuesInto, the raw form
// they replace (the peer).
func BenchmarkSeries(b *testing.B) {
	vals := make([]float64, 96)
	for i := range vals {
		vals[i] = float64((i*7919)%5_000_000) / 1000
	}
	packed, raw := appendSeries(nil, vals), appendValues(nil, vals)
	dst := make([]float64, 96)
	var buf []byte
	b.Run("encode/packed", func(b *testing.B) {
		for b.Loop() {
			buf = appendSeries(buf[:0], vals)
		}
		b.ReportMetric(float64(len(packed)), "bytes/day")
	})
	b.Run("encode/raw", func(b *testing.B) {
		for b.Loop() {
			buf = appendValues(buf[:0], vals)
		}
		b.ReportMetric(float64(len(raw)), "bytes/day")
	})
	b.Run("decode/packed", func(b *testing.B) {
		for b.Loop() {
			if err := decodeSeriesInto(dst, packed); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/raw", func(b *testing.B) {
		for b.Loop() {
			decodeValuesInto(dst, raw)
		}
	})
}
