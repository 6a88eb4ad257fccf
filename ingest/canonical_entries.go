package ingest

import (
	"sort"

	"github.com/schedbridge/schedbridge/pipeline"
)

// The canonical encodings of the four data endpoints' bodies; the bulk
// decoders stream the same bytes into their hashes, entry by entry.

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
