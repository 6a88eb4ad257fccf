package ingest

import (
	"fmt"

	"github.com/schedbridge/schedbridge/pipeline"
)

// MasterDataSubmission is a validated body of PUT /v1/master-data.
type MasterDataSubmission struct {
	Locations    []pipeline.Location
	ValidateOnly bool
	InputHash    string
	Canonical    []byte
}

// DecodeMasterData decodes and validates a master-data body (model
// MasterDataSubmission: locations, validate_only). A location in the flat form
// comes back as a location with one slice, so that both forms of the same
// history have the same canonical encoding. Errors are *SchemaError or
// *BusinessError.
func DecodeMasterData(body []byte, r Rules) (*MasterDataSubmission, error) {
	c, root, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	loc := bodyPath()
	var given []givenLocation
	validateOnly := false
	list(c, root, loc, "locations", required, locationModel, &given)
	c.flag(root, loc, "validate_only", &validateOnly)
	if err := c.err(); err != nil {
		return nil, err
	}
	if err := masterDataRules(given, r); err != nil {
		return nil, err
	}
	locations := make([]pipeline.Location, len(given))
	for i, g := range given {
		locations[i] = g.Location
	}
	canonical := canonicalLocations(locations, len(body))
	return &MasterDataSubmission{Locations: locations, ValidateOnly: validateOnly, InputHash: inputHash(canonical), Canonical: canonical}, nil
}

// givenLocation is a validated location and the form it was given in, which
// the business messages name.
type givenLocation struct {
	pipeline.Location
	flat bool
	// areaGiven tells for each slice whether control_area was set, since an
	// empty name is set (and not active) while pipeline.Slice cannot tell.
	areaGiven []bool
}

// givenSlice is a validated slice and whether its control_area was set.
type givenSlice struct {
	pipeline.Slice
	areaGiven bool
}

// locationModel validates one Location. Its fields are malo, slices,
// delivery_start, then the slice attributes of the flat form (valid_to,
// active, control_area, mga, metering_type, profile, annual_consumption_kwh,
// kind, dso_mp_id), which are validated whichever form is used.
func locationModel(c *checker, loc path, n *node) (givenLocation, bool) {
	var l givenLocation
	if !c.model(loc, n, "Location") {
		return l, false
	}
	var slices []givenSlice
	ok := text(c, n, loc, "malo", required, maloRule, &l.Malo)
	ok = list(c, n, loc, "slices", optional, sliceModel, &slices) && ok
	var flat pipeline.Slice
	ok = sliceFields(c, n, loc, "delivery_start", optional, &flat) && ok
	if !ok {
		return l, false
	}
	if n.present("slices") == n.present("delivery_start") {
		c.valueError(loc, n, "provide either slices or the flat form with delivery_start")
		return l, false
	}
	if !n.present("slices") {
		if !sliceRules(c, loc, n, &flat) {
			return l, false
		}
		l.Slices, l.flat, l.areaGiven = []pipeline.Slice{flat}, true, []bool{n.present("control_area")}
		return l, true
	}
	l.Slices, l.areaGiven = make([]pipeline.Slice, len(slices)), make([]bool, len(slices))
	for i, s := range slices {
		l.Slices[i], l.areaGiven[i] = s.Slice, s.areaGiven
	}
	return l, true
}

// sliceModel validates one Slice.
func sliceModel(c *checker, loc path, n *node) (givenSlice, bool) {
	var s givenSlice
	if !c.model(loc, n, "Slice") {
		return s, false
	}
	if !sliceFields(c, n, loc, "valid_from", required, &s.Slice) {
		return s, false
	}
	s.areaGiven = n.present("control_area")
	return s, sliceRules(c, loc, n, &s.Slice)
}

// sliceFields validates the fields a Slice shares with the flat form of a
// Location: the start (valid_from, or delivery_start in the flat form) and
// everything after it.
func sliceFields(c *checker, n *node, loc path, start string, pr presence, s *pipeline.Slice) bool {
	s.Active, s.Kind = true, pipeline.Consumption
	var to pipeline.Day
	ok := c.dateField(n, loc, start, pr, &s.ValidFrom)
	ok = c.dateField(n, loc, "valid_to", optional, &to) && ok
	ok = c.flag(n, loc, "active", &s.Active) && ok
	ok = text(c, n, loc, "control_area", optional, anyText, &s.ControlArea) && ok
	ok = text(c, n, loc, "mga", optional, mgaRule, &s.MGA) && ok
	ok = choice(c, n, loc, "metering_type", optional, meteringTypes, &s.MeteringType) && ok
	ok = text(c, n, loc, "profile", optional, profileRule, &s.Profile) && ok
	ok = c.amount(n, loc, "annual_consumption_kwh", &s.AnnualConsumptionKWh) && ok
	ok = choice(c, n, loc, "kind", defaulted, sliceKinds, &s.Kind) && ok
	ok = text(c, n, loc, "dso_mp_id", optional, dsoMPRule, &s.DSOMPID) && ok
	if !to.IsZero() {
		s.ValidTo = &to
	}
	return ok
}

// sliceRules are the model validators of a slice, first failure only, as
// pydantic stops at the first validator that raises.
func sliceRules(c *checker, loc path, n *node, s *pipeline.Slice) bool {
	if s.Active && (!n.present("control_area") || s.MGA == "" || s.MeteringType == "") {
		c.valueError(loc, n, "an active slice needs control_area, mga and metering_type")
		return false
	}
	if s.ValidTo != nil && !s.ValidFrom.Before(*s.ValidTo) {
		c.valueError(loc, n, "valid_to must be after valid_from")
		return false
	}
	return true
}

// masterDataRules checks schema-valid locations against the domain: active
// control areas, slice order, duplicates.
func masterDataRules(ls []givenLocation, r Rules) error {
	var out findings
	masterDataFindings(ls, r, func(_, _ int, _, msg string) { out.addf("%s", msg) })
	return out.err()
}

// masterDataFindings applies the business rules of master data in the
// API's order and reports each broken one with the location and slice it
// is about (slice -1: the location as a whole) and the field that breaks it,
// so that a bulk file can point at the row and column as well as give the
// API's message.
func masterDataFindings(ls []givenLocation, r Rules, report func(loc, slice int, field, msg string)) {
	for i, l := range ls {
		for j, s := range l.Slices {
			if l.areaGiven[j] && !r.Active.Has(string(s.ControlArea)) {
				if l.flat {
					report(i, j, "control_area", fmt.Sprintf("locations[%d]: control area %s is not in the active set", i, s.ControlArea))
				} else {
					report(i, j, "control_area", fmt.Sprintf("locations[%d].slices[%d]: control area %s is not in the active set", i, j, s.ControlArea))
				}
			}
			if j > 0 {
				if prev := l.Slices[j-1]; prev.ValidTo != nil && s.ValidFrom.Before(*prev.ValidTo) {
					report(i, j, "valid_from", fmt.Sprintf("locations[%d] (%s): slices[%d] overlaps slices[%d]", i, l.Malo, j, j-1))
				}
			}
			if j < len(l.Slices)-1 && s.ValidTo == nil {
				report(i, j, "valid_to", fmt.Sprintf("locations[%d] (%s): only the last slice may be open-ended", i, l.Malo))
			}
		}
	}
	first := make(map[string]int, len(ls))
	for i, l := range ls {
		if j, dup := first[l.Malo]; dup {
			report(i, -1, "malo", fmt.Sprintf("locations[%d] (%s): duplicate of locations[%d]", i, l.Malo, j))
		} else {
			first[l.Malo] = i
		}
	}
}
