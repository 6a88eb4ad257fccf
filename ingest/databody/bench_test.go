package databody

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
)

// meteredBody builds a metered-data body of n entries of 96 values on
// 2026-03-28, in the shape a supplier's export has: one entry per market
// location, values with three decimals, or with all 17 significant digits when
// full is set (as Python's json.dumps writes computed floats), which takes
// neither the parser's nor the encoder's fast path.
func meteredBody(n int, full bool) []byte {
	var b bytes.Buffer
	b.Grow(n * 900)
	b.WriteString(`{"entries": [`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"malo": "%011d", "day": "2026-03-28", "unit": "KWH", "values": [`, 10000000000+i)
		for j := 0; j < 96; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			v := float64((i*96+j)%100000) * 0.731 / 7
			if full {
				b.WriteString(strconv.FormatFloat(v, 'g', 17, 64))
			} else {
				b.WriteString(strconv.FormatFloat(v, 'f', 3, 64))
			}
		}
		b.WriteString("]}")
	}
	b.WriteString(`], "validate_only": false}`)
	return b.Bytes()
}

// BenchmarkDecodeMeteredData10k measures the budget case: 10,000 entries × 96
// values (about 10 MB) decoded, validated, encoded canonically and hashed,
// which must stay well under 500 ms on two cores.
func BenchmarkDecodeMeteredData10k(b *testing.B) {
	benchmarkMetered(b, meteredBody(10000, false))
}

// BenchmarkDecodeMeteredData10kFullPrecision is the slowest realistic case.
func BenchmarkDecodeMeteredData10kFullPrecision(b *testing.B) {
	benchmarkMetered(b, meteredBody(10000, true))
}

func benchmarkMetered(b *testing.B, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeMeteredData(body, ingest.Rules{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBenchmarkBodyIsValid keeps the benchmark honest: its body must decode,
// with every value, or the benchmark would time the error path.
func TestBenchmarkBodyIsValid(t *testing.T) {
	for _, full := range []bool{false, true} {
		sub, err := DecodeMeteredData(meteredBody(100, full), ingest.Rules{})
		if err != nil || len(sub.Entries) != 100 || len(sub.Entries[99].Values) != 96 {
			t.Fatalf("full=%v: %v", full, err)
		}
	}
}
