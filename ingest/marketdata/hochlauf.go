package marketdata

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
)

// maxSnapshotEntries bounds the entries of a ramp-up snapshot. A partner's
// counts per DSO, area, day and type stay far below it; a body beyond it is
// not a snapshot of counts.
const maxSnapshotEntries = 100_000

// The fields of the snapshot models, in their declaration order, which is
// the order of their problems.
var (
	snapshotFields = []string{"eintraege", "quelle", "stand"}
	entryFields    = []string{"netzbetreiber_mp_id", "netzbetreiber", "bilanzierungsgebiet", "regelzone", "lieferbeginn",
		"prognoseart", "zaehlertyp", "anzahl"}
)

// quelleRule bounds the name of the sending script.
var quelleRule = ingest.TextRule{Min: 1, Max: 200}

// The value sets of the snapshot, as pydantic renders the Enums.
var (
	controlAreaEnum = ingest.NewLiteral(stringsOf(pipeline.ControlAreas)...)
	prognoseEnum    = ingest.NewLiteral(stringsOf(zeitreihen.Prognosearten)...)
	zaehlertypEnum  = ingest.NewLiteral(stringsOf(zeitreihen.Zaehlertypen)...)
)

// DecodeSnapshot decodes and validates a ramp-up snapshot (POST
// /v1/process/kundenhochlauf/quellstand) and returns it with its hash: the
// hex SHA-256 of its canonical encoding, in which the entries are sorted,
// so that the same snapshot sent in another entry order hashes equal.
//
// The models forbid unknown fields everywhere (pydantic's extra="forbid":
// "extra_forbidden"). That is how a snapshot is kept to counts: a market
// location id, under whatever name, is an unknown field and rejects the
// body. Every problem is collected; the error is an *ingest.SchemaError.
func DecodeSnapshot(body []byte) (zeitreihen.Snapshot, string, error) {
	c, root, err := ingest.DecodeObject(body)
	if err != nil {
		return zeitreihen.Snapshot{}, "", err
	}
	loc := ingest.BodyPath()
	var s zeitreihen.Snapshot
	snapshotEntries(c, root, loc, &s.Eintraege)
	ingest.Text(c, root, loc, "quelle", ingest.Required, quelleRule, &s.Quelle)
	datetimeField(c, root, loc, "stand", ingest.Required, &s.Stand)
	forbidExtra(c, loc, root, snapshotFields)
	if err := c.Err(); err != nil {
		return zeitreihen.Snapshot{}, "", err
	}
	return s, ingest.InputHash(canonicalSnapshot(&s)), nil
}

// entryKey is what makes a snapshot entry: two entries with the same key
// would count the same customers twice.
type entryKey struct {
	mpID, area string
	zone       pipeline.ControlArea
	start      pipeline.Day
	prognose   zeitreihen.Prognoseart
	meter      zeitreihen.Zaehlertyp
}

func keyOfEntry(e *zeitreihen.Entry) entryKey {
	return entryKey{e.NetzbetreiberMPID, e.Bilanzierungsgebiet, e.Regelzone, e.Lieferbeginn, e.Prognoseart, e.Zaehlertyp}
}

// snapshotEntries validates the required list eintraege, which may be
// empty, into dst (an empty list, never nil, when it is valid).
func snapshotEntries(c *ingest.Checker, root *ingest.Node, loc ingest.Path, dst *[]zeitreihen.Entry) {
	v, l, _ := c.ListField(root, loc, "eintraege", ingest.Required)
	if v == nil {
		return
	}
	elems := c.Elems(v)
	if len(elems) > maxSnapshotEntries {
		tooLong(c, l, len(elems), maxSnapshotEntries)
		return
	}
	out := make([]zeitreihen.Entry, 0, len(elems))
	first := make(map[entryKey]int, len(elems))
	for i := range elems {
		if c.Full {
			return
		}
		at := l.Index(i)
		e, ok := snapshotEntry(c, at, &elems[i])
		if !ok {
			continue
		}
		k := keyOfEntry(&e)
		if j, dup := first[k]; dup {
			c.ValueError(at, &elems[i], fmt.Sprintf(
				"same netzbetreiber_mp_id, bilanzierungsgebiet, regelzone, lieferbeginn, prognoseart and zaehlertyp as eintraege[%d]", j))
			continue
		}
		first[k] = i
		out = append(out, e)
	}
	if len(out) == len(elems) {
		*dst = out
	}
}

// snapshotEntry validates one entry of a snapshot.
func snapshotEntry(c *ingest.Checker, loc ingest.Path, n *ingest.Node) (zeitreihen.Entry, bool) {
	var e zeitreihen.Entry
	if !c.Model(loc, n, "Eintrag") {
		return e, false
	}
	ok := ingest.Text(c, n, loc, "netzbetreiber_mp_id", ingest.Required, ingest.DSOMPRule, &e.NetzbetreiberMPID)
	ok = ingest.Text(c, n, loc, "netzbetreiber", ingest.Optional, ingest.AnyText, &e.Netzbetreiber) && ok
	ok = eic(c, n, loc, "bilanzierungsgebiet", 'Y', &e.Bilanzierungsgebiet) && ok
	ok = enum(c, n, loc, "regelzone", ingest.Required, controlAreaEnum, &e.Regelzone) && ok
	ok = c.DateField(n, loc, "lieferbeginn", ingest.Required, &e.Lieferbeginn) && ok
	ok = enum(c, n, loc, "prognoseart", ingest.Optional, prognoseEnum, &e.Prognoseart) && ok
	ok = enum(c, n, loc, "zaehlertyp", ingest.Optional, zaehlertypEnum, &e.Zaehlertyp) && ok
	ok = count(c, n, loc, "anzahl", &e.Anzahl) && ok
	ok = forbidExtra(c, loc, n, entryFields) && ok
	return e, ok
}

// canonicalSnapshot is the canonical encoding of a snapshot (see
// ingest/canonical.go): the entries sorted by their key and stand as the instant
// in UTC, so that neither the order of the entries nor the offset that
// stand is written with changes the hash.
func canonicalSnapshot(s *zeitreihen.Snapshot) []byte {
	entries := slices.Clone(s.Eintraege)
	slices.SortFunc(entries, compareEntries)
	o := ingest.Object{Buf: append(make([]byte, 0, 128+len(entries)*200), '{')}
	ingest.WriteList(&o, "eintraege", entries, func(o *ingest.Object, e *zeitreihen.Entry) {
		o.Key("anzahl")
		o.Buf = strconv.AppendInt(o.Buf, int64(e.Anzahl), 10)
		o.Str("bilanzierungsgebiet", e.Bilanzierungsgebiet)
		o.Day("lieferbeginn", e.Lieferbeginn)
		o.OptStr("netzbetreiber", e.Netzbetreiber)
		o.Str("netzbetreiber_mp_id", e.NetzbetreiberMPID)
		o.OptStr("prognoseart", string(e.Prognoseart))
		o.Str("regelzone", string(e.Regelzone))
		o.OptStr("zaehlertyp", string(e.Zaehlertyp))
	})
	o.Str("quelle", s.Quelle)
	o.Str("stand", s.Stand.UTC().Format(time.RFC3339Nano))
	return append(o.Buf, '}')
}

// compareEntries orders entries by their key, then by the rest, so that the
// order is total even for entries the decoder would reject as duplicates.
func compareEntries(a, b zeitreihen.Entry) int {
	return cmp.Or(
		strings.Compare(a.NetzbetreiberMPID, b.NetzbetreiberMPID),
		strings.Compare(a.Bilanzierungsgebiet, b.Bilanzierungsgebiet),
		strings.Compare(string(a.Regelzone), string(b.Regelzone)),
		a.Lieferbeginn.Compare(b.Lieferbeginn),
		strings.Compare(string(a.Prognoseart), string(b.Prognoseart)),
		strings.Compare(string(a.Zaehlertyp), string(b.Zaehlertyp)),
		cmp.Compare(a.Anzahl, b.Anzahl),
		strings.Compare(a.Netzbetreiber, b.Netzbetreiber),
	)
}

// stringsOf converts a list of a string type for ingest.NewLiteral.
func stringsOf[S ~string](xs []S) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// forbidExtra reports every member of obj that is no field of its model, as
// pydantic's extra="forbid" does: after the fields' own problems, in
// document order, a repeated key once (with the value that wins).
func forbidExtra(c *ingest.Checker, loc ingest.Path, obj *ingest.Node, fields []string) bool {
	ok := true
	for i := range obj.Members {
		m := &obj.Members[i]
		if slices.Contains(fields, m.Key) || obj.Field(m.Key) != &m.Val {
			continue
		}
		ok = false
		c.Fail(loc.At(m.Key), "extra_forbidden", "Extra inputs are not permitted", &m.Val, nil)
	}
	return ok
}

// enum validates an Enum-typed field into dst. It is choice with pydantic's
// problem for an Enum ("enum") instead of a Literal's.
func enum[S ~string](c *ingest.Checker, obj *ingest.Node, loc ingest.Path, name string, pr ingest.Presence, l ingest.Literal, dst *S) bool {
	v, ok := c.Lookup(obj, loc, name, pr)
	if v == nil {
		return ok
	}
	if v.Kind == ingest.KindString && slices.Contains(l.Options, v.Str) {
		*dst = S(v.Str)
		return true
	}
	c.Fail(loc.At(name), "enum", "Input should be "+l.Expected, v, map[string]any{"expected": l.Expected})
	return false
}

// balancingAreaPattern is the pattern of a balancing area's EIC: an EIC
// (pipeline.ValidEIC) of type Y. ingest.BalancingGroupPattern is its type-X twin.
const balancingAreaPattern = `^[0-9]{2}Y[0-9A-Z-]{12}[0-9A-Z]$`

// eic validates a required EIC field of the type letter (Y: balancing area,
// X: balancing group), reported as a pattern mismatch like any constrained
// string.
func eic(c *ingest.Checker, obj *ingest.Node, loc ingest.Path, name string, typ byte, dst *string) bool {
	v, ok := c.Lookup(obj, loc, name, ingest.Required)
	if v == nil {
		return ok
	}
	l := loc.At(name)
	s, ok := c.Text(l, v, ingest.AnyText)
	if !ok {
		return false
	}
	if !pipeline.ValidEIC(s) || s[2] != typ {
		pattern := balancingAreaPattern
		if typ == 'X' {
			pattern = ingest.BalancingGroupPattern
		}
		c.Fail(l, "string_pattern_mismatch", "String should match pattern '"+pattern+"'", v, map[string]any{"pattern": pattern})
		return false
	}
	*dst = s
	return true
}

// count validates a required count: an integer of at least 1. Like the
// other numbers of the API, and unlike pydantic's lax mode, it takes no
// numeric strings; nor does it take 2.0.
func count(c *ingest.Checker, obj *ingest.Node, loc ingest.Path, name string, dst *int) bool {
	v, ok := c.Lookup(obj, loc, name, ingest.Required)
	if v == nil {
		return ok
	}
	l := loc.At(name)
	switch v.Kind {
	case ingest.KindString:
		c.Fail(l, "int_parsing", "Input should be a valid integer, unable to parse string as an integer", v, nil)
		return false
	case ingest.KindNumber:
	default:
		c.Fail(l, "int_type", "Input should be a valid integer", v, nil)
		return false
	}
	n, err := strconv.ParseInt(v.Str, 10, 0)
	switch {
	case err == nil && n >= 1:
		*dst = int(n)
		return true
	case err == nil:
		c.Fail(l, "greater_than_equal", "Input should be greater than or equal to 1", v, map[string]any{"ge": 1})
	case strings.ContainsAny(v.Str, ".eE") && v.Num != math.Trunc(v.Num):
		c.Fail(l, "int_from_float", "Input should be a valid integer, got a number with a fractional part", v, nil)
	case strings.ContainsAny(v.Str, ".eE"):
		c.Fail(l, "int_type", "Input should be a valid integer", v, nil)
	default:
		c.Fail(l, "int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size", v, nil)
	}
	return false
}

// tooLong is pydantic's problem for a list beyond its max_length. Unlike
// FastAPI it does not echo the list: that would make the answer as large
// as the oversized body.
func tooLong(c *ingest.Checker, loc ingest.Path, n, limit int) {
	c.Add(ingest.Problem{
		Type: "too_long", Loc: append([]string(nil), loc...),
		Msg:   fmt.Sprintf("List should have at most %d items after validation, not %d", limit, n),
		Input: nil, Ctx: map[string]any{"field_type": "List", "max_length": limit, "actual_length": n},
	})
}

// datetimeField validates a timezone-aware datetime field into dst.
func datetimeField(c *ingest.Checker, obj *ingest.Node, loc ingest.Path, name string, pr ingest.Presence, dst *time.Time) bool {
	v, ok := c.Lookup(obj, loc, name, pr)
	if v == nil {
		return ok
	}
	l := loc.At(name)
	if v.Kind != ingest.KindString {
		c.Fail(l, "datetime_type", "Input should be a valid datetime", v, nil)
		return false
	}
	t, p := parseDatetime(v.Str)
	if p != nil {
		p.Loc = append([]string(nil), l...)
		p.Input = v.Str
		c.Add(*p)
		return false
	}
	*dst = t
	return true
}

// Error texts of speedate's datetime parser, beyond those of dates.
const (
	dtSeparator      = "invalid datetime separator, expected `T`, `t`, `_` or space"
	dtTimeSeparator  = "invalid time separator, expected `:`"
	dtHourChar       = "invalid character in hour"
	dtMinuteChar     = "invalid character in minute"
	dtSecondChar     = "invalid character in second"
	dtFractionNone   = "second fraction digits missing after `.`"
	dtHourRange      = "hour value is outside expected range of 0-23"
	dtMinuteRange    = "minute value is outside expected range of 0-59"
	dtSecondRange    = "second value is outside expected range of 0-59"
	dtZoneSign       = "invalid timezone sign"
	dtZoneHour       = "invalid timezone hour"
	dtZoneMinute     = "invalid timezone minute"
	dtZoneMinuteSpan = "timezone minute value is outside expected range of 0-59"
	dtZoneSpan       = "timezone offset must be less than 24 hours"
)

// parseDatetime reads an RFC 3339 timestamp with its UTC offset, e.g.
// 2026-11-23T06:00:00+01:00, as speedate (pydantic's parser) reads a
// datetime: the date as ingest.ParseDate, a separator T, t, _ or space, HH:MM with
// optional :SS and fraction, and a zone Z, z, ±HH, ±HHMM or ±HH:MM. A
// timestamp without a zone is the AwareDatetime's timezone_aware problem.
// The time keeps its offset: a fixed zone, never the host's Local. The
// returned problem lacks loc and input.
func parseDatetime(s string) (time.Time, *ingest.Problem) {
	failed := func(text string) (time.Time, *ingest.Problem) {
		return time.Time{}, &ingest.Problem{Type: "datetime_parsing", Msg: "Input should be a valid datetime, " + text,
			Ctx: map[string]any{"error": text}}
	}
	if len(s) < 10 {
		return failed(ingest.DateTooShort)
	}
	d, p := ingest.ParseDate(s[:10])
	if p != nil {
		return failed(p.Ctx["error"].(string))
	}
	if len(s) == 10 || !strings.ContainsRune("Tt_ ", rune(s[10])) {
		return failed(dtSeparator)
	}
	t := s[11:]
	digits2 := func(i int) (int, bool) {
		if i+2 > len(t) || t[i] < '0' || t[i] > '9' || t[i+1] < '0' || t[i+1] > '9' {
			return 0, false
		}
		return int(t[i]-'0')*10 + int(t[i+1]-'0'), true
	}
	if len(t) < 5 {
		return failed(ingest.DateTooShort)
	}
	hour, ok := digits2(0)
	if !ok {
		return failed(dtHourChar)
	}
	if t[2] != ':' {
		return failed(dtTimeSeparator)
	}
	minute, ok := digits2(3)
	if !ok {
		return failed(dtMinuteChar)
	}
	i, second, nanos := 5, 0, 0
	if i < len(t) && t[i] == ':' {
		if second, ok = digits2(i + 1); !ok {
			if i+3 > len(t) {
				return failed(ingest.DateTooShort)
			}
			return failed(dtSecondChar)
		}
		i += 3
		if i < len(t) && (t[i] == '.' || t[i] == ',') {
			i++
			start, scale := i, 100_000_000
			for ; i < len(t) && t[i] >= '0' && t[i] <= '9'; i++ {
				// Digits beyond nanoseconds are dropped, as pydantic drops
				// those beyond microseconds.
				nanos += int(t[i]-'0') * scale
				scale /= 10
			}
			if i == start {
				return failed(dtFractionNone)
			}
		}
	}
	switch {
	case hour > 23:
		return failed(dtHourRange)
	case minute > 59:
		return failed(dtMinuteRange)
	case second > 59:
		return failed(dtSecondRange)
	}
	if i == len(t) {
		return time.Time{}, &ingest.Problem{Type: "timezone_aware", Msg: "Input should have timezone info", Ctx: map[string]any{}}
	}
	offset := 0
	switch t[i] {
	case 'Z', 'z':
		i++
	case '+', '-':
		sign := 1
		if t[i] == '-' {
			sign = -1
		}
		h, ok := digits2(i + 1)
		if !ok {
			return failed(dtZoneHour)
		}
		i += 3
		m := 0
		if i < len(t) && t[i] == ':' {
			if m, ok = digits2(i + 1); !ok {
				return failed(dtZoneMinute)
			}
			i += 3
		} else if i < len(t) {
			if m, ok = digits2(i); !ok {
				return failed(dtZoneMinute)
			}
			i += 2
		}
		if m > 59 {
			return failed(dtZoneMinuteSpan)
		}
		if offset = sign * (h*3600 + m*60); h >= 24 {
			return failed(dtZoneSpan)
		}
	default:
		return failed(dtZoneSign)
	}
	if i != len(t) {
		return failed(ingest.DateExtraAtTheEnd)
	}
	zone := time.UTC
	if offset != 0 {
		zone = time.FixedZone("", offset)
	}
	return time.Date(d.Year, d.Month, d.Dom, hour, minute, second, nanos, zone), nil
}
