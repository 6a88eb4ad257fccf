package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

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

func canonicalForecast(f *pipeline.Forecast, bodyLen int) []byte {
	o := obj{b: append(canonicalBuffer(bodyLen), '{')}
	o.day("delivery_day", f.DeliveryDay)
	o.key("malo_mapping")
	keys := make([]string, 0, len(f.MaloMapping))
	for k := range f.MaloMapping {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	m := obj{b: append(o.b, '{')}
	for _, k := range keys {
		m.str(k, string(f.MaloMapping[k]))
	}
	o.b = append(m.b, '}')
	writeList(&o, "series", f.Series, func(o *obj, s *pipeline.Series) {
		// pipeline.Series declares malo before kind; sorted, kind comes first.
		o.optStr("control_area", string(s.ControlArea))
		o.str("kind", string(s.Kind))
		o.optStr("malo", s.Malo)
		o.str("unit", string(s.Unit))
		o.floats("values", s.Values)
	})
	return append(o.b, '}')
}

func canonicalLocations(ls []pipeline.Location, bodyLen int) []byte {
	o := obj{b: append(canonicalBuffer(bodyLen), '{')}
	writeList(&o, "locations", ls, writeLocation)
	return append(o.b, '}')
}

// writeLocation writes the members of one master-data location; the bulk
// decoder of master-data CSV files streams the same bytes into its hash.
func writeLocation(o *obj, l *pipeline.Location) {
	o.str("malo", l.Malo)
	writeList(o, "slices", l.Slices, func(o *obj, s *pipeline.Slice) {
		o.key("active")
		if s.Active {
			o.b = append(o.b, "true"...)
		} else {
			o.b = append(o.b, "false"...)
		}
		if s.AnnualConsumptionKWh != nil {
			o.key("annual_consumption_kwh")
			o.b = appendJSONFloat(o.b, *s.AnnualConsumptionKWh)
		}
		o.optStr("control_area", string(s.ControlArea))
		o.optStr("dso_mp_id", s.DSOMPID)
		o.str("kind", string(s.Kind))
		o.optStr("metering_type", string(s.MeteringType))
		o.optStr("mga", s.MGA)
		o.optStr("profile", s.Profile)
		o.day("valid_from", s.ValidFrom)
		if s.ValidTo != nil {
			o.day("valid_to", *s.ValidTo)
		}
	})
}

func canonicalMetered(es []pipeline.MeteredEntry, bodyLen int) []byte {
	o := obj{b: append(canonicalBuffer(bodyLen), '{')}
	writeList(&o, "entries", es, writeMeteredEntry)
	return append(o.b, '}')
}

// writeMeteredEntry writes the members of one metered-data entry; the bulk
// decoder streams the same bytes into its hash.
func writeMeteredEntry(o *obj, e *pipeline.MeteredEntry) {
	o.day("day", e.Day)
	o.str("malo", e.Malo)
	o.str("unit", string(e.Unit))
	o.floats("values", e.Values)
}

func canonicalProfiles(es []pipeline.ProfileEntry, bodyLen int) []byte {
	o := obj{b: append(canonicalBuffer(bodyLen), '{')}
	writeList(&o, "entries", es, writeProfileEntry)
	return append(o.b, '}')
}

// writeProfileEntry writes the members of one load-profile entry.
func writeProfileEntry(o *obj, e *pipeline.ProfileEntry) {
	o.day("day", e.Day)
	o.str("mga", e.MGA)
	o.str("profile", e.Profile)
	o.floats("values_kwh", e.ValuesKWh)
}
