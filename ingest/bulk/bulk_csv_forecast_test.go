package bulk

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/csvfile"
	"github.com/schedbridge/schedbridge/ingest/databody"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// keyedRow is a row of a forecast or trades CSV test file: its five key
// cells by column (fcColumns, trColumns) and its value cells, written with
// '.' as the decimal mark; "" is an empty cell.
type keyedRow struct {
	keys   [fcKeys]string
	values []string
}

// keyedCSV writes rows as a CSV file whose key columns are columns (fcColumns
// or trColumns), in the style st, whose order and names refer to columns.
// Cells holding the separator, a quote or a line break are quoted.
func keyedCSV(columns []string, rows []keyedRow, st fcStyle) []byte {
	width := st.width
	if width == 0 {
		width = 100
	}
	order := st.order
	if order == nil {
		order = []int{0, 1, 2, 3, 4}
	}
	w := newTestCSV(st.sep, st.bom, st.crlf, st.quoteAll)
	header := headerNames(columns, order, st.names)
	for j := 1; j <= width; j++ {
		header = append(header, "v"+strconv.Itoa(j))
	}
	w.line(header, "")
	for _, r := range rows {
		var cells []string
		for _, k := range order {
			cells = append(cells, r.keys[k])
		}
		for _, v := range r.values {
			if st.decimalComma {
				v = strings.Replace(v, ".", ",", 1)
			}
			cells = append(cells, v)
		}
		for j := len(r.values); !st.short && j < width; j++ {
			cells = append(cells, "")
		}
		w.line(cells, "")
	}
	return w.b.Bytes()
}

// fcCSV writes rows as a forecast CSV file.
func fcCSV(rows []keyedRow, st fcStyle) []byte { return keyedCSV(fcColumns[:], rows, st) }

// trCSV writes rows as a trades CSV file in the style of a forecast test
// file (fcStyle; order and names refer to trColumns).
func trCSV(rows []keyedRow, st fcStyle) []byte { return keyedCSV(trColumns[:], rows, st) }

// fcRowsOf writes a forecast as rows: a series of a control area as a row
// with that control_area, a series of a MaLo as a row with the malo and its
// malo_mapping entry as control_area. unitCells tells whether a MW series
// spells its unit, which is the API's default.
func fcRowsOf(f pipeline.Forecast, unitCells bool) []keyedRow {
	rows := make([]keyedRow, len(f.Series))
	for i, s := range f.Series {
		area := string(s.ControlArea)
		if s.Malo != "" {
			area = string(f.MaloMapping[s.Malo])
		}
		unit := string(s.Unit)
		if !unitCells && s.Unit == pipeline.MW {
			unit = ""
		}
		rows[i].keys = [fcKeys]string{f.DeliveryDay.String(), area, s.Malo, string(s.Kind), unit}
		for _, v := range s.Values {
			rows[i].values = append(rows[i].values, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	return rows
}

// fcStyle is how a test writes forecast rows as CSV.
type fcStyle struct {
	sep          byte
	decimalComma bool  // value cells with a decimal comma
	bom, crlf    bool  // a UTF-8 BOM, CRLF line ends
	quoteAll     bool  // every cell in quotes
	short        bool  // rows end after their last value (else they fill the header)
	width        int   // value columns of the header; 0: 100
	order        []int // the key columns, in this order (default: fcColumns order)
	names        func(string) string
}

// fcJSON is the POST /v1/forecasts body that rows stand for: the first
// row's delivery_day, one series per row (its malo, or else its
// control_area; empty cells left out; values as numbers when they are one,
// else as strings, an empty cell before the last value as null), and the
// malo_mapping entry of each row with a malo and a control_area, the first
// per MaLo, in row order.
func fcJSON(t *testing.T, rows []keyedRow) []byte {
	t.Helper()
	var members, series, mapping []string
	if day := rows[0].keys[fcDeliveryDay]; day != "" {
		members = append(members, `"delivery_day": `+ingesttest.MustJSON(t, day))
	}
	mapped := map[string]bool{}
	for _, r := range rows {
		var fields []string
		area, malo := r.keys[fcControlArea], r.keys[fcMalo]
		if malo == "" && area != "" {
			fields = append(fields, `"control_area": `+ingesttest.MustJSON(t, area))
		}
		for _, f := range []int{fcMalo, fcKind, fcUnit} {
			if v := r.keys[f]; v != "" {
				fields = append(fields, ingesttest.MustJSON(t, fcColumns[f])+": "+ingesttest.MustJSON(t, v))
			}
		}
		n := len(r.values)
		for n > 0 && r.values[n-1] == "" {
			n--
		}
		values := make([]string, n)
		for j, v := range r.values[:n] {
			_, ok, _ := csvfile.ParseFloat([]byte(v), false, true)
			switch {
			case v == "":
				values[j] = "null"
			case ok:
				values[j] = csvfile.Literal([]byte(v))
			default:
				values[j] = ingesttest.MustJSON(t, v)
			}
		}
		fields = append(fields, `"values": [`+strings.Join(values, ", ")+"]")
		series = append(series, "{"+strings.Join(fields, ", ")+"}")
		if malo != "" && area != "" && !mapped[malo] {
			mapped[malo] = true
			mapping = append(mapping, ingesttest.MustJSON(t, malo)+": "+ingesttest.MustJSON(t, area))
		}
	}
	members = append(members, `"series": [`+strings.Join(series, ",\n ")+"]")
	if len(mapping) > 0 {
		members = append(members, `"malo_mapping": {`+strings.Join(mapping, ", ")+"}")
	}
	return []byte("{" + strings.Join(members, ", ") + "}")
}

// fcValues are n value cells, 0.25 apart.
func fcValues(n int) []string {
	vs := make([]string, n)
	for j := range vs {
		vs[j] = strconv.FormatFloat(float64(j)/4, 'f', -1, 64)
	}
	return vs
}

// TestBulkForecastCSVSameContent: CSV files of both dialects, quoted, with
// their columns in another order, gzip'd, of the three kinds of day, give the
// input hash, the forecast and the canonical JSON of the API for the
// equivalent JSON body, so a re-drop as JSON or CSV answers unchanged.
func TestBulkForecastCSVSameContent(t *testing.T) {
	samples := map[string]*databody.ForecastSubmission{}
	for _, day := range []string{"2026-03-28", "2026-03-29", "2026-10-25"} {
		sub, err := databody.DecodeForecast(ingesttest.ReadSample(t, "databody", "forecast_"+day+".json"), ingesttest.AllAreas)
		if err != nil {
			t.Fatal(err)
		}
		samples[day] = sub
	}
	normal := fcRowsOf(samples["2026-03-28"].Forecast, true)
	// Several series of one MaLo, whose mapping is given on one of its
	// rows; units left to the API's default; a control area in quotes.
	mixed := []keyedRow{
		{keys: [fcKeys]string{"2026-03-28", "", "11111111111", "production", ""}, values: fcValues(96)},
		{keys: [fcKeys]string{"2026-03-28", "50Hertz", "", "consumption", "MWH"}, values: fcValues(96)},
		{keys: [fcKeys]string{"2026-03-28", "TransnetBW", "11111111111", "consumption", "MW"}, values: fcValues(96)},
		{keys: [fcKeys]string{"2026-03-28", "TransnetBW", "33333333333", "consumption", "MWH"}, values: []string{"1e3", "0.000001", "5.", ".5", "+2", "-0", "1.50"}},
		{keys: [fcKeys]string{"2026-03-28", "TenneT", "22222222222", "production", "MWH"}, values: fcValues(96)},
	}
	mixed[3].values = append(mixed[3].values, fcValues(89)...)
	semicolon := fcStyle{sep: ';', decimalComma: true, bom: true, crlf: true}
	tests := []struct {
		name string
		rows []keyedRow
		st   fcStyle
		api  string // the testdata file the rows come from, if any
	}{
		{"semicolon-decimal-comma-bom-crlf.csv", normal, semicolon, "2026-03-28"},
		{"comma-decimal-point.csv", normal, fcStyle{sep: ','}, "2026-03-28"},
		{"semicolon-decimal-point-96-columns.csv", normal, fcStyle{sep: ';', width: 96}, "2026-03-28"},
		{"quoted.csv", normal, fcStyle{sep: ',', quoteAll: true, short: true}, "2026-03-28"},
		{"quoted-decimal-comma.csv", normal, fcStyle{sep: ';', decimalComma: true, quoteAll: true}, "2026-03-28"},
		{"columns-in-any-order.csv", normal, fcStyle{sep: ',', order: []int{fcKind, fcMalo, fcUnit, fcDeliveryDay, fcControlArea},
			names: func(s string) string { return " " + strings.ToUpper(s[:1]) + s[1:] + " " }}, "2026-03-28"},
		{"semicolon.csv.gz", normal, semicolon, "2026-03-28"},
		{"unit-left-to-the-default.csv", fcRowsOf(samples["2026-03-28"].Forecast, false), fcStyle{sep: ','}, "2026-03-28"},
		// The example of docs/formats.md: ';', decimal comma, a header of
		// 100 value columns and the 92 values of the spring-forward day.
		{"spring-forward-92-values.csv", fcRowsOf(samples["2026-03-29"].Forecast, true), fcStyle{sep: ';', decimalComma: true}, "2026-03-29"},
		{"spring-forward-short-rows.csv.gz", fcRowsOf(samples["2026-03-29"].Forecast, true), fcStyle{sep: ',', short: true, crlf: true}, "2026-03-29"},
		{"fall-back-100-values.csv", fcRowsOf(samples["2026-10-25"].Forecast, true), fcStyle{sep: ';', decimalComma: true}, "2026-10-25"},
		{"one-malo-in-several-rows.csv", mixed, fcStyle{sep: ';', decimalComma: true, quoteAll: true}, ""},
		{"one-malo-in-several-rows-comma.csv.gz", mixed, fcStyle{sep: ',', short: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The API's answer for the JSON body of the same rows.
			body := fcJSON(t, tt.rows)
			api := apiAccepts(t, databody.DecodeForecast, body)
			if tt.api != "" && api.InputHash != samples[tt.api].InputHash {
				t.Fatalf("the JSON of the rows is not databody/testdata/forecast_%s.json", tt.api)
			}
			var values int64
			for _, s := range api.Forecast.Series {
				values += int64(len(s.Values))
			}
			assertCSVAnswersLikeJSON(t, BulkForecasts, tt.name, fcCSV(tt.rows, tt.st), "f.json", body, apiAnswer{
				hash: api.InputHash, entries: 1, values: values,
				isBatch: func(b BulkBatch) bool {
					return reflect.DeepEqual(*b.Forecast, api.Forecast) && bytes.Equal(b.Canonical, api.Canonical)
				},
			})
		})
	}
}

// fcHeaderLine is the header of the key columns and two value columns,
// separated by ';'.
const fcHeaderLine = "delivery_day;control_area;malo;kind;unit;v1;v2"

// fcLine is a row of fcHeaderLine's columns: the key cells, then n values.
func fcLine(day, area, malo, kind, unit string, n int) string {
	return strings.Join(append([]string{day, area, malo, kind, unit}, fcValues(n)...), ";")
}

// TestBulkForecastCSVProblems: each kind of problem with its line, column,
// type, loc, message and input.
func TestBulkForecastCSVProblems(t *testing.T) {
	type want = wantProblem
	onlyTenneT := ingest.Rules{Active: pipeline.NewAreaSet(pipeline.TenneT)}
	header96 := "delivery_day;control_area;malo;kind;unit" + strings.Repeat(";v", 96)
	keys := "delivery_day, control_area, malo, kind, unit"
	tests := []struct {
		name  string
		file  string
		rules ingest.Rules
		want  []want
	}{
		{"bad delivery day",
			fcHeaderLine + "\n2026-13-01;TenneT;;production;MW;1;2\n2026-13-01;TenneT;;consumption;MW;1;2\n", ingesttest.AllAreas, []want{{2, "delivery_day", "date_from_datetime_parsing", "body.delivery_day", "Input should be a valid date or datetime, month value is outside expected range of 1-12", `"2026-13-01"`}}},
		{"delivery day with a time",
			fcHeaderLine + "\n2026-03-28T00:00:00;TenneT;;production;MW;1;2\n", ingesttest.AllAreas, []want{{2, "delivery_day", "date_parsing", "body.delivery_day", "Input should be a valid date in the format YYYY-MM-DD, unexpected extra characters at the end of the input", `"2026-03-28T00:00:00"`}}},
		{"missing delivery day",
			fcHeaderLine + "\n;TenneT;;production;MW;1;2\n", ingesttest.AllAreas, []want{{2, "delivery_day", "missing", "body.delivery_day", "Field required", "null"}}},
		{"mixed delivery days",
			fcHeaderLine + "\n2026-03-28;TenneT;;production;MW;1;2\n2026-03-28;TenneT;;consumption;MW;1;2\n2026-03-29;Amprion;;production;MW;1;2\n;Amprion;;consumption;MW;1;2\n", ingesttest.AllAreas, []want{
				{4, "delivery_day", ingest.ProblemCSVConflict, "body.delivery_day", `line 4: delivery_day "2026-03-29" differs from "2026-03-28" on line 2; a file holds one forecast, so all its rows have the same delivery_day`, `"2026-03-29"`},
				{5, "delivery_day", ingest.ProblemCSVConflict, "body.delivery_day", `line 5: delivery_day "" differs from "2026-03-28" on line 2; a file holds one forecast, so all its rows have the same delivery_day`, `""`},
			}},
		{"unknown kind and unit",
			fcHeaderLine + "\n2026-03-28;TenneT;;Production;KWH;1;2\n2026-03-28;TenneT;;consumption;mw;1;2\n", ingesttest.AllAreas, []want{
				{2, "kind", "literal_error", "body.series.0.kind", "Input should be 'production' or 'consumption'", `"Production"`},
				{2, "unit", "literal_error", "body.series.0.unit", "Input should be 'MW' or 'MWH'", `"KWH"`},
				{3, "unit", "literal_error", "body.series.1.unit", "Input should be 'MW' or 'MWH'", `"mw"`},
			}},
		{"missing kind",
			fcHeaderLine + "\n2026-03-28;TenneT;;;MW;1,5;x\n", ingesttest.AllAreas, []want{
				{2, "kind", "missing", "body.series.0.kind", "Field required", `{"control_area": "TenneT", "unit": "MW", "values": [1.5, "x"]}`},
				{2, "v2", "float_parsing", "body.series.0.values.1", "Input should be a valid number, unable to parse string as a number", `"x"`},
			}},
		{"neither control area nor malo",
			fcHeaderLine + "\n2026-03-28;;;production;;1;\n", ingesttest.AllAreas, []want{{2, "", "value_error", "body.series.0", "Value error, exactly one of control_area or malo must be set", `{"kind": "production", "values": [1]}`}}},
		{"bad malo, reported once",
			fcHeaderLine + "\n2026-03-28;TenneT;0123456789x;production;MW;1;2\n2026-03-28;;123;production;MW;1;2\n", ingesttest.AllAreas, []want{
				{2, "malo", "string_pattern_mismatch", "body.series.0.malo", `String should match pattern '^\d{11}$'`, `"0123456789x"`},
				{3, "malo", "string_pattern_mismatch", "body.series.1.malo", `String should match pattern '^\d{11}$'`, `"123"`},
			}},
		{"bad numbers",
			fcHeaderLine + ";v3;v4;v5\n2026-03-28;TenneT;;production;MW;1;1,2,3;-1,5;1e400;\n2026-03-28;TenneT;;consumption;MW;;1;;\n", ingesttest.AllAreas, []want{
				{2, "v2", "float_parsing", "body.series.0.values.1", "Input should be a valid number, unable to parse string as a number", `"1,2,3"`},
				{2, "v3", "greater_than_equal", "body.series.0.values.2", "Input should be greater than or equal to 0", `-1.5`},
				{2, "v4", "finite_number", "body.series.0.values.3", "Input should be a finite number", `1e400`},
				{3, "v1", "missing", "body.series.1.values.0", "Field required: the value cell is empty, but later cells of the row hold values (only trailing cells may be empty)", "null"},
			}},
		{"decimal comma only with ;",
			"delivery_day,control_area,malo,kind,unit,v1\n2026-03-28,TenneT,,production,MW,\"1,5\"\n", ingesttest.AllAreas, []want{{2, "v1", "float_parsing", "body.series.0.values.0", "Input should be a valid number, unable to parse string as a number", `"1,5"`}}},
		{"a malo with two control areas",
			fcHeaderLine + "\n2026-03-28;TenneT;01234567890;production;MW;1;2\n2026-03-28;;01234567890;consumption;MW;1;2\n2026-03-28;Amprion;01234567890;consumption;MWH;1;2\n", ingesttest.AllAreas, []want{{4, "control_area", ingest.ProblemCSVConflict, "body.malo_mapping.01234567890", `line 4: control area "Amprion" of MaLo 01234567890 differs from "TenneT" on line 2; the rows of a MaLo give its one malo_mapping entry`, `"Amprion"`}}},
		{"not UTF-8",
			fcHeaderLine + "\n2026-03-28;S\xfcd;;pr\xf6duction;KWH;1;2\n2026-03-28;Nord\xff;01234567890;production;;1;2\n\xff;TenneT;;consumption;;1;2\n", ingesttest.AllAreas, []want{
				{2, "control_area", "string_unicode", "body.series.0.control_area", "Input should be a valid string, unable to parse raw data as a unicode string", `"S\ufffdd"`},
				{2, "kind", "string_unicode", "body.series.0.kind", "Input should be a valid string, unable to parse raw data as a unicode string", `"pr\ufffdduction"`},
				{2, "unit", "literal_error", "body.series.0.unit", "Input should be 'MW' or 'MWH'", `"KWH"`},
				{3, "control_area", "string_unicode", "body.malo_mapping.01234567890", "Input should be a valid string, unable to parse raw data as a unicode string", `"Nord\ufffd"`},
				{4, "delivery_day", ingest.ProblemCSVConflict, "body.delivery_day", "line 4: delivery_day \"\ufffd\" differs from \"2026-03-28\" on line 2; a file holds one forecast, so all its rows have the same delivery_day", `"\ufffd"`},
			}},
		{"wrong interval counts",
			header96 + "\n" + fcLine("2026-03-29", "TenneT", "", "production", "MW", 96) + "\n" + fcLine("2026-03-29", "TenneT", "", "consumption", "MW", 92) + "\n" + fcLine("2026-03-29", "TenneT", "01234567890", "consumption", "MW", 93) + "\n", ingesttest.AllAreas, []want{
				{2, "", ingest.ProblemBusiness, "body.series.0", "series[0] has 96 intervals, expected 92 for 2026-03-29", ""},
				{4, "", ingest.ProblemBusiness, "body.series.2", "series[2] has 93 intervals, expected 92 for 2026-03-29", ""},
			}},
		{"inactive control areas",
			header96 + "\n" + fcLine("2026-03-28", "Amprion", "", "production", "MW", 96) + "\n" + fcLine("2026-03-28", "TenneT", "", "production", "MW", 96) + "\n" +
				fcLine("2026-03-28", "50Hertz", "01234567890", "production", "MW", 96) + "\n" + fcLine("2026-03-28", "", "01234567890", "consumption", "MW", 96) + "\n", onlyTenneT,
			[]want{
				{2, "control_area", ingest.ProblemBusiness, "body.series.0", "series[0]: control area Amprion is not in the active set", ""},
				{4, "control_area", ingest.ProblemBusiness, "body.malo_mapping.01234567890", "malo_mapping['01234567890']: control area 50Hertz is not in the active set", ""},
			}},
		{"missing mapping",
			header96 + "\n" + fcLine("2026-03-28", "", "01234567890", "production", "MW", 96) + "\n" + fcLine("2026-03-28", "", "01234567890", "consumption", "MWH", 96) + "\n", ingesttest.AllAreas, []want{
				{2, "control_area", ingest.ProblemBusiness, "body.series.0", "series[0]: no malo_mapping entry for MaLo '01234567890'", ""},
				{3, "control_area", ingest.ProblemBusiness, "body.series.1", "series[1]: no malo_mapping entry for MaLo '01234567890'", ""},
			}},
		{"duplicate series",
			header96 + "\n" + fcLine("2026-03-28", "TenneT", "", "production", "MW", 96) + "\n" + fcLine("2026-03-28", "TenneT", "01234567890", "production", "MW", 96) + "\n" +
				fcLine("2026-03-28", "TenneT", "", "production", "MWH", 96) + "\n" + fcLine("2026-03-28", "", "01234567890", "production", "MW", 96) + "\n", ingesttest.AllAreas, []want{
				{4, "", ingest.ProblemBusiness, "body.series.2", "series[2]: duplicate of series[0] (TenneT, production)", ""},
				{5, "", ingest.ProblemBusiness, "body.series.3", "series[3]: duplicate of series[1] (01234567890, production)", ""},
			}},
		{"business rules wait for a schema-valid file",
			header96 + "\n" + fcLine("2026-03-28", "Amprion", "", "production", "MW", 92) + "\n" + fcLine("2026-03-28", "TenneT", "", "x", "MW", 96) + "\n", onlyTenneT,
			[]want{{3, "kind", "literal_error", "body.series.1.kind", "Input should be 'production' or 'consumption'", `"x"`}}},
		{"too few key columns",
			"delivery_day;control_area;malo;kind;unit\n", ingesttest.AllAreas, []want{{1, "", ingest.ProblemCSVHeader, "", `the header must have the columns ` + keys + ` (in any order) and then at least one value column, as in ` + fcExample + `; it has "delivery_day", "control_area", "malo", "kind", "unit"`, ""}}},
		{"unknown key column",
			"delivery_day;area;malo;kind;unit;v1\n", ingesttest.AllAreas, []want{{1, "", ingest.ProblemCSVHeader, "", `the first five columns of the header must be ` + keys + ` in any order, as in ` + fcExample + `; column 2 is "area"`, ""}}},
		{"key column missing",
			"delivery_day;control_area;kind;unit;v1;v2\n", ingesttest.AllAreas, []want{{1, "", ingest.ProblemCSVHeader, "", `the first five columns of the header must be ` + keys + ` in any order, as in ` + fcExample + `; column 5 is "v1"`, ""}}},
		{"repeated key column",
			"delivery_day;kind;malo;KIND;unit;v1\n", ingesttest.AllAreas, []want{{1, "", ingest.ProblemCSVHeader, "", `the first five columns of the header must be ` + keys + ` in any order, as in ` + fcExample + `; column 4 is "KIND"`, ""}}},
		{"single-column header",
			"delivery_day control_area malo kind unit v1\n", ingesttest.AllAreas, []want{{1, "", ingest.ProblemCSVHeader, "", "the header has a single column: separate the columns with ; or , as in " + fcExample, ""}}},
		{"malformed header",
			"\"delivery_day;control_area;malo;kind;unit;v1\n", ingesttest.AllAreas, []want{{1, "", ingest.ProblemCSVHeader, "", "the header line is malformed: " + csvfile.MsgUnclosedQuote, ""}}},
		{"empty first line",
			"\ufeff\r\n" + fcHeaderLine + "\n", ingesttest.AllAreas, []want{{1, "", ingest.ProblemCSVHeader, "", "the first line must be the header, for example " + fcExample + "; it is empty", ""}}},
		{"too many and too few cells",
			fcHeaderLine + ";;\n2026-03-28;TenneT;;production;MW;1;2;;\n2026-03-28;TenneT;;consumption;MW;1;2;;;3\n2026-03-28;TenneT\n", ingesttest.AllAreas, []want{
				{3, "", ingest.ProblemCSVCells, "body.series.1", "line 3 has 10 cells, but the header has 9 columns", ""},
				{4, "", ingest.ProblemCSVCells, "body.series.2", "line 4 has 2 cells; a row needs at least the columns " + keys + ", then its values", ""},
			}},
		{"quoting error",
			"delivery_day,control_area,malo,kind,unit,v1\n2026-03-28,\"TenneT\"x,,production,MW,1\n", ingesttest.AllAreas, []want{{2, "", ingest.ProblemCSVSyntax, "body.series.0", `line 2: unexpected character after the closing " of a quoted cell (a " inside a quoted cell must be doubled)`, ""}}},
		{"header only",
			"\ufeff" + fcHeaderLine + "\r\n;;\r\n", ingesttest.AllAreas, []want{{1, "", "too_short", "body.series", "List should have at least 1 item after validation, not 0: the file has a header but no rows", "[]"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertWholeFileProblems(t, BulkForecasts, "f", tt.file, tt.rules, tt.want)
		})
	}
}

// TestBulkForecastCSVProblemsAreTheAPIs: the schema and business problems
// of a CSV file are those the API reports for the equivalent JSON body
// (type, loc, message, input, ctx), with the line of the row, except that a
// malo that is not 11 digits is not reported a second time as a key of
// malo_mapping.
func TestBulkForecastCSVProblemsAreTheAPIs(t *testing.T) {
	row := func(day, area, malo, kind, unit string, values ...string) keyedRow {
		return keyedRow{keys: [fcKeys]string{day, area, malo, kind, unit}, values: values}
	}
	cases := map[string][]keyedRow{
		"schema": {
			row("2026-02-30", "TenneT", "", "production", "MW", "1", "2.5", "x", "-0.5", "1e400"),
			row("2026-02-30", "", "0123", "Production", "KWH", "1"),
			row("2026-02-30", "Amprion", "0123", "consumption", "", "1"),
			row("2026-02-30", "", "", "", "MWH", "1", "3"),
			row("2026-02-30", "", "", "production", "MWH", "1", "2"),
			row("2026-02-30", "TenneT", "", "", "MW", "1", "abc", "1e3", "5."),
			row("2026-02-30", "", "01234567890", "consumption", "mwh", "-1"),
			row("2026-02-30", "50Hertz", "01234567890", "", "", ".5"),
		},
		"business": {
			row("2026-03-29", "TenneT", "", "production", "MW", fcValues(96)...),
			row("2026-03-29", "Amprion", "", "production", "MW", fcValues(92)...),
			row("2026-03-29", "", "01234567890", "production", "MW", fcValues(92)...),
			row("2026-03-29", "TransnetBW", "22222222222", "production", "MWH", fcValues(92)...),
			row("2026-03-29", "TenneT", "", "production", "MWH", fcValues(100)...),
			row("2026-03-29", "TenneT", "11111111111", "consumption", "MWH", fcValues(92)...),
			row("2026-03-29", "", "22222222222", "production", "MW", fcValues(92)...),
		},
	}
	rules := ingest.Rules{Active: pipeline.NewAreaSet(pipeline.TenneT)}
	for name, rows := range cases {
		t.Run(name, func(t *testing.T) {
			_, apiErr := databody.DecodeForecast(fcJSON(t, rows), rules)
			api := apiProblems(t, apiErr, func(p ingest.Problem) bool {
				return p.Loc[1] == "malo_mapping" && p.Loc[len(p.Loc)-1] == "[key]" // reported at the series
			})
			// The line is the row of the series the loc names, the first row
			// for the delivery day, and the first row of the MaLo with a
			// control area for its mapping entry.
			lineOf := func(loc []any) int {
				switch loc[1] {
				case "series":
					return loc[2].(int) + 2
				case "malo_mapping":
					for k, r := range rows {
						if r.keys[fcMalo] == loc[2] && r.keys[fcControlArea] != "" {
							return k + 2
						}
					}
				}
				return 2
			}
			for _, st := range []fcStyle{{sep: ';', decimalComma: true, width: 100}, {sep: ',', short: true, width: 100}} {
				assertProblemsAreTheAPIs(t, BulkForecasts, "f.csv", fcCSV(rows, st), rules, api, lineOf)
			}
		})
	}
}

// TestBulkForecastCSVDocExample: the problem example of docs/formats.md.
func TestBulkForecastCSVDocExample(t *testing.T) {
	file := "delivery_day,control_area,malo,kind,unit,v1,v2\n" +
		"2026-03-28,TenneT,,production,MW,1.5,2\n" +
		"2026-03-28,Amprion,01234567890,consumption,,0.25,0.5\n" +
		"2026-03-28,TenneT,01234567890,production,,0.25,x\n"
	res, err := decode(BulkForecasts, "f.csv", []byte(file), BulkOptions{Rules: ingesttest.AllAreas}, nil)
	fe := fileError(t, res, err)
	got := ""
	for _, p := range fe.Problems {
		got += ingesttest.MustJSON(t, p) + "\n"
	}
	want := `{"line":4,"column":"v2","type":"float_parsing","loc":["body","series",2,"values",1],"msg":"Input should be a valid number, unable to parse string as a number","input":"x"}
{"line":4,"column":"control_area","type":"csv_conflict","loc":["body","malo_mapping","01234567890"],"msg":"line 4: control area \"TenneT\" of MaLo 01234567890 differs from \"Amprion\" on line 3; the rows of a MaLo give its one malo_mapping entry","input":"TenneT"}
`
	if got != want {
		t.Errorf("got\n%s", got)
	}
}

// TestBulkForecastCSVTooLarge: a file over MaxDocumentBytes gets one
// file_too_large problem, whatever its rows held before the limit.
func TestBulkForecastCSVTooLarge(t *testing.T) {
	sub, err := databody.DecodeForecast(ingesttest.ReadSample(t, "databody", "forecast_2026-03-28.json"), ingesttest.AllAreas)
	if err != nil {
		t.Fatal(err)
	}
	data := fcCSV(fcRowsOf(sub.Forecast, true), fcStyle{sep: ';'})
	if res := assertTooLarge(t, BulkForecasts, "f", "forecasts", data, "x;TenneT;;production;MW;1\n"); res.InputHash != sub.InputHash {
		t.Errorf("at the limit: hash %q, want %s", res.InputHash, sub.InputHash)
	}
}

// TestBulkForecastCSVEmitAndContext: emit's error and a cancelled context
// end the decoding and are returned, not reported as problems.
func TestBulkForecastCSVEmitAndContext(t *testing.T) {
	sub, err := databody.DecodeForecast(ingesttest.ReadSample(t, "databody", "forecast_2026-10-25.json"), ingesttest.AllAreas)
	if err != nil {
		t.Fatal(err)
	}
	assertEmitAndContext(t, BulkForecasts, "f.csv", fcCSV(fcRowsOf(sub.Forecast, true), fcStyle{sep: ','}))
}
