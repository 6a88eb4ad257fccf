package ingest

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
}

// ExactFloat converts mant × 10^e10 when one IEEE operation on exact operands
// does it (Clinger's fast path, as in strconv): both operands are exact, so the
// single rounding gives the correctly rounded result. It covers the decimals
// that metered values are written in and spares strconv's string handling.
func ExactFloat(mant uint64, e10 int) (float64, bool) {
	switch {
	case mant == 0:
		return 0, true
	case mant > 1<<53:
		return 0, false
	case e10 == 0:
		return float64(mant), true
	case e10 > 0 && e10 < len(pow10):
		return float64(mant) * pow10[e10], true
	case e10 < 0 && -e10 < len(pow10):
		return float64(mant) / pow10[-e10], true
	}
	return 0, false
}

// parseFloatSlow converts a literal that the fast path cannot. A literal
// beyond float64's range becomes ±Inf, as float() makes of it in Python, so
// that the validators report finite_number.
func parseFloatSlow(lit []byte) float64 {
	f, _ := strconv.ParseFloat(string(lit), 64)
	return f
}

// AppendJSONFloat appends f exactly as encoding/json encodes a float64, which
// is the number format of the canonical encoding.
func AppendJSONFloat(b []byte, f float64) []byte {
	if out, ok := appendShortDecimal(b, f); ok {
		return out
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// encoding/json writes e-07 as e-7.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendShortDecimal formats the common case of AppendJSONFloat several times
// faster than strconv: a value that is m / 10^k for an integer m < 10^15 and
// k <= 6. Such a decimal has at most 15 significant digits, and float64 maps
// distinct decimals of up to 15 digits to distinct values, so no shorter
// decimal rounds to f: it is exactly what strconv's shortest formatting
// produces. The check float64(m)/10^k == f proves that the decimal rounds to f,
// because both operands are exact and the division rounds once.
func appendShortDecimal(b []byte, f float64) ([]byte, bool) {
	if f < 0 || (f == 0 && math.Signbit(f)) {
		return b, false
	}
	for k := 0; k <= 6; k++ {
		scaled := f * pow10[k]
		if scaled >= 1e15 {
			return b, false
		}
		m := uint64(scaled + 0.5)
		if float64(m)/pow10[k] != f {
			continue
		}
		for k > 0 && m%10 == 0 { // cannot happen for the first k found; kept as a guard
			m /= 10
			k--
		}
		if k == 0 {
			return strconv.AppendUint(b, m, 10), true
		}
		scale := uint64(pow10[k])
		b = strconv.AppendUint(b, m/scale, 10)
		b = append(b, '.')
		fracPart := m % scale
		for d := scale / 10; d > fracPart && d > 1; d /= 10 {
			b = append(b, '0')
		}
		return strconv.AppendUint(b, fracPart, 10), true
	}
	return b, false
}

// pyNumber renders a number literal the way FastAPI echoes it as an error's
// input: Python's json module makes an int of a literal without fraction or
// exponent, keeping all its digits, and a float otherwise, which Python prints
// with repr. Keeping it a json.Number lets the API render it verbatim.
func pyNumber(lit string) json.Number {
	if !strings.ContainsAny(lit, ".eE") {
		if lit == "-0" {
			return "0"
		}
		return json.Number(lit)
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		// Python would hold inf, which FastAPI cannot even render; the
		// literal is the most useful thing to echo.
		return json.Number(lit)
	}
	return json.Number(PyFloatRepr(f))
}

// PyFloatRepr is Python's repr of a float: the shortest round-trip digits, in
// positional notation with at least one fractional digit for exponents from -4
// to 15, in scientific notation with a two-digit exponent otherwise.
func PyFloatRepr(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(sci[strings.LastIndexByte(sci, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return sci // Go also writes at least two exponent digits: 1e-05, 1e+16
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
