package databody

import (
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/pipeline"
)

func TestMasterDataValidSample(t *testing.T) {
	sub, err := DecodeMasterData(ingesttest.ReadTestdata(t, "masterdata.json"), ingesttest.AllAreas)
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Locations) != 3 || sub.ValidateOnly {
		t.Fatalf("got %+v", sub)
	}
	l0, l1, l2 := sub.Locations[0], sub.Locations[1], sub.Locations[2]
	if l0.Malo != "01234567890" || len(l0.Slices) != 2 {
		t.Fatalf("locations[0] = %+v", l0)
	}
	s := l0.Slices[0]
	if !s.Active || s.ControlArea != pipeline.TenneT || s.MGA != "MGA1" || s.MeteringType != pipeline.SLP || s.Profile != "H25" ||
		s.AnnualConsumptionKWh == nil || *s.AnnualConsumptionKWh != 3500 || s.DSOMPID != "9900000000001" || s.Kind != pipeline.Consumption ||
		s.ValidFrom != pipeline.NewDay(2025, 1, 1) || s.ValidTo == nil || *s.ValidTo != pipeline.NewDay(2026, 1, 1) {
		t.Errorf("slices[0] = %+v", s)
	}
	if s := l0.Slices[1]; s.ValidTo != nil || s.Kind != pipeline.Production || s.AnnualConsumptionKWh != nil {
		t.Errorf("slices[1] = %+v", s)
	}
	// The flat form becomes one slice starting at delivery_start.
	if len(l1.Slices) != 1 || l1.Slices[0].ValidFrom != pipeline.NewDay(2026, 3, 29) || l1.Slices[0].MGA != "Netzgebiet Süd" ||
		l1.Slices[0].MeteringType != pipeline.IMSys || *l1.Slices[0].AnnualConsumptionKWh != 1234.5 || !l1.Slices[0].Active {
		t.Errorf("locations[1] = %+v", l1)
	}
	// A de-registration slice may omit the metering attributes.
	if len(l2.Slices) != 1 || l2.Slices[0].Active || l2.Slices[0].ControlArea != "" {
		t.Errorf("locations[2] = %+v", l2)
	}
}

// location wraps location objects into a master-data body.
func locations(ls ...string) string { return `{"locations":[` + strings.Join(ls, ",") + `]}` }

const activeSlice = `"control_area":"TenneT","mga":"MGA1","metering_type":"slp"`

func TestMasterDataSchemaProblems(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []problem
	}{
		{"missing locations", `{"validate_only":true}`, []problem{
			{"missing", "body.locations", "Field required", "", `{"validate_only":true}`},
		}},
		{"empty locations", `{"locations":[]}`, []problem{
			{"too_short", "body.locations", "List should have at least 1 item after validation, not 0", `{"field_type":"List","min_length":1,"actual_length":0}`, `[]`},
		}},
		{"location not an object", `{"locations":["01234567890"]}`, []problem{
			{"model_type", "body.locations.0", "Input should be a valid dictionary or instance of Location", `{"class_name":"Location"}`, `"01234567890"`},
		}},
		{"location missing malo", locations(`{"delivery_start":"2026-01-01",` + activeSlice + `}`), []problem{
			{"missing", "body.locations.0.malo", "Field required", "", ""},
		}},
		{"neither slices nor delivery_start", locations(`{"malo":"01234567890",` + activeSlice + `}`), []problem{
			{"value_error", "body.locations.0", "Value error, provide either slices or the flat form with delivery_start", `{"error":{}}`,
				`{"malo":"01234567890","control_area":"TenneT","mga":"MGA1","metering_type":"slp"}`},
		}},
		{"null slices and null delivery_start", locations(`{"malo":"01234567890","slices":null,"delivery_start":null}`), []problem{
			{"value_error", "body.locations.0", "Value error, provide either slices or the flat form with delivery_start", `{"error":{}}`, ""},
		}},
		{"both slices and delivery_start", locations(`{"malo":"01234567890","delivery_start":"2026-01-01","slices":[{"valid_from":"2026-01-01",` + activeSlice + `}],` + activeSlice + `}`), []problem{
			{"value_error", "body.locations.0", "Value error, provide either slices or the flat form with delivery_start", `{"error":{}}`, ""},
		}},
		{"empty slices", locations(`{"malo":"01234567890","slices":[]}`), []problem{
			{"too_short", "body.locations.0.slices", "List should have at least 1 item after validation, not 0", `{"field_type":"List","min_length":1,"actual_length":0}`, `[]`},
		}},
		{"slice not an object", locations(`{"malo":"01234567890","slices":[[]]}`), []problem{
			{"model_type", "body.locations.0.slices.0", "Input should be a valid dictionary or instance of Slice", `{"class_name":"Slice"}`, `[]`},
		}},
		{"slice missing valid_from", locations(`{"malo":"01234567890","slices":[{` + activeSlice + `}]}`), []problem{
			{"missing", "body.locations.0.slices.0.valid_from", "Field required", "", `{` + activeSlice + `}`},
		}},
		{"active slice incomplete", locations(`{"malo":"01234567890","slices":[{"valid_from":"2026-01-01","control_area":"TenneT","mga":"MGA1"}]}`), []problem{
			{"value_error", "body.locations.0.slices.0", "Value error, an active slice needs control_area, mga and metering_type", `{"error":{}}`,
				`{"valid_from":"2026-01-01","control_area":"TenneT","mga":"MGA1"}`},
		}},
		{"active flat form incomplete", locations(`{"malo":"01234567890","delivery_start":"2026-01-01","mga":"MGA1","metering_type":"rlm","active":true}`), []problem{
			{"value_error", "body.locations.0", "Value error, an active slice needs control_area, mga and metering_type", `{"error":{}}`,
				`{"malo":"01234567890","delivery_start":"2026-01-01","mga":"MGA1","metering_type":"rlm","active":true}`},
		}},
		{"empty window", locations(`{"malo":"01234567890","slices":[{"valid_from":"2026-01-01","valid_to":"2026-01-01",` + activeSlice + `}]}`), []problem{
			{"value_error", "body.locations.0.slices.0", "Value error, valid_to must be after valid_from", `{"error":{}}`, ""},
		}},
		{"negative window in the flat form", locations(`{"malo":"01234567890","delivery_start":"2026-01-02","valid_to":"2026-01-01",` + activeSlice + `}`), []problem{
			{"value_error", "body.locations.0", "Value error, valid_to must be after valid_from", `{"error":{}}`, ""},
		}},
		{"the first model validator wins", locations(`{"malo":"01234567890","slices":[{"valid_from":"2026-01-01","valid_to":"2025-01-01"}]}`), []problem{
			{"value_error", "body.locations.0.slices.0", "Value error, an active slice needs control_area, mga and metering_type", `{"error":{}}`, ""},
		}},
		{"every slice attribute wrong",
			locations(`{"malo":"01234567890","slices":[{"valid_from":"2026-01-01","valid_to":"01.01.2027","active":"yes","control_area":1,` +
				`"mga":"` + strings.Repeat("ä", 65) + `","metering_type":"SLP","profile":"","annual_consumption_kwh":-1,"kind":"both","dso_mp_id":"123"}]}`),
			[]problem{
				{"date_from_datetime_parsing", "body.locations.0.slices.0.valid_to", "Input should be a valid date or datetime, invalid character in year", `{"error":"invalid character in year"}`, `"01.01.2027"`},
				{"bool_parsing", "body.locations.0.slices.0.active", "Input should be a valid boolean, unable to interpret input", "", `"yes"`},
				{"string_type", "body.locations.0.slices.0.control_area", "Input should be a valid string", "", `1`},
				{"string_too_long", "body.locations.0.slices.0.mga", "String should have at most 64 characters", `{"max_length":64}`, ""},
				{"literal_error", "body.locations.0.slices.0.metering_type", "Input should be 'slp', 'tlp', 'rlm' or 'imsys'", `{"expected":"'slp', 'tlp', 'rlm' or 'imsys'"}`, `"SLP"`},
				{"string_too_short", "body.locations.0.slices.0.profile", "String should have at least 1 character", `{"min_length":1}`, `""`},
				{"greater_than_equal", "body.locations.0.slices.0.annual_consumption_kwh", "Input should be greater than or equal to 0", `{"ge":0}`, `-1`},
				{"literal_error", "body.locations.0.slices.0.kind", "Input should be 'consumption' or 'production'", `{"expected":"'consumption' or 'production'"}`, `"both"`},
				{"string_pattern_mismatch", "body.locations.0.slices.0.dso_mp_id", `String should match pattern '^\d{13}$'`, `{"pattern":"^\\d{13}$"}`, `"123"`},
			}},
		{"flat attributes are validated on the location",
			locations(`{"malo":"0123456789x","delivery_start":"2026-1-01","profile":"` + strings.Repeat("p", 33) + `","annual_consumption_kwh":"3500","active":null}`),
			[]problem{
				{"string_pattern_mismatch", "body.locations.0.malo", `String should match pattern '^\d{11}$'`, `{"pattern":"^\\d{11}$"}`, `"0123456789x"`},
				{"date_from_datetime_parsing", "body.locations.0.delivery_start", "Input should be a valid date or datetime, input is too short", `{"error":"input is too short"}`, `"2026-1-01"`},
				{"bool_type", "body.locations.0.active", "Input should be a valid boolean", "", `null`},
				{"string_too_long", "body.locations.0.profile", "String should have at most 32 characters", `{"max_length":32}`, ""},
				{"float_parsing", "body.locations.0.annual_consumption_kwh", "Input should be a valid number, unable to parse string as a number", "", `"3500"`},
			}},
		{"annual consumption must be finite", locations(`{"malo":"01234567890","delivery_start":"2026-01-01","annual_consumption_kwh":1e309,` + activeSlice + `}`), []problem{
			{"finite_number", "body.locations.0.annual_consumption_kwh", "Input should be a finite number", "", `1e309`},
		}},
		{"validate_only", `{"locations":[{"malo":"01234567890","delivery_start":"2026-01-01",` + activeSlice + `}],"validate_only":"false"}`, []problem{
			{"bool_parsing", "body.validate_only", "Input should be a valid boolean, unable to interpret input", "", `"false"`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeMasterData([]byte(tt.body), ingesttest.AllAreas)
			ingesttest.CheckProblems(t, err, tt.want)
		})
	}
}

// TestMasterDataLengthsInCharacters: pydantic counts characters, so 64
// two-byte characters are a valid mga.
func TestMasterDataLengthsInCharacters(t *testing.T) {
	body := locations(`{"malo":"01234567890","delivery_start":"2026-01-01","control_area":"TenneT","metering_type":"slp","mga":"` +
		strings.Repeat("ä", 64) + `","profile":"` + strings.Repeat("ö", 32) + `"}`)
	if _, err := DecodeMasterData([]byte(body), ingesttest.AllAreas); err != nil {
		t.Fatal(err)
	}
}

func TestMasterDataBusinessRules(t *testing.T) {
	active := ingest.Rules{Active: pipeline.NewAreaSet(pipeline.TenneT)}
	slice := func(from, to, area string) string {
		s := `{"valid_from":"` + from + `","mga":"M","metering_type":"rlm","control_area":"` + area + `"`
		if to != "" {
			s += `,"valid_to":"` + to + `"`
		}
		return s + "}"
	}
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"inactive areas in both forms",
			locations(
				`{"malo":"01234567890","slices":[`+slice("2025-01-01", "2026-01-01", "TenneT")+`,`+slice("2026-01-01", "", "Amprion")+`]}`,
				`{"malo":"11234567890","delivery_start":"2026-01-01","control_area":"tennet","mga":"M","metering_type":"slp"}`,
				`{"malo":"21234567890","slices":[`+slice("2026-01-01", "", "50Hertz")+`]}`,
				`{"malo":"31234567890","slices":[{"valid_from":"2026-01-01","active":false,"control_area":""}]}`,
			),
			[]string{
				"locations[0].slices[1]: control area Amprion is not in the active set",
				"locations[1]: control area tennet is not in the active set",
				"locations[2].slices[0]: control area 50Hertz is not in the active set",
				"locations[3].slices[0]: control area  is not in the active set",
			}},
		{"order and open ends",
			locations(
				`{"malo":"01234567890","slices":[`+slice("2025-01-01", "2025-07-01", "TenneT")+`,`+slice("2025-06-01", "2026-01-01", "TenneT")+`,`+slice("2026-01-01", "", "TenneT")+`]}`,
				`{"malo":"11234567890","slices":[`+slice("2025-01-01", "", "TenneT")+`,`+slice("2026-01-01", "", "TenneT")+`]}`,
				`{"malo":"21234567890","slices":[`+slice("2026-01-01", "2027-01-01", "TenneT")+`,`+slice("2025-01-01", "2025-06-01", "TenneT")+`]}`,
				`{"malo":"31234567890","slices":[`+slice("2025-01-01", "2025-06-01", "TenneT")+`,`+slice("2025-09-01", "", "TenneT")+`]}`,
			),
			[]string{
				"locations[0] (01234567890): slices[1] overlaps slices[0]",
				"locations[1] (11234567890): only the last slice may be open-ended",
				"locations[2] (21234567890): slices[1] overlaps slices[0]",
			}},
		{"duplicates after everything else",
			locations(
				`{"malo":"01234567890","delivery_start":"2026-01-01","control_area":"TenneT","mga":"M","metering_type":"slp"}`,
				`{"malo":"11234567890","delivery_start":"2026-01-01","control_area":"Amprion","mga":"M","metering_type":"slp"}`,
				`{"malo":"01234567890","delivery_start":"2026-01-01","control_area":"TenneT","mga":"M","metering_type":"slp"}`,
				`{"malo":"01234567890","slices":[`+slice("2026-01-01", "", "TenneT")+`]}`,
			),
			[]string{
				"locations[1]: control area Amprion is not in the active set",
				"locations[2] (01234567890): duplicate of locations[0]",
				"locations[3] (01234567890): duplicate of locations[0]",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeMasterData([]byte(tt.body), active)
			ingesttest.CheckMessages(t, err, tt.want...)
		})
	}
}
