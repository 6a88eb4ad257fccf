package databody

import (
	"fmt"

	"github.com/schedbridge/schedbridge/ingest"
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
// history have the same canonical encoding. Errors are
// *ingest.SchemaError or *ingest.BusinessError.
func DecodeMasterData(body []byte, r ingest.Rules) (*MasterDataSubmission, error) {
	c, root, err := ingest.DecodeObject(body)
	if err != nil {
		return nil, err
	}
	loc := ingest.BodyPath()
	var given []GivenLocation
	validateOnly := false
	ingest.List(c, root, loc, "locations", ingest.Required, LocationModel, &given)
	c.Flag(root, loc, "validate_only", &validateOnly)
	if err := c.Err(); err != nil {
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
	return &MasterDataSubmission{Locations: locations, ValidateOnly: validateOnly, InputHash: ingest.InputHash(canonical), Canonical: canonical}, nil
}

// GivenLocation is a validated location and the form it was given in, which
// the business messages name.
type GivenLocation struct {
	pipeline.Location
	flat bool
	// AreaGiven tells for each slice whether control_area was set, since an
	// empty name is set (and not active) while pipeline.Slice cannot tell.
	AreaGiven []bool
}

// givenSlice is a validated slice and whether its control_area was set.
type givenSlice struct {
	pipeline.Slice
	AreaGiven bool
}

// LocationModel validates one Location. Its fields are malo, slices,
// delivery_start, then the slice attributes of the flat form (valid_to,
// active, control_area, mga, metering_type, profile, annual_consumption_kwh,
// kind, dso_mp_id), which are validated whichever form is used.
func LocationModel(c *ingest.Checker, loc ingest.Path, n *ingest.Node) (GivenLocation, bool) {
	var l GivenLocation
	if !c.Model(loc, n, "Location") {
		return l, false
	}
	var slices []givenSlice
	ok := ingest.Text(c, n, loc, "malo", ingest.Required, ingest.MaloRule, &l.Malo)
	ok = ingest.List(c, n, loc, "slices", ingest.Optional, SliceModel, &slices) && ok
	var flat pipeline.Slice
	ok = sliceFields(c, n, loc, "delivery_start", ingest.Optional, &flat) && ok
	if !ok {
		return l, false
	}
	if n.Present("slices") == n.Present("delivery_start") {
		c.ValueError(loc, n, "provide either slices or the flat form with delivery_start")
		return l, false
	}
	if !n.Present("slices") {
		if !sliceRules(c, loc, n, &flat) {
			return l, false
		}
		l.Slices, l.flat, l.AreaGiven = []pipeline.Slice{flat}, true, []bool{n.Present("control_area")}
		return l, true
	}
	l.Slices, l.AreaGiven = make([]pipeline.Slice, len(slices)), make([]bool, len(slices))
	for i, s := range slices {
		l.Slices[i], l.AreaGiven[i] = s.Slice, s.AreaGiven
	}
	return l, true
}

// SliceModel validates one Slice.
func SliceModel(c *ingest.Checker, loc ingest.Path, n *ingest.Node) (givenSlice, bool) {
	var s givenSlice
	if !c.Model(loc, n, "Slice") {
		return s, false
	}
	if !sliceFields(c, n, loc, "valid_from", ingest.Required, &s.Slice) {
		return s, false
	}
	s.AreaGiven = n.Present("control_area")
	return s, sliceRules(c, loc, n, &s.Slice)
}

// sliceFields validates the fields a Slice shares with the flat form of a
// Location: the start (valid_from, or delivery_start in the flat form) and
// everything after it.
func sliceFields(c *ingest.Checker, n *ingest.Node, loc ingest.Path, start string, pr ingest.Presence, s *pipeline.Slice) bool {
	s.Active, s.Kind = true, pipeline.Consumption
	var to pipeline.Day
	ok := c.DateField(n, loc, start, pr, &s.ValidFrom)
	ok = c.DateField(n, loc, "valid_to", ingest.Optional, &to) && ok
	ok = c.Flag(n, loc, "active", &s.Active) && ok
	ok = ingest.Text(c, n, loc, "control_area", ingest.Optional, ingest.AnyText, &s.ControlArea) && ok
	ok = ingest.Text(c, n, loc, "mga", ingest.Optional, ingest.MGARule, &s.MGA) && ok
	ok = ingest.Choice(c, n, loc, "metering_type", ingest.Optional, ingest.MeteringTypes, &s.MeteringType) && ok
	ok = ingest.Text(c, n, loc, "profile", ingest.Optional, ingest.ProfileRule, &s.Profile) && ok
	ok = c.Amount(n, loc, "annual_consumption_kwh", &s.AnnualConsumptionKWh) && ok
	ok = ingest.Choice(c, n, loc, "kind", ingest.Defaulted, ingest.SliceKinds, &s.Kind) && ok
	ok = ingest.Text(c, n, loc, "dso_mp_id", ingest.Optional, ingest.DSOMPRule, &s.DSOMPID) && ok
	if !to.IsZero() {
		s.ValidTo = &to
	}
	return ok
}

// sliceRules are the model validators of a slice, first failure only, as
// pydantic stops at the first validator that raises.
func sliceRules(c *ingest.Checker, loc ingest.Path, n *ingest.Node, s *pipeline.Slice) bool {
	if s.Active && (!n.Present("control_area") || s.MGA == "" || s.MeteringType == "") {
		c.ValueError(loc, n, "an active slice needs control_area, mga and metering_type")
		return false
	}
	if s.ValidTo != nil && !s.ValidFrom.Before(*s.ValidTo) {
		c.ValueError(loc, n, "valid_to must be after valid_from")
		return false
	}
	return true
}

// masterDataRules checks schema-valid locations against the domain: active
// control areas, slice order, duplicates.
func masterDataRules(ls []GivenLocation, r ingest.Rules) error {
	var out ingest.Findings
	MasterDataFindings(ls, r, func(_, _ int, _, msg string) { out.Addf("%s", msg) })
	return out.Err()
}

// MasterDataFindings applies the business rules of master data in the
// API's order and reports each broken one with the location and slice it
// is about (slice -1: the location as a whole) and the field that breaks it,
// so that a bulk file can point at the row and column as well as give the
// API's message.
func MasterDataFindings(ls []GivenLocation, r ingest.Rules, report func(loc, slice int, field, msg string)) {
	for i, l := range ls {
		for j, s := range l.Slices {
			if l.AreaGiven[j] && !r.Active.Has(string(s.ControlArea)) {
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
