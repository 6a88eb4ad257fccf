// Package ingesttest holds what the tests of several decoders share: the
// expected schema problems and their check, the three kinds of delivery day,
// builders of request bodies and generators of CSV files.
package ingesttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// Want is an expected schema problem. Loc is dotted ("body.series.0.malo");
// Ctx and Input are JSON. An empty Ctx means {}, an empty Input is not
// compared (for the long object inputs of missing and value_error).
//
// A test package declares its own type on it (type problem ingesttest.Want)
// so that its tables can list problems by position, which go vet allows
// only for the struct types of the package itself; CheckProblems takes any
// such type.
type Want struct {
	Type, Loc, Msg, Ctx, Input string
}

// AllAreas is a portfolio active in every control area.
var AllAreas = ingest.Rules{Active: pipeline.NewAreaSet(pipeline.ControlAreas...)}

// NormJSON re-encodes a JSON text so that two spellings compare equal by
// their map key order, while number literals are kept as written.
func NormJSON(t *testing.T, s string) string {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("bad JSON in test %q: %v", s, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// MustJSON encodes v with encoding/json and fails the test on an error.
func MustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	return string(b)
}

// SchemaProblems asserts that err is a *SchemaError and returns its problems.
func SchemaProblems(t *testing.T, err error) []ingest.Problem {
	t.Helper()
	var se *ingest.SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("want *SchemaError, got %T: %v", err, err)
	}
	if se.Kind() != pipeline.Invalid {
		t.Errorf("Kind() = %s", se.Kind())
	}
	return se.Problems
}

// CheckProblems compares the schema problems of err with want in order.
func CheckProblems[W ~struct{ Type, Loc, Msg, Ctx, Input string }](t *testing.T, err error, want []W) {
	t.Helper()
	got := SchemaProblems(t, err)
	for i := 0; i < len(got) || i < len(want); i++ {
		if i >= len(got) {
			t.Errorf("problem %d missing: want %+v", i, want[i])
			continue
		}
		g := got[i]
		if i >= len(want) {
			t.Errorf("unexpected problem %d: %s", i, MustJSON(t, g))
			continue
		}
		w := Want(want[i])
		if g.Type != w.Type || strings.Join(g.Loc, ".") != w.Loc || g.Msg != w.Msg {
			t.Errorf("problem %d:\n got  %s %s %q\n want %s %s %q", i, g.Type, strings.Join(g.Loc, "."), g.Msg, w.Type, w.Loc, w.Msg)
		}
		wantCtx := w.Ctx
		if wantCtx == "" {
			wantCtx = "{}"
		}
		if g.Ctx == nil {
			t.Errorf("problem %d: ctx is nil", i)
		}
		if gc, wc := MustJSON(t, g.Ctx), NormJSON(t, wantCtx); gc != wc {
			t.Errorf("problem %d (%s): ctx %s, want %s", i, w.Loc, gc, wc)
		}
		if w.Input != "" {
			if gi, wi := MustJSON(t, g.Input), NormJSON(t, w.Input); gi != wi {
				t.Errorf("problem %d (%s): input %s, want %s", i, w.Loc, gi, wi)
			}
		}
	}
}

// CheckMessages asserts a *BusinessError with exactly these messages.
func CheckMessages(t *testing.T, err error, want ...string) {
	t.Helper()
	var be *ingest.BusinessError
	if !errors.As(err, &be) {
		t.Fatalf("want *BusinessError, got %T: %v", err, err)
	}
	if be.Kind() != pipeline.Invalid {
		t.Errorf("Kind() = %s", be.Kind())
	}
	if strings.Join(be.Messages, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n got  %q\n want %q", be.Messages, want)
	}
	if be.Total != len(want) {
		t.Errorf("Total = %d, want %d", be.Total, len(want))
	}
}

// Nums is a JSON array of n values, 0.25 apart.
func Nums(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%g", float64(i)/4)
	}
	b.WriteByte(']')
	return b.String()
}

// ReadSample reads a file of the testdata of the sibling package pkg
// (databody, tradeset): the bulk tests hold a file to the API body of the
// same content.
func ReadSample(t *testing.T, pkg, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", pkg, "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ReadTestdata reads a file of the test's testdata folder.
func ReadTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The three kinds of delivery day.
var (
	SpringForward = pipeline.NewDay(2026, 3, 29)  // 92 quarter-hours
	NormalDay     = pipeline.NewDay(2026, 3, 28)  // 96
	FallBack      = pipeline.NewDay(2026, 10, 25) // 100
)

// TradeJSON is one trade object; unit "" leaves the field out.
func TradeJSON(area, counterparty, direction, unit string, n int) string {
	s := `{"control_area":"` + area + `","counterparty":"` + counterparty + `","direction":"` + direction + `"`
	if unit != "" {
		s += `,"unit":"` + unit + `"`
	}
	return s + `,"values":` + Nums(n) + `}`
}

// TradesBody is a PUT /v1/process/trades body around the trade objects.
func TradesBody(trades ...string) []byte {
	return []byte(`{"trades":[` + strings.Join(trades, ",") + `]}`)
}

// ForecastBody builds a forecast body for 2026-03-28 (96 intervals) around
// the given series objects.
func ForecastBody(series ...string) string {
	return `{"delivery_day":"2026-03-28","series":[` + strings.Join(series, ",") + `]}`
}

// MeteredEntry is one metered-data entry object with n values.
func MeteredEntry(malo, day, unit string, n int) string {
	return fmt.Sprintf(`{"malo":%q,"day":%q,"unit":%q,"values":%s}`, malo, day, unit, Nums(n))
}

// Update rewrites golden files instead of comparing with them (go test -update).
var Update = flag.Bool("update", false, "rewrite the golden canonical encodings in testdata")

// CSVStyle is how a CSV file is written.
type CSVStyle struct {
	Sep          byte
	DecimalComma bool
	BOM, CRLF    bool
	Width        int  // value columns in the header; 0: 100
	Padded       bool // rows have width value cells, the rest empty
	QuoteKeys    bool // key cells in quotes
	Order        []int
}

func (st CSVStyle) value(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if st.DecimalComma {
		s = strings.Replace(s, ".", ",", 1)
	}
	return s
}

func (st CSVStyle) write(b *bytes.Buffer, keyNames []string, rows [][]string, values [][]float64) []byte {
	width := st.Width
	if width == 0 {
		width = 100
	}
	nl := "\n"
	if st.CRLF {
		nl = "\r\n"
	}
	if st.BOM {
		b.WriteString("\ufeff")
	}
	sep := string(st.Sep)
	order := st.Order
	if order == nil {
		order = []int{0, 1, 2}
	}
	for _, k := range order {
		b.WriteString(keyNames[k] + sep)
	}
	for j := 1; j <= width; j++ {
		if j > 1 {
			b.WriteString(sep)
		}
		fmt.Fprintf(b, "v%d", j)
	}
	b.WriteString(nl)
	for i, keys := range rows {
		for _, k := range order {
			if st.QuoteKeys {
				b.WriteString(`"` + strings.ReplaceAll(keys[k], `"`, `""`) + `"` + sep)
			} else {
				b.WriteString(keys[k] + sep)
			}
		}
		for j, v := range values[i] {
			if j > 0 {
				b.WriteString(sep)
			}
			b.WriteString(st.value(v))
		}
		if st.Padded {
			b.WriteString(strings.Repeat(sep, width-len(values[i])))
		}
		b.WriteString(nl)
	}
	return b.Bytes()
}

// MeteredCSV writes metered entries as a CSV file in the style st.
func MeteredCSV(es []pipeline.MeteredEntry, st CSVStyle) []byte {
	rows := make([][]string, len(es))
	values := make([][]float64, len(es))
	for i, e := range es {
		rows[i] = []string{e.Malo, e.Day.String(), string(e.Unit)}
		values[i] = e.Values
	}
	return st.write(&bytes.Buffer{}, []string{"malo", "day", "unit"}, rows, values)
}

// ProfilesCSV writes profile entries as a CSV file in the style st.
func ProfilesCSV(es []pipeline.ProfileEntry, st CSVStyle) []byte {
	rows := make([][]string, len(es))
	values := make([][]float64, len(es))
	for i, e := range es {
		rows[i] = []string{e.MGA, e.Profile, e.Day.String()}
		values[i] = e.ValuesKWh
	}
	return st.write(&bytes.Buffer{}, []string{"mga", "profile", "day"}, rows, values)
}

// BenchEntries is the benchmark's content: rows MaLo-days of 96 values
// with three decimals, the shape of a supplier's export.
func BenchEntries(rows int) []pipeline.MeteredEntry {
	es := make([]pipeline.MeteredEntry, rows)
	for i := range es {
		e := pipeline.MeteredEntry{Day: NormalDay, Malo: fmt.Sprintf("%011d", 10000000000+i), Unit: pipeline.KWH}
		e.Values = make([]float64, 96)
		for j := range e.Values {
			e.Values[j] = float64((i*96+j)%100000) / 1000
		}
		es[i] = e
	}
	return es
}
