package databody

import (
	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// MeteredDataSubmission is a validated body of POST /v1/metered-data.
type MeteredDataSubmission struct {
	Entries      []pipeline.MeteredEntry
	ValidateOnly bool
	InputHash    string
	Canonical    []byte
}

// ProfileSubmission is a validated body of POST /v1/profiles.
type ProfileSubmission struct {
	Entries      []pipeline.ProfileEntry
	ValidateOnly bool
	InputHash    string
	Canonical    []byte
}

// DecodeMeteredData decodes and validates a metered-data body (model
// MeteredDataSubmission: entries, validate_only). No rule depends on the
// caller's portfolio yet; r is taken so that all four decoders look alike.
// Errors are *ingest.SchemaError or *ingest.BusinessError.
func DecodeMeteredData(body []byte, r ingest.Rules) (*MeteredDataSubmission, error) {
	entries, validateOnly, err := decodeEntries(body, MeteredModel)
	if err != nil {
		return nil, err
	}
	var out ingest.Findings
	days := Intervals{}
	for i, e := range entries {
		if want := days.Of(e.Day); len(e.Values) != want {
			out.Addf("entries[%d] (%s, %s): %d intervals, expected %d", i, e.Malo, e.Day, len(e.Values), want)
		}
	}
	type key struct {
		malo string
		day  pipeline.Day
	}
	first := make(map[key]int, len(entries))
	for i, e := range entries {
		k := key{e.Malo, e.Day}
		if j, dup := first[k]; dup {
			out.Addf("entries[%d] (%s, %s): duplicate of entries[%d]", i, e.Malo, e.Day, j)
		} else {
			first[k] = i
		}
	}
	if err := out.Err(); err != nil {
		return nil, err
	}
	canonical := CanonicalMetered(entries, len(body))
	return &MeteredDataSubmission{Entries: entries, ValidateOnly: validateOnly, InputHash: ingest.InputHash(canonical), Canonical: canonical}, nil
}

// DecodeProfiles decodes and validates a load-profile body (model
// ProfileSubmission: entries, validate_only). Errors are
// *ingest.SchemaError or *ingest.BusinessError.
func DecodeProfiles(body []byte, r ingest.Rules) (*ProfileSubmission, error) {
	entries, validateOnly, err := decodeEntries(body, ProfileModel)
	if err != nil {
		return nil, err
	}
	var out ingest.Findings
	days := Intervals{}
	for i, e := range entries {
		if want := days.Of(e.Day); len(e.ValuesKWh) != want {
			out.Addf("entries[%d] (%s/%s, %s): %d intervals, expected %d", i, e.MGA, e.Profile, e.Day, len(e.ValuesKWh), want)
		}
	}
	type key struct {
		mga, profile string
		day          pipeline.Day
	}
	first := make(map[key]int, len(entries))
	for i, e := range entries {
		k := key{e.MGA, e.Profile, e.Day}
		if j, dup := first[k]; dup {
			out.Addf("entries[%d] (%s/%s, %s): duplicate of entries[%d]", i, e.MGA, e.Profile, e.Day, j)
		} else {
			first[k] = i
		}
	}
	if err := out.Err(); err != nil {
		return nil, err
	}
	canonical := CanonicalProfiles(entries, len(body))
	return &ProfileSubmission{Entries: entries, ValidateOnly: validateOnly, InputHash: ingest.InputHash(canonical), Canonical: canonical}, nil
}

// decodeEntries decodes the shape the metered-data and profile bodies share:
// {"entries": [at least one model], "validate_only": bool}.
func decodeEntries[T any](body []byte, model func(c *ingest.Checker, loc ingest.Path, n *ingest.Node) (T, bool)) ([]T, bool, error) {
	c, root, err := ingest.DecodeObject(body)
	if err != nil {
		return nil, false, err
	}
	loc := ingest.BodyPath()
	var entries []T
	validateOnly := false
	ingest.List(c, root, loc, "entries", ingest.Required, model, &entries)
	c.Flag(root, loc, "validate_only", &validateOnly)
	if err := c.Err(); err != nil {
		return nil, false, err
	}
	return entries, validateOnly, nil
}

// MeteredModel validates one MeteredEntry.
func MeteredModel(c *ingest.Checker, loc ingest.Path, n *ingest.Node) (pipeline.MeteredEntry, bool) {
	var e pipeline.MeteredEntry
	if !c.Model(loc, n, "MeteredEntry") {
		return e, false
	}
	ok := ingest.Text(c, n, loc, "malo", ingest.Required, ingest.MaloRule, &e.Malo)
	ok = c.DateField(n, loc, "day", ingest.Required, &e.Day) && ok
	ok = ingest.Choice(c, n, loc, "unit", ingest.Required, ingest.MeteredUnits, &e.Unit) && ok
	ok = c.Quantities(n, loc, "values", &e.Values) && ok
	return e, ok
}

// ProfileModel validates one ProfileEntry.
func ProfileModel(c *ingest.Checker, loc ingest.Path, n *ingest.Node) (pipeline.ProfileEntry, bool) {
	var e pipeline.ProfileEntry
	if !c.Model(loc, n, "ProfileEntry") {
		return e, false
	}
	ok := ingest.Text(c, n, loc, "mga", ingest.Required, ingest.MGARule, &e.MGA)
	ok = ingest.Text(c, n, loc, "profile", ingest.Required, ingest.ProfileRule, &e.Profile) && ok
	ok = c.DateField(n, loc, "day", ingest.Required, &e.Day) && ok
	ok = c.Quantities(n, loc, "values_kwh", &e.ValuesKWh) && ok
	return e, ok
}

// Intervals caches Day.Intervals, which converts time zones twice, for bodies
// with thousands of entries over a few days.
type Intervals map[pipeline.Day]int

// Of returns the day's number of quarter-hours.
func (m Intervals) Of(d pipeline.Day) int {
	n, ok := m[d]
	if !ok {
		n = d.Intervals()
		m[d] = n
	}
	return n
}
