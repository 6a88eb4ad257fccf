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

// inputHash is the hex SHA-256 of a canonical encoding.
func inputHash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// obj writes the members of one JSON object; it only places the commas.
type obj struct {
	b     []byte
	count int
}

func (o *obj) key(name string) {
	if o.count > 0 {
		o.b = append(o.b, ',')
	}
	o.count++
	o.b = append(o.b, '"')
	o.b = append(o.b, name...)
	o.b = append(o.b, '"', ':')
}

func (o *obj) str(name, s string) {
	o.key(name)
	o.b = appendJSONString(o.b, s)
}

func (o *obj) optStr(name, s string) {
	if s != "" {
		o.str(name, s)
	}
}

func (o *obj) day(name string, d pipeline.Day) {
	o.key(name)
	o.b = appendDay(o.b, d)
}

func (o *obj) floats(name string, fs []float64) {
	o.key(name)
	o.b = append(o.b, '[')
	for i, f := range fs {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = appendJSONFloat(o.b, f)
	}
	o.b = append(o.b, ']')
}

// writeList writes name:[...] with one object per element.
func writeList[T any](o *obj, name string, items []T, write func(o *obj, item *T)) {
	o.key(name)
	o.b = append(o.b, '[')
	for i := range items {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		inner := obj{b: append(o.b, '{')}
		write(&inner, &items[i])
		o.b = append(inner.b, '}')
	}
	o.b = append(o.b, ']')
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

// canonicalBuffer sizes the output after the body, which it rarely exceeds
// by much, so that a large body is written without regrowing.
func canonicalBuffer(bodyLen int) []byte { return make([]byte, 0, bodyLen+bodyLen/8+64) }
