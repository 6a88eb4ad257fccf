package databody

import (
	"fmt"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/pipeline"
)

func TestMeteredDataValidSample(t *testing.T) {
	sub, err := DecodeMeteredData(ingesttest.ReadTestdata(t, "metered.json"), ingest.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		day  pipeline.Day
		unit pipeline.Unit
		n    int
	}{
		{pipeline.NewDay(2026, 3, 29), pipeline.MW, 92},
		{pipeline.NewDay(2026, 3, 28), pipeline.MWH, 96},
		{pipeline.NewDay(2026, 10, 25), pipeline.KWH, 100},
	}
	if len(sub.Entries) != len(want) || sub.ValidateOnly {
		t.Fatalf("got %+v", sub)
	}
	for i, w := range want {
		if e := sub.Entries[i]; e.Malo != "01234567890" || e.Day != w.day || e.Unit != w.unit || len(e.Values) != w.n {
			t.Errorf("entries[%d] = %v %v %v %d values", i, e.Malo, e.Day, e.Unit, len(e.Values))
		}
	}
}

func TestProfilesValidSample(t *testing.T) {
	sub, err := DecodeProfiles(ingesttest.ReadTestdata(t, "profiles.json"), ingest.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Entries) != 3 || !sub.ValidateOnly {
		t.Fatalf("got %+v", sub)
	}
	for i, n := range []int{92, 96, 100} {
		if e := sub.Entries[i]; e.MGA != "MGA1" || e.Profile != "H25" || len(e.ValuesKWh) != n {
			t.Errorf("entries[%d] = %v %v %v %d values", i, e.MGA, e.Profile, e.Day, len(e.ValuesKWh))
		}
	}
}

func TestMeteredDataSchemaProblems(t *testing.T) {
	good := ingesttest.MeteredEntry("01234567890", "2026-03-28", "KWH", 96)
	values := make([]string, 96)
	for i := range values {
		values[i] = "1.5"
	}
	values[17] = "-0.001"
	tests := []struct {
		name string
		body string
		want []problem
	}{
		{"missing entries", `{}`, []problem{{"missing", "body.entries", "Field required", "", `{}`}}},
		{"entries not a list", `{"entries":{"malo":"01234567890"}}`, []problem{{"list_type", "body.entries", "Input should be a valid list", "", `{"malo":"01234567890"}`}}},
		{"empty entries", `{"entries":[]}`, []problem{{"too_short", "body.entries", "List should have at least 1 item after validation, not 0", `{"field_type":"List","min_length":1,"actual_length":0}`, "[]"}}},
		{"entry not an object", `{"entries":[` + good + `,null]}`, []problem{
			{"model_type", "body.entries.1", "Input should be a valid dictionary or instance of MeteredEntry", `{"class_name":"MeteredEntry"}`, "null"},
		}},
		{"empty entry", `{"entries":[{}]}`, []problem{
			{"missing", "body.entries.0.malo", "Field required", "", "{}"},
			{"missing", "body.entries.0.day", "Field required", "", "{}"},
			{"missing", "body.entries.0.unit", "Field required", "", "{}"},
			{"missing", "body.entries.0.values", "Field required", "", "{}"},
		}},
		{"unit", `{"entries":[` + ingesttest.MeteredEntry("01234567890", "2026-03-28", "kWh", 96) + `]}`, []problem{
			{"literal_error", "body.entries.0.unit", "Input should be 'MW', 'MWH' or 'KWH'", `{"expected":"'MW', 'MWH' or 'KWH'"}`, `"kWh"`},
		}},
		{"malo and day", `{"entries":[` + ingesttest.MeteredEntry("1234567890", "2026-03-28T00:00:00+01:00", "MW", 96) + `]}`, []problem{
			{"string_pattern_mismatch", "body.entries.0.malo", `String should match pattern '^\d{11}$'`, `{"pattern":"^\\d{11}$"}`, `"1234567890"`},
			{"date_parsing", "body.entries.0.day", "Input should be a valid date in the format YYYY-MM-DD, unexpected extra characters at the end of the input",
				`{"error":"unexpected extra characters at the end of the input"}`, `"2026-03-28T00:00:00+01:00"`},
		}},
		{"a value in the fourth entry", `{"entries":[` + strings.Repeat(good+",", 3) +
			`{"malo":"01234567890","day":"2026-03-29","unit":"MW","values":[` + strings.Join(values, ",") + `]}]}`, []problem{
			{"greater_than_equal", "body.entries.3.values.17", "Input should be greater than or equal to 0", `{"ge":0}`, "-0.001"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeMeteredData([]byte(tt.body), ingest.Rules{})
			ingesttest.CheckProblems(t, err, tt.want)
		})
	}
}

func TestMeteredDataBusinessRules(t *testing.T) {
	body := `{"entries":[` + strings.Join([]string{ingesttest.MeteredEntry("01234567890", "2026-03-29", "MW", 96), ingesttest.MeteredEntry("01234567890", "2026-03-28", "MW", 96), ingesttest.MeteredEntry("01234567890", "2026-10-25", "MW", 96), ingesttest.MeteredEntry("01234567890", "2026-03-28", "KWH", 96), ingesttest.MeteredEntry("11234567890", "2026-03-28", "KWH", 95), ingesttest.MeteredEntry("01234567890", "2026-03-29", "MW", 92)}, ",") + `]}`
	_, err := DecodeMeteredData([]byte(body), ingesttest.AllAreas)
	ingesttest.CheckMessages(t, err,
		"entries[0] (01234567890, 2026-03-29): 96 intervals, expected 92",
		"entries[2] (01234567890, 2026-10-25): 96 intervals, expected 100",
		"entries[4] (11234567890, 2026-03-28): 95 intervals, expected 96",
		"entries[3] (01234567890, 2026-03-28): duplicate of entries[1]",
		"entries[5] (01234567890, 2026-03-29): duplicate of entries[0]",
	)
}

func profileEntry(mga, profile, day string, n int) string {
	return fmt.Sprintf(`{"mga":%q,"profile":%q,"day":%q,"values_kwh":%s}`, mga, profile, day, ingesttest.Nums(n))
}

func TestProfilesSchemaProblems(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []problem
	}{
		{"entry not an object", `{"entries":["x"]}`, []problem{
			{"model_type", "body.entries.0", "Input should be a valid dictionary or instance of ProfileEntry", `{"class_name":"ProfileEntry"}`, `"x"`},
		}},
		{"empty entry", `{"entries":[{"values":[]}]}`, []problem{
			{"missing", "body.entries.0.mga", "Field required", "", `{"values":[]}`},
			{"missing", "body.entries.0.profile", "Field required", "", `{"values":[]}`},
			{"missing", "body.entries.0.day", "Field required", "", `{"values":[]}`},
			{"missing", "body.entries.0.values_kwh", "Field required", "", `{"values":[]}`},
		}},
		{"lengths and values", `{"entries":[{"mga":"","profile":"` + strings.Repeat("x", 33) + `","day":"2026-03-28","values_kwh":[1,"x"]}]}`, []problem{
			{"string_too_short", "body.entries.0.mga", "String should have at least 1 character", `{"min_length":1}`, `""`},
			{"string_too_long", "body.entries.0.profile", "String should have at most 32 characters", `{"max_length":32}`, `"` + strings.Repeat("x", 33) + `"`},
			{"float_parsing", "body.entries.0.values_kwh.1", "Input should be a valid number, unable to parse string as a number", "", `"x"`},
		}},
		{"mga too long, profile not a string", `{"entries":[{"mga":"` + strings.Repeat("m", 65) + `","profile":25,"day":"2026-03-28","values_kwh":[]}]}`, []problem{
			{"string_too_long", "body.entries.0.mga", "String should have at most 64 characters", `{"max_length":64}`, ""},
			{"string_type", "body.entries.0.profile", "Input should be a valid string", "", "25"},
		}},
		{"validate_only", `{"entries":[` + profileEntry("M", "H25", "2026-03-28", 96) + `],"validate_only":[]}`, []problem{
			{"bool_type", "body.validate_only", "Input should be a valid boolean", "", "[]"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeProfiles([]byte(tt.body), ingest.Rules{})
			ingesttest.CheckProblems(t, err, tt.want)
		})
	}
}

func TestProfilesBusinessRules(t *testing.T) {
	body := `{"entries":[` + strings.Join([]string{
		profileEntry("MGA1", "H25", "2026-03-29", 92),
		profileEntry("MGA1", "H25", "2026-03-28", 96),
		profileEntry("MGA1", "G25", "2026-03-28", 96),
		profileEntry("MGA1", "H25", "2026-10-25", 96),
		profileEntry("MGA2", "H25", "2026-03-28", 96),
		profileEntry("MGA1", "H25", "2026-03-28", 96),
	}, ",") + `]}`
	_, err := DecodeProfiles([]byte(body), ingest.Rules{})
	ingesttest.CheckMessages(t, err,
		"entries[3] (MGA1/H25, 2026-10-25): 96 intervals, expected 100",
		"entries[5] (MGA1/H25, 2026-03-28): duplicate of entries[1]",
	)
}

// TestProblemCap: a body with more failures than the cap answers with the
// first 1000, in order.
func TestProblemCap(t *testing.T) {
	entries := make([]string, 1500)
	for i := range entries {
		entries[i] = ingesttest.MeteredEntry("x", "2026-03-28", "MW", 96)
	}
	_, err := DecodeMeteredData([]byte(`{"entries":[`+strings.Join(entries, ",")+`]}`), ingest.Rules{})
	ps := ingesttest.SchemaProblems(t, err)
	if len(ps) != 1000 {
		t.Fatalf("%d problems, want 1000", len(ps))
	}
	if got := strings.Join(ps[999].Loc, "."); got != "body.entries.999.malo" {
		t.Errorf("last problem at %s", got)
	}
	// The cap holds inside one list of values too.
	values := strings.TrimSuffix(strings.Repeat("-1,", 1200), ",")
	_, err = DecodeMeteredData([]byte(`{"entries":[{"malo":"x","day":"2026-03-28","unit":"MW","values":[`+values+`]}]}`), ingest.Rules{})
	if ps := ingesttest.SchemaProblems(t, err); len(ps) != 1000 || strings.Join(ps[999].Loc, ".") != "body.entries.0.values.998" {
		t.Errorf("%d problems, last at %v", len(ps), ps[len(ps)-1].Loc)
	}
}

// TestMessageCap: business messages stop at 1000 while Total counts all, and
// detail is the first.
func TestMessageCap(t *testing.T) {
	entries := make([]string, 1500)
	for i := range entries {
		entries[i] = ingesttest.MeteredEntry(fmt.Sprintf("%011d", i), "2026-03-29", "MW", 96)
	}
	_, err := DecodeMeteredData([]byte(`{"entries":[`+strings.Join(entries, ",")+`]}`), ingest.Rules{})
	be, ok := err.(*ingest.BusinessError)
	if !ok {
		t.Fatalf("got %T %v", err, err)
	}
	if len(be.Messages) != 1000 || be.Total != 1500 {
		t.Errorf("%d messages, total %d", len(be.Messages), be.Total)
	}
	if be.Messages[0] != "entries[0] (00000000000, 2026-03-29): 96 intervals, expected 92" ||
		be.Messages[999] != "entries[999] (00000000999, 2026-03-29): 96 intervals, expected 92" {
		t.Errorf("first %q, last %q", be.Messages[0], be.Messages[999])
	}
	if want := "entries[0] (00000000000, 2026-03-29): 96 intervals, expected 92 (and 1499 more)"; be.Error() != want {
		t.Errorf("Error() = %q", be.Error())
	}
}
