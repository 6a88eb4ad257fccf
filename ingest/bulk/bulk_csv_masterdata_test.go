package bulk

import (
	"reflect"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/csvfile"
	"github.com/schedbridge/schedbridge/ingest/databody"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// mdRow is a master-data CSV row by column (mdColumns); "" is an empty cell.
type mdRow [mdFields]string

// mdSample is databody/testdata/masterdata.json as CSV rows; the second slice of the
// first location comes after the second location's row, so the file only
// equals the JSON body when rows are grouped by malo.
var mdSample = []mdRow{
	{"01234567890", "2025-01-01", "2026-01-01", "", "TenneT", "MGA1", "slp", "H25", "3500", "", "9900000000001"},
	{"11234567890", "2026-03-29", "", "", "TenneT", "Netzgebiet Süd", "imsys", "", "1234.5", "", ""},
	{"01234567890", "2026-01-01", "", "", "Amprion", "MGA2", "rlm", "", "", "production", ""},
	{"21234567890", "2024-06-01", "", "false", "", "", "", "", "", "", ""},
}

// mdStyle is how a test writes master-data rows as CSV.
type mdStyle struct {
	sep          byte
	decimalComma bool  // annual_consumption_kwh with a decimal comma
	bom, crlf    bool  // a UTF-8 BOM, CRLF line ends
	quoteAll     bool  // every cell in quotes
	short        bool  // rows end after their last non-empty cell
	trailing     bool  // the header and every row end with two separators
	upperBools   bool  // TRUE / FALSE
	header       []int // the columns, in this order (default: all, in mdColumns order)
	names        func(string) string
}

// mdCSV writes rows as a master-data CSV file. Cells holding the separator,
// a quote or a line break are quoted.
func mdCSV(rows []mdRow, st mdStyle) []byte {
	cols := st.header
	if cols == nil {
		for f := 0; f < mdFields; f++ {
			cols = append(cols, f)
		}
	}
	w := newTestCSV(st.sep, st.bom, st.crlf, st.quoteAll)
	b := &w.b
	line := func(cells []string) {
		if st.short {
			for len(cells) > 0 && cells[len(cells)-1] == "" {
				cells = cells[:len(cells)-1]
			}
		}
		tail := ""
		if st.trailing {
			tail = string(st.sep) + string(st.sep)
		}
		w.line(cells, tail)
	}
	line(headerNames(mdColumns[:], cols, st.names))
	for _, r := range rows {
		var cells []string
		for _, f := range cols {
			v := r[f]
			switch {
			case f == mdAnnual && st.decimalComma:
				v = strings.Replace(v, ".", ",", 1)
			case f == mdActive && st.upperBools:
				v = strings.ToUpper(v)
			}
			cells = append(cells, v)
		}
		line(cells)
	}
	return b.Bytes()
}

// mdJSON is the PUT /v1/master-data body that rows stand for: locations in
// the order of their first rows, slices in row order, empty cells left out,
// active as a boolean, annual_consumption_kwh as a number when it is one.
func mdJSON(t *testing.T, rows []mdRow) []byte {
	t.Helper()
	var order []string
	slices := map[string][]string{}
	for _, r := range rows {
		var members []string
		for f := mdValidFrom; f < mdFields; f++ {
			v := r[f]
			if v == "" {
				continue
			}
			val := ingesttest.MustJSON(t, v)
			if f == mdActive && (strings.EqualFold(v, "true") || strings.EqualFold(v, "false")) {
				val = strings.ToLower(v)
			}
			if _, ok, _ := csvfile.ParseFloat([]byte(v), false, true); f == mdAnnual && ok {
				val = csvfile.Literal([]byte(v))
			}
			members = append(members, ingesttest.MustJSON(t, mdColumns[f])+": "+val)
		}
		if _, ok := slices[r[mdMalo]]; !ok || r[mdMalo] == "" {
			order = append(order, r[mdMalo])
		}
		slices[r[mdMalo]] = append(slices[r[mdMalo]], "{"+strings.Join(members, ", ")+"}")
	}
	var locs []string
	for _, malo := range order {
		head := ""
		if malo != "" {
			head = `"malo": ` + ingesttest.MustJSON(t, malo) + ", "
		}
		locs = append(locs, "{"+head+`"slices": [`+strings.Join(slices[malo], ", ")+"]}")
	}
	return []byte(`{"locations": [` + strings.Join(locs, ",\n ") + "]}")
}

// TestBulkMasterDataCSVSameContent: CSV files of both dialects, quoted,
// short or gzip'd give the input hash and the locations of the API for the
// equivalent JSON body, so a re-drop as JSON or CSV answers unchanged.
func TestBulkMasterDataCSVSameContent(t *testing.T) {
	sample, err := databody.DecodeMasterData(ingesttest.ReadSample(t, "databody", "masterdata.json"), ingesttest.AllAreas)
	if err != nil {
		t.Fatal(err)
	}
	quirky := []mdRow{
		{"01234567890", "2025-01-01", "2025-06-01", "TRUE", "50Hertz", "MGA \"Nord\", Teil 2;\nOst", "tlp", "G0; \"x\"", "0.000001", "consumption", "9900000000001"},
		{"01234567890", "2025-06-01", "", "", "50Hertz", "  MGA  ", "slp", "", "1e3", "", ""},
	}
	semicolon := mdStyle{sep: ';', decimalComma: true, bom: true, crlf: true}
	tests := []struct {
		name string
		rows []mdRow
		st   mdStyle
	}{
		{"semicolon-decimal-comma-bom-crlf.csv", mdSample, semicolon},
		{"comma-decimal-point.csv", mdSample, mdStyle{sep: ','}},
		{"semicolon-decimal-point.csv", mdSample, mdStyle{sep: ';'}},
		{"columns-in-any-order.csv", mdSample, mdStyle{sep: ',', upperBools: true,
			header: []int{mdValidTo, mdKind, mdMalo, mdAnnual, mdValidFrom, mdDSOMPID, mdControlArea, mdMGA, mdActive, mdMeteringType, mdProfile},
			names:  func(s string) string { return " " + strings.ToUpper(s[:1]) + s[1:] + " " }}},
		{"quoted.csv", mdSample, mdStyle{sep: ',', quoteAll: true}},
		{"short-rows-trailing-separators.csv", mdSample, mdStyle{sep: ';', short: true, trailing: true,
			header: []int{mdMalo, mdValidFrom, mdActive, mdValidTo, mdControlArea, mdMGA, mdMeteringType, mdProfile, mdAnnual, mdKind, mdDSOMPID}}},
		{"semicolon.csv.gz", mdSample, semicolon},
		{"quoted-separators-quotes-line-breaks.csv", quirky, mdStyle{sep: ';', decimalComma: true}},
		{"quoted-separators-quotes-line-breaks-comma.csv.gz", quirky, mdStyle{sep: ',', crlf: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The API's answer for the JSON body of the same rows.
			body := mdJSON(t, tt.rows)
			api := apiAccepts(t, databody.DecodeMasterData, body)
			if tt.rows[0] == mdSample[0] && api.InputHash != sample.InputHash {
				t.Fatalf("the JSON of mdSample is not databody/testdata/masterdata.json")
			}
			assertCSVAnswersLikeJSON(t, BulkMasterData, tt.name, mdCSV(tt.rows, tt.st), "m.json", body, apiAnswer{
				hash: api.InputHash, entries: len(api.Locations),
				isBatch: func(b BulkBatch) bool { return reflect.DeepEqual(b.Locations, api.Locations) },
			})
		})
	}
}

// mdHeaderLine is the header of all columns, separated by ';'.
var mdHeaderLine = strings.Join(mdColumns[:], ";")

// TestBulkMasterDataCSVProblems: each kind of problem with its line,
// column, type, loc and message.
func TestBulkMasterDataCSVProblems(t *testing.T) {
	type want = wantProblem
	onlyTenneT := ingest.Rules{Active: pipeline.NewAreaSet(pipeline.TenneT)}
	allColumns := "malo, valid_from, valid_to, active, control_area, mga, metering_type, profile, annual_consumption_kwh, kind, dso_mp_id"
	tests := []struct {
		name  string
		file  string
		rules ingest.Rules
		want  []want
	}{
		{"bad malo, reported once per location",
			mdHeaderLine + "\n0123456789x;2026-01-01;2026-06-01;;TenneT;M;slp\n11234567890;2026-01-01;;;TenneT;M;slp\n0123456789x;2026-06-01;;;TenneT;M;slp\n", ingesttest.AllAreas, []want{{2, "malo", "string_pattern_mismatch", "body.locations.0.malo", `String should match pattern '^\d{11}$'`, `"0123456789x"`}}},
		{"missing malo",
			mdHeaderLine + "\n;2026-01-01;;;TenneT;M;slp\n", ingesttest.AllAreas, []want{{2, "malo", "missing", "body.locations.0.malo", "Field required",
				`{"slices": [{"valid_from": "2026-01-01", "control_area": "TenneT", "mga": "M", "metering_type": "slp"}]}`}}},
		{"bad dates",
			mdHeaderLine + "\n01234567890;2026-13-01;01.01.2027;;TenneT;M;slp\n", ingesttest.AllAreas, []want{
				{2, "valid_from", "date_from_datetime_parsing", "body.locations.0.slices.0.valid_from", "Input should be a valid date or datetime, month value is outside expected range of 1-12", `"2026-13-01"`},
				{2, "valid_to", "date_from_datetime_parsing", "body.locations.0.slices.0.valid_to", "Input should be a valid date or datetime, invalid character in year", `"01.01.2027"`},
			}},
		{"a date with a time",
			mdHeaderLine + "\n01234567890;2026-01-01;;;TenneT;M;slp\n01234567890;2026-01-01T00:00:00;;;TenneT;M;slp\n", ingesttest.AllAreas, []want{{3, "valid_from", "date_parsing", "body.locations.0.slices.1.valid_from", "Input should be a valid date in the format YYYY-MM-DD, unexpected extra characters at the end of the input", `"2026-01-01T00:00:00"`}}},
		{"unknown enum values",
			mdHeaderLine + "\n01234567890;2026-01-01;;;TenneT;M;SLP;;;both\n", ingesttest.AllAreas, []want{
				{2, "metering_type", "literal_error", "body.locations.0.slices.0.metering_type", "Input should be 'slp', 'tlp', 'rlm' or 'imsys'", `"SLP"`},
				{2, "kind", "literal_error", "body.locations.0.slices.0.kind", "Input should be 'consumption' or 'production'", `"both"`},
			}},
		{"active, number and id cells",
			mdHeaderLine + "\n01234567890;2026-01-01;;yes;TenneT;M;slp;;3.500,5;;123\n11234567890;2026-01-01;;;TenneT;M;slp;;-1,5\n21234567890;2026-01-01;;;TenneT;M;slp;;1e400\n", ingesttest.AllAreas, []want{
				{2, "active", "bool_parsing", "body.locations.0.slices.0.active", "Input should be a valid boolean, unable to interpret input", `"yes"`},
				{2, "annual_consumption_kwh", "float_parsing", "body.locations.0.slices.0.annual_consumption_kwh", "Input should be a valid number, unable to parse string as a number", `"3.500,5"`},
				{2, "dso_mp_id", "string_pattern_mismatch", "body.locations.0.slices.0.dso_mp_id", `String should match pattern '^\d{13}$'`, `"123"`},
				{3, "annual_consumption_kwh", "greater_than_equal", "body.locations.1.slices.0.annual_consumption_kwh", "Input should be greater than or equal to 0", `-1.5`},
				{4, "annual_consumption_kwh", "finite_number", "body.locations.2.slices.0.annual_consumption_kwh", "Input should be a finite number", `1e400`},
			}},
		{"decimal comma only with ;",
			"malo,valid_from,control_area,mga,metering_type,annual_consumption_kwh\n01234567890,2026-01-01,TenneT,M,slp,\"1,5\"\n", ingesttest.AllAreas, []want{{2, "annual_consumption_kwh", "float_parsing", "body.locations.0.slices.0.annual_consumption_kwh", "Input should be a valid number, unable to parse string as a number", `"1,5"`}}},
		{"model validators of a slice",
			mdHeaderLine + "\n01234567890;2026-01-01;;;TenneT;M\n11234567890;2026-01-01;2026-01-01;;TenneT;M;slp\n", ingesttest.AllAreas, []want{
				{2, "", "value_error", "body.locations.0.slices.0", "Value error, an active slice needs control_area, mga and metering_type", ""},
				{3, "", "value_error", "body.locations.1.slices.0", "Value error, valid_to must be after valid_from", ""},
			}},
		{"not UTF-8",
			mdHeaderLine + "\n0123456789x;2026-01-01;;;TenneT;S\xfcd;slp\n0123456789x;2026-02-01;;;TenneT;M;r\xfcm\n1\xff;2026-13-01\n", ingesttest.AllAreas, []want{
				{2, "malo", "string_pattern_mismatch", "body.locations.0.malo", `String should match pattern '^\d{11}$'`, `"0123456789x"`},
				{2, "mga", "string_unicode", "body.locations.0.slices.0.mga", "Input should be a valid string, unable to parse raw data as a unicode string", `"S\ufffdd"`},
				{3, "metering_type", "string_unicode", "body.locations.0.slices.1.metering_type", "Input should be a valid string, unable to parse raw data as a unicode string", `"r\ufffdm"`},
				{4, "malo", "string_unicode", "body.locations.1.malo", "Input should be a valid string, unable to parse raw data as a unicode string", `"1\ufffd"`},
				{4, "valid_from", "date_from_datetime_parsing", "body.locations.1.slices.0.valid_from", "Input should be a valid date or datetime, month value is outside expected range of 1-12", `"2026-13-01"`},
			}},
		{"overlapping slices",
			mdHeaderLine + "\n01234567890;2025-01-01;2025-07-01;;TenneT;M;slp\n11234567890;2025-01-01;;;TenneT;M;slp\n01234567890;2025-06-01;;;TenneT;M;slp\n", ingesttest.AllAreas, []want{{4, "valid_from", ingest.ProblemBusiness, "body.locations.0.slices.1", "locations[0] (01234567890): slices[1] overlaps slices[0]", ""}}},
		{"open-ended slice before the last",
			mdHeaderLine + "\n01234567890;2025-01-01;;;TenneT;M;slp\n01234567890;2026-01-01;;;TenneT;M;slp\n", ingesttest.AllAreas, []want{{2, "valid_to", ingest.ProblemBusiness, "body.locations.0.slices.0", "locations[0] (01234567890): only the last slice may be open-ended", ""}}},
		{"inactive control area",
			mdHeaderLine + "\n01234567890;2025-01-01;2026-01-01;;TenneT;M;slp\n01234567890;2026-01-01;;;Amprion;M;slp\n", onlyTenneT,
			[]want{{3, "control_area", ingest.ProblemBusiness, "body.locations.0.slices.1", "locations[0].slices[1]: control area Amprion is not in the active set", ""}}},
		{"business rules wait for a schema-valid file",
			mdHeaderLine + "\n01234567890;2025-01-01;;;Amprion;M;slp\n01234567890;2026-01-01;;;TenneT;M;x\n", onlyTenneT,
			[]want{{3, "metering_type", "literal_error", "body.locations.0.slices.1.metering_type", "Input should be 'slp', 'tlp', 'rlm' or 'imsys'", `"x"`}}},
		{"missing header column",
			"malo;valid_to;mga\n01234567890;2026-01-01;M\n", ingesttest.AllAreas, []want{{1, "", ingest.ProblemCSVHeader, "", `the header has no column valid_from; a master-data file needs at least malo and valid_from, as in ` + mdExample + `; it has "malo", "valid_to", "mga"`, ""}}},
		{"unknown header column",
			"malo;valid_from;metering type\n01234567890;2026-01-01;slp\n", ingesttest.AllAreas, []want{{1, "", ingest.ProblemCSVHeader, "", `column 3 of the header is "metering type", which is not a master-data column; the columns are ` + allColumns, ""}}},
		{"repeated header column",
			"malo;valid_from; MALO\n", ingesttest.AllAreas, []want{{1, "", ingest.ProblemCSVHeader, "", `column 3 of the header repeats "malo" (column 1)`, ""}}},
		{"unnamed header column",
			"malo;;valid_from\n", ingesttest.AllAreas, []want{{1, "", ingest.ProblemCSVHeader, "", "column 2 of the header has no name; the columns of a master-data file are " + allColumns, ""}}},
		{"single-column header",
			"malo valid_from\n", ingesttest.AllAreas, []want{{1, "", ingest.ProblemCSVHeader, "", "the header has a single column: separate the columns with ; or , as in " + mdExample, ""}}},
		{"too many cells",
			"malo;valid_from;control_area;mga;metering_type;;\n01234567890;2025-01-01;TenneT;M;slp;;\n01234567890;2026-01-01;TenneT;M;slp;x\n", ingesttest.AllAreas, []want{{3, "", ingest.ProblemCSVCells, "body.locations", "line 3 has 6 cells, but the header has 5 columns", ""}}},
		{"quoting error",
			"malo,valid_from,control_area,mga,metering_type\n01234567890,\"2026-01-01\"x,TenneT,M,slp\n", ingesttest.AllAreas, []want{{2, "", ingest.ProblemCSVSyntax, "body.locations", `line 2: unexpected character after the closing " of a quoted cell (a " inside a quoted cell must be doubled)`, ""}}},
		{"header only",
			"\ufeffmalo;valid_from\r\n;;\r\n", ingesttest.AllAreas, []want{{1, "", "too_short", "body.locations", "List should have at least 1 item after validation, not 0: the file has a header but no rows", "[]"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertWholeFileProblems(t, BulkMasterData, "m", tt.file, tt.rules, tt.want)
		})
	}
}

// TestBulkMasterDataCSVProblemsAreTheAPIs: the schema and business problems
// of a CSV file are those the API reports for the equivalent JSON body
// (type, loc, message, input, ctx), with the line of the row.
func TestBulkMasterDataCSVProblemsAreTheAPIs(t *testing.T) {
	cases := map[string][]mdRow{
		"schema": {
			{"0123456789", "2026-02-30", "2026-1-1", "no", "", "", "monthly", strings.Repeat("p", 33), "-0.5", "Consumption", "99000000000011"},
			{"11234567890", "2026-01-01", "", "", "TenneT", strings.Repeat("ä", 65), "slp", "", "", "", ""},
			{"", "", "", "false", "", "", "", "", "abc", "", ""},
			{"21234567890", "2026-01-01", "2025-01-01", "", "TenneT", "M", "rlm", "", "", "", ""},
			{"21234567890", "2026-01-01", "", "", "TenneT", "", "", "", "", "", ""},
			{"31234567890", "2026-01-01", "2025-01-01", "false", "", "", "", "", "", "", ""},
		},
		"business": {
			{"01234567890", "2025-01-01", "2025-07-01", "", "TenneT", "M", "slp", "", "", "", ""},
			{"01234567890", "2025-06-01", "2026-01-01", "", "Amprion", "M", "slp", "", "", "", ""},
			{"01234567890", "2026-01-01", "", "", "TenneT", "M", "slp", "", "", "", ""},
			{"11234567890", "2025-01-01", "", "", "TenneT", "M", "slp", "", "", "", ""},
			{"11234567890", "2024-01-01", "", "false", "50Hertz", "", "", "", "", "", ""},
		},
	}
	rules := ingest.Rules{Active: pipeline.NewAreaSet(pipeline.TenneT)}
	for name, rows := range cases {
		t.Run(name, func(t *testing.T) {
			_, apiErr := databody.DecodeMasterData(mdJSON(t, rows), rules)
			api := apiProblems(t, apiErr, nil)
			// The line is the row of the slice the loc names (or of the
			// location's first row).
			lineOf := func(loc []any) int {
				s := 0
				if len(loc) > 4 {
					s = loc[4].(int)
				}
				return mdRowLine(rows, loc[2].(int), s)
			}
			assertProblemsAreTheAPIs(t, BulkMasterData, "m.csv", mdCSV(rows, mdStyle{sep: ';', decimalComma: true}), rules, api, lineOf)
		})
	}
}

// mdRowLine is the line of the j-th row of the i-th location of rows, as
// mdJSON groups them.
func mdRowLine(rows []mdRow, i, j int) int {
	locs, slice := 0, 0
	index := map[string]int{}
	for k, r := range rows {
		l, ok := index[r[mdMalo]]
		if !ok || r[mdMalo] == "" {
			l = locs
			index[r[mdMalo]] = l
			locs++
		}
		if l != i {
			continue
		}
		if slice == j {
			return k + 2
		}
		slice++
	}
	return -1
}

// TestBulkMasterDataCSVTooLarge: a file over MaxDocumentBytes gets one
// file_too_large problem, whatever its rows held before the limit.
func TestBulkMasterDataCSVTooLarge(t *testing.T) {
	assertTooLarge(t, BulkMasterData, "m", "master-data", mdCSV(mdSample, mdStyle{sep: ';'}), "x;2026-01-01\n")
}

// TestBulkMasterDataCSVEmitAndContext: emit's error and a cancelled
// context end the decoding and are returned, not reported as problems.
func TestBulkMasterDataCSVEmitAndContext(t *testing.T) {
	assertEmitAndContext(t, BulkMasterData, "m.csv", mdCSV(mdSample, mdStyle{sep: ';'}))
}

// TestStreamHashLocations: the streaming hash of locations is the hash of
// canonicalLocations.
func TestStreamHashLocations(t *testing.T) {
	sub, err := databody.DecodeMasterData(ingesttest.ReadSample(t, "databody", "masterdata.json"), ingesttest.AllAreas)
	if err != nil {
		t.Fatal(err)
	}
	h := newStreamHash("locations")
	for i := range sub.Locations {
		h.location(&sub.Locations[i])
	}
	if got := h.sum(); got != sub.InputHash {
		t.Errorf("%s, want %s", got, sub.InputHash)
	}
}
