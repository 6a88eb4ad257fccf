package ingest

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

	"github.com/schedbridge/schedbridge/pipeline"
)

// problem is an expected schema problem. loc is dotted ("body.series.0.malo");
// ctx and input are JSON. An empty ctx means {}, an empty input is not
// compared (for the long object inputs of missing and value_error).
type problem struct {
	typ, loc, msg, ctx, input string
}

// allAreas is a portfolio active in every control area.
var allAreas = Rules{Active: pipeline.NewAreaSet(pipeline.ControlAreas...)}

// normJSON re-encodes a JSON text so that two spellings compare equal by
// their map key order, while number literals are kept as written.
func normJSON(t *testing.T, s string) string {
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

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	return string(b)
}

// schemaProblems asserts that err is a *SchemaError and returns its problems.
func schemaProblems(t *testing.T, err error) []Problem {
	t.Helper()
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("want *SchemaError, got %T: %v", err, err)
	}
	if se.Kind() != pipeline.Invalid {
		t.Errorf("Kind() = %s", se.Kind())
	}
	return se.Problems
}

func checkProblems(t *testing.T, err error, want []problem) {
	t.Helper()
	got := schemaProblems(t, err)
	for i := 0; i < len(got) || i < len(want); i++ {
		if i >= len(got) {
			t.Errorf("problem %d missing: want %+v", i, want[i])
			continue
		}
		g := got[i]
		if i >= len(want) {
			t.Errorf("unexpected problem %d: %s", i, mustJSON(t, g))
			continue
		}
		w := want[i]
		if g.Type != w.typ || strings.Join(g.Loc, ".") != w.loc || g.Msg != w.msg {
			t.Errorf("problem %d:\n got  %s %s %q\n want %s %s %q", i, g.Type, strings.Join(g.Loc, "."), g.Msg, w.typ, w.loc, w.msg)
		}
		wantCtx := w.ctx
		if wantCtx == "" {
			wantCtx = "{}"
		}
		if g.Ctx == nil {
			t.Errorf("problem %d: ctx is nil", i)
		}
		if gc, wc := mustJSON(t, g.Ctx), normJSON(t, wantCtx); gc != wc {
			t.Errorf("problem %d (%s): ctx %s, want %s", i, w.loc, gc, wc)
		}
		if w.input != "" {
			if gi, wi := mustJSON(t, g.Input), normJSON(t, w.input); gi != wi {
				t.Errorf("problem %d (%s): input %s, want %s", i, w.loc, gi, wi)
			}
		}
	}
}

// checkMessages asserts a *BusinessError with exactly these messages.
func checkMessages(t *testing.T, err error, want ...string) {
	t.Helper()
	var be *BusinessError
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

// nums is a JSON array of n values, 0.25 apart.
func nums(n int) string {
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

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The three kinds of delivery day.
var (
	springForward = pipeline.NewDay(2026, 3, 29)  // 92 quarter-hours
	normalDay     = pipeline.NewDay(2026, 3, 28)  // 96
	fallBack      = pipeline.NewDay(2026, 10, 25) // 100
)

// tradeJSON is one trade object; unit "" leaves the field out.
func tradeJSON(area, counterparty, direction, unit string, n int) string {
	s := `{"control_area":"` + area + `","counterparty":"` + counterparty + `","direction":"` + direction + `"`
	if unit != "" {
		s += `,"unit":"` + unit + `"`
	}
	return s + `,"values":` + nums(n) + `}`
}

// tradesBody is a PUT /v1/process/trades body around the trade objects.
func tradesBody(trades ...string) []byte {
	return []byte(`{"trades":[` + strings.Join(trades, ",") + `]}`)
}

// forecastBody builds a forecast body for 2026-03-28 (96 intervals) around
// the given series objects.
func forecastBody(series ...string) string {
	return `{"delivery_day":"2026-03-28","series":[` + strings.Join(series, ",") + `]}`
}

// meteredEntry is one metered-data entry object with n values.
func meteredEntry(malo, day, unit string, n int) string {
	return fmt.Sprintf(`{"malo":%q,"day":%q,"unit":%q,"values":%s}`, malo, day, unit, nums(n))
}

// update rewrites golden files instead of comparing with them (go test -update).
var update = flag.Bool("update", false, "rewrite the golden canonical encodings in testdata")

// csvStyle is how a CSV file is written.
type csvStyle struct {
	sep          byte
	decimalComma bool
	bom, crlf    bool
	width        int  // value columns in the header; 0: 100
	padded       bool // rows have width value cells, the rest empty
	quoteKeys    bool // key cells in quotes
	order        []int
}

func (st csvStyle) value(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if st.decimalComma {
		s = strings.Replace(s, ".", ",", 1)
	}
	return s
}

func (st csvStyle) write(b *bytes.Buffer, keyNames []string, rows [][]string, values [][]float64) []byte {
	width := st.width
	if width == 0 {
		width = 100
	}
	nl := "\n"
	if st.crlf {
		nl = "\r\n"
	}
	if st.bom {
		b.WriteString("\ufeff")
	}
	sep := string(st.sep)
	order := st.order
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
			if st.quoteKeys {
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
		if st.padded {
			b.WriteString(strings.Repeat(sep, width-len(values[i])))
		}
		b.WriteString(nl)
	}
	return b.Bytes()
}

func meteredCSV(es []pipeline.MeteredEntry, st csvStyle) []byte {
	rows := make([][]string, len(es))
	values := make([][]float64, len(es))
	for i, e := range es {
		rows[i] = []string{e.Malo, e.Day.String(), string(e.Unit)}
		values[i] = e.Values
	}
	return st.write(&bytes.Buffer{}, []string{"malo", "day", "unit"}, rows, values)
}

func profilesCSV(es []pipeline.ProfileEntry, st csvStyle) []byte {
	rows := make([][]string, len(es))
	values := make([][]float64, len(es))
	for i, e := range es {
		rows[i] = []string{e.MGA, e.Profile, e.Day.String()}
		values[i] = e.ValuesKWh
	}
	return st.write(&bytes.Buffer{}, []string{"mga", "profile", "day"}, rows, values)
}

// benchEntries is the benchmark's content: rows MaLo-days of 96 values
// with three decimals, the shape of a supplier's export.
func benchEntries(rows int) []pipeline.MeteredEntry {
	es := make([]pipeline.MeteredEntry, rows)
	for i := range es {
		e := pipeline.MeteredEntry{Day: normalDay, Malo: fmt.Sprintf("%011d", 10000000000+i), Unit: pipeline.KWH}
		e.Values = make([]float64, 96)
		for j := range e.Values {
			e.Values[j] = float64((i*96+j)%100000) / 1000
		}
		es[i] = e
	}
	return es
}
