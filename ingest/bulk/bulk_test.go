package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/csvfile"
	"github.com/schedbridge/schedbridge/ingest/databody"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
	"github.com/schedbridge/schedbridge/pipeline"
)

func TestParseBulkKind(t *testing.T) {
	for _, k := range []string{"metered-data", "profiles", "master-data", "forecasts"} {
		if got, err := ParseBulkKind(k); err != nil || string(got) != k {
			t.Errorf("%s: %v %v", k, got, err)
		}
	}
	_, err := ParseBulkKind("metered")
	if pipeline.KindOf(err) != pipeline.Invalid || !strings.Contains(err.Error(), "metered-data, profiles, master-data, forecasts") {
		t.Errorf("err = %v", err)
	}
}

func TestDetectFormat(t *testing.T) {
	tests := []struct {
		kind   BulkKind
		name   string
		format BulkFormat
		gz     bool
		err    string
	}{
		{BulkMetered, "2026/03/28/a.json", FormatJSON, false, ""},
		{BulkMetered, "A.JSON.GZ", FormatJSON, true, ""},
		{BulkMetered, "a.csv", FormatCSV, false, ""},
		{BulkMetered, "a.Csv.Gz", FormatCSV, true, ""},
		{BulkMetered, "a.parquet", FormatParquet, false, ""},
		{BulkProfiles, "p.csv.gz", FormatCSV, true, ""},
		{BulkMasterData, "m.json", FormatJSON, false, ""},
		{BulkForecasts, "f.json.gz", FormatJSON, true, ""},
		{BulkProfiles, "p.parquet", "", false, `file "p.parquet": profiles files cannot be PARQUET; profiles accepts .json, .json.gz, .csv, .csv.gz`},
		{BulkMasterData, "m.CSV", FormatCSV, false, ""},
		{BulkMasterData, "m.csv.gz", FormatCSV, true, ""},
		{BulkMasterData, "m.parquet", "", false, `file "m.parquet": master-data files cannot be PARQUET; master-data accepts .json, .json.gz, .csv, .csv.gz`},
		{BulkForecasts, "f.csv", FormatCSV, false, ""},
		{BulkForecasts, "F.CSV.GZ", FormatCSV, true, ""},
		{BulkForecasts, "f.parquet", "", false, `file "f.parquet": forecasts files cannot be PARQUET; forecasts accepts .json, .json.gz, .csv, .csv.gz`},
		{BulkMetered, "a.xlsx", "", false, `file "a.xlsx": unknown extension; accepted are .json, .json.gz, .csv and .csv.gz (all kinds), .parquet (metered-data); metered-data accepts .json, .json.gz, .csv, .csv.gz, .parquet`},
		{BulkMetered, "a.parquet.gz", "", false, "unknown extension"},
		{BulkMetered, "json", "", false, "unknown extension"},
		{"metered", "a.json", "", false, "unknown file kind"},
	}
	for _, tt := range tests {
		f, gz, err := DetectFormat(tt.kind, tt.name)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || pipeline.KindOf(err) != pipeline.Invalid {
				t.Errorf("%s %s: err %v, want %q", tt.kind, tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || f != tt.format || gz != tt.gz {
			t.Errorf("%s %s: %s %v %v", tt.kind, tt.name, f, gz, err)
		}
	}
}

// withTinyBuffers runs f with read buffers of a few bytes, so that every
// JSON value and CSV row is read in many pieces.
func withTinyBuffers(t *testing.T, f func()) {
	t.Helper()
	size, window := bulkBufferSize, jsonWindow
	bulkBufferSize, jsonWindow = 7, 1
	defer func() { bulkBufferSize, jsonWindow = size, window }()
	f()
}

// decodeOneByte is decode with a Body that returns one byte per Read.
func decodeOneByte(kind BulkKind, name string, data []byte, opt BulkOptions, emit func(BulkBatch) error) (BulkResult, error) {
	in := BulkInput{Name: name, Body: iotest.OneByteReader(bytes.NewReader(data)), At: bytes.NewReader(data), Size: int64(len(data))}
	return DecodeBulk(context.Background(), kind, in, opt, emit)
}

// collect decodes in both passes and returns the emitted entries.
func collect(t *testing.T, kind BulkKind, name string, data []byte, opt BulkOptions) (BulkResult, []pipeline.MeteredEntry, []pipeline.ProfileEntry, []int) {
	t.Helper()
	res, err := decode(kind, name, data, opt, nil)
	if err != nil {
		t.Fatalf("%s: validation pass: %v", name, err)
	}
	var metered []pipeline.MeteredEntry
	var profiles []pipeline.ProfileEntry
	var sizes []int
	res2, err := decode(kind, name, data, opt, func(b BulkBatch) error {
		metered = append(metered, b.Metered...)
		profiles = append(profiles, b.Profiles...)
		sizes = append(sizes, len(b.Metered)+len(b.Profiles))
		return nil
	})
	if err != nil {
		t.Fatalf("%s: staging pass: %v", name, err)
	}
	if !reflect.DeepEqual(res, res2) {
		t.Errorf("%s: passes differ:\n%+v\n%+v", name, res, res2)
	}
	return res, metered, profiles, sizes
}

// TestBulkMeteredSameContent: the same entries as an API body, a JSON file
// (plain, gzip), CSV files of both separators and Parquet files give the
// API's input hash and entries.
func TestBulkMeteredSameContent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	es := randomMetered(rng, 157)
	body := meteredJSON(es, `, "validate_only": false, "comment": {"x": [1, 2.5, "y"]}`)
	sub, err := databody.DecodeMeteredData(body, ingest.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	files := []struct {
		name string
		data []byte
	}{
		{"a.json", body},
		{"a.json.gz", gzipped(body)},
		{"semicolon-comma-bom-crlf.csv", ingesttest.MeteredCSV(es, ingesttest.CSVStyle{Sep: ';', DecimalComma: true, BOM: true, CRLF: true})},
		{"semicolon-point.csv", ingesttest.MeteredCSV(es, ingesttest.CSVStyle{Sep: ';', Padded: true})},
		{"comma.csv", ingesttest.MeteredCSV(es, ingesttest.CSVStyle{Sep: ',', Padded: true, CRLF: true})},
		{"comma-quoted.csv.gz", gzipped(ingesttest.MeteredCSV(es, ingesttest.CSVStyle{Sep: ',', QuoteKeys: true, Order: []int{2, 0, 1}}))},
		{"date32.parquet", meteredParquet(t, es, parquetStyle{rowGroup: 40, extra: true})},
		{"string-day.parquet", meteredParquet(t, es, parquetStyle{dayAsString: true})},
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			opt := BulkOptions{BatchSize: 50}
			res, got, _, sizes := collect(t, BulkMetered, f.name, f.data, opt)
			if res.InputHash != sub.InputHash {
				t.Errorf("hash %s, API %s", res.InputHash, sub.InputHash)
			}
			if res.Entries != len(es) || res.Values != countValues(es) || res.ProblemCount != 0 || res.ValidateOnly {
				t.Errorf("result %+v", res)
			}
			if !reflect.DeepEqual(sizes, []int{50, 50, 50, 7}) {
				t.Errorf("batch sizes %v", sizes)
			}
			if !reflect.DeepEqual(got, sub.Entries) {
				t.Errorf("emitted entries differ from the API's")
			}
			if strings.HasSuffix(f.name, ".parquet") {
				return
			}
			withTinyBuffers(t, func() {
				res, err := decodeOneByte(BulkMetered, f.name, f.data, opt, nil)
				if err != nil || res.InputHash != sub.InputHash {
					t.Errorf("tiny buffers: %v %s", err, res.InputHash)
				}
			})
		})
	}
}

func countValues(es []pipeline.MeteredEntry) int64 {
	n := 0
	for _, e := range es {
		n += len(e.Values)
	}
	return int64(n)
}

func TestBulkProfilesSameContent(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	es := randomProfiles(rng, 61)
	body := profilesJSON(es)
	sub, err := databody.DecodeProfiles(body, ingest.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"p.json":    body,
		"p.json.gz": gzipped(body),
		"p.csv":     ingesttest.ProfilesCSV(es, ingesttest.CSVStyle{Sep: ';', DecimalComma: true, BOM: true, CRLF: true, Order: []int{2, 1, 0}}),
		"p2.csv":    ingesttest.ProfilesCSV(es, ingesttest.CSVStyle{Sep: ',', QuoteKeys: true, Padded: true}),
	} {
		res, _, got, sizes := collect(t, BulkProfiles, name, data, BulkOptions{BatchSize: 20})
		if res.InputHash != sub.InputHash || res.Entries != 61 {
			t.Errorf("%s: hash %s, API %s; %+v", name, res.InputHash, sub.InputHash, res)
		}
		if !reflect.DeepEqual(got, sub.Entries) || !reflect.DeepEqual(sizes, []int{20, 20, 20, 1}) {
			t.Errorf("%s: emitted entries differ from the API's (batches %v)", name, sizes)
		}
		withTinyBuffers(t, func() {
			res, err := decodeOneByte(BulkProfiles, name, data, BulkOptions{}, nil)
			if err != nil || res.InputHash != sub.InputHash {
				t.Errorf("%s: tiny buffers: %v %s", name, err, res.InputHash)
			}
		})
	}
}

// TestStreamHashIsCanonical: the streaming hash writes the bytes of
// databody.CanonicalMetered for the whole list.
func TestStreamHashIsCanonical(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 300} {
		es := randomMetered(rng, n)
		h := newStreamHash("entries")
		for i := range es {
			h.metered(&es[i], nil)
		}
		if got, want := h.sum(), ingest.InputHash(databody.CanonicalMetered(es, 0)); got != want {
			t.Errorf("%d entries: %s, want %s", n, got, want)
		}
		ps := randomProfiles(rng, n)
		h = newStreamHash("entries")
		for i := range ps {
			h.profile(&ps[i], nil)
		}
		if got, want := h.sum(), ingest.InputHash(databody.CanonicalProfiles(ps, 0)); got != want {
			t.Errorf("%d profiles: %s, want %s", n, got, want)
		}
	}
}

// csvNumber is the grammar csvfile.ParseFloat implements.
var csvNumber = regexp.MustCompile(`^[+-]?([0-9]+([.,][0-9]*)?|[.,][0-9]+)([eE][+-]?[0-9]+)?$`)

// TestParseCSVFloat holds csvfile.ParseFloat to strconv.ParseFloat and its
// canonical spelling to ingest.AppendJSONFloat, over random cells.
func TestParseCSVFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"0", "1", "2", "5", "9", "0", "7", ".", ",", "e", "-", "+", "3", "4"}
	cells := []string{"0", "-0", "+0", "0.0", "1", "10", "1.5", "1,5", "1.50", ".5", "5.", "-.5e3", "1e400", "1e-400", "-1e400",
		"123456789012345", "1234567890123456", "0.000001", "0.0000001", "12345678901234567890123", "0.1234567",
		"9007199254740993", "1,", ",", ".", "", "e5", "1e", "1e+", "1.2.3", "1,2,3", "abc", " 1", "1 ", "NaN", "inf", "0x10", "1_0"}
	for i := 0; i < 200000; i++ {
		n := 1 + rng.IntN(12)
		var b strings.Builder
		for j := 0; j < n; j++ {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		cells = append(cells, b.String())
		// Plausible quantities too.
		cells = append(cells, strconv.FormatFloat(float64(rng.IntN(1e9))/math.Pow10(rng.IntN(9)), 'f', -1, 64))
	}
	for _, cell := range cells {
		for _, comma := range []bool{false, true} {
			f, ok, canon := csvfile.ParseFloat([]byte(cell), comma, true)
			if _, ok2, canon2 := csvfile.ParseFloat([]byte(cell), comma, false); ok2 != ok || canon2 != canon {
				t.Fatalf("%q: need changes ok or canon", cell)
			}
			norm := cell
			if comma {
				norm = strings.Replace(cell, ",", ".", 1)
			}
			want := csvNumber.MatchString(cell) && (comma || !strings.Contains(cell, ","))
			if ok != want {
				t.Fatalf("%q (comma %v): ok %v, want %v", cell, comma, ok, want)
			}
			if !ok {
				continue
			}
			wf, err := strconv.ParseFloat(norm, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				t.Fatalf("%q: ParseFloat: %v", norm, err)
			}
			if wf == 0 {
				wf = 0
			}
			if f != wf || f == 0 && math.Signbit(f) {
				t.Fatalf("%q (comma %v): %v, ParseFloat %v", cell, comma, f, wf)
			}
			if canon != csvfile.NotCanonical {
				if got, want := norm, string(ingest.AppendJSONFloat(nil, f)); got != want {
					t.Fatalf("%q: canonical %q, appendJSONFloat %q", cell, got, want)
				}
				if canon >= 0 && (cell[canon] != '.' && cell[canon] != ',') {
					t.Fatalf("%q: mark at %d", cell, canon)
				}
			}
		}
	}
}

// problemJSON renders problems for comparisons and golden files.
func problemJSON(t *testing.T, ps []ingest.FileProblem) string {
	t.Helper()
	b, err := json.MarshalIndent(ps, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// checkGolden compares got with testdata/bulk/name; -update rewrites it.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", "bulk", name)
	if *ingesttest.Update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s changed (run with -update after a deliberate change):\n%s", name, got)
	}
}

func fileError(t *testing.T, res BulkResult, err error) *ingest.FileError {
	t.Helper()
	var fe *ingest.FileError
	if !errors.As(err, &fe) {
		t.Fatalf("want *FileError, got %T %v", err, err)
	}
	if fe.Kind() != pipeline.Invalid || fe.Count != res.ProblemCount || len(fe.Problems) != len(res.Problems) || res.InputHash != "" {
		t.Errorf("FileError %d/%d problems, result %d/%d, hash %q", len(fe.Problems), fe.Count, len(res.Problems), res.ProblemCount, res.InputHash)
	}
	return fe
}

// csvRow is a metered-data CSV row of n values.
func csvRow(malo, day, unit string, n int) string {
	cells := []string{malo, day, unit}
	for j := 0; j < n; j++ {
		cells = append(cells, strconv.FormatFloat(float64(j)/8, 'f', -1, 64))
	}
	return strings.ReplaceAll(strings.Join(cells, ";"), ".", ",")
}

// TestBulkCSVProblems: every kind of broken row, with its line; the whole
// answer is pinned in testdata/bulk/metered_errors.json.
func TestBulkCSVProblems(t *testing.T) {
	data := ingesttest.ReadTestdata(t, "bulk/metered_errors.csv")
	res, err := decode(BulkMetered, "metered_errors.csv", data, BulkOptions{}, nil)
	fe := fileError(t, res, err)
	checkGolden(t, "metered_errors.json", problemJSON(t, fe.Problems))
	type want struct {
		line   int
		column string
		typ    string
		loc    string
		msg    string
	}
	wants := []want{
		{3, "malo", "string_pattern_mismatch", "body.entries.1.malo", `String should match pattern '^\d{11}$'`},
		{4, "v5", "float_parsing", "body.entries.2.values.4", "Input should be a valid number, unable to parse string as a number"},
		{5, "", ingest.ProblemCSVCells, "body.entries.3", "line 5 has 104 cells, but the header has 103 columns"},
		{6, "", ingest.ProblemBusiness, "body.entries.4", "line 6 (01234567890, 2026-03-29): 96 intervals, expected 92"},
		{7, "", ingest.ProblemBusiness, "body.entries.5", "line 7 (01234567890, 2026-10-25): 96 intervals, expected 100"},
		{8, "", ingest.ProblemBusiness, "body.entries.6", "line 8 (01234567890, 2026-03-28): duplicate of line 2"},
		{9, "v3", "missing", "body.entries.7.values.2", "Field required: the value cell is empty, but later cells of the row hold values (only trailing cells may be empty)"},
		{10, "v1", "greater_than_equal", "body.entries.8.values.0", "Input should be greater than or equal to 0"},
		{11, "unit", "literal_error", "body.entries.9.unit", "Input should be 'MW', 'MWH' or 'KWH'"},
		{12, "day", "date_from_datetime_parsing", "body.entries.10.day", "Input should be a valid date or datetime, invalid character in year"},
		{14, "", ingest.ProblemCSVSyntax, "body.entries.11", `line 14: a " in an unquoted cell (quote the whole cell and double each " inside it)`},
		{15, "unit", "literal_error", "body.entries.12.unit", "Input should be 'MW', 'MWH' or 'KWH'"},
		{17, "malo", "string_pattern_mismatch", "body.entries.13.malo", `String should match pattern '^\d{11}$'`},
		{18, "v2", "finite_number", "body.entries.14.values.1", "Input should be a finite number"},
		{19, "", ingest.ProblemCSVCells, "body.entries.15", "line 19 has 2 cells; a row needs at least the columns malo, day, unit, then its values"},
		{20, "", ingest.ProblemCSVSyntax, "body.entries.16", `line 20: unexpected character after the closing " of a quoted cell (a " inside a quoted cell must be doubled)`},
	}
	if len(fe.Problems) != len(wants) || res.ProblemCount != len(wants) {
		t.Fatalf("%d problems (%d counted), want %d", len(fe.Problems), res.ProblemCount, len(wants))
	}
	for i, w := range wants {
		p := fe.Problems[i]
		if p.Line != w.line || p.Column != w.column || p.Type != w.typ || dotted(p.Loc) != w.loc || p.Msg != w.msg {
			t.Errorf("problem %d:\n got  %d %q %s %s %q\n want %d %q %s %s %q", i, p.Line, p.Column, p.Type, dotted(p.Loc), p.Msg, w.line, w.column, w.typ, w.loc, w.msg)
		}
	}
	if in := fe.Problems[1].Input; in != "1,2,3" {
		t.Errorf("float_parsing input %#v", in)
	}
	if in := fe.Problems[7].Input; in != json.Number("-1.5") {
		t.Errorf("greater_than_equal input %#v", in)
	}
	if res.Entries != 19 {
		t.Errorf("%d entries", res.Entries)
	}
	// The same answer when every row is read in pieces.
	withTinyBuffers(t, func() {
		res2, _ := decodeOneByte(BulkMetered, "metered_errors.csv", data, BulkOptions{}, nil)
		if !reflect.DeepEqual(res2, res) {
			t.Errorf("tiny buffers:\n%s", problemJSON(t, res2.Problems))
		}
	})
}

func dotted(loc []any) string {
	s := make([]string, len(loc))
	for i, l := range loc {
		s[i] = fmt.Sprint(l)
	}
	return strings.Join(s, ".")
}

// TestBulkCSVHeader: header problems are on line 1 and end the decoding.
func TestBulkCSVHeader(t *testing.T) {
	row := "\n" + csvRow("01234567890", "2026-03-28", "MW", 96) + "\n"
	tests := []struct {
		kind BulkKind
		file string
		msg  string
	}{
		{BulkMetered, "", "the first line must be the header, for example malo;day;unit;v1;v2;...;v96; it is empty"},
		{BulkMetered, "\ufeff\r\n", "the first line must be the header, for example malo;day;unit;v1;v2;...;v96; it is empty"},
		{BulkMetered, "malo day unit" + row, "the header has a single column: separate the columns with ; or , as in malo;day;unit;v1;v2;...;v96"},
		{BulkMetered, "malo;day;unit" + row, `the header must have the columns malo, day, unit (in any order) and then at least one value column, as in malo;day;unit;v1;v2;...;v96; it has "malo", "day", "unit"`},
		{BulkMetered, "malo;tag;unit;v1" + row, `the first three columns of the header must be malo, day, unit in any order, as in malo;day;unit;v1;v2;...;v96; column 2 is "tag"`},
		{BulkMetered, "malo;malo;unit;v1" + row, `column 2 is "malo"`},
		{BulkProfiles, "mga;day;v1;v2" + row, `the first three columns of the header must be mga, profile, day in any order, as in mga;profile;day;v1;v2;...;v96; column 3 is "v1"`},
		{BulkMetered, `"malo;day;unit;v1` + row, "the header line is malformed: " + csvfile.MsgUnclosedQuote},
	}
	for _, tt := range tests {
		res, err := decode(tt.kind, "h.csv", []byte(tt.file), BulkOptions{}, nil)
		fe := fileError(t, res, err)
		if len(fe.Problems) != 1 || fe.Problems[0].Line != 1 || fe.Problems[0].Type != ingest.ProblemCSVHeader || !strings.Contains(fe.Problems[0].Msg, tt.msg) {
			t.Errorf("%q:\n%s", tt.file, problemJSON(t, fe.Problems))
		}
	}
	// Header names are matched ignoring case and spaces, in any order; a
	// header alone is an empty list.
	res, err := decode(BulkMetered, "h.csv", []byte(" Unit ,MALO,Day,a,b\n"), BulkOptions{}, nil)
	fe := fileError(t, res, err)
	if len(fe.Problems) != 1 || fe.Problems[0].Type != "too_short" {
		t.Errorf("header only:\n%s", problemJSON(t, fe.Problems))
	}
}

// TestBulkCSVQuoting: quoted cells with separators, quotes and line breaks.
func TestBulkCSVQuoting(t *testing.T) {
	vals := strings.Repeat(",1.5", 95)
	file := "malo,day,unit" + strings.Repeat(",v", 96) + "\r\n" +
		`"01234567890","2026-03-28","KWH","2.5"` + vals + "\r\n" +
		`01234567891,2026-03-28,"KWH",""` + vals + "\r\n" + // an empty quoted value is empty
		`"0123456789""2",2026-03-28,KWH,1` + vals + "\n" +
		`"01234567893",2026-03-28,"K` + "\n" + `WH",1` + vals + "\n" +
		`"01234567894",2026-03-28,KWH,"1,5"` + vals + "\n" +
		`01234567895,2026-03-28,KWH,"1.25"` + vals
	res, err := decode(BulkMetered, "q.csv", []byte(file), BulkOptions{}, nil)
	fe := fileError(t, res, err)
	got := ""
	for _, p := range fe.Problems {
		got += fmt.Sprintf("%d %s %s %v\n", p.Line, p.Type, dotted(p.Loc), p.Input)
	}
	want := "3 missing body.entries.1.values.0 <nil>\n" +
		"4 string_pattern_mismatch body.entries.2.malo 0123456789\"2\n" +
		"5 literal_error body.entries.3.unit K\nWH\n" +
		"7 float_parsing body.entries.4.values.0 1,5\n"
	if got != want || res.Entries != 6 {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestBulkIntervalsAndDuplicates: the business rules in each format name
// the entry as its format does.
func TestBulkIntervalsAndDuplicates(t *testing.T) {
	mk := func(malo string, d pipeline.Day, n int) pipeline.MeteredEntry {
		return pipeline.MeteredEntry{Malo: malo, Day: d, Unit: pipeline.MW, Values: make([]float64, n)}
	}
	es := []pipeline.MeteredEntry{
		mk("01234567890", ingesttest.SpringForward, 92), mk("01234567890", ingesttest.SpringForward, 96), mk("01234567890", ingesttest.FallBack, 100),
		mk("01234567890", ingesttest.FallBack, 96), mk("01234567891", ingesttest.SpringForward, 92), mk("01234567890", ingesttest.SpringForward, 92),
	}
	want := map[BulkFormat][]string{
		FormatJSON: {
			"entries[1] (01234567890, 2026-03-29): 96 intervals, expected 92",
			"entries[1] (01234567890, 2026-03-29): duplicate of entries[0]",
			"entries[3] (01234567890, 2026-10-25): 96 intervals, expected 100",
			"entries[3] (01234567890, 2026-10-25): duplicate of entries[2]",
			"entries[5] (01234567890, 2026-03-29): duplicate of entries[0]",
		},
		FormatCSV: {
			"line 3 (01234567890, 2026-03-29): 96 intervals, expected 92",
			"line 3 (01234567890, 2026-03-29): duplicate of line 2",
			"line 5 (01234567890, 2026-10-25): 96 intervals, expected 100",
			"line 5 (01234567890, 2026-10-25): duplicate of line 4",
			"line 7 (01234567890, 2026-03-29): duplicate of line 2",
		},
		FormatParquet: {
			"row 2 (01234567890, 2026-03-29): 96 intervals, expected 92",
			"row 2 (01234567890, 2026-03-29): duplicate of row 1",
			"row 4 (01234567890, 2026-10-25): 96 intervals, expected 100",
			"row 4 (01234567890, 2026-10-25): duplicate of row 3",
			"row 6 (01234567890, 2026-03-29): duplicate of row 1",
		},
	}
	files := map[string][]byte{
		"d.json":    meteredJSON(es, ""),
		"d.csv":     ingesttest.MeteredCSV(es, ingesttest.CSVStyle{Sep: ';'}),
		"d.parquet": meteredParquet(t, es, parquetStyle{}),
	}
	for name, data := range files {
		format, _, _ := DetectFormat(BulkMetered, name)
		emitted := 0
		res, err := decode(BulkMetered, name, data, BulkOptions{BatchSize: 1}, func(b BulkBatch) error { emitted++; return nil })
		fe := fileError(t, res, err)
		var msgs []string
		for _, p := range fe.Problems {
			msgs = append(msgs, p.Msg)
			if p.Type != ingest.ProblemBusiness {
				t.Errorf("%s: type %s", name, p.Type)
			}
		}
		if !reflect.DeepEqual(msgs, want[format]) {
			t.Errorf("%s:\n got  %q\n want %q", name, msgs, want[format])
		}
		// Nothing is emitted once a problem is known: the first entry
		// only, a batch of one.
		if emitted != 1 {
			t.Errorf("%s: %d batches emitted", name, emitted)
		}
		p := fe.Problems[0]
		switch format {
		case FormatCSV:
			if p.Line != 3 || p.Row != 0 {
				t.Errorf("%s: line %d row %d", name, p.Line, p.Row)
			}
		case FormatParquet:
			if p.Row != 2 || p.Line != 0 {
				t.Errorf("%s: line %d row %d", name, p.Line, p.Row)
			}
		case FormatJSON:
			if p.Line != 2 {
				t.Errorf("%s: line %d", name, p.Line)
			}
		}
	}
	// The API's messages are the JSON file's (the API lists the interval
	// problems first).
	_, apiErr := databody.DecodeMeteredData(files["d.json"], ingest.Rules{})
	var be *ingest.BusinessError
	if !errors.As(apiErr, &be) {
		t.Fatal(apiErr)
	}
	got := append([]string(nil), want[FormatJSON]...)
	sort.Strings(got)
	sort.Strings(be.Messages)
	if !reflect.DeepEqual(got, be.Messages) {
		t.Errorf("API messages %q", be.Messages)
	}
}

// TestBulkProfileDuplicates: profiles are keyed by mga, profile and day.
func TestBulkProfileDuplicates(t *testing.T) {
	mk := func(mga, profile string, d pipeline.Day) pipeline.ProfileEntry {
		return pipeline.ProfileEntry{MGA: mga, Profile: profile, Day: d, ValuesKWh: make([]float64, d.Intervals())}
	}
	es := []pipeline.ProfileEntry{mk("MGA1", "H25", ingesttest.NormalDay), mk("MGA1", "G25", ingesttest.NormalDay), mk("MGA1", "H25", ingesttest.SpringForward), mk("MGA1", "H25", ingesttest.NormalDay), mk("MGA", "1H25", ingesttest.NormalDay)}
	res, err := decode(BulkProfiles, "p.csv", ingesttest.ProfilesCSV(es, ingesttest.CSVStyle{Sep: ','}), BulkOptions{}, nil)
	fe := fileError(t, res, err)
	if len(fe.Problems) != 1 || fe.Problems[0].Msg != "line 5 (MGA1/H25, 2026-03-28): duplicate of line 2" {
		t.Errorf("%s", problemJSON(t, fe.Problems))
	}
	es[3].ValuesKWh = es[3].ValuesKWh[:95]
	res, err = decode(BulkProfiles, "p.json", profilesJSON(es), BulkOptions{}, nil)
	fe = fileError(t, res, err)
	if len(fe.Problems) != 2 || fe.Problems[0].Msg != "entries[3] (MGA1/H25, 2026-03-28): 95 intervals, expected 96" ||
		fe.Problems[1].Msg != "entries[3] (MGA1/H25, 2026-03-28): duplicate of entries[0]" {
		t.Errorf("%s", problemJSON(t, fe.Problems))
	}
}

// TestBulkProfileCSVFields: the API's rules for mga and profile.
func TestBulkProfileCSVFields(t *testing.T) {
	vals := strings.Repeat(";1", 96)
	file := "mga;profile;day" + strings.Repeat(";v", 96) + "\n" +
		";H25;2026-03-28" + vals + "\n" +
		"MGA;" + strings.Repeat("x", 33) + ";2026-03-28" + vals + "\n" +
		"MG\xffA;H25;2026-03-28" + vals + "\n" +
		"MGA;H25;2026-3-28" + vals + "\n"
	res, err := decode(BulkProfiles, "p.csv", []byte(file), BulkOptions{}, nil)
	fe := fileError(t, res, err)
	got := ""
	for _, p := range fe.Problems {
		got += fmt.Sprintf("%d %s %s %s\n", p.Line, p.Column, p.Type, dotted(p.Loc))
	}
	want := "2 mga string_too_short body.entries.0.mga\n" +
		"3 profile string_too_long body.entries.1.profile\n" +
		"4 mga string_unicode body.entries.2.mga\n" +
		"5 day date_from_datetime_parsing body.entries.3.day\n"
	if got != want {
		t.Errorf("got\n%s", got)
	}
	if _, err := json.Marshal(fe.Problems); err != nil {
		t.Error(err)
	}
}

// TestBulkJSONSchemaProblemsAreTheAPIs: the problems of broken entries are
// the API's, with numeric indices and the entry's line.
func TestBulkJSONSchemaProblemsAreTheAPIs(t *testing.T) {
	good := ingesttest.MeteredEntry("01234567890", "2026-03-28", "KWH", 96)
	body := "{\"entries\": [\n" + strings.Join([]string{
		good, ingesttest.MeteredEntry("1234567890", "2026-03-28T00:00:00+01:00", "kWh", 96), `{"malo": "01234567891", "day": "2026-03-28", "unit": "MW", "values": [1, -2, "3", null, 1e999]}`,
		`null`, `{}`, `"x"`, `{"malo": 1, "day": 2, "unit": [], "values": {}}`,
	}, ",\n") + "\n], \"validate_only\": \"yes\"}"
	_, apiErr := databody.DecodeMeteredData([]byte(body), ingest.Rules{})
	api := ingesttest.SchemaProblems(t, apiErr)
	for _, tiny := range []bool{false, true} {
		var res BulkResult
		var err error
		if tiny {
			withTinyBuffers(t, func() { res, err = decodeOneByte(BulkMetered, "s.json", []byte(body), BulkOptions{}, nil) })
		} else {
			res, err = decode(BulkMetered, "s.json", []byte(body), BulkOptions{}, nil)
		}
		fe := fileError(t, res, err)
		if len(fe.Problems) != len(api) {
			t.Fatalf("%d problems, API %d:\n%s", len(fe.Problems), len(api), problemJSON(t, fe.Problems))
		}
		for i, p := range fe.Problems {
			w := ingest.FileProblemOf(api[i])
			line := p.Line
			p.Line = 0
			if ingesttest.MustJSON(t, p) != ingesttest.MustJSON(t, w) {
				t.Errorf("problem %d:\n got  %s\n want %s", i, ingesttest.MustJSON(t, p), ingesttest.MustJSON(t, w))
			}
			if len(w.Loc) < 3 {
				continue
			}
			if idx, ok := w.Loc[2].(int); ok && line != idx+2 {
				t.Errorf("problem %d: line %d", i, line)
			}
		}
		if tiny {
			continue
		}
		checkGolden(t, "metered_schema_errors.json", problemJSON(t, fe.Problems))
	}
}

// TestBulkJSONInvalid: malformed JSON gets the API's one json_invalid
// problem (same position and error), with its line and column.
func TestBulkJSONInvalid(t *testing.T) {
	entry := ingesttest.MeteredEntry("01234567890", "2026-03-28", "KWH", 96)
	bodies := []string{
		``, `   `, `null`, ` []`, `"x"`, `12`, `{`, `{"entries": [`, `{"entries": [` + entry,
		`{"entries": [{"malo": "01234567890", "day": "2026-03-28", "unit": "MW", "values": [1,2,]}]}`,
		`{"entries": [` + entry + `,]}`, `{"entries": [` + entry + ` ` + entry + `]}`, `{"entries": [` + entry + `]`,
		`{"entries": [` + entry + `]} x`, `{"entries": [` + entry + `], }`, `{"entries" [` + entry + `]}`,
		`{"entries": [` + entry + `], "x": [1, 2}`, `{"a": "\u12"}`, `{"a": "\x"}`, `{"entries": [1e5.5]}`,
		`{"entries": [tru]}`, `{"entries": [` + entry + `, "abc`, `{"entries": [` + entry + `], "validate_only": tru}`,
		"{\n  \"entries\": [\n  x\n]}", "\ufeff{\"entries\": [x]}", "\ufeff", "{\"entries\": [{\"malo\": \"0123\xff\"}]}",
		"{\"entries\": \xff[]}", "{\"é\": 1,\n \"entries\": [\"ü\" 1]}", `{"entries": [{"a": [[[[` + strings.Repeat("[", 600) + `]}`,
		`{"entries": "` + strings.Repeat("x", 100) + `}`, `{"entries" : [` + entry + "]\n,\n}", `{1: 2}`, `{"a":1 "b":2}`,
		"{\"entries\": [" + entry + "]}\n\n\n", `{"entries": [-]}`, `{"entries": [0x1]}`, `{"entries": [NaN]}`,
	}
	for _, body := range bodies {
		_, apiErr := databody.DecodeMeteredData([]byte(body), ingest.Rules{})
		if apiErr == nil {
			if _, err := decode(BulkMetered, "x.json", []byte(body), BulkOptions{}, nil); err != nil {
				t.Errorf("%.60q: %v", body, err)
			}
			continue
		}
		api := ingesttest.SchemaProblems(t, apiErr)
		for _, tiny := range []bool{false, true} {
			var res BulkResult
			var err error
			if tiny {
				withTinyBuffers(t, func() { res, err = decodeOneByte(BulkMetered, "x.json", []byte(body), BulkOptions{}, nil) })
			} else {
				res, err = decode(BulkMetered, "x.json", []byte(body), BulkOptions{}, nil)
			}
			fe := fileError(t, res, err)
			if len(fe.Problems) != 1 || len(api) != 1 {
				t.Errorf("%.60q (tiny %v): %d problems, API %d:\n%s", body, tiny, len(fe.Problems), len(api), problemJSON(t, fe.Problems))
				continue
			}
			p, w := fe.Problems[0], api[0]
			if p.Type != w.Type || ingesttest.MustJSON(t, p.Ctx) != ingesttest.MustJSON(t, nilIfEmpty(w.Ctx)) || len(p.Loc) != len(w.Loc) ||
				len(p.Loc) == 2 && fmt.Sprint(p.Loc[1]) != w.Loc[1] {
				t.Errorf("%.60q (tiny %v):\n got  %s\n API  %s", body, tiny, ingesttest.MustJSON(t, p), ingesttest.MustJSON(t, w))
			}
			if p.Type == "json_invalid" {
				char, _ := strconv.Atoi(w.Loc[1])
				line, col := charPosition([]byte(strings.TrimPrefix(body, "\ufeff")), char)
				msg := fmt.Sprintf("JSON decode error: %s: line %d column %d (char %d)", w.Ctx["error"], line, col, char)
				if p.Line != line || p.Msg != msg {
					t.Errorf("%.60q: line %d %q, want %d %q", body, p.Line, p.Msg, line, msg)
				}
			}
		}
	}
}

func nilIfEmpty(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}

// TestBulkJSONMembers: unknown members are ignored, validate_only is read
// wherever it is, and its problems come after the entries'.
func TestBulkJSONMembers(t *testing.T) {
	entry := ingesttest.MeteredEntry("01234567890", "2026-03-28", "KWH", 96)
	res, err := decode(BulkMetered, "m.json", []byte(`{"validate_only": true, "x": {"entries": 1}, "entries": [`+entry+`], "y": null}`), BulkOptions{}, nil)
	if err != nil || !res.ValidateOnly || res.Entries != 1 {
		t.Errorf("%+v %v", res, err)
	}
	tests := []struct{ body, want string }{
		{`{}`, "missing body.entries Field required"},
		{`{"x": 1}`, "missing body.entries Field required"},
		{`{"entries": []}`, "too_short body.entries List should have at least 1 item after validation, not 0"},
		{`{"entries": null}`, "list_type body.entries Input should be a valid list"},
		{`{"entries": {"a": 1}}`, "list_type body.entries Input should be a valid list"},
		{`{"validate_only": 1, "entries": [{}]}`, "missing body.entries.0.malo Field required|missing body.entries.0.day Field required|" +
			"missing body.entries.0.unit Field required|missing body.entries.0.values Field required|bool_type body.validate_only Input should be a valid boolean"},
		{`{"entries": [` + entry + `], "entries": [` + entry + `]}`, `value_error body.entries Value error, the file has more than one "entries" member; a bulk file must have exactly one`},
	}
	for _, tt := range tests {
		res, err := decode(BulkMetered, "m.json", []byte(tt.body), BulkOptions{}, nil)
		fe := fileError(t, res, err)
		var got []string
		for _, p := range fe.Problems {
			got = append(got, p.Type+" "+dotted(p.Loc)+" "+p.Msg)
		}
		if strings.Join(got, "|") != tt.want {
			t.Errorf("%s:\n got  %s\n want %s", tt.body, strings.Join(got, "|"), tt.want)
		}
	}
}

// TestBulkMaxProblems: problems beyond MaxProblems are counted, not kept.
func TestBulkMaxProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString("malo;day;unit;v1\n")
	for i := 0; i < 30; i++ {
		b.WriteString("x;2026-03-28;MW;1\n")
	}
	res, err := decode(BulkMetered, "c.csv", []byte(b.String()), BulkOptions{MaxProblems: 5}, nil)
	fe := fileError(t, res, err)
	if len(fe.Problems) != 5 || fe.Count != 30 || res.ProblemCount != 30 || fe.Problems[4].Line != 6 {
		t.Errorf("%d problems, %d counted, last on line %d", len(fe.Problems), fe.Count, fe.Problems[4].Line)
	}
	if want := `invalid file: line 2, column malo: String should match pattern '^\d{11}$' (and 29 more)`; fe.Error() != want {
		t.Errorf("Error() = %q", fe.Error())
	}
	// The default keeps 10000 and counts all.
	b.Reset()
	b.WriteString(`{"entries": [`)
	for i := 0; i < 12000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"malo": "x", "day": "2026-03-28", "unit": "MW", "values": [1]}`)
	}
	b.WriteString("]}")
	res, err = decode(BulkMetered, "c.json", []byte(b.String()), BulkOptions{}, nil)
	fe = fileError(t, res, err)
	if len(fe.Problems) != 10000 || fe.Count != 12000 {
		t.Errorf("%d problems, %d counted", len(fe.Problems), fe.Count)
	}
}

var errBoom = errors.New("boom")

// TestBulkEmitError: emit's error ends the decoding and is returned.
func TestBulkEmitError(t *testing.T) {
	es := randomMetered(rand.New(rand.NewPCG(1, 1)), 20)
	for name, data := range map[string][]byte{
		"e.json": meteredJSON(es, ""), "e.csv": ingesttest.MeteredCSV(es, ingesttest.CSVStyle{Sep: ';'}), "e.parquet": meteredParquet(t, es, parquetStyle{}),
	} {
		calls := 0
		_, err := decode(BulkMetered, name, data, BulkOptions{BatchSize: 3}, func(BulkBatch) error {
			if calls++; calls == 2 {
				return errBoom
			}
			return nil
		})
		var fe *ingest.FileError
		if !errors.Is(err, errBoom) || errors.As(err, &fe) || calls != 2 {
			t.Errorf("%s: %v after %d calls", name, err, calls)
		}
	}
	_, err := decode(BulkMasterData, "m.json", ingesttest.ReadSample(t, "databody", "masterdata.json"), BulkOptions{Rules: ingesttest.AllAreas}, func(BulkBatch) error { return errBoom })
	if !errors.Is(err, errBoom) {
		t.Errorf("master data: %v", err)
	}
}

// cancelReader cancels a context once n bytes have been read.
type cancelReader struct {
	r      io.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p[:min(len(p), 4096)])
	if c.n -= n; c.n <= 0 {
		c.cancel()
	}
	return n, err
}

// TestBulkContext: a cancelled context stops both passes.
func TestBulkContext(t *testing.T) {
	es := randomMetered(rand.New(rand.NewPCG(2, 2)), 300)
	for name, data := range map[string][]byte{
		"c.json": meteredJSON(es, ""), "c.csv": ingesttest.MeteredCSV(es, ingesttest.CSVStyle{Sep: ';'}), "c.parquet": meteredParquet(t, es, parquetStyle{rowGroup: 50}),
	} {
		// Cancelled in the validation pass, after some entries.
		ctx, cancel := context.WithCancel(context.Background())
		in := BulkInput{Name: name, Body: &cancelReader{r: bytes.NewReader(data), n: len(data) / 3, cancel: cancel}, At: bytes.NewReader(data), Size: int64(len(data))}
		if strings.HasSuffix(name, ".parquet") {
			cancel()
		}
		res, err := DecodeBulk(ctx, BulkMetered, in, BulkOptions{BatchSize: 10}, nil)
		if !errors.Is(err, context.Canceled) || res.Entries == len(es) {
			t.Errorf("%s: %v after %d entries", name, err, res.Entries)
		}
		// Cancelled by emit: no further batch.
		ctx, cancel = context.WithCancel(context.Background())
		calls := 0
		in = BulkInput{Name: name, Body: bytes.NewReader(data), At: bytes.NewReader(data), Size: int64(len(data))}
		_, err = DecodeBulk(ctx, BulkMetered, in, BulkOptions{BatchSize: 10}, func(BulkBatch) error { calls++; cancel(); return nil })
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Errorf("%s: %v after %d batches", name, err, calls)
		}
	}
}

// TestBulkEmitStopsAtFirstProblem: batches before the problem are emitted,
// none after.
func TestBulkEmitStopsAtFirstProblem(t *testing.T) {
	es := ingesttest.BenchEntries(20)
	es[10].Malo = "x"
	var got int
	res, err := decode(BulkMetered, "s.csv", ingesttest.MeteredCSV(es, ingesttest.CSVStyle{Sep: ';'}), BulkOptions{BatchSize: 3}, func(b BulkBatch) error {
		got += len(b.Metered)
		return nil
	})
	fileError(t, res, err)
	if got != 9 || res.Entries != 20 {
		t.Errorf("%d entries emitted, %d read", got, res.Entries)
	}
}

// failingReader fails after some bytes.
type failingReader struct {
	r io.Reader
	n int
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errBoom
	}
	n, err := f.r.Read(p[:min(len(p), f.n)])
	f.n -= n
	return n, err
}

// TestBulkReadErrors: an I/O error is returned as such, a broken gzip
// stream is a problem of the file.
func TestBulkReadErrors(t *testing.T) {
	body := meteredJSON(ingesttest.BenchEntries(100), "")
	for _, name := range []string{"r.json", "r.csv", "r.json.gz", "r.csv.gz"} {
		data := body
		if strings.Contains(name, ".csv") {
			data = ingesttest.MeteredCSV(ingesttest.BenchEntries(100), ingesttest.CSVStyle{Sep: ';'})
		}
		if strings.HasSuffix(name, ".gz") {
			data = gzipped(data)
		}
		in := BulkInput{Name: name, Body: &failingReader{r: bytes.NewReader(data), n: len(data) / 2}}
		_, err := DecodeBulk(context.Background(), BulkMetered, in, BulkOptions{}, nil)
		var fe *ingest.FileError
		if !errors.Is(err, errBoom) || errors.As(err, &fe) {
			t.Errorf("%s: %v", name, err)
		}
	}
	gz := gzipped(body)
	for name, data := range map[string][]byte{
		"not gzip":  body,
		"truncated": gz[:len(gz)/2],
		"corrupt":   append(append(append([]byte(nil), gz[:40]...), bytes.Repeat([]byte{0xff}, 40)...), gz[80:]...),
		"empty":     {},
	} {
		res, err := decode(BulkMetered, "g.json.gz", data, BulkOptions{}, nil)
		fe := fileError(t, res, err)
		if fe.Problems[len(fe.Problems)-1].Type != ingest.ProblemGzip {
			t.Errorf("%s: %s", name, problemJSON(t, fe.Problems))
		}
	}
	if _, err := DecodeBulk(context.Background(), BulkMetered, BulkInput{Name: "x.parquet", Body: bytes.NewReader(nil)}, BulkOptions{}, nil); err == nil {
		t.Error("Parquet without At")
	}
}

// TestBulkDocuments: master data and forecasts are decoded by the API's
// decoders, their errors converted.
func TestBulkDocuments(t *testing.T) {
	md := ingesttest.ReadSample(t, "databody", "masterdata.json")
	sub, err := databody.DecodeMasterData(md, ingesttest.AllAreas)
	if err != nil {
		t.Fatal(err)
	}
	var batches []BulkBatch
	res, err := decode(BulkMasterData, "m.json.gz", gzipped(md), BulkOptions{Rules: ingesttest.AllAreas}, func(b BulkBatch) error { batches = append(batches, b); return nil })
	if err != nil || res.InputHash != sub.InputHash || res.Entries != len(sub.Locations) || len(batches) != 1 || !reflect.DeepEqual(batches[0].Locations, sub.Locations) {
		t.Errorf("master data: %v %+v", err, res)
	}
	fc := ingesttest.ReadSample(t, "databody", "forecast_2026-10-25.json")
	fsub, err := databody.DecodeForecast(fc, ingesttest.AllAreas)
	if err != nil {
		t.Fatal(err)
	}
	batches = nil
	res, err = decode(BulkForecasts, "f.json", fc, BulkOptions{Rules: ingesttest.AllAreas}, func(b BulkBatch) error { batches = append(batches, b); return nil })
	if err != nil || res.InputHash != fsub.InputHash || res.Entries != 1 || len(batches) != 1 ||
		!bytes.Equal(batches[0].Canonical, fsub.Canonical) || !reflect.DeepEqual(*batches[0].Forecast, fsub.Forecast) || res.Values == 0 {
		t.Errorf("forecast: %v %+v", err, res)
	}
	// Business rules: no active control area.
	res, err = decode(BulkMasterData, "m.json", md, BulkOptions{}, nil)
	fe := fileError(t, res, err)
	_, apiErr := databody.DecodeMasterData(md, ingest.Rules{})
	be := apiErr.(*ingest.BusinessError)
	if len(fe.Problems) != len(be.Messages) || fe.Count != be.Total {
		t.Fatalf("%s", problemJSON(t, fe.Problems))
	}
	for i, p := range fe.Problems {
		if p.Type != ingest.ProblemBusiness || p.Msg != be.Messages[i] || len(p.Loc) < 3 || p.Loc[1] != "locations" {
			t.Errorf("problem %d: %s", i, ingesttest.MustJSON(t, p))
		}
	}
	res, err = decode(BulkForecasts, "f.json", fc, BulkOptions{}, nil)
	fe = fileError(t, res, err)
	checkGolden(t, "forecast_business_errors.json", problemJSON(t, fe.Problems))
	// Schema problems and malformed JSON.
	res, err = decode(BulkForecasts, "f.json", []byte(`{"delivery_day": "2026-13-01", "series": []}`), BulkOptions{}, nil)
	fe = fileError(t, res, err)
	if len(fe.Problems) != 2 || dotted(fe.Problems[0].Loc) != "body.delivery_day" || dotted(fe.Problems[1].Loc) != "body.series" {
		t.Errorf("%s", problemJSON(t, fe.Problems))
	}
	res, err = decode(BulkMasterData, "m.json", []byte("{\"locations\": [\n  {\"malo\": 1}\n  {}]}"), BulkOptions{}, nil)
	fe = fileError(t, res, err)
	if len(fe.Problems) != 1 || fe.Problems[0].Line != 3 || fe.Problems[0].Msg != "JSON decode error: Expecting ',' delimiter: line 3 column 3 (char 32)" {
		t.Errorf("%s", problemJSON(t, fe.Problems))
	}
	// Too large.
	res, err = decode(BulkMasterData, "m.json", md, BulkOptions{MaxDocumentBytes: 100}, nil)
	fe = fileError(t, res, err)
	if len(fe.Problems) != 1 || fe.Problems[0].Type != ingest.ProblemFileTooLarge || !strings.Contains(fe.Problems[0].Msg, "at most 100 bytes") {
		t.Errorf("%s", problemJSON(t, fe.Problems))
	}
}

// TestBulkJSONEntryTooLarge: one entry may have at most 1 MiB.
func TestBulkJSONEntryTooLarge(t *testing.T) {
	body := `{"entries": [{"malo": "` + strings.Repeat("1", maxEntryBytes) + `"}]}`
	res, err := decode(BulkMetered, "l.json", []byte(body), BulkOptions{}, nil)
	fe := fileError(t, res, err)
	if len(fe.Problems) != 1 || fe.Problems[0].Type != ingest.ProblemFileTooLarge || fe.Problems[0].Msg != "entries[0] starting on line 1 is larger than the limit" {
		t.Errorf("%s", problemJSON(t, fe.Problems))
	}
}

// TestBulkCSVRowTooLong: a row longer than 1 MiB is skipped with a problem.
func TestBulkCSVRowTooLong(t *testing.T) {
	file := "malo;day;unit;v1\n01234567890;2026-03-28;MW;" + strings.Repeat("1", 2*maxEntryBytes) + "\n" + csvRow("x", "2026-03-28", "MW", 1) + "\n"
	res, err := decode(BulkMetered, "l.csv", []byte(file), BulkOptions{}, nil)
	fe := fileError(t, res, err)
	if len(fe.Problems) != 2 || fe.Problems[0].Msg != "line 2: the row is longer than 1 MiB" || fe.Problems[1].Line != 3 {
		t.Errorf("%s", problemJSON(t, fe.Problems))
	}
}

// parquetFile builds a Parquet file from columns given as Arrow arrays.
func parquetFile(t *testing.T, fields []arrow.Field, build func(b *array.RecordBuilder)) []byte {
	t.Helper()
	b := array.NewRecordBuilder(memory.NewGoAllocator(), arrow.NewSchema(fields, nil))
	defer b.Release()
	build(b)
	rec := b.NewRecordBatch()
	defer rec.Release()
	return writeParquet(t, rec, 0)
}

// decodeChecked decodes a Parquet file with a checked allocator and checks
// that every buffer was released.
func decodeChecked(t *testing.T, data []byte, opt BulkOptions, emit func(BulkBatch) error) (BulkResult, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	opt.Alloc = mem
	return decode(BulkMetered, "t.parquet", data, opt, emit)
}

// TestBulkParquetReleases: every buffer is released, valid file or not.
func TestBulkParquetReleases(t *testing.T) {
	es := randomMetered(rand.New(rand.NewPCG(4, 4)), 100)
	res, err := decodeChecked(t, meteredParquet(t, es, parquetStyle{rowGroup: 30}), BulkOptions{BatchSize: 16}, func(BulkBatch) error { return nil })
	if err != nil || res.Entries != 100 {
		t.Fatal(err, res.Entries)
	}
	es[50].Values[3] = -1
	_, err = decodeChecked(t, meteredParquet(t, es, parquetStyle{}), BulkOptions{BatchSize: 16}, nil)
	if err == nil {
		t.Fatal("negative value accepted")
	}
	_, err = decodeChecked(t, meteredParquet(t, es, parquetStyle{}), BulkOptions{BatchSize: 16}, func(BulkBatch) error { return errBoom })
	if !errors.Is(err, errBoom) {
		t.Fatal(err)
	}
}

// TestBulkParquetProblems: nulls, bad values and their rows.
func TestBulkParquetProblems(t *testing.T) {
	fields := []arrow.Field{
		{Name: "malo", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "day", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "unit", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "values", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
	}
	data := parquetFile(t, fields, func(b *array.RecordBuilder) {
		malo, day, unit := b.Field(0).(*array.StringBuilder), b.Field(1).(*array.StringBuilder), b.Field(2).(*array.StringBuilder)
		values := b.Field(3).(*array.ListBuilder)
		floats := values.ValueBuilder().(*array.Float64Builder)
		row := func(m, d, u string, vs []float64, valid []bool) {
			for i, s := range []string{m, d, u} {
				sb := []*array.StringBuilder{malo, day, unit}[i]
				if s == "<null>" {
					sb.AppendNull()
				} else {
					sb.Append(s)
				}
			}
			if vs == nil {
				values.AppendNull()
				return
			}
			values.Append(true)
			floats.AppendValues(vs, valid)
		}
		ok := make([]float64, 96)
		row("01234567890", "2026-03-28", "MW", ok, nil)
		row("<null>", "<null>", "<null>", nil, nil)
		row("0123456789", "2026-3-28", "mw", ok, nil)
		bad := append([]float64(nil), ok...)
		bad[1], bad[2], bad[3], bad[4] = -0.5, math.Inf(1), math.NaN(), math.Copysign(0, -1)
		valid := make([]bool, 96)
		for i := range valid {
			valid[i] = i != 5
		}
		row("01234567891", "2026-03-28", "KWH", bad, valid)
		row("01234567890", "2026-03-28", "KWH", ok, nil)
	})
	res, err := decodeChecked(t, data, BulkOptions{BatchSize: 2}, nil)
	fe := fileError(t, res, err)
	checkGolden(t, "parquet_errors.json", problemJSON(t, fe.Problems))
	var got []string
	for _, p := range fe.Problems {
		got = append(got, fmt.Sprintf("%d %s %s %s %v", p.Row, p.Column, p.Type, dotted(p.Loc), p.Input))
	}
	want := []string{
		"2 malo string_type body.entries.1.malo <nil>",
		"2 day date_type body.entries.1.day <nil>",
		"2 unit literal_error body.entries.1.unit <nil>",
		"2 values list_type body.entries.1.values <nil>",
		"3 malo string_pattern_mismatch body.entries.2.malo 0123456789",
		"3 day date_from_datetime_parsing body.entries.2.day 2026-3-28",
		"3 unit literal_error body.entries.2.unit mw",
		"4 values greater_than_equal body.entries.3.values.1 -0.5",
		"4 values finite_number body.entries.3.values.2 inf",
		"4 values finite_number body.entries.3.values.3 nan",
		"4 values float_type body.entries.3.values.5 <nil>",
		"5  business  row 5 (01234567890, 2026-03-28): duplicate of row 1",
	}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if strings.HasPrefix(want[i], "5 ") {
			p := fe.Problems[i]
			got[i] = fmt.Sprintf("%d %s %s  %s", p.Row, p.Column, p.Type, p.Msg)
		}
		if got[i] != want[i] {
			t.Errorf("problem %d:\n got  %s\n want %s", i, got[i], want[i])
		}
	}
	if _, err := json.Marshal(fe.Problems); err != nil {
		t.Error(err)
	}
}

// TestBulkParquetSchema: missing and mistyped columns are named.
func TestBulkParquetSchema(t *testing.T) {
	one := func(b *array.RecordBuilder) {
		for i, f := range b.Schema().Fields() {
			switch fb := b.Field(i).(type) {
			case *array.StringBuilder:
				fb.Append("x")
			case *array.Int64Builder:
				fb.Append(1)
			case *array.ListBuilder:
				fb.Append(true)
				if vb, ok := fb.ValueBuilder().(*array.Float32Builder); ok {
					vb.Append(1)
				}
			default:
				t.Fatalf("no builder for %s", f.Type)
			}
		}
	}
	data := parquetFile(t, []arrow.Field{
		{Name: "MALO", Type: arrow.BinaryTypes.String},
		{Name: "day", Type: arrow.PrimitiveTypes.Int64},
		{Name: "values", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)},
	}, one)
	res, err := decodeChecked(t, data, BulkOptions{}, nil)
	fe := fileError(t, res, err)
	var got []string
	for _, p := range fe.Problems {
		got = append(got, p.Column+": "+p.Msg)
	}
	want := []string{
		`day: column "day" is int64; expected date32 (Parquet DATE) or string (YYYY-MM-DD)`,
		`unit: the file has no column "unit"; the columns must be malo (string), day (date32 or string YYYY-MM-DD), unit (string), values (list<double>)`,
		`values: column "values" is list<element: float32, nullable>; expected list<double>`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
	// Not Parquet at all, and no rows.
	res, err = decodeChecked(t, []byte("malo;day\n"), BulkOptions{}, nil)
	fe = fileError(t, res, err)
	if len(fe.Problems) != 1 || fe.Problems[0].Type != ingest.ProblemParquet {
		t.Errorf("%s", problemJSON(t, fe.Problems))
	}
	res, err = decodeChecked(t, meteredParquet(t, nil, parquetStyle{}), BulkOptions{}, nil)
	fe = fileError(t, res, err)
	if len(fe.Problems) != 1 || fe.Problems[0].Type != "too_short" {
		t.Errorf("%s", problemJSON(t, fe.Problems))
	}
}

// errReaderAt fails every read.
type errReaderAt struct{}

func (errReaderAt) ReadAt([]byte, int64) (int, error) { return 0, errBoom }

func TestBulkParquetIOError(t *testing.T) {
	_, err := DecodeBulk(context.Background(), BulkMetered, BulkInput{Name: "x.parquet", At: errReaderAt{}, Size: 1000}, BulkOptions{}, nil)
	var fe *ingest.FileError
	if !errors.Is(err, errBoom) || errors.As(err, &fe) {
		t.Errorf("%v", err)
	}
}

// TestBulkNoEmitAfterProblem: a problem found before the end stops the
// batches, also one reported after the entries (validate_only).
func TestBulkNoEmitAfterProblem(t *testing.T) {
	entry := ingesttest.MeteredEntry("01234567890", "2026-03-28", "KWH", 96)
	entry2 := ingesttest.MeteredEntry("01234567891", "2026-03-28", "KWH", 96)
	emitted := 0
	res, err := decode(BulkMetered, "v.json", []byte(`{"validate_only": "no", "entries": [`+entry+`,`+entry2+`]}`), BulkOptions{BatchSize: 1},
		func(BulkBatch) error { emitted++; return nil })
	fe := fileError(t, res, err)
	if emitted != 0 || len(fe.Problems) != 1 || fe.Problems[0].Type != "bool_parsing" {
		t.Errorf("%d batches: %s", emitted, problemJSON(t, fe.Problems))
	}
	// Empty cells after the header's columns are trailing separators.
	file := "malo;day;unit" + strings.Repeat(";v", 96) + "\n" + csvRow("01234567890", "2026-03-28", "MW", 96) + ";;;\n"
	if _, err := decode(BulkMetered, "t.csv", []byte(file), BulkOptions{}, nil); err != nil {
		t.Error(err)
	}
}

// TestAppendCanonicalNumbers: copying canonical literals writes what
// ingest.AppendJSONFloat writes for every number of an array.
func TestAppendCanonicalNumbers(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	spaces := []string{"", " ", "\n  ", "\t"}
	for round := 0; round < 3000; round++ {
		n := rng.IntN(20)
		lits := make([]string, n)
		for j := range lits {
			v := rng.Float64() * math.Pow10(rng.IntN(12)-4)
			switch rng.IntN(8) {
			case 0:
				lits[j] = strconv.FormatFloat(v, 'e', rng.IntN(6), 64)
			case 1:
				lits[j] = strconv.FormatFloat(v, 'f', 1+rng.IntN(8), 64) + strings.Repeat("0", rng.IntN(2))
			case 2:
				lits[j] = strconv.Itoa(rng.IntN(1e6))
			case 3:
				lits[j] = []string{"0", "-0", "0.0", "-0.0", "1E2", "100", "1e-7", "0.000001", "123456789012345", "1234567890123456", "99999999999999.9"}[rng.IntN(11)]
			default:
				lits[j] = strconv.FormatFloat(v, 'f', -1, 64)
			}
		}
		var src strings.Builder
		src.WriteString("[")
		for j, l := range lits {
			if j > 0 {
				src.WriteString(spaces[rng.IntN(4)] + ",")
			}
			src.WriteString(spaces[rng.IntN(4)] + l)
		}
		src.WriteString(spaces[rng.IntN(4)] + "]")
		v, serr := ingest.Parse([]byte(src.String()))
		if serr != nil || v.Nums == nil {
			t.Fatalf("%s: %v", src.String(), serr)
		}
		var want []byte
		for j, f := range v.Nums {
			if j > 0 {
				want = append(want, ',')
			}
			want = ingest.AppendJSONFloat(want, f)
		}
		if got := appendCanonicalNumbers(nil, []byte(src.String())[1:], v.Nums); !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got  %s\n want %s", src.String(), got, want)
		}
	}
}

// TestBulkParquetOtherArrowTypes: large strings, dictionary-encoded
// strings and large lists are read too.
func TestBulkParquetOtherArrowTypes(t *testing.T) {
	es := randomMetered(rand.New(rand.NewPCG(13, 14)), 30)
	sub, err := databody.DecodeMeteredData(meteredJSON(es, ""), ingest.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	data := parquetFile(t, []arrow.Field{
		{Name: "malo", Type: arrow.BinaryTypes.LargeString},
		{Name: "day", Type: arrow.BinaryTypes.LargeString},
		{Name: "unit", Type: dict},
		{Name: "values", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Float64)},
	}, func(b *array.RecordBuilder) {
		for _, e := range es {
			b.Field(0).(*array.LargeStringBuilder).Append(e.Malo)
			b.Field(1).(*array.LargeStringBuilder).Append(e.Day.String())
			if err := b.Field(2).(*array.BinaryDictionaryBuilder).AppendString(string(e.Unit)); err != nil {
				t.Fatal(err)
			}
			lb := b.Field(3).(*array.LargeListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Float64Builder).AppendValues(e.Values, nil)
		}
	})
	res, err := decodeChecked(t, data, BulkOptions{BatchSize: 7}, nil)
	if err != nil || res.InputHash != sub.InputHash {
		t.Errorf("%v %s", err, res.InputHash)
	}
}

// TestBulkValidateOnlyEmitsNothing: a JSON file that asks for validation
// only emits no batch after the flag, so that the inbox, which stages as it
// reads, writes nothing for it; its entries are still validated and hashed
// as the same file without the flag. Before the flag, batches may have gone
// out already (the inbox rolls them back). A repeated member does not take
// the request back.
func TestBulkValidateOnlyEmitsNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	es := randomMetered(rng, 30)
	plain, err := decode(BulkMetered, "p.json", meteredJSON(es, ""), BulkOptions{BatchSize: 4}, func(BulkBatch) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	entries := bytes.TrimPrefix(meteredJSON(es, ""), []byte("{"))
	for _, tc := range []struct {
		name string
		doc  string
		want int // entries emitted
	}{
		{"flag first", `{"validate_only": true, ` + string(entries), 0},
		{"flag after the entries", string(bytes.TrimSuffix(bytes.TrimSpace(meteredJSON(es, "")), []byte("}"))) + `, "validate_only": true}`, 28},
		{"flag first, then false", `{"validate_only": true, "validate_only": false, ` + string(entries), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emitted := 0
			res, err := decode(BulkMetered, "v.json", []byte(tc.doc), BulkOptions{BatchSize: 4}, func(b BulkBatch) error {
				emitted += len(b.Metered)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !res.ValidateOnly || res.Entries != len(es) || res.InputHash != plain.InputHash || emitted != tc.want {
				t.Errorf("validate_only: %v, entries %d, hash %s (plain %s), emitted %d (want %d)",
					res.ValidateOnly, res.Entries, res.InputHash, plain.InputHash, emitted, tc.want)
			}
		})
	}
}
