package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/schedbridge/schedbridge/pipeline"
)

// The canonical encoding of a submission is what json.Marshal makes of the
// validated pipeline values with every object's keys sorted: no whitespace,
// defaults filled in, unknown fields and validate_only left out, numbers as
// encoding/json formats a float64. It is written by hand because a metered-data
// body holds about a million numbers and encoding/json is several times slower
// at them; TestCanonicalIsSortedEncodingJSON holds the two to the same bytes.

// InputHash is the hex SHA-256 of a canonical encoding.
func InputHash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// obj writes the members of one JSON object; it only places the commas.
type Object struct {
	Buf   []byte
	count int
}

// Key writes a member's name, after a comma unless it is the first.
func (o *Object) Key(name string) {
	if o.count > 0 {
		o.Buf = append(o.Buf, ',')
	}
	o.count++
	o.Buf = append(o.Buf, '"')
	o.Buf = append(o.Buf, name...)
	o.Buf = append(o.Buf, '"', ':')
}

// Str writes a string member.
func (o *Object) Str(name, s string) {
	o.Key(name)
	o.Buf = appendJSONString(o.Buf, s)
}

// OptStr writes a string member unless s is empty, as omitempty would.
func (o *Object) OptStr(name, s string) {
	if s != "" {
		o.Str(name, s)
	}
}

// Day writes a day member as "YYYY-MM-DD".
func (o *Object) Day(name string, d pipeline.Day) {
	o.Key(name)
	o.Buf = appendDay(o.Buf, d)
}

// Floats writes a member that is an array of numbers.
func (o *Object) Floats(name string, fs []float64) {
	o.Key(name)
	o.Buf = append(o.Buf, '[')
	for i, f := range fs {
		if i > 0 {
			o.Buf = append(o.Buf, ',')
		}
		o.Buf = AppendJSONFloat(o.Buf, f)
	}
	o.Buf = append(o.Buf, ']')
}

// WriteList writes name:[...] with one object per element.
func WriteList[T any](o *Object, name string, items []T, write func(o *Object, item *T)) {
	o.Key(name)
	o.Buf = append(o.Buf, '[')
	for i := range items {
		if i > 0 {
			o.Buf = append(o.Buf, ',')
		}
		inner := Object{Buf: append(o.Buf, '{')}
		write(&inner, &items[i])
		o.Buf = append(inner.Buf, '}')
	}
	o.Buf = append(o.Buf, ']')
}

// appendJSONString appends s as encoding/json would: it copies the common
// plain ASCII string and leaves everything else, escapes included, to
// encoding/json itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s) // a string always marshals
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendDay appends "YYYY-MM-DD" as Day.MarshalText spells it.
func appendDay(b []byte, d pipeline.Day) []byte {
	y, m, dd := d.Year, int(d.Month), d.Dom
	return append(b, '"',
		byte('0'+y/1000%10), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+m/10), byte('0'+m%10), '-',
		byte('0'+dd/10), byte('0'+dd%10), '"')
}

// CanonicalBuffer sizes the output after the body, which it rarely exceeds
// by much, so that a large body is written without regrowing.
func CanonicalBuffer(bodyLen int) []byte { return make([]byte, 0, bodyLen+bodyLen/8+64) }
