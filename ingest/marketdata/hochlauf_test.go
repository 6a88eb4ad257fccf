package marketdata

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
)

// problem is an expected schema problem (see ingesttest.Want).
type problem ingesttest.Want

func TestSnapshotValidSample(t *testing.T) {
	s, hash, err := DecodeSnapshot(ingesttest.ReadTestdata(t, "zeitreihen/quellstand.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Quelle != "hochlauf_export.py" || len(s.Eintraege) != 6 || len(hash) != 64 {
		t.Fatalf("got %+v, hash %q", s, hash)
	}
	// stand keeps the offset it was given.
	if _, off := s.Stand.Zone(); off != 3600 || !s.Stand.Equal(time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC)) {
		t.Errorf("stand = %v", s.Stand)
	}
	want0 := zeitreihen.Entry{NetzbetreiberMPID: "9907248000001", Netzbetreiber: "Stadtwerke Musterstadt Netz GmbH",
		Bilanzierungsgebiet: "11YR000000000123", Regelzone: pipeline.Amprion, Lieferbeginn: pipeline.NewDay(2026, 9, 1),
		Prognoseart: zeitreihen.PrognoseSLP, Zaehlertyp: "DREHSTROMZAEHLER", Anzahl: 412}
	if s.Eintraege[0] != want0 {
		t.Errorf("eintraege[0] = %+v", s.Eintraege[0])
	}
	// Optional fields left out stay empty.
	want5 := zeitreihen.Entry{NetzbetreiberMPID: "9900000000010", Bilanzierungsgebiet: "11YW-NETZSUED--K",
		Regelzone: pipeline.TransnetBW, Lieferbeginn: pipeline.NewDay(2026, 12, 1), Zaehlertyp: "MODERNE_MESSEINRICHTUNG", Anzahl: 9}
	if s.Eintraege[5] != want5 {
		t.Errorf("eintraege[5] = %+v", s.Eintraege[5])
	}
}

// snapshotBody renders a snapshot as a body, entries in the given order.
func snapshotBody(t *testing.T, s zeitreihen.Snapshot) []byte {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSnapshotHash(t *testing.T) {
	s, hash, err := DecodeSnapshot(ingesttest.ReadTestdata(t, "zeitreihen/quellstand.json"))
	if err != nil {
		t.Fatal(err)
	}
	hashOf := func(edit func(s *zeitreihen.Snapshot)) string {
		t.Helper()
		c := s
		c.Eintraege = slices.Clone(s.Eintraege)
		edit(&c)
		_, h, err := DecodeSnapshot(snapshotBody(t, c))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	same := map[string]func(s *zeitreihen.Snapshot){
		"re-encoded":       func(*zeitreihen.Snapshot) {},
		"entries reversed": func(s *zeitreihen.Snapshot) { slices.Reverse(s.Eintraege) },
		"entries rotated":  func(s *zeitreihen.Snapshot) { s.Eintraege = append(s.Eintraege[2:], s.Eintraege[:2]...) },
		"stand in UTC":     func(s *zeitreihen.Snapshot) { s.Stand = s.Stand.UTC() },
		"stand at +05:30":  func(s *zeitreihen.Snapshot) { s.Stand = s.Stand.In(time.FixedZone("", 5*3600+1800)) },
	}
	for name, edit := range same {
		if h := hashOf(edit); h != hash {
			t.Errorf("%s: hash %s, want %s", name, h, hash)
		}
	}
	different := map[string]func(s *zeitreihen.Snapshot){
		"a count": func(s *zeitreihen.Snapshot) { s.Eintraege[3].Anzahl++ },
		"counts swapped": func(s *zeitreihen.Snapshot) {
			s.Eintraege[0].Anzahl, s.Eintraege[1].Anzahl = s.Eintraege[1].Anzahl, s.Eintraege[0].Anzahl
		},
		"an entry dropped":  func(s *zeitreihen.Snapshot) { s.Eintraege = s.Eintraege[1:] },
		"a DSO name":        func(s *zeitreihen.Snapshot) { s.Eintraege[4].Netzbetreiber = "Netz Süd" },
		"a forecast type":   func(s *zeitreihen.Snapshot) { s.Eintraege[5].Prognoseart = zeitreihen.PrognoseSLP },
		"the source":        func(s *zeitreihen.Snapshot) { s.Quelle = "other.py" },
		"the stand instant": func(s *zeitreihen.Snapshot) { s.Stand = s.Stand.Add(time.Second) },
	}
	seen := map[string]string{hash: "the sample"}
	for name, edit := range different {
		h := hashOf(edit)
		if other, dup := seen[h]; dup {
			t.Errorf("%s: same hash as %s", name, other)
		}
		seen[h] = name
	}
}

// The canonical encoding is encoding/json's of the sorted snapshot with
// every object's keys sorted and stand in UTC.
func TestCanonicalSnapshotIsSortedEncodingJSON(t *testing.T) {
	s, _, err := DecodeSnapshot(ingesttest.ReadTestdata(t, "zeitreihen/quellstand.json"))
	if err != nil {
		t.Fatal(err)
	}
	s.Stand = s.Stand.Add(123456789 * time.Nanosecond)
	s.Eintraege[1].Netzbetreiber = `Netz "Süd" <&>`
	got := string(canonicalSnapshot(&s))
	sorted := s
	sorted.Eintraege = slices.Clone(s.Eintraege)
	slices.SortFunc(sorted.Eintraege, compareEntries)
	sorted.Stand = s.Stand.UTC()
	if want := ingesttest.NormJSON(t, ingesttest.MustJSON(t, sorted)); got != want {
		t.Errorf("canonical\n%s\nwant\n%s", got, want)
	}
	// By DSO, then (among others) day, then forecast type, "" first.
	order := []string{`"anzahl":9,`, `"anzahl":5,`, `"anzahl":412,`, `"anzahl":37,`, `"anzahl":3,`, `"anzahl":58,`}
	for i := 1; i < len(order); i++ {
		if strings.Index(got, order[i-1]) > strings.Index(got, order[i]) {
			t.Errorf("entries not sorted: %s before %s in %s", order[i], order[i-1], got)
		}
	}
}

func TestSnapshotEmptyIsValid(t *testing.T) {
	s, hash, err := DecodeSnapshot([]byte(`{"eintraege":[],"quelle":"q","stand":"2026-11-23T06:00:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Eintraege == nil || len(s.Eintraege) != 0 || hash == "" {
		t.Errorf("got %+v %q", s, hash)
	}
	if b := ingesttest.MustJSON(t, s); !strings.Contains(b, `"eintraege":[]`) {
		t.Errorf("marshals as %s", b)
	}
}

// entry is a valid snapshot entry with the given members replaced, added
// (extra ones) or, given as "-name", removed.
func entry(t *testing.T, changes ...string) string {
	t.Helper()
	return object(t, `{"netzbetreiber_mp_id":"9907248000001","netzbetreiber":"SW Netz","bilanzierungsgebiet":"11YR000000000123",`+
		`"regelzone":"Amprion","lieferbeginn":"2026-09-01","prognoseart":"SLP","zaehlertyp":"DREHSTROMZAEHLER","anzahl":4}`, changes...)
}

// object applies changes ("name":value members, or -name) to a JSON object
// and keeps its member order; new members go to the end.
func object(t *testing.T, base string, changes ...string) string {
	t.Helper()
	type kv struct{ k, v string }
	var members []kv
	split := func(obj string) []kv {
		var out []kv
		d := json.NewDecoder(strings.NewReader(obj))
		d.UseNumber()
		if _, err := d.Token(); err != nil {
			t.Fatal(err)
		}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				t.Fatal(err)
			}
			var v json.RawMessage
			if err := d.Decode(&v); err != nil {
				t.Fatal(err)
			}
			out = append(out, kv{k.(string), string(v)})
		}
		return out
	}
	members = split(base)
	for _, c := range changes {
		if name, ok := strings.CutPrefix(c, "-"); ok {
			members = slices.DeleteFunc(members, func(m kv) bool { return m.k == name })
			continue
		}
		for _, m := range split("{" + c + "}") {
			if i := slices.IndexFunc(members, func(x kv) bool { return x.k == m.k }); i >= 0 {
				members[i] = m
			} else {
				members = append(members, m)
			}
		}
	}
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = ingesttest.MustJSON(t, m.k) + ":" + m.v
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func snapshotOf(entries ...string) string {
	return `{"eintraege":[` + strings.Join(entries, ",") + `],"quelle":"test","stand":"2026-11-23T06:00:00+01:00"}`
}

func TestSnapshotProblems(t *testing.T) {
	const areas = `'50Hertz', 'Amprion', 'TenneT' or 'TransnetBW'`
	const prognosen = `'RLM', 'SLP', 'TLP_GEMEINSAM', 'TLP_GETRENNT', 'PAUSCHAL' or 'IMS'`
	const meters = `'DREHSTROMZAEHLER', 'WECHSELSTROMZAEHLER', 'LEISTUNGSZAEHLER', 'MAXIMUMZAEHLER', 'MODERNE_MESSEINRICHTUNG', 'INTELLIGENTES_MESSSYSTEM' or 'ELEKTRONISCHER_ZAEHLER'`
	tests := []struct {
		name string
		body string
		want []problem
	}{
		{"not an object", `[]`, []problem{
			{"model_attributes_type", "body", "Input should be a valid dictionary or object to extract fields from", "", `[]`},
		}},
		{"everything missing", `{}`, []problem{
			{"missing", "body.eintraege", "Field required", "", `{}`},
			{"missing", "body.quelle", "Field required", "", `{}`},
			{"missing", "body.stand", "Field required", "", `{}`},
		}},
		{"market location ids are no field", `{"eintraege":[],"quelle":"q","stand":"2026-11-23T06:00:00Z","malos":["01234567890"]}`, []problem{
			{"extra_forbidden", "body.malos", "Extra inputs are not permitted", "", `["01234567890"]`},
		}},
		{"extras come after the fields, a repeated key once", `{"x":1,"eintraege":{},"x":2,"quelle":"q","stand":"2026-11-23T06:00:00Z","y":null}`, []problem{
			{"list_type", "body.eintraege", "Input should be a valid list", "", `{}`},
			{"extra_forbidden", "body.x", "Extra inputs are not permitted", "", `2`},
			{"extra_forbidden", "body.y", "Extra inputs are not permitted", "", `null`},
		}},
		{"entry not an object", snapshotOf(`1`, `"x"`), []problem{
			{"model_type", "body.eintraege.0", "Input should be a valid dictionary or instance of Eintrag", `{"class_name":"Eintrag"}`, `1`},
			{"model_type", "body.eintraege.1", "Input should be a valid dictionary or instance of Eintrag", `{"class_name":"Eintrag"}`, `"x"`},
		}},
		{"a malo in an entry", snapshotOf(entry(t), entry(t, `"malo":"01234567890"`)), []problem{
			{"extra_forbidden", "body.eintraege.1.malo", "Extra inputs are not permitted", "", `"01234567890"`},
		}},
		{"required fields of an entry", snapshotOf(`{"netzbetreiber":"SW","prognoseart":null,"zaehlertyp":null}`), []problem{
			{"missing", "body.eintraege.0.netzbetreiber_mp_id", "Field required", "", ""},
			{"missing", "body.eintraege.0.bilanzierungsgebiet", "Field required", "", ""},
			{"missing", "body.eintraege.0.regelzone", "Field required", "", ""},
			{"missing", "body.eintraege.0.lieferbeginn", "Field required", "", ""},
			{"missing", "body.eintraege.0.anzahl", "Field required", "", `{"netzbetreiber":"SW","prognoseart":null,"zaehlertyp":null}`},
		}},
		{"every field of an entry wrong", snapshotOf(entry(t, `"netzbetreiber_mp_id":"990724800000"`, `"netzbetreiber":5`,
			`"bilanzierungsgebiet":"11XACME-ENERGIEZ"`, `"regelzone":"tennet"`, `"lieferbeginn":"01.09.2026"`, `"prognoseart":"TLP"`,
			`"zaehlertyp":"drehstromzaehler"`, `"anzahl":"4"`, `"marktlokationen":[]`)), []problem{
			{"string_pattern_mismatch", "body.eintraege.0.netzbetreiber_mp_id", `String should match pattern '^\d{13}$'`, `{"pattern":"^\\d{13}$"}`, `"990724800000"`},
			{"string_type", "body.eintraege.0.netzbetreiber", "Input should be a valid string", "", `5`},
			{"string_pattern_mismatch", "body.eintraege.0.bilanzierungsgebiet", "String should match pattern '" + yPattern + "'", `{"pattern":"` + yPattern + `"}`, `"11XACME-ENERGIEZ"`},
			{"enum", "body.eintraege.0.regelzone", "Input should be " + areas, `{"expected":"` + areas + `"}`, `"tennet"`},
			{"date_from_datetime_parsing", "body.eintraege.0.lieferbeginn", "Input should be a valid date or datetime, invalid character in year", `{"error":"invalid character in year"}`, `"01.09.2026"`},
			{"enum", "body.eintraege.0.prognoseart", "Input should be " + prognosen, `{"expected":"` + prognosen + `"}`, `"TLP"`},
			{"enum", "body.eintraege.0.zaehlertyp", "Input should be " + meters, `{"expected":"` + meters + `"}`, `"drehstromzaehler"`},
			{"int_parsing", "body.eintraege.0.anzahl", "Input should be a valid integer, unable to parse string as an integer", "", `"4"`},
			{"extra_forbidden", "body.eintraege.0.marktlokationen", "Extra inputs are not permitted", "", `[]`},
		}},
		{"a lowercase EIC, a date with a time, a null enum", snapshotOf(entry(t, `"bilanzierungsgebiet":"11yr000000000123"`,
			`"lieferbeginn":"2026-09-01T00:00:00"`, `"regelzone":null`)), []problem{
			{"string_pattern_mismatch", "body.eintraege.0.bilanzierungsgebiet", "String should match pattern '" + yPattern + "'", `{"pattern":"` + yPattern + `"}`, `"11yr000000000123"`},
			{"enum", "body.eintraege.0.regelzone", "Input should be " + areas, `{"expected":"` + areas + `"}`, `null`},
			{"date_parsing", "body.eintraege.0.lieferbeginn", "Input should be a valid date in the format YYYY-MM-DD, unexpected extra characters at the end of the input", `{"error":"unexpected extra characters at the end of the input"}`, `"2026-09-01T00:00:00"`},
		}},
		{"counts", snapshotOf(entry(t, `"anzahl":0`), entry(t, `"anzahl":-3`), entry(t, `"anzahl":1.5`), entry(t, `"anzahl":2.0`),
			entry(t, `"anzahl":1e2`), entry(t, `"anzahl":true`), entry(t, `"anzahl":null`), entry(t, `"anzahl":[1]`),
			entry(t, `"anzahl":99999999999999999999`)), []problem{
			{"greater_than_equal", "body.eintraege.0.anzahl", "Input should be greater than or equal to 1", `{"ge":1}`, `0`},
			{"greater_than_equal", "body.eintraege.1.anzahl", "Input should be greater than or equal to 1", `{"ge":1}`, `-3`},
			{"int_from_float", "body.eintraege.2.anzahl", "Input should be a valid integer, got a number with a fractional part", "", `1.5`},
			{"int_type", "body.eintraege.3.anzahl", "Input should be a valid integer", "", `2.0`},
			{"int_type", "body.eintraege.4.anzahl", "Input should be a valid integer", "", `100.0`},
			{"int_type", "body.eintraege.5.anzahl", "Input should be a valid integer", "", `true`},
			{"int_type", "body.eintraege.6.anzahl", "Input should be a valid integer", "", `null`},
			{"int_type", "body.eintraege.7.anzahl", "Input should be a valid integer", "", `[1]`},
			{"int_parsing_size", "body.eintraege.8.anzahl", "Unable to parse input string as an integer, exceeded maximum size", "", `99999999999999999999`},
		}},
		{"duplicate entries name the first", snapshotOf(entry(t), entry(t, `"prognoseart":null`), entry(t, `"netzbetreiber":"anders"`, `"anzahl":9`),
			entry(t, "-prognoseart")), []problem{
			{"value_error", "body.eintraege.2", "Value error, same netzbetreiber_mp_id, bilanzierungsgebiet, regelzone, lieferbeginn, prognoseart and zaehlertyp as eintraege[0]", `{"error":{}}`, ""},
			{"value_error", "body.eintraege.3", "Value error, same netzbetreiber_mp_id, bilanzierungsgebiet, regelzone, lieferbeginn, prognoseart and zaehlertyp as eintraege[1]", `{"error":{}}`, ""},
		}},
		{"quelle empty", `{"eintraege":[],"quelle":"","stand":"2026-11-23T06:00:00Z"}`, []problem{
			{"string_too_short", "body.quelle", "String should have at least 1 character", `{"min_length":1}`, `""`},
		}},
		{"quelle too long", `{"eintraege":[],"quelle":"` + strings.Repeat("ü", 201) + `","stand":"2026-11-23T06:00:00Z"}`, []problem{
			{"string_too_long", "body.quelle", "String should have at most 200 characters", `{"max_length":200}`, ""},
		}},
		{"quelle not a string, stand not a string", `{"eintraege":[],"quelle":["a"],"stand":1795413600}`, []problem{
			{"string_type", "body.quelle", "Input should be a valid string", "", `["a"]`},
			{"datetime_type", "body.stand", "Input should be a valid datetime", "", `1795413600`},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := DecodeSnapshot([]byte(tc.body))
			ingesttest.CheckProblems(t, err, tc.want)
		})
	}
}

func TestSnapshotTooManyEntries(t *testing.T) {
	body := `{"eintraege":[` + strings.Repeat(`{},`, maxSnapshotEntries) + `{}],"quelle":"q","stand":"2026-11-23T06:00:00Z"}`
	_, _, err := DecodeSnapshot([]byte(body))
	ingesttest.CheckProblems(t, err, []problem{
		{"too_long", "body.eintraege", "List should have at most 100000 items after validation, not 100001",
			`{"field_type":"List","max_length":100000,"actual_length":100001}`, `null`},
	})
}

func TestSnapshotStand(t *testing.T) {
	valid := []struct {
		in     string
		utc    time.Time
		offset int
	}{
		{"2026-11-23T06:00:00+01:00", time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC), 3600},
		{"2026-11-23T05:00:00Z", time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC), 0},
		{"2026-11-23t05:00:00z", time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC), 0},
		{"2026-07-01 08:30:15.25+02:00", time.Date(2026, 7, 1, 6, 30, 15, 250_000_000, time.UTC), 7200},
		{"2026-07-01T08:30+0200", time.Date(2026, 7, 1, 6, 30, 0, 0, time.UTC), 7200},
		{"2026-07-01T03:00:00-05", time.Date(2026, 7, 1, 8, 0, 0, 0, time.UTC), -5 * 3600},
		{"2028-02-29T00:00:00.123456789123+00:00", time.Date(2028, 2, 29, 0, 0, 0, 123456789, time.UTC), 0},
	}
	for _, tc := range valid {
		s, _, err := DecodeSnapshot([]byte(`{"eintraege":[],"quelle":"q","stand":"` + tc.in + `"}`))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if _, off := s.Stand.Zone(); !s.Stand.Equal(tc.utc) || off != tc.offset {
			t.Errorf("%s: %v (offset %d), want %v (offset %d)", tc.in, s.Stand, off, tc.utc, tc.offset)
		}
	}
	invalid := []struct{ in, typ, text string }{
		{"2026-11-23T06:00:00", "timezone_aware", ""},
		{"2026-11-23T06:00", "timezone_aware", ""},
		{"2026-11-23", "datetime_parsing", "invalid datetime separator, expected `T`, `t`, `_` or space"},
		{"2026-11-23X06:00:00Z", "datetime_parsing", "invalid datetime separator, expected `T`, `t`, `_` or space"},
		{"23.11.2026 06:00", "datetime_parsing", "invalid character in year"},
		{"2026-11", "datetime_parsing", "input is too short"},
		{"2026-02-29T06:00:00Z", "datetime_parsing", "day value is outside expected range"},
		{"2026-11-23T06", "datetime_parsing", "input is too short"},
		{"2026-11-23Tab:00:00Z", "datetime_parsing", "invalid character in hour"},
		{"2026-11-23T06.00.00Z", "datetime_parsing", "invalid time separator, expected `:`"},
		{"2026-11-23T06:xxZ", "datetime_parsing", "invalid character in minute"},
		{"2026-11-23T06:00:0xZ", "datetime_parsing", "invalid character in second"},
		{"2026-11-23T06:00:0", "datetime_parsing", "input is too short"},
		{"2026-11-23T06:00:00.Z", "datetime_parsing", "second fraction digits missing after `.`"},
		{"2026-11-23T24:00:00Z", "datetime_parsing", "hour value is outside expected range of 0-23"},
		{"2026-11-23T06:60:00Z", "datetime_parsing", "minute value is outside expected range of 0-59"},
		{"2026-11-23T06:00:60Z", "datetime_parsing", "second value is outside expected range of 0-59"},
		{"2026-11-23T06:00:00X", "datetime_parsing", "invalid timezone sign"},
		{"2026-11-23T06:00:00+1", "datetime_parsing", "invalid timezone hour"},
		{"2026-11-23T06:00:00+01:0", "datetime_parsing", "invalid timezone minute"},
		{"2026-11-23T06:00:00+01:60", "datetime_parsing", "timezone minute value is outside expected range of 0-59"},
		{"2026-11-23T06:00:00+24:00", "datetime_parsing", "timezone offset must be less than 24 hours"},
		{"2026-11-23T06:00:00+01:00 ", "datetime_parsing", "unexpected extra characters at the end of the input"},
		{"2026-11-23T06:00:00Z[Europe/Berlin]", "datetime_parsing", "unexpected extra characters at the end of the input"},
	}
	for _, tc := range invalid {
		_, _, err := DecodeSnapshot([]byte(`{"eintraege":[],"quelle":"q","stand":"` + tc.in + `"}`))
		want := problem{tc.typ, "body.stand", "Input should be a valid datetime, " + tc.text, `{"error":"` + tc.text + `"}`, ingesttest.MustJSON(t, tc.in)}
		if tc.typ == "timezone_aware" {
			want.Msg, want.Ctx = "Input should have timezone info", ""
		}
		t.Run(tc.in, func(t *testing.T) { ingesttest.CheckProblems(t, err, []problem{want}) })
	}
}
