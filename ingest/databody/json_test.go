package databody

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/ingesttest"
)

// TestBodyLevelProblems covers the failures FastAPI reports before the model
// sees the body. They are the same for every endpoint.
// decoders runs every endpoint's decoder, for the tests that hold for all.
var decoders = map[string]func([]byte, ingest.Rules) error{
	"forecast":    func(b []byte, r ingest.Rules) error { _, err := DecodeForecast(b, r); return err },
	"master-data": func(b []byte, r ingest.Rules) error { _, err := DecodeMasterData(b, r); return err },
	"metered":     func(b []byte, r ingest.Rules) error { _, err := DecodeMeteredData(b, r); return err },
	"profiles":    func(b []byte, r ingest.Rules) error { _, err := DecodeProfiles(b, r); return err },
}

func TestBodyLevelProblems(t *testing.T) {
	invalid := func(pos, msg string) []problem {
		return []problem{{"json_invalid", "body." + pos, "JSON decode error", `{"error":"` + strings.ReplaceAll(msg, `\`, `\\`) + `"}`, `{}`}}
	}
	tests := []struct {
		name string
		body string
		want []problem
	}{
		{"empty body", "", []problem{{"missing", "body", "Field required", "", "null"}}},
		{"null body", "null", []problem{{"missing", "body", "Field required", "", "null"}}},
		{"array body", "[1, 2.50]", []problem{{"model_attributes_type", "body", "Input should be a valid dictionary or object to extract fields from", "", "[1, 2.5]"}}},
		{"string body", `"abc"`, []problem{{"model_attributes_type", "body", "Input should be a valid dictionary or object to extract fields from", "", `"abc"`}}},
		{"number body", `1e2`, []problem{{"model_attributes_type", "body", "Input should be a valid dictionary or object to extract fields from", "", `100.0`}}},
		{"only whitespace", "   ", invalid("3", "Expecting value")},
		{"unclosed object", "{", invalid("1", "Expecting property name enclosed in double quotes")},
		{"single-quoted name", "{'a': 1}", invalid("1", "Expecting property name enclosed in double quotes")},
		{"missing colon", `{"a" 1}`, invalid("5", "Expecting ':' delimiter")},
		{"missing comma", `{"a":1 "b":2}`, invalid("7", "Expecting ',' delimiter")},
		{"unclosed after value", `{"a":1`, invalid("6", "Expecting ',' delimiter")},
		{"trailing comma in object", `{"a":1,}`, invalid("6", "Illegal trailing comma before end of object")},
		{"trailing comma in array", `{"a":[1,2,]}`, invalid("9", "Illegal trailing comma before end of array")},
		{"trailing comma in mixed array", `{"a":["x",]}`, invalid("9", "Illegal trailing comma before end of array")},
		{"missing comma in array", `{"a":[1 2]}`, invalid("8", "Expecting ',' delimiter")},
		{"unclosed array", `{"a":[1,2`, invalid("9", "Expecting ',' delimiter")},
		{"empty element", `{"a":[1,,2]}`, invalid("8", "Expecting value")},
		{"NaN", `{"a":NaN}`, invalid("5", "Expecting value")},
		{"Infinity", `{"a":[1,Infinity]}`, invalid("8", "Expecting value")},
		{"minus Infinity", `{"a":-Infinity}`, invalid("5", "Expecting value")},
		{"lone minus", `{"a":-}`, invalid("5", "Expecting value")},
		{"truncated literal", `{"a":tru}`, invalid("5", "Expecting value")},
		{"leading zero", `{"a":01}`, invalid("6", "Expecting ',' delimiter")},
		{"dot without digits", `{"a":1.}`, invalid("6", "Expecting ',' delimiter")},
		{"exponent without digits", `{"a":[1e]}`, invalid("7", "Expecting ',' delimiter")},
		// Numbers at the very end of the input: CPython only looks past a '.'
		// or an 'e' when there is a character after it.
		{"dot at end of input", `{"a":1.`, invalid("6", "Expecting ',' delimiter")},
		{"exponent at end of input", `{"a":1e`, invalid("6", "Expecting ',' delimiter")},
		{"exponent sign at end of input", `{"a":1e+`, invalid("6", "Expecting ',' delimiter")},
		{"minus at end of input", `{"a":-`, invalid("5", "Expecting value")},
		{"scalar dot at end of input", `1.`, invalid("1", "Extra data")},
		{"unterminated string", `{"a":"xyz`, invalid("5", "Unterminated string starting at")},
		{"unterminated after escape", `{"a":"x\`, invalid("5", "Unterminated string starting at")},
		{"control character", "{\"a\":\"x\ny\"}", invalid("7", "Invalid control character at")},
		{"invalid escape", `{"a":"\q"}`, invalid("6", `Invalid \escape`)},
		{"short unicode escape at end", `{"a":"\u12"}`, invalid("7", `Invalid \uXXXX escape`)},
		{"bad unicode escape", `{"a":"\u12zz"}`, invalid("7", `Invalid \uXXXX escape`)},
		{"bad second half of a surrogate pair", `{"a":"\ud83d\uzzzz"}`, invalid("13", `Invalid \uXXXX escape`)},
		{"extra data", `{} x`, invalid("3", "Extra data")},
		{"two objects", `{}{}`, invalid("2", "Extra data")},
		// Python counts characters, not bytes: é is one position.
		{"position in characters", `{"é":x}`, invalid("5", "Expecting value")},
		{"BOM is skipped", "\xef\xbb\xbf" + `{"a":x}`, invalid("5", "Expecting value")},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", invalid("6", "invalid UTF-8")},
		{"too deep", `{"a":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`, invalid("516", "maximum nesting depth exceeded")},
	}
	for _, tt := range tests {
		for name, decode := range decoders {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				ingesttest.CheckProblems(t, decode([]byte(tt.body), ingesttest.AllAreas), tt.want)
			})
		}
	}
}

// TestProblemRendering pins the JSON of a problem as the API sends it: ctx is
// {} rather than null, input null when there is none.
func TestProblemRendering(t *testing.T) {
	_, err := DecodeForecast(nil, ingesttest.AllAreas)
	got := ingesttest.MustJSON(t, ingesttest.SchemaProblems(t, err))
	want := `[{"type":"missing","loc":["body"],"msg":"Field required","input":null,"ctx":{}}]`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestParserValues checks that parsed values, escapes and duplicate keys come
// out as Python's json module makes them.
func TestParserValues(t *testing.T) {
	src := `{"s": "a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\ud800x", "n": [1, -0, 2.50, 1E2, 1e-7, 12345678901234567890123],
	"m": [1, "x", null, true, false, {}], "k": 1, "k": 2}`
	root, serr := ingest.Parse([]byte(src))
	if serr != nil {
		t.Fatalf("parse: %+v", serr)
	}
	c := &ingest.Checker{Src: []byte(src)}
	got := ingesttest.MustJSON(t, c.Input(&root))
	want := `{"k":2,"m":[1,"x",null,true,false,{}],"n":[1,0,2.5,100.0,1e-07,12345678901234567890123],`
	if !strings.HasPrefix(got, want) {
		t.Errorf("got  %s\nwant %s...", got, want)
	}
	// A lone surrogate, which a Go string cannot hold, becomes U+FFFD.
	if s := root.Field("s").Str; s != "a\"b\\c/d\b\f\n\r\t\u00e9\U0001F600\uFFFDx" {
		t.Errorf("string = %q", s)
	}
	n := root.Field("n")
	if n.Nums == nil || len(n.Nums) != 6 || n.Nums[2] != 2.5 || n.Nums[3] != 100 || n.Nums[5] != 12345678901234567890123 {
		t.Errorf("number array = %v", n.Nums)
	}
	if m := root.Field("m"); m.Nums != nil || len(m.Arr) != 6 {
		t.Errorf("mixed array parsed as numbers: %+v", m)
	}
}

// parsesLikeEncodingJSON checks that a text is accepted exactly when
// encoding/json accepts it (both reject NaN and Infinity; the grammar of
// Python's json module is otherwise RFC 8259's), and that the decoders answer
// any text with a *ingest.SchemaError or *ingest.BusinessError, never a panic. (An empty
// body is not malformed but missing.)
func parsesLikeEncodingJSON(t *testing.T, text []byte) {
	t.Helper()
	_, serr := ingest.Parse(text)
	if ok := serr == nil; ok != json.Valid(text) {
		t.Fatalf("parse ok = %v, json.Valid = %v, error %+v, for %q", ok, !ok, serr, text)
	}
	for name, decode := range decoders {
		err := decode(text, ingesttest.AllAreas)
		var se *ingest.SchemaError
		var be *ingest.BusinessError
		if err != nil && !errors.As(err, &se) && !errors.As(err, &be) {
			t.Fatalf("%s: error of type %T", name, err)
		}
		if serr != nil && len(text) > 0 && (se == nil || se.Problems[0].Type != "json_invalid") {
			t.Fatalf("%s: malformed %q answered with %v", name, text, err)
		}
	}
}

// TestTruncatedBodies cuts a sample at every byte.
func TestTruncatedBodies(t *testing.T) {
	for _, file := range []string{"forecast_2026-03-29.json", "masterdata.json"} {
		body := ingesttest.ReadTestdata(t, file)
		for i := 0; i <= len(body); i++ {
			parsesLikeEncodingJSON(t, body[:i])
		}
	}
}

// TestMutatedBodies changes samples at random places, with characters that
// matter to the grammar.
func TestMutatedBodies(t *testing.T) {
	const alphabet = "{}[]:,\"0123456789.eE+-tfnu \\\nxNI\x01"
	r := rand.New(rand.NewPCG(5, 6))
	bodies := [][]byte{ingesttest.ReadTestdata(t, "masterdata.json"), []byte(`{"a":[1,-2.5e3,"x\\u00e9\\n",true,null,{"b":[]}]}`)}
	for i := 0; i < 20000; i++ {
		b := append([]byte(nil), bodies[i%len(bodies)]...)
		for n := 1 + r.IntN(3); n > 0; n-- {
			at := r.IntN(len(b))
			switch c := alphabet[r.IntN(len(alphabet))]; r.IntN(3) {
			case 0:
				b[at] = c
			case 1:
				b = append(b[:at], b[at+1:]...)
			default:
				b = append(b[:at], append([]byte{c}, b[at:]...)...)
			}
		}
		parsesLikeEncodingJSON(t, b)
	}
}

// FuzzDecode runs the same property on inputs the fuzzer finds.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"entries":[{"malo":"01234567890","day":"2026-03-28","unit":"MW","values":[1,2]}]}`))
	f.Add([]byte(`{"delivery_day":"2026-03-28","series":[{"malo":"01234567890","kind":"production","values":[1e400]}]}`))
	f.Add([]byte(`{"locations":[{"malo":"01234567890","delivery_start":"2026-01-01"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 0 && b[0] == 0xef { // a BOM, which json.Valid does not skip
			return
		}
		parsesLikeEncodingJSON(t, b)
	})
}
