package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// decoders runs every endpoint's decoder, for the tests that hold for all.
var decoders = map[string]func([]byte, Rules) error{
	"forecast":    func(b []byte, r Rules) error { _, err := DecodeForecast(b, r); return err },
	"master-data": func(b []byte, r Rules) error { _, err := DecodeMasterData(b, r); return err },
	"metered":     func(b []byte, r Rules) error { _, err := DecodeMeteredData(b, r); return err },
	"profiles":    func(b []byte, r Rules) error { _, err := DecodeProfiles(b, r); return err },
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
