package ingest

import (
	"fmt"
	"sort"

	"github.com/schedbridge/schedbridge/pipeline"
)

// ForecastSubmission is a validated body of POST /v1/forecasts.
type ForecastSubmission struct {
	Forecast     pipeline.Forecast
	ValidateOnly bool
	InputHash    string // hex SHA-256 of Canonical
	Canonical    []byte // canonical JSON of the validated submission, without validate_only
}

// DecodeForecast decodes and validates a forecast body (model
// ForecastSubmission: delivery_day, series, malo_mapping, validate_only).
// Errors are *SchemaError or *BusinessError.
func DecodeForecast(body []byte, r Rules) (*ForecastSubmission, error) {
	c, root, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	loc := bodyPath()
	f := pipeline.Forecast{MaloMapping: map[string]pipeline.ControlArea{}}
	validateOnly := false
	c.dateField(root, loc, "delivery_day", required, &f.DeliveryDay)
	list(c, root, loc, "series", required, seriesModel, &f.Series)
	maloMapping(c, root, loc, "malo_mapping", f.MaloMapping)
	c.flag(root, loc, "validate_only", &validateOnly)
	if err := c.err(); err != nil {
		return nil, err
	}
	if err := forecastRules(&f, r); err != nil {
		return nil, err
	}
	canonical := canonicalForecast(&f, len(body))
	return &ForecastSubmission{Forecast: f, ValidateOnly: validateOnly, InputHash: inputHash(canonical), Canonical: canonical}, nil
}

// seriesModel validates one Series.
func seriesModel(c *checker, loc path, n *node) (pipeline.Series, bool) {
	s := pipeline.Series{Unit: pipeline.MW}
	if !c.model(loc, n, "Series") {
		return s, false
	}
	ok := seriesKeys(c, n, loc, &s)
	ok = c.quantities(n, loc, "values", &s.Values) && ok
	if !ok {
		return s, false // pydantic runs a model validator only on valid fields
	}
	return s, seriesRule(c, loc, n)
}

// seriesKeys validates the fields of a Series before its values. It is
// apart from seriesModel because a forecast CSV file has its values checked
// as CSV cells, between these fields and the model validator.
func seriesKeys(c *checker, n *node, loc path, s *pipeline.Series) bool {
	ok := text(c, n, loc, "control_area", optional, anyText, &s.ControlArea)
	ok = text(c, n, loc, "malo", optional, maloRule, &s.Malo) && ok
	ok = choice(c, n, loc, "kind", required, seriesKinds, &s.Kind) && ok
	ok = choice(c, n, loc, "unit", defaulted, forecastUnits, &s.Unit) && ok
	return ok
}

// seriesRule is the model validator of a Series, run when its fields are
// valid.
func seriesRule(c *checker, loc path, n *node) bool {
	if n.present("control_area") == n.present("malo") {
		c.valueError(loc, n, "exactly one of control_area or malo must be set")
		return false
	}
	return true
}

// maloMapping validates dict[Malo, str] into dst.
func maloMapping(c *checker, obj *node, loc path, name string, dst map[string]pipeline.ControlArea) bool {
	v, ok := c.lookup(obj, loc, name, defaulted)
	if v == nil {
		return ok
	}
	l := loc.at(name)
	if v.kind != kindObject {
		c.fail(l, "dict_type", "Input should be a valid dictionary", v, nil)
		return false
	}
	seen := make(map[string]bool, len(v.obj))
	for i := range v.obj {
		k := v.obj[i].key
		if seen[k] {
			continue
		}
		// Like the dict Python builds: a repeated key keeps its first place
		// and its last value.
		seen[k] = true
		_, goodKey := c.text(l.at(k).at("[key]"), &node{kind: kindString, str: k}, maloRule)
		area, goodValue := c.text(l.at(k), v.field(k), anyText)
		if goodKey && goodValue {
			dst[k] = pipeline.ControlArea(area)
		}
		ok = ok && goodKey && goodValue
	}
	return ok
}

// forecastRules checks a schema-valid forecast against the domain: interval
// count, active control areas, mapping coverage, duplicates.
func forecastRules(f *pipeline.Forecast, r Rules) error {
	var out findings
	forecastFindings(f, r, func(_ int, _, _, msg string) { out.addf("%s", msg) })
	return out.err()
}

// forecastFindings applies the business rules of a forecast in the API's
// order and reports each broken one with what it is about: the series
// (index >= 0), or else the malo_mapping entry of malo; field is the field
// of that series or entry that breaks the rule ("values", "control_area",
// "malo_mapping"; "" for a duplicate, which no single field makes). A bulk
// file can so point at the row and column as well as give the API's message.
func forecastFindings(f *pipeline.Forecast, r Rules, report func(series int, malo, field, msg string)) {
	day := f.DeliveryDay
	want := day.Intervals()
	for i, s := range f.Series {
		if len(s.Values) != want {
			report(i, "", "values", fmt.Sprintf("series[%d] has %d intervals, expected %d for %s", i, len(s.Values), want, day))
		}
		if s.Malo == "" {
			if !r.Active.Has(string(s.ControlArea)) {
				report(i, "", "control_area", fmt.Sprintf("series[%d]: control area %s is not in the active set", i, s.ControlArea))
			}
		} else if _, ok := f.MaloMapping[s.Malo]; !ok {
			report(i, "", "malo_mapping", fmt.Sprintf("series[%d]: no malo_mapping entry for MaLo '%s'", i, s.Malo))
		}
	}
	malos := make([]string, 0, len(f.MaloMapping))
	for m := range f.MaloMapping {
		malos = append(malos, m)
	}
	sort.Strings(malos)
	for _, m := range malos {
		if area := f.MaloMapping[m]; !r.Active.Has(string(area)) {
			report(-1, m, "control_area", fmt.Sprintf("malo_mapping['%s']: control area %s is not in the active set", m, area))
		}
	}
	type key struct {
		byMalo bool
		tag    string
		kind   pipeline.Kind
	}
	first := make(map[key]int, len(f.Series))
	for i, s := range f.Series {
		k := key{byMalo: s.Malo != "", tag: string(s.ControlArea), kind: s.Kind}
		if k.byMalo {
			k.tag = s.Malo
		}
		if j, dup := first[k]; dup {
			report(i, "", "", fmt.Sprintf("series[%d]: duplicate of series[%d] (%s, %s)", i, j, k.tag, s.Kind))
		} else {
			first[k] = i
		}
	}
}
