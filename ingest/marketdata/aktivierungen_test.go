package marketdata

import (
	"reflect"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
)

// sampleActivations are the records of testdata/zeitreihen/aktivierungen.json
// and .csv.
func sampleActivations() []zeitreihen.Activation {
	bis := pipeline.NewDay(2027, 1, 1)
	a := zeitreihen.Activation{Marktrolle: zeitreihen.RoleBKV, NetzbetreiberMPID: "9907248000001", Bilanzierungsgebiet: "11YR000000000123",
		Bilanzkreis: "11XACME-ENERGIEZ", Zeitreihentyp: zeitreihen.SLS, Aktion: zeitreihen.Aktivierung, GueltigAb: pipeline.NewDay(2026, 9, 1)}
	out := make([]zeitreihen.Activation, 5)
	for i := range out {
		out[i] = a
	}
	out[0].Referenz = "UM07770001"
	out[1].Marktrolle = zeitreihen.RoleLF
	out[2].Zeitreihentyp, out[2].Aktion, out[2].GueltigAb, out[2].Referenz = zeitreihen.TLS, zeitreihen.Deaktivierung, pipeline.NewDay(2026, 10, 1), "UM07770002"
	out[3].Zeitreihentyp, out[3].GueltigAb, out[3].GueltigBis = zeitreihen.LGS, pipeline.NewDay(2026, 11, 1), &bis
	out[4].NetzbetreiberMPID, out[4].Bilanzierungsgebiet, out[4].GueltigAb, out[4].Referenz = "9900000000010", "11YW-NETZSUED--K", pipeline.NewDay(2026, 12, 1), "Mail NB 2026-11-20"
	return out
}

func TestActivationsValidSamples(t *testing.T) {
	want := sampleActivations()
	got, err := DecodeActivations(ingesttest.ReadTestdata(t, "zeitreihen/aktivierungen.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("JSON:\n got  %s\n want %s", ingesttest.MustJSON(t, got), ingesttest.MustJSON(t, want))
	}
	got, err = DecodeActivationsCSV(ingesttest.ReadTestdata(t, "zeitreihen/aktivierungen.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CSV:\n got  %s\n want %s", ingesttest.MustJSON(t, got), ingesttest.MustJSON(t, want))
	}
}

func TestActivationsEmptyClears(t *testing.T) {
	got, err := DecodeActivations([]byte(`{"aktivierungen":[]}`))
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("JSON: %v, %v", got, err)
	}
	got, err = DecodeActivationsCSV([]byte("marktrolle;netzbetreiber_mp_id;bilanzierungsgebiet;bilanzkreis;zeitreihentyp;aktion;gueltig_ab\n\n;;;;;;\n"))
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("CSV: %v, %v", got, err)
	}
}

// activation is a valid record with changes as for entry.
func activation(t *testing.T, changes ...string) string {
	t.Helper()
	return object(t, `{"marktrolle":"BKV","netzbetreiber_mp_id":"9907248000001","bilanzierungsgebiet":"11YR000000000123",`+
		`"bilanzkreis":"11XACME-ENERGIEZ","zeitreihentyp":"SLS","aktion":"aktivierung","gueltig_ab":"2026-09-01"}`, changes...)
}

func activations(records ...string) string {
	return `{"aktivierungen":[` + strings.Join(records, ",") + `]}`
}

const (
	xPattern = `^[0-9]{2}X[0-9A-Z-]{12}[0-9A-Z]$`
	yPattern = `^[0-9]{2}Y[0-9A-Z-]{12}[0-9A-Z]$`
	types    = `'SLS', 'TLS', 'LGS', 'EGS', 'SES' or 'TES'`
)

func TestActivationsProblems(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []problem
	}{
		{"missing list, extra member", `{"aktivierungen_neu":[]}`, []problem{
			{"missing", "body.aktivierungen", "Field required", "", `{"aktivierungen_neu":[]}`},
			{"extra_forbidden", "body.aktivierungen_neu", "Extra inputs are not permitted", "", `[]`},
		}},
		{"list of the wrong type", `{"aktivierungen":"alle"}`, []problem{
			{"list_type", "body.aktivierungen", "Input should be a valid list", "", `"alle"`},
		}},
		{"record not an object", activations(`[]`), []problem{
			{"model_type", "body.aktivierungen.0", "Input should be a valid dictionary or instance of Aktivierung", `{"class_name":"Aktivierung"}`, `[]`},
		}},
		{"required fields", activations(`{"gueltig_bis":"2027-01-01","referenz":"x"}`), []problem{
			{"missing", "body.aktivierungen.0.marktrolle", "Field required", "", ""},
			{"missing", "body.aktivierungen.0.netzbetreiber_mp_id", "Field required", "", ""},
			{"missing", "body.aktivierungen.0.bilanzierungsgebiet", "Field required", "", ""},
			{"missing", "body.aktivierungen.0.bilanzkreis", "Field required", "", ""},
			{"missing", "body.aktivierungen.0.zeitreihentyp", "Field required", "", ""},
			{"missing", "body.aktivierungen.0.aktion", "Field required", "", ""},
			{"missing", "body.aktivierungen.0.gueltig_ab", "Field required", "", `{"gueltig_bis":"2027-01-01","referenz":"x"}`},
		}},
		{"every field wrong", activations(activation(t, `"marktrolle":"bkv"`, `"netzbetreiber_mp_id":9907248000001`,
			`"bilanzierungsgebiet":"11XACME-ENERGIEZ"`, `"bilanzkreis":"11YR000000000123"`, `"zeitreihentyp":"SLP"`, `"aktion":"aktiv"`,
			`"gueltig_ab":"2026-9-1"`, `"gueltig_bis":"2026-09-31"`, `"referenz":42`, `"malo":"01234567890"`)), []problem{
			{"enum", "body.aktivierungen.0.marktrolle", "Input should be 'BKV' or 'LF'", `{"expected":"'BKV' or 'LF'"}`, `"bkv"`},
			{"string_type", "body.aktivierungen.0.netzbetreiber_mp_id", "Input should be a valid string", "", `9907248000001`},
			{"string_pattern_mismatch", "body.aktivierungen.0.bilanzierungsgebiet", "String should match pattern '" + yPattern + "'", `{"pattern":"` + yPattern + `"}`, `"11XACME-ENERGIEZ"`},
			{"string_pattern_mismatch", "body.aktivierungen.0.bilanzkreis", "String should match pattern '" + xPattern + "'", `{"pattern":"` + xPattern + `"}`, `"11YR000000000123"`},
			{"enum", "body.aktivierungen.0.zeitreihentyp", "Input should be " + types, `{"expected":"` + types + `"}`, `"SLP"`},
			{"enum", "body.aktivierungen.0.aktion", "Input should be 'aktivierung' or 'deaktivierung'", `{"expected":"'aktivierung' or 'deaktivierung'"}`, `"aktiv"`},
			{"date_from_datetime_parsing", "body.aktivierungen.0.gueltig_ab", "Input should be a valid date or datetime, input is too short", `{"error":"input is too short"}`, `"2026-9-1"`},
			{"date_from_datetime_parsing", "body.aktivierungen.0.gueltig_bis", "Input should be a valid date or datetime, day value is outside expected range", `{"error":"day value is outside expected range"}`, `"2026-09-31"`},
			{"string_type", "body.aktivierungen.0.referenz", "Input should be a valid string", "", `42`},
			{"extra_forbidden", "body.aktivierungen.0.malo", "Extra inputs are not permitted", "", `"01234567890"`},
		}},
		{"gueltig_bis not after gueltig_ab", activations(activation(t, `"gueltig_bis":"2026-09-01"`), activation(t, `"gueltig_bis":"2026-08-31"`),
			activation(t, `"gueltig_bis":null`)), []problem{
			{"value_error", "body.aktivierungen.0", "Value error, gueltig_bis must be after gueltig_ab", `{"error":{}}`, activation(t, `"gueltig_bis":"2026-09-01"`)},
			{"value_error", "body.aktivierungen.1", "Value error, gueltig_bis must be after gueltig_ab", `{"error":{}}`, ""},
		}},
		{"the model validator waits for the fields", activations(activation(t, `"gueltig_bis":"2026-08-31"`, `"aktion":"x"`)), []problem{
			{"enum", "body.aktivierungen.0.aktion", "Input should be 'aktivierung' or 'deaktivierung'", `{"expected":"'aktivierung' or 'deaktivierung'"}`, `"x"`},
		}},
		{"identical records", activations(activation(t), activation(t, `"referenz":"R"`), activation(t, `"referenz":null`),
			activation(t, `"referenz":"R"`), activation(t, `"gueltig_bis":"2027-01-01"`), activation(t, `"gueltig_bis":"2027-01-01"`)), []problem{
			{"value_error", "body.aktivierungen.2", "Value error, duplicate of aktivierungen[0]", `{"error":{}}`, ""},
			{"value_error", "body.aktivierungen.3", "Value error, duplicate of aktivierungen[1]", `{"error":{}}`, ""},
			{"value_error", "body.aktivierungen.5", "Value error, duplicate of aktivierungen[4]", `{"error":{}}`, ""},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeActivations([]byte(tc.body))
			ingesttest.CheckProblems(t, err, tc.want)
		})
	}
}

func TestActivationsTooMany(t *testing.T) {
	body := `{"aktivierungen":[` + strings.Repeat(`{},`, maxActivations) + `{}]}`
	_, err := DecodeActivations([]byte(body))
	ingesttest.CheckProblems(t, err, []problem{
		{"too_long", "body.aktivierungen", "List should have at most 200000 items after validation, not 200001",
			`{"field_type":"List","max_length":200000,"actual_length":200001}`, `null`},
	})
	csv := "marktrolle;netzbetreiber_mp_id;bilanzierungsgebiet;bilanzkreis;zeitreihentyp;aktion;gueltig_ab\n" + strings.Repeat("x\n", maxActivations+1)
	_, err = DecodeActivationsCSV([]byte(csv))
	ingesttest.CheckProblems(t, err, []problem{
		{"too_long", "body", "List should have at most 200000 items after validation, not 200001",
			`{"field_type":"List","max_length":200000,"actual_length":200001}`, `null`},
	})
}

func TestActivationsCSVForms(t *testing.T) {
	want := sampleActivations()[3:4]
	tests := map[string]string{
		"comma, BOM, CRLF, header case and order": "\ufeffGUELTIG_AB,Aktion,zeitreihentyp,bilanzkreis,Bilanzierungsgebiet,netzbetreiber_mp_id,marktrolle,gueltig_bis\r\n" +
			"2026-11-01,aktivierung,LGS,11XACME-ENERGIEZ,11YR000000000123,9907248000001,BKV,2027-01-01\r\n",
		"quoted cells, trailing separators, blank lines": "marktrolle;netzbetreiber_mp_id;bilanzierungsgebiet;bilanzkreis;zeitreihentyp;aktion;gueltig_ab;gueltig_bis;referenz;;\n\n" +
			`"BKV";"9907248000001";11YR000000000123;11XACME-ENERGIEZ;LGS;aktivierung;2026-11-01;"2027-01-01";"";;` + "\n;;;;\n",
	}
	for name, csv := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeActivationsCSV([]byte(csv))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %s\nwant %s", ingesttest.MustJSON(t, got), ingesttest.MustJSON(t, want))
			}
		})
	}
}

func TestActivationsCSVProblems(t *testing.T) {
	const header = "marktrolle;netzbetreiber_mp_id;bilanzierungsgebiet;bilanzkreis;zeitreihentyp;aktion;gueltig_ab;gueltig_bis;referenz\n"
	const good = "BKV;9907248000001;11YR000000000123;11XACME-ENERGIEZ;SLS;aktivierung;2026-09-01;;\n"
	const columns = "marktrolle, netzbetreiber_mp_id, bilanzierungsgebiet, bilanzkreis, zeitreihentyp, aktion, gueltig_ab, gueltig_bis, referenz"
	tests := []struct {
		name string
		csv  string
		want []problem
	}{
		{"empty file", "", []problem{
			{"csv_header", "body.line 1", "the first line must be the header, for example " + activationExample + "; it is empty", "", `null`},
		}},
		{"one column", "marktrolle\nBKV\n", []problem{
			{"csv_header", "body.line 1", "the header has a single column: separate the columns with ; or , as in " + activationExample, "", ""},
		}},
		{"missing columns", "marktrolle;bilanzkreis;aktion;gueltig_bis\n", []problem{
			{"csv_header", "body.line 1", "the header lacks the column(s) netzbetreiber_mp_id, bilanzierungsgebiet, zeitreihentyp, gueltig_ab; " +
				"an activation file has the columns " + columns + ", as in " + activationExample, "", ""},
		}},
		{"repeated column", "marktrolle;Marktrolle\n", []problem{
			{"csv_header", "body.line 1", "column 2 of the header repeats marktrolle (column 1)", "", ""},
		}},
		{"unnamed column", "marktrolle;;aktion\n", []problem{
			{"csv_header", "body.line 1", "column 2 of the header has no name; the columns are " + columns, "", ""},
		}},
		{"a malo column, and the rows are still checked", strings.Replace(header, "referenz", "MaLo", 1) + good + "LF;1\n", []problem{
			{"extra_forbidden", "body.line 1.MaLo", "Extra inputs are not permitted", "", `"MaLo"`},
			{"string_pattern_mismatch", "body.line 3.netzbetreiber_mp_id", `String should match pattern '^\d{13}$'`, `{"pattern":"^\\d{13}$"}`, `"1"`},
			{"missing", "body.line 3.bilanzierungsgebiet", "Field required", "", ""},
			{"missing", "body.line 3.bilanzkreis", "Field required", "", ""},
			{"missing", "body.line 3.zeitreihentyp", "Field required", "", ""},
			{"missing", "body.line 3.aktion", "Field required", "", ""},
			{"missing", "body.line 3.gueltig_ab", "Field required", "", `{"marktrolle":"LF","netzbetreiber_mp_id":"1"}`},
		}},
		{"rows with problems", header + good +
			"BKV;9907248000001;11YR000000000123;11XACME-ENERGIEZ;ZZZ;aktivierung;2026-09-01;;\n" +
			"BKV;9907248000001;11YR000000000123;11XACME-ENERGIEZ;SLS;aktivierung;2026-09-01;2026-09-01;\n" +
			"\n" +
			good +
			"BKV;9907248000001;11YR000000000123;11XACME-ENERGIEZ;SLS;aktivierung;2026-09-01;;;x\n" +
			`BKV;"99072"48000001;11YR000000000123;11XACME-ENERGIEZ;SLS;aktivierung;2026-09-01;;` + "\n" +
			"BKV;9907248000001;11YR000000000123;11XACME-ENERGIEZ;SLS;aktivierung;2026-09-01;;R\xe4f\n",
			[]problem{
				{"enum", "body.line 3.zeitreihentyp", "Input should be " + types, `{"expected":"` + types + `"}`, `"ZZZ"`},
				{"value_error", "body.line 4", "Value error, gueltig_bis must be after gueltig_ab", `{"error":{}}`,
					`{"marktrolle":"BKV","netzbetreiber_mp_id":"9907248000001","bilanzierungsgebiet":"11YR000000000123","bilanzkreis":"11XACME-ENERGIEZ",` +
						`"zeitreihentyp":"SLS","aktion":"aktivierung","gueltig_ab":"2026-09-01","gueltig_bis":"2026-09-01"}`},
				{"value_error", "body.line 6", "Value error, duplicate of line 2", `{"error":{}}`, ""},
				{"csv_cell_count", "body.line 7", "line 7 has 10 cells, but the header has 9 columns", "", ""},
				{"csv_syntax", "body.line 8", `line 8: unexpected character after the closing " of a quoted cell (a " inside a quoted cell must be doubled)`, "", ""},
				{"string_unicode", "body.line 9.referenz", "Input should be a valid string, unable to parse raw data as a unicode string", "", `"R\ufffdf"`},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeActivationsCSV([]byte(tc.csv))
			ingesttest.CheckProblems(t, err, tc.want)
		})
	}
}
