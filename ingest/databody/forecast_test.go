package databody

import (
	"fmt"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// problem is an expected schema problem (see ingesttest.Want).
type problem ingesttest.Want

// TestForecastValidSamples decodes the three kinds of delivery day.
func TestForecastValidSamples(t *testing.T) {
	for _, tt := range []struct {
		file string
		day  pipeline.Day
		n    int
	}{
		{"forecast_2026-03-29.json", pipeline.NewDay(2026, 3, 29), 92},
		{"forecast_2026-10-25.json", pipeline.NewDay(2026, 10, 25), 100},
		{"forecast_2026-03-28.json", pipeline.NewDay(2026, 3, 28), 96},
	} {
		t.Run(tt.file, func(t *testing.T) {
			sub, err := DecodeForecast(ingesttest.ReadTestdata(t, tt.file), ingesttest.AllAreas)
			if err != nil {
				t.Fatal(err)
			}
			f := sub.Forecast
			if f.DeliveryDay != tt.day || len(f.Series) != 2 || sub.ValidateOnly {
				t.Fatalf("got %+v", sub)
			}
			s0, s1 := f.Series[0], f.Series[1]
			if s0.ControlArea != pipeline.TenneT || s0.Malo != "" || s0.Kind != pipeline.Production || s0.Unit != pipeline.MW || len(s0.Values) != tt.n {
				t.Errorf("series[0] = %+v", s0)
			}
			if s1.ControlArea != "" || s1.Malo != "01234567890" || s1.Kind != pipeline.Consumption || s1.Unit != pipeline.MWH || len(s1.Values) != tt.n {
				t.Errorf("series[1] = %+v", s1)
			}
			// The sample spells values as 1.375, 6, 1.52e+01, 0.000024, …
			if s0.Values[0] != 1.375 || s0.Values[1] != 6 || s0.Values[3] != 15.2 || s0.Values[5] != 0.000024 {
				t.Errorf("values = %v", s0.Values[:6])
			}
			if len(f.MaloMapping) != 1 || f.MaloMapping["01234567890"] != pipeline.Amprion {
				t.Errorf("malo_mapping = %v", f.MaloMapping)
			}
			if len(sub.InputHash) != 64 {
				t.Errorf("input hash %q", sub.InputHash)
			}
		})
	}
}

func TestForecastSchemaProblems(t *testing.T) {
	v96 := ingesttest.Nums(96)
	tests := []struct {
		name string
		body string
		want []problem
	}{
		{"missing fields", `{"unknown": 1}`, []problem{
			{"missing", "body.delivery_day", "Field required", "", `{"unknown": 1}`},
			{"missing", "body.series", "Field required", "", `{"unknown": 1}`},
		}},
		{"delivery_day not a string", `{"delivery_day": 20260329, "series": [{"control_area":"TenneT","kind":"production","values":[]}]}`, []problem{
			{"date_type", "body.delivery_day", "Input should be a valid date", "", "20260329"},
		}},
		{"series empty", `{"delivery_day":"2026-03-28","series":[]}`, []problem{
			{"too_short", "body.series", "List should have at least 1 item after validation, not 0",
				`{"field_type":"List","min_length":1,"actual_length":0}`, "[]"},
		}},
		{"series not a list", `{"delivery_day":"2026-03-28","series":{"a":1}}`, []problem{
			{"list_type", "body.series", "Input should be a valid list", "", `{"a":1}`},
		}},
		{"series null", `{"delivery_day":"2026-03-28","series":null}`, []problem{
			{"list_type", "body.series", "Input should be a valid list", "", `null`},
		}},
		{"series of numbers", `{"delivery_day":"2026-03-28","series":[1.0, 2]}`, []problem{
			{"model_type", "body.series.0", "Input should be a valid dictionary or instance of Series", `{"class_name":"Series"}`, "1.0"},
			{"model_type", "body.series.1", "Input should be a valid dictionary or instance of Series", `{"class_name":"Series"}`, "2"},
		}},
		{"series missing kind and values", ingesttest.ForecastBody(`{"control_area":"TenneT"}`), []problem{
			{"missing", "body.series.0.kind", "Field required", "", `{"control_area":"TenneT"}`},
			{"missing", "body.series.0.values", "Field required", "", `{"control_area":"TenneT"}`},
		}},
		{"malo as a number is not coerced", ingesttest.ForecastBody(`{"malo":12345678901,"kind":"production","values":` + v96 + `}`), []problem{
			{"string_type", "body.series.0.malo", "Input should be a valid string", "", "12345678901"},
		}},
		{"malo pattern", ingesttest.ForecastBody(`{"malo":"1234567890","kind":"production","values":[]}`), []problem{
			{"string_pattern_mismatch", "body.series.0.malo", `String should match pattern '^\d{11}$'`, `{"pattern":"^\\d{11}$"}`, `"1234567890"`},
		}},
		{"malo with trailing newline", ingesttest.ForecastBody(`{"malo":"12345678901\n","kind":"production","values":[]}`), []problem{
			{"string_pattern_mismatch", "body.series.0.malo", `String should match pattern '^\d{11}$'`, `{"pattern":"^\\d{11}$"}`, `"12345678901\n"`},
		}},
		{"control_area not a string", ingesttest.ForecastBody(`{"control_area":["TenneT"],"kind":"production","values":[]}`), []problem{
			{"string_type", "body.series.0.control_area", "Input should be a valid string", "", `["TenneT"]`},
		}},
		{"kind", ingesttest.ForecastBody(`{"control_area":"TenneT","kind":"Production","values":[]}`), []problem{
			{"literal_error", "body.series.0.kind", "Input should be 'production' or 'consumption'", `{"expected":"'production' or 'consumption'"}`, `"Production"`},
		}},
		{"unit", ingesttest.ForecastBody(`{"control_area":"TenneT","kind":"production","unit":"KWH","values":[]}`), []problem{
			{"literal_error", "body.series.0.unit", "Input should be 'MW' or 'MWH'", `{"expected":"'MW' or 'MWH'"}`, `"KWH"`},
		}},
		{"unit null is not the default", ingesttest.ForecastBody(`{"control_area":"TenneT","kind":"production","unit":null,"values":[]}`), []problem{
			{"literal_error", "body.series.0.unit", "Input should be 'MW' or 'MWH'", `{"expected":"'MW' or 'MWH'"}`, `null`},
		}},
		{"values not a list", ingesttest.ForecastBody(`{"control_area":"TenneT","kind":"production","values":"1,2"}`), []problem{
			{"list_type", "body.series.0.values", "Input should be a valid list", "", `"1,2"`},
		}},
		{"bad values", ingesttest.ForecastBody(`{"control_area":"TenneT","kind":"production","values":[0, "1.5", true, null, -0.5, 1e400, -1e400, [1], 2]}`), []problem{
			{"float_parsing", "body.series.0.values.1", "Input should be a valid number, unable to parse string as a number", "", `"1.5"`},
			{"float_type", "body.series.0.values.2", "Input should be a valid number", "", `true`},
			{"float_type", "body.series.0.values.3", "Input should be a valid number", "", `null`},
			{"greater_than_equal", "body.series.0.values.4", "Input should be greater than or equal to 0", `{"ge":0}`, `-0.5`},
			{"finite_number", "body.series.0.values.5", "Input should be a finite number", "", `1e400`},
			{"finite_number", "body.series.0.values.6", "Input should be a finite number", "", `-1e400`},
			{"float_type", "body.series.0.values.7", "Input should be a valid number", "", `[1]`},
		}},
		{"negative values in a number array", ingesttest.ForecastBody(`{"control_area":"TenneT","kind":"production","values":[1, -1, 2.0, -2.50, 1e999]}`), []problem{
			{"greater_than_equal", "body.series.0.values.1", "Input should be greater than or equal to 0", `{"ge":0}`, `-1`},
			{"greater_than_equal", "body.series.0.values.3", "Input should be greater than or equal to 0", `{"ge":0}`, `-2.5`},
			{"finite_number", "body.series.0.values.4", "Input should be a finite number", "", `1e999`},
		}},
		{"both tags", ingesttest.ForecastBody(`{"control_area":"TenneT","malo":"01234567890","kind":"production","values":[1]}`), []problem{
			{"value_error", "body.series.0", "Value error, exactly one of control_area or malo must be set", `{"error":{}}`,
				`{"control_area":"TenneT","malo":"01234567890","kind":"production","values":[1]}`},
		}},
		{"no tag", ingesttest.ForecastBody(`{"control_area":null,"kind":"production","values":[]}`), []problem{
			{"value_error", "body.series.0", "Value error, exactly one of control_area or malo must be set", `{"error":{}}`,
				`{"control_area":null,"kind":"production","values":[]}`},
		}},
		{"model validator waits for valid fields", ingesttest.ForecastBody(`{"control_area":"TenneT","malo":"01234567890","kind":"x","values":[]}`), []problem{
			{"literal_error", "body.series.0.kind", "Input should be 'production' or 'consumption'", `{"expected":"'production' or 'consumption'"}`, `"x"`},
		}},
		{"malo_mapping not a dict", `{"delivery_day":"2026-03-28","series":[{"control_area":"TenneT","kind":"production","values":[]}],"malo_mapping":["x"]}`, []problem{
			{"dict_type", "body.malo_mapping", "Input should be a valid dictionary", "", `["x"]`},
		}},
		{"malo_mapping null", `{"delivery_day":"2026-03-28","series":[{"control_area":"TenneT","kind":"production","values":[]}],"malo_mapping":null}`, []problem{
			{"dict_type", "body.malo_mapping", "Input should be a valid dictionary", "", `null`},
		}},
		{"malo_mapping keys and values", `{"delivery_day":"2026-03-28","series":[{"control_area":"TenneT","kind":"production","values":[]}],` +
			`"malo_mapping":{"123":"TenneT","01234567890":5,"x":true}}`, []problem{
			{"string_pattern_mismatch", "body.malo_mapping.123.[key]", `String should match pattern '^\d{11}$'`, `{"pattern":"^\\d{11}$"}`, `"123"`},
			{"string_type", "body.malo_mapping.01234567890", "Input should be a valid string", "", `5`},
			{"string_pattern_mismatch", "body.malo_mapping.x.[key]", `String should match pattern '^\d{11}$'`, `{"pattern":"^\\d{11}$"}`, `"x"`},
			{"string_type", "body.malo_mapping.x", "Input should be a valid string", "", `true`},
		}},
		{"validate_only string", `{"delivery_day":"2026-03-28","series":[{"control_area":"TenneT","kind":"production","values":[]}],"validate_only":"true"}`, []problem{
			{"bool_parsing", "body.validate_only", "Input should be a valid boolean, unable to interpret input", "", `"true"`},
		}},
		{"validate_only number", `{"delivery_day":"2026-03-28","series":[{"control_area":"TenneT","kind":"production","values":[]}],"validate_only":1}`, []problem{
			{"bool_type", "body.validate_only", "Input should be a valid boolean", "", `1`},
		}},
		{"validate_only null", `{"delivery_day":"2026-03-28","series":[{"control_area":"TenneT","kind":"production","values":[]}],"validate_only":null}`, []problem{
			{"bool_type", "body.validate_only", "Input should be a valid boolean", "", `null`},
		}},
		{"everything at once, in declaration and document order",
			`{"validate_only":0,"malo_mapping":{"1":"TenneT"},"series":[{"malo":"1","kind":"production","values":[]},{"values":[-1]},3],"delivery_day":"2026-02-30"}`,
			[]problem{
				{"date_from_datetime_parsing", "body.delivery_day", "Input should be a valid date or datetime, day value is outside expected range", `{"error":"day value is outside expected range"}`, `"2026-02-30"`},
				{"string_pattern_mismatch", "body.series.0.malo", `String should match pattern '^\d{11}$'`, `{"pattern":"^\\d{11}$"}`, `"1"`},
				{"missing", "body.series.1.kind", "Field required", "", `{"values":[-1]}`},
				{"greater_than_equal", "body.series.1.values.0", "Input should be greater than or equal to 0", `{"ge":0}`, `-1`},
				{"model_type", "body.series.2", "Input should be a valid dictionary or instance of Series", `{"class_name":"Series"}`, `3`},
				{"string_pattern_mismatch", "body.malo_mapping.1.[key]", `String should match pattern '^\d{11}$'`, `{"pattern":"^\\d{11}$"}`, `"1"`},
				{"bool_type", "body.validate_only", "Input should be a valid boolean", "", `0`},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeForecast([]byte(tt.body), ingesttest.AllAreas)
			ingesttest.CheckProblems(t, err, tt.want)
		})
	}
}

// TestDates covers every date message, with the checks in speedate's order.
func TestDates(t *testing.T) {
	dtp := func(e string) problem {
		return problem{"date_from_datetime_parsing", "body.delivery_day", "Input should be a valid date or datetime, " + e, `{"error":"` + e + `"}`, ""}
	}
	extra := problem{"date_parsing", "body.delivery_day",
		"Input should be a valid date in the format YYYY-MM-DD, unexpected extra characters at the end of the input",
		`{"error":"unexpected extra characters at the end of the input"}`, ""}
	tests := []struct {
		day  string
		want []problem
	}{
		{`"2026-03-28"`, nil},
		{`"2024-02-29"`, nil},
		{`"2000-02-29"`, nil},
		{`"2026-03-29T00:00:00"`, []problem{extra}},
		{`"2026-03-29Z"`, []problem{extra}},
		{`"2026-03-28 "`, []problem{extra}},
		{`"2026-03-28+01:00"`, []problem{extra}},
		{`""`, []problem{dtp("input is too short")}},
		{`"2026-3-29"`, []problem{dtp("input is too short")}},
		{`"1743199200"`, []problem{dtp("invalid date separator, expected `-`")}},
		{`"20x6-03-29"`, []problem{dtp("invalid character in year")}},
		{`"29.03.2026"`, []problem{dtp("invalid character in year")}},
		{`"2026/03/29"`, []problem{dtp("invalid date separator, expected `-`")}},
		{`"2026-0x-29"`, []problem{dtp("invalid character in month")}},
		{`"2026-03/29"`, []problem{dtp("invalid date separator, expected `-`")}},
		{`"2026-03-x9"`, []problem{dtp("invalid character in day")}},
		{`"2026-13-xx"`, []problem{dtp("invalid character in day")}},
		{`"2026-13-01"`, []problem{dtp("month value is outside expected range of 1-12")}},
		{`"2026-00-01"`, []problem{dtp("month value is outside expected range of 1-12")}},
		{`"2026-02-29"`, []problem{dtp("day value is outside expected range")}},
		{`"1900-02-29"`, []problem{dtp("day value is outside expected range")}},
		{`"2026-04-31"`, []problem{dtp("day value is outside expected range")}},
		{`"2026-03-00"`, []problem{dtp("day value is outside expected range")}},
		{`"2026-02-30T00:00:00"`, []problem{dtp("day value is outside expected range")}},
		{`null`, []problem{{"date_type", "body.delivery_day", "Input should be a valid date", "", "null"}}},
		{`true`, []problem{{"date_type", "body.delivery_day", "Input should be a valid date", "", "true"}}},
	}
	for _, tt := range tests {
		t.Run(tt.day, func(t *testing.T) {
			body := `{"delivery_day":` + tt.day + `,"series":[{"control_area":"TenneT","kind":"production","values":` + ingesttest.Nums(96) + `}]}`
			_, err := DecodeForecast([]byte(body), ingesttest.AllAreas)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			for i := range tt.want {
				tt.want[i].Input = tt.day
			}
			ingesttest.CheckProblems(t, err, tt.want)
		})
	}
}

func TestPathDay(t *testing.T) {
	d, err := ingest.PathDay("delivery_day", "2026-10-25")
	if err != nil || d != pipeline.NewDay(2026, 10, 25) {
		t.Fatalf("got %v, %v", d, err)
	}
	_, err = ingest.PathDay("delivery_day", "2026-10-25T00:00")
	ingesttest.CheckProblems(t, err, []problem{{"date_parsing", "path.delivery_day",
		"Input should be a valid date in the format YYYY-MM-DD, unexpected extra characters at the end of the input",
		`{"error":"unexpected extra characters at the end of the input"}`, `"2026-10-25T00:00"`}})
}

// TestForecastFieldSemantics covers what is accepted: null optional tags,
// unknown fields, duplicate keys (the last wins), the unit default.
func TestForecastFieldSemantics(t *testing.T) {
	body := `{"delivery_day":"bad","delivery_day":"2026-03-28","extra":{"x":1},"series":[` +
		`{"control_area":null,"malo":"01234567890","kind":"consumption","values":` + ingesttest.Nums(96) + `,"comment":"x"},` +
		`{"control_area":"Amprion","malo":null,"kind":"production","unit":"MWH","values":` + ingesttest.Nums(96) + `}],` +
		`"malo_mapping":{"01234567890":"TenneT"},"validate_only":true}`
	sub, err := DecodeForecast([]byte(body), ingesttest.AllAreas)
	if err != nil {
		t.Fatal(err)
	}
	s := sub.Forecast.Series
	if !sub.ValidateOnly || s[0].Unit != pipeline.MW || s[0].Malo != "01234567890" || s[1].ControlArea != pipeline.Amprion || s[1].Unit != pipeline.MWH {
		t.Errorf("got %+v", sub)
	}
}

func TestForecastBusinessRules(t *testing.T) {
	active := ingest.Rules{Active: pipeline.NewAreaSet(pipeline.TenneT, pipeline.Amprion)}
	series := func(tag, kind string, n int) string {
		return fmt.Sprintf(`{%s,"kind":%q,"values":%s}`, tag, kind, ingesttest.Nums(n))
	}
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"interval count on the spring day",
			`{"delivery_day":"2026-03-29","series":[` + series(`"control_area":"TenneT"`, "production", 96) + `]}`,
			[]string{"series[0] has 96 intervals, expected 92 for 2026-03-29"}},
		{"interval count on the autumn day",
			`{"delivery_day":"2026-10-25","series":[` + series(`"control_area":"TenneT"`, "production", 100) + `,` + series(`"control_area":"TenneT"`, "consumption", 96) + `]}`,
			[]string{"series[1] has 96 intervals, expected 100 for 2026-10-25"}},
		{"inactive, unknown and miscased control areas", ingesttest.ForecastBody(series(`"control_area":"50Hertz"`, "production", 96), series(`"control_area":"tennet"`, "production", 96), series(`"control_area":""`, "production", 96)), []string{
			"series[0]: control area 50Hertz is not in the active set",
			"series[1]: control area tennet is not in the active set",
			"series[2]: control area  is not in the active set",
		}},
		{"malo without mapping", ingesttest.ForecastBody(series(`"malo":"01234567890"`, "production", 96)), []string{"series[0]: no malo_mapping entry for MaLo '01234567890'"}},
		{"mapping targets, in key order, used or not",
			`{"delivery_day":"2026-03-28","series":[` + series(`"malo":"22222222222"`, "production", 96) + `],` +
				`"malo_mapping":{"33333333333":"Nowhere","22222222222":"TransnetBW","11111111111":"TenneT"}}`,
			[]string{
				"malo_mapping['22222222222']: control area TransnetBW is not in the active set",
				"malo_mapping['33333333333']: control area Nowhere is not in the active set",
			}},
		{"duplicates",
			`{"delivery_day":"2026-03-28","series":[` +
				series(`"control_area":"TenneT"`, "production", 96) + `,` +
				series(`"control_area":"TenneT"`, "consumption", 96) + `,` +
				series(`"malo":"01234567890"`, "production", 96) + `,` +
				series(`"control_area":"TenneT"`, "production", 96) + `,` +
				series(`"malo":"01234567890"`, "production", 96) + `,` +
				series(`"control_area":"TenneT"`, "production", 96) + `],` +
				`"malo_mapping":{"01234567890":"TenneT"}}`,
			[]string{
				"series[3]: duplicate of series[0] (TenneT, production)",
				"series[4]: duplicate of series[2] (01234567890, production)",
				"series[5]: duplicate of series[0] (TenneT, production)",
			}},
		{"all rules, in order",
			`{"delivery_day":"2026-03-29","series":[` +
				series(`"control_area":"50Hertz"`, "production", 96) + `,` +
				series(`"malo":"01234567890"`, "production", 92) + `,` +
				series(`"control_area":"50Hertz"`, "production", 92) + `],` +
				`"malo_mapping":{"99999999999":"TransnetBW"}}`,
			[]string{
				"series[0] has 96 intervals, expected 92 for 2026-03-29",
				"series[0]: control area 50Hertz is not in the active set",
				"series[1]: no malo_mapping entry for MaLo '01234567890'",
				"series[2]: control area 50Hertz is not in the active set",
				"malo_mapping['99999999999']: control area TransnetBW is not in the active set",
				"series[2]: duplicate of series[0] (50Hertz, production)",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeForecast([]byte(tt.body), active)
			ingesttest.CheckMessages(t, err, tt.want...)
			if err.Error() != tt.want[0] && !strings.HasPrefix(err.Error(), tt.want[0]+" (and ") {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
	// A portfolio without active areas rejects every control area.
	_, err := DecodeForecast([]byte(ingesttest.ForecastBody(series(`"control_area":"TenneT"`, "production", 96))), ingest.Rules{})
	ingesttest.CheckMessages(t, err, "series[0]: control area TenneT is not in the active set")
}
