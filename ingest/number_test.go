package ingest

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// randomLiteral spells a number the many ways a client may: integers, short
// and long decimals, exponents of every size, leading zeros after the point.
func randomLiteral(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(4) == 0 {
		b.WriteByte('-')
	}
	switch r.IntN(3) {
	case 0:
		b.WriteByte('0')
	default:
		b.WriteByte(byte('1' + r.IntN(9)))
		for n := r.IntN(22); n > 0; n-- {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	if r.IntN(2) == 0 {
		b.WriteByte('.')
		for n := 1 + r.IntN(22); n > 0; n-- {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	if r.IntN(3) == 0 {
		b.WriteByte("eE"[r.IntN(2)])
		if s := r.IntN(3); s < 2 {
			b.WriteByte("+-"[s])
		}
		b.WriteString(strconv.Itoa(r.IntN(330)))
	}
	return b.String()
}

// TestNumberMatchesStrconv holds the parser's fast conversion to
// strconv.ParseFloat, which rounds correctly, over a million literals.
func TestNumberMatchesStrconv(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1_000_000; i++ {
		lit := randomLiteral(r)
		p := Parser{Src: []byte(lit)}
		end, got, ok := p.number(0)
		want, _ := strconv.ParseFloat(lit, 64)
		if want == 0 {
			want = 0 // the parser folds -0 into 0
		}
		if !ok || end != len(lit) || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s: got %v (end %d, ok %v), want %v", lit, got, end, ok, want)
		}
	}
}

// TestAppendJSONFloatMatchesEncodingJSON holds the canonical number format to
// encoding/json's, on decimals like metered values and on arbitrary bits.
func TestAppendJSONFloatMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	check := func(f float64) {
		want, err := json.Marshal(f)
		if err != nil {
			return // NaN and Inf never reach the encoder
		}
		if got := AppendJSONFloat(nil, f); string(got) != string(want) {
			t.Fatalf("%v (bits %x): got %s, want %s", f, math.Float64bits(f), got, want)
		}
	}
	for _, f := range []float64{0, 1, 0.1, 0.2, 0.3, 1e-6, 1e-7, 9.999999e-7, 1e15, 1e15 - 1, 1e20, 1e21, 123456789012345.6,
		0.000001, 0.0000015, 5e-324, math.MaxFloat64, 4503599627370497, 1<<53 + 1, -1.5, -0.000001} {
		check(f)
	}
	for i := 0; i < 1_000_000; i++ {
		// Decimals with up to 6 places in all magnitudes.
		k := r.IntN(7)
		m := r.Int64N(int64(math.Pow10(1 + r.IntN(16))))
		check(float64(m) / math.Pow10(k))
		check(math.Float64frombits(r.Uint64()))
		check(r.Float64() * math.Pow10(r.IntN(40)-20))
	}
}

// TestPyNumber pins how numbers are echoed as an error's input: Python's int
// keeps the literal, Python's float is printed with repr.
func TestPyNumber(t *testing.T) {
	for lit, want := range map[string]string{
		"1": "1", "-0": "0", "-1": "-1", "12345678901234567890123": "12345678901234567890123",
		"1.0": "1.0", "1.50": "1.5", "-0.0": "-0.0", "1E2": "100.0", "1e16": "1e+16", "1.5e15": "1500000000000000.0",
		"0.0001": "0.0001", "0.00001": "1e-05", "1.5e-7": "1.5e-07", "1e400": "1e400", "0.1": "0.1", "123.456e1": "1234.56",
	} {
		if got := pyNumber(lit); string(got) != want {
			t.Errorf("pyNumber(%s) = %s, want %s", lit, got, want)
		}
	}
}
