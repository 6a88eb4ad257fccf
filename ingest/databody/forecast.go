package databody

import (
	"fmt"
	"sort"

	"github.com/schedbridge/schedbridge/ingest"
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
// Errors are *ingest.SchemaError or *ingest.BusinessError.
func DecodeForecast(body []byte, r ingest.Rules) (*ForecastSubmission, error) {
	c, root, err := ingest.DecodeObject(body)
	if err != nil {
		return nil, err
	}
	loc := ingest.BodyPath()
	f := pipeline.Forecast{MaloMapping: map[string]pipeline.ControlArea{}}
	validateOnly := false
	c.DateField(root, loc, "delivery_day", ingest.Required, &f.DeliveryDay)
	ingest.List(c, root, loc, "series", ingest.Required, seriesModel, &f.Series)
	maloMapping(c, root, loc, "malo_mapping", f.MaloMapping)
	c.Flag(root, loc, "validate_only", &validateOnly)
	if err := c.Err(); err != nil {
		return nil, err
	}
	if err := forecastRules(&f, r); err != nil {
		return nil, err
	}
	canonical := CanonicalForecast(&f, len(body))
	return &ForecastSubmission{Forecast: f, ValidateOnly: validateOnly, InputHash: ingest.InputHash(canonical), Canonical: canonical}, nil
}

// seriesModel validates one Series.
func seriesModel(c *ingest.Checker, loc ingest.Path, n *ingest.Node) (pipeline.Series, bool) {
	s := pipeline.Series{Unit: pipeline.MW}
	if !c.Model(loc, n, "Series") {
		return s, false
	}
	ok := SeriesKeys(c, n, loc, &s)
	ok = c.Quantities(n, loc, "values", &s.Values) && ok
	if !ok {
		return s, false // pydantic runs a model validator only on valid fields
	}
	return s, SeriesRule(c, loc, n)
}

// SeriesKeys validates the fields of a Series before its values. It is
// apart from seriesModel because a forecast CSV file has its values checked
// as CSV cells, between these fields and the model validator.
func SeriesKeys(c *ingest.Checker, n *ingest.Node, loc ingest.Path, s *pipeline.Series) bool {
	ok := ingest.Text(c, n, loc, "control_area", ingest.Optional, ingest.AnyText, &s.ControlArea)
	ok = ingest.Text(c, n, loc, "malo", ingest.Optional, ingest.MaloRule, &s.Malo) && ok
	ok = ingest.Choice(c, n, loc, "kind", ingest.Required, ingest.SeriesKinds, &s.Kind) && ok
	ok = ingest.Choice(c, n, loc, "unit", ingest.Defaulted, ingest.ForecastUnits, &s.Unit) && ok
	return ok
}

// SeriesRule is the model validator of a Series, run when its fields are
// valid.
func SeriesRule(c *ingest.Checker, loc ingest.Path, n *ingest.Node) bool {
	if n.Present("control_area") == n.Present("malo") {
		c.ValueError(loc, n, "exactly one of control_area or malo must be set")
		return false
	}
	return true
}

// maloMapping validates dict[Malo, str] into dst.
func maloMapping(c *ingest.Checker, obj *ingest.Node, loc ingest.Path, name string, dst map[string]pipeline.ControlArea) bool {
	v, ok := c.Lookup(obj, loc, name, ingest.Defaulted)
	if v == nil {
		return ok
	}
	l := loc.At(name)
	if v.Kind != ingest.KindObject {
		c.Fail(l, "dict_type", "Input should be a valid dictionary", v, nil)
		return false
	}
	seen := make(map[string]bool, len(v.Members))
	for i := range v.Members {
		k := v.Members[i].Key
		if seen[k] {
			continue
		}
		// Like the dict Python builds: a repeated key keeps its first place
		// and its last value.
		seen[k] = true
		_, goodKey := c.Text(l.At(k).At("[key]"), &ingest.Node{Kind: ingest.KindString, Str: k}, ingest.MaloRule)
		area, goodValue := c.Text(l.At(k), v.Field(k), ingest.AnyText)
		if goodKey && goodValue {
			dst[k] = pipeline.ControlArea(area)
		}
		ok = ok && goodKey && goodValue
	}
	return ok
}

// forecastRules checks a schema-valid forecast against the domain: interval
// count, active control areas, mapping coverage, duplicates.
func forecastRules(f *pipeline.Forecast, r ingest.Rules) error {
	var out ingest.Findings
	ForecastFindings(f, r, func(_ int, _, _, msg string) { out.Addf("%s", msg) })
	return out.Err()
}

// ForecastFindings applies the business rules of a forecast in the API's
// order and reports each broken one with what it is about: the series
// (index >= 0), or else the malo_mapping entry of malo; field is the field
// of that series or entry that breaks the rule ("values", "control_area",
// "malo_mapping"; "" for a duplicate, which no single field makes). A bulk
// file can so point at the row and column as well as give the API's message.
func ForecastFindings(f *pipeline.Forecast, r ingest.Rules, report func(series int, malo, field, msg string)) {
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
