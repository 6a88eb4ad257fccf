package databody

import (
	"sort"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// The canonical encodings of the four data endpoints' bodies; the bulk
// decoders stream the same bytes into their hashes, entry by entry.

// CanonicalForecast is the canonical encoding of a forecast body.
func CanonicalForecast(f *pipeline.Forecast, bodyLen int) []byte {
	o := ingest.Object{Buf: append(ingest.CanonicalBuffer(bodyLen), '{')}
	o.Day("delivery_day", f.DeliveryDay)
	o.Key("malo_mapping")
	keys := make([]string, 0, len(f.MaloMapping))
	for k := range f.MaloMapping {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	m := ingest.Object{Buf: append(o.Buf, '{')}
	for _, k := range keys {
		m.Str(k, string(f.MaloMapping[k]))
	}
	o.Buf = append(m.Buf, '}')
	ingest.WriteList(&o, "series", f.Series, func(o *ingest.Object, s *pipeline.Series) {
		// pipeline.Series declares malo before kind; sorted, kind comes first.
		o.OptStr("control_area", string(s.ControlArea))
		o.Str("kind", string(s.Kind))
		o.OptStr("malo", s.Malo)
		o.Str("unit", string(s.Unit))
		o.Floats("values", s.Values)
	})
	return append(o.Buf, '}')
}

func canonicalLocations(ls []pipeline.Location, bodyLen int) []byte {
	return canonicalList("locations", ls, WriteLocation, bodyLen)
}

// canonicalList is the canonical encoding of a body whose only member is
// the list name (validate_only is left out), one object per item.
func canonicalList[T any](name string, items []T, write func(*ingest.Object, *T), bodyLen int) []byte {
	o := ingest.Object{Buf: append(ingest.CanonicalBuffer(bodyLen), '{')}
	ingest.WriteList(&o, name, items, write)
	return append(o.Buf, '}')
}

// WriteLocation writes the members of one master-data location; the bulk
// decoder of master-data CSV files streams the same bytes into its hash.
func WriteLocation(o *ingest.Object, l *pipeline.Location) {
	o.Str("malo", l.Malo)
	ingest.WriteList(o, "slices", l.Slices, func(o *ingest.Object, s *pipeline.Slice) {
		o.Key("active")
		if s.Active {
			o.Buf = append(o.Buf, "true"...)
		} else {
			o.Buf = append(o.Buf, "false"...)
		}
		if s.AnnualConsumptionKWh != nil {
			o.Key("annual_consumption_kwh")
			o.Buf = ingest.AppendJSONFloat(o.Buf, *s.AnnualConsumptionKWh)
		}
		o.OptStr("control_area", string(s.ControlArea))
		o.OptStr("dso_mp_id", s.DSOMPID)
		o.Str("kind", string(s.Kind))
		o.OptStr("metering_type", string(s.MeteringType))
		o.OptStr("mga", s.MGA)
		o.OptStr("profile", s.Profile)
		o.Day("valid_from", s.ValidFrom)
		if s.ValidTo != nil {
			o.Day("valid_to", *s.ValidTo)
		}
	})
}

// CanonicalMetered is the canonical encoding of a metered-data body.
func CanonicalMetered(es []pipeline.MeteredEntry, bodyLen int) []byte {
	return canonicalList("entries", es, WriteMeteredEntry, bodyLen)
}

// WriteMeteredEntry writes the members of one metered-data entry; the bulk
// decoder streams the same bytes into its hash.
func WriteMeteredEntry(o *ingest.Object, e *pipeline.MeteredEntry) {
	o.Day("day", e.Day)
	o.Str("malo", e.Malo)
	o.Str("unit", string(e.Unit))
	o.Floats("values", e.Values)
}

// CanonicalProfiles is the canonical encoding of a load-profile body.
func CanonicalProfiles(es []pipeline.ProfileEntry, bodyLen int) []byte {
	return canonicalList("entries", es, WriteProfileEntry, bodyLen)
}

// WriteProfileEntry writes the members of one load-profile entry.
func WriteProfileEntry(o *ingest.Object, e *pipeline.ProfileEntry) {
	o.Day("day", e.Day)
	o.Str("mga", e.MGA)
	o.Str("profile", e.Profile)
	o.Floats("values_kwh", e.ValuesKWh)
}
