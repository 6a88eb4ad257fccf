package ingest

import (
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
// Errors are *SchemaError or *BusinessError.
func DecodeMeteredData(body []byte, r Rules) (*MeteredDataSubmission, error) {
	entries, validateOnly, err := decodeEntries(body, meteredModel)
	if err != nil {
		return nil, err
	}
	var out findings
	days := intervals{}
	for i, e := range entries {
		if want := days.of(e.Day); len(e.Values) != want {
			out.addf("entries[%d] (%s, %s): %d intervals, expected %d", i, e.Malo, e.Day, len(e.Values), want)
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
			out.addf("entries[%d] (%s, %s): duplicate of entries[%d]", i, e.Malo, e.Day, j)
		} else {
			first[k] = i
		}
	}
	if err := out.err(); err != nil {
		return nil, err
	}
	canonical := canonicalMetered(entries, len(body))
	return &MeteredDataSubmission{Entries: entries, ValidateOnly: validateOnly, InputHash: inputHash(canonical), Canonical: canonical}, nil
}

// DecodeProfiles decodes and validates a load-profile body (model
// ProfileSubmission: entries, validate_only). Errors are *SchemaError or
// *BusinessError.
func DecodeProfiles(body []byte, r Rules) (*ProfileSubmission, error) {
	entries, validateOnly, err := decodeEntries(body, profileModel)
	if err != nil {
		return nil, err
	}
	var out findings
	days := intervals{}
	for i, e := range entries {
		if want := days.of(e.Day); len(e.ValuesKWh) != want {
			out.addf("entries[%d] (%s/%s, %s): %d intervals, expected %d", i, e.MGA, e.Profile, e.Day, len(e.ValuesKWh), want)
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
			out.addf("entries[%d] (%s/%s, %s): duplicate of entries[%d]", i, e.MGA, e.Profile, e.Day, j)
		} else {
			first[k] = i
		}
	}
	if err := out.err(); err != nil {
		return nil, err
	}
	canonical := canonicalProfiles(entries, len(body))
	return &ProfileSubmission{Entries: entries, ValidateOnly: validateOnly, InputHash: inputHash(canonical), Canonical: canonical}, nil
}

// decodeEntries decodes the shape the metered-data and profile bodies share:
// {"entries": [at least one model], "validate_only": bool}.
func decodeEntries[T any](body []byte, model func(c *checker, loc path, n *node) (T, bool)) ([]T, bool, error) {
	c, root, err := decodeObject(body)
	if err != nil {
		return nil, false, err
	}
	loc := bodyPath()
	var entries []T
	validateOnly := false
	list(c, root, loc, "entries", required, model, &entries)
	c.flag(root, loc, "validate_only", &validateOnly)
	if err := c.err(); err != nil {
		return nil, false, err
	}
	return entries, validateOnly, nil
}

// meteredModel validates one MeteredEntry.
func meteredModel(c *checker, loc path, n *node) (pipeline.MeteredEntry, bool) {
	var e pipeline.MeteredEntry
	if !c.model(loc, n, "MeteredEntry") {
		return e, false
	}
	ok := text(c, n, loc, "malo", required, maloRule, &e.Malo)
	ok = c.dateField(n, loc, "day", required, &e.Day) && ok
	ok = choice(c, n, loc, "unit", required, meteredUnits, &e.Unit) && ok
	ok = c.quantities(n, loc, "values", &e.Values) && ok
	return e, ok
}

// profileModel validates one ProfileEntry.
func profileModel(c *checker, loc path, n *node) (pipeline.ProfileEntry, bool) {
	var e pipeline.ProfileEntry
	if !c.model(loc, n, "ProfileEntry") {
		return e, false
	}
	ok := text(c, n, loc, "mga", required, mgaRule, &e.MGA)
	ok = text(c, n, loc, "profile", required, profileRule, &e.Profile) && ok
	ok = c.dateField(n, loc, "day", required, &e.Day) && ok
	ok = c.quantities(n, loc, "values_kwh", &e.ValuesKWh) && ok
	return e, ok
}

// intervals caches Day.Intervals, which converts time zones twice, for bodies
// with thousands of entries over a few days.
type intervals map[pipeline.Day]int

func (m intervals) of(d pipeline.Day) int {
	n, ok := m[d]
	if !ok {
		n = d.Intervals()
		m[d] = n
	}
	return n
}
