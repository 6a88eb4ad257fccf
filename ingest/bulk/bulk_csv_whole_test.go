package bulk

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
)

// Test helpers shared by the CSV kinds that are read as one whole document:
// master data (bulk_csv_masterdata_test.go) and forecasts
// (bulk_csv_forecast_test.go).

// wantProblem is one expected problem of a whole-document CSV file; input
// is JSON and not compared when empty.
type wantProblem struct {
	line   int
	column string
	typ    string
	loc    string
	msg    string
	input  string
}

// assertWholeFileProblems decodes file as base.csv and base.csv.gz and
// checks that both yield exactly the wanted problems, in order, and emit
// nothing.
func assertWholeFileProblems(t *testing.T, kind BulkKind, base, file string, rules ingest.Rules, wants []wantProblem) {
	t.Helper()
	for _, name := range []string{base + ".csv", base + ".csv.gz"} {
		data := []byte(file)
		if strings.HasSuffix(name, ".gz") {
			data = gzipped(data)
		}
		emitted := 0
		res, err := decode(kind, name, data, BulkOptions{Rules: rules}, func(BulkBatch) error { emitted++; return nil })
		fe := fileError(t, res, err)
		if emitted != 0 {
			t.Errorf("%s: %d batches emitted", name, emitted)
		}
		if len(fe.Problems) != len(wants) || fe.Count != len(wants) {
			t.Fatalf("%s: %d problems, want %d:\n%s", name, len(fe.Problems), len(wants), problemJSON(t, fe.Problems))
		}
		for i, w := range wants {
			p := fe.Problems[i]
			if p.Line != w.line || p.Column != w.column || p.Type != w.typ || dotted(p.Loc) != w.loc || p.Msg != w.msg {
				t.Errorf("%s: problem %d:\n got  %d %q %s %s %q\n want %d %q %s %s %q",
					name, i, p.Line, p.Column, p.Type, dotted(p.Loc), p.Msg, w.line, w.column, w.typ, w.loc, w.msg)
			}
			if w.input != "" {
				if got := ingesttest.MustJSON(t, p.Input); got != ingesttest.NormJSON(t, w.input) {
					t.Errorf("%s: problem %d: input %s, want %s", name, i, got, w.input)
				}
			}
		}
	}
}

// testCSV writes test files in one CSV dialect. Cells holding the
// separator, a quote or a line break are quoted; quoteAll quotes every cell.
type testCSV struct {
	b        bytes.Buffer
	sep      byte
	eol      string
	quoteAll bool
}

func newTestCSV(sep byte, bom, crlf, quoteAll bool) *testCSV {
	w := &testCSV{sep: sep, eol: "\n", quoteAll: quoteAll}
	if crlf {
		w.eol = "\r\n"
	}
	if bom {
		w.b.WriteString("\ufeff")
	}
	return w
}

// line writes one row, then tail (raw text such as extra separators), then
// the line end.
func (w *testCSV) line(cells []string, tail string) {
	for i, c := range cells {
		if i > 0 {
			w.b.WriteByte(w.sep)
		}
		if w.quoteAll || strings.ContainsAny(c, string(w.sep)+"\"\n") {
			c = `"` + strings.ReplaceAll(c, `"`, `""`) + `"`
		}
		w.b.WriteString(c)
	}
	w.b.WriteString(tail + w.eol)
}

// headerNames are the names of columns in order, each renamed by rename if
// it is not nil.
func headerNames(columns []string, order []int, rename func(string) string) []string {
	var names []string
	for _, f := range order {
		name := columns[f]
		if rename != nil {
			name = rename(name)
		}
		names = append(names, name)
	}
	return names
}

// apiAccepts is the API's answer for body, a JSON body that decode must
// accept under ingesttest.AllAreas.
func apiAccepts[S any](t *testing.T, decode func([]byte, ingest.Rules) (S, error), body []byte) S {
	t.Helper()
	api, err := decode(body, ingesttest.AllAreas)
	if err != nil {
		t.Fatalf("API: %v\n%s", err, body)
	}
	return api
}

// apiAnswer is what the API answers for a JSON body, as a CSV file of the
// same content must answer too.
type apiAnswer struct {
	hash    string
	entries int   // BulkResult.Entries
	values  int64 // BulkResult.Values
	// isBatch tells whether a staged batch holds the API's content.
	isBatch func(BulkBatch) bool
}

// assertCSVAnswersLikeJSON checks that data, a CSV file called name (gzip'd
// here when name ends in .gz), answers like body, the equivalent JSON file
// called jsonName: the validation pass gives want's hash, entries and values;
// the JSON file gives the same hash; the staging pass, with and without the
// hash, emits one batch of want's content; and one-byte reads with tiny
// buffers give the same result.
func assertCSVAnswersLikeJSON(t *testing.T, kind BulkKind, name string, data []byte, jsonName string, body []byte, want apiAnswer) {
	t.Helper()
	if strings.HasSuffix(name, ".gz") {
		data = gzipped(data)
	}
	res, err := decode(kind, name, data, BulkOptions{Rules: ingesttest.AllAreas}, nil)
	if err != nil {
		t.Fatalf("validation pass: %v\n%s", err, data)
	}
	if res.InputHash != want.hash || res.Entries != want.entries || res.Values != want.values || res.Format != FormatCSV || res.ValidateOnly {
		t.Errorf("result %+v, API hash %s, %d values", res, want.hash, want.values)
	}
	// The JSON file of the body answers the same.
	if jres, err := decode(kind, jsonName, body, BulkOptions{Rules: ingesttest.AllAreas}, nil); err != nil || jres.InputHash != res.InputHash {
		t.Errorf("JSON file: %v %s", err, jres.InputHash)
	}
	// The staging pass emits the API's content in one batch, with the
	// API's hash.
	var batches []BulkBatch
	res2, err := decode(kind, name, data, BulkOptions{Rules: ingesttest.AllAreas}, func(b BulkBatch) error {
		batches = append(batches, b)
		return nil
	})
	if err != nil || len(batches) != 1 || !want.isBatch(batches[0]) {
		t.Fatalf("staging pass: %v, %d batches", err, len(batches))
	}
	if res2.InputHash != want.hash {
		t.Errorf("staging pass: hash %q", res2.InputHash)
	}
	withTinyBuffers(t, func() {
		res3, err := decodeOneByte(kind, name, data, BulkOptions{Rules: ingesttest.AllAreas}, nil)
		if err != nil || !reflect.DeepEqual(res3, res) {
			t.Errorf("tiny buffers: %v %+v", err, res3)
		}
	})
}

// apiProblems is the API's answer apiErr, a *ingest.SchemaError or
// an *ingest.BusinessError, as file problems without a line. Schema problems that
// skip (if not nil) names are left out.
func apiProblems(t *testing.T, apiErr error, skip func(ingest.Problem) bool) []ingest.FileProblem {
	t.Helper()
	var api []ingest.FileProblem
	var se *ingest.SchemaError
	var be *ingest.BusinessError
	if errors.As(apiErr, &se) {
		for _, p := range se.Problems {
			if skip != nil && skip(p) {
				continue
			}
			api = append(api, ingest.FileProblemOf(p))
		}
	} else if errors.As(apiErr, &be) {
		for _, m := range be.Messages {
			api = append(api, ingest.FileProblem{Type: ingest.ProblemBusiness, Msg: m})
		}
	} else {
		t.Fatalf("API: %v", apiErr)
	}
	return api
}

// assertProblemsAreTheAPIs decodes data, a CSV file called name, and checks
// that its problems are api, problem by problem (type, loc, message, input,
// ctx), each on the line that lineOf gives for its loc. The API's business
// answer has no loc, so a business problem may have any.
func assertProblemsAreTheAPIs(t *testing.T, kind BulkKind, name string, data []byte, rules ingest.Rules, api []ingest.FileProblem, lineOf func(loc []any) int) {
	t.Helper()
	res, err := decode(kind, name, data, BulkOptions{Rules: rules}, nil)
	fe := fileError(t, res, err)
	if len(fe.Problems) != len(api) {
		t.Fatalf("%d problems, API %d:\n%s\nAPI:\n%s", len(fe.Problems), len(api), problemJSON(t, fe.Problems), problemJSON(t, api))
	}
	for i, p := range fe.Problems {
		w := api[i]
		if p.Type == ingest.ProblemBusiness {
			w.Loc = p.Loc
		}
		line, loc := p.Line, p.Loc
		p.Line, p.Column = 0, ""
		if ingesttest.MustJSON(t, p) != ingesttest.MustJSON(t, w) {
			t.Errorf("problem %d:\n got  %s\n want %s", i, ingesttest.MustJSON(t, p), ingesttest.MustJSON(t, w))
		}
		if want := lineOf(loc); line != want {
			t.Errorf("problem %d (%s): line %d, want %d", i, dotted(loc), line, want)
		}
	}
}

// assertTooLarge checks that data, a valid base.csv, and data with badRow
// (a line) after its header, plain and gzip'd, each get one file_too_large
// problem naming doc (the kind in words) and no entries or values once data
// is one byte over MaxDocumentBytes. It returns data's result at the limit
// exactly, which must not be an error.
func assertTooLarge(t *testing.T, kind BulkKind, base, doc string, data []byte, badRow string) BulkResult {
	t.Helper()
	header := bytes.IndexByte(data, '\n') + 1
	bad := append(append(append([]byte(nil), data[:header]...), badRow...), data[header:]...)
	limit := len(data) - 1
	wantMsg := "file too large: a " + doc + " CSV document is read whole and may have at most " + strconv.Itoa(limit) + " bytes (after decompression)"
	for _, file := range [][]byte{data, bad, gzipped(bad)} {
		name := base + ".csv"
		if file[0] == 0x1f {
			name = base + ".csv.gz"
		}
		res, err := decode(kind, name, file, BulkOptions{Rules: ingesttest.AllAreas, MaxDocumentBytes: int64(limit)}, nil)
		fe := fileError(t, res, err)
		if len(fe.Problems) != 1 || fe.Count != 1 || fe.Problems[0].Type != ingest.ProblemFileTooLarge || res.Entries != 0 || res.Values != 0 ||
			fe.Problems[0].Msg != wantMsg {
			t.Errorf("%s: %+v\n%s", name, res, problemJSON(t, fe.Problems))
		}
	}
	// Exactly at the limit is fine.
	res, err := decode(kind, base+".csv", data, BulkOptions{Rules: ingesttest.AllAreas, MaxDocumentBytes: int64(len(data))}, nil)
	if err != nil {
		t.Error(err)
	}
	return res
}

// assertEmitAndContext checks that emit's error and a context cancelled
// while data, a valid CSV file called name, is read end the decoding and are
// returned, not reported as problems.
func assertEmitAndContext(t *testing.T, kind BulkKind, name string, data []byte) {
	t.Helper()
	_, err := decode(kind, name, data, BulkOptions{Rules: ingesttest.AllAreas}, func(BulkBatch) error { return errBoom })
	var fe *ingest.FileError
	if !errors.Is(err, errBoom) || errors.As(err, &fe) {
		t.Errorf("emit error: %v", err)
	}
	// Cancelled while the rows are read.
	ctx, cancel := context.WithCancel(context.Background())
	in := BulkInput{Name: name, Body: &cancelReader{r: bytes.NewReader(data), n: 1, cancel: cancel}}
	if _, err := DecodeBulk(ctx, kind, in, BulkOptions{Rules: ingesttest.AllAreas, BatchSize: 1}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
