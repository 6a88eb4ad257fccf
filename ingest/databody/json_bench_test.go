package databody

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bytedance/sonic"
	"github.com/go-json-experiment/json/jsontext"
	gojson "github.com/goccy/go-json"
	"github.com/valyala/fastjson"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// The JSON tokenizer (json.go) against encoding/json and maintained fast
// JSON libraries on the same bodies: the 10k-entry metered-data body of
// bench_test.go, with three decimals and with 17 significant digits, and the
// small forecast of the load generator (cmd/loadgen). Each peer decodes the
// body into the values the validators then check: typed structs for
// encoding/json, goccy/go-json and sonic (the least work each library can
// do for these values), a generic tree for encoding/json into any, and
// fastjson's tree walked into the same structs. Ours is ingest.DecodeObject, the
// step a library would replace: UTF-8 check and the node tree with each
// value's JSON type, literal and offset, which the pydantic-style messages
// need and none of the peers keep. Full is DecodeMeteredData or
// DecodeForecast, parse plus validation, canonical encoding and hash, for
// scale. Each sub-benchmark runs ours and one peer alternately and reports
// both times and peer/ours. TestJSONPeersAgree checks that every peer reads
// the same values.

type peerEntry struct {
	Malo   string    `json:"malo"`
	Day    string    `json:"day"`
	Unit   string    `json:"unit"`
	Values []float64 `json:"values"`
}

type peerMetered struct {
	Entries      []peerEntry `json:"entries"`
	ValidateOnly bool        `json:"validate_only"`
}

type peerSeries struct {
	ControlArea string    `json:"control_area"`
	Kind        string    `json:"kind"`
	Unit        string    `json:"unit"`
	Values      []float64 `json:"values"`
}

type peerForecast struct {
	DeliveryDay string       `json:"delivery_day"`
	Series      []peerSeries `json:"series"`
}

// forecastBenchBody is the load generator's submission: one series of 96
// values with one decimal.
func forecastBenchBody() []byte {
	var b strings.Builder
	b.WriteString(`{"delivery_day":"2027-01-02","series":[{"control_area":"TenneT","kind":"consumption","unit":"MW","values":[`)
	for q := range 96 {
		if q > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64((7+q)%500)/10, 'f', -1, 64))
	}
	b.WriteString(`]}]}`)
	return []byte(b.String())
}

// forecastBenchRules is the load generator's portfolio.
var forecastBenchRules = ingest.Rules{Active: pipeline.NewAreaSet(pipeline.TenneT, pipeline.FiftyHertz)}

func fastjsonMetered(p *fastjson.Parser, body []byte) (peerMetered, error) {
	var out peerMetered
	v, err := p.ParseBytes(body)
	if err != nil {
		return out, err
	}
	entries, err := v.Get("entries").Array()
	if err != nil {
		return out, err
	}
	out.Entries = make([]peerEntry, len(entries))
	for i, e := range entries {
		out.Entries[i] = peerEntry{Malo: string(e.GetStringBytes("malo")), Day: string(e.GetStringBytes("day")),
			Unit: string(e.GetStringBytes("unit"))}
		vals, err := e.Get("values").Array()
		if err != nil {
			return out, err
		}
		out.Entries[i].Values = make([]float64, len(vals))
		for j, x := range vals {
			if out.Entries[i].Values[j], err = x.Float64(); err != nil {
				return out, err
			}
		}
	}
	out.ValidateOnly = v.GetBool("validate_only")
	return out, nil
}

func fastjsonForecast(p *fastjson.Parser, body []byte) (peerForecast, error) {
	var out peerForecast
	v, err := p.ParseBytes(body)
	if err != nil {
		return out, err
	}
	out.DeliveryDay = string(v.GetStringBytes("delivery_day"))
	series, err := v.Get("series").Array()
	if err != nil {
		return out, err
	}
	out.Series = make([]peerSeries, len(series))
	for i, s := range series {
		out.Series[i] = peerSeries{ControlArea: string(s.GetStringBytes("control_area")), Kind: string(s.GetStringBytes("kind")),
			Unit: string(s.GetStringBytes("unit"))}
		vals, err := s.Get("values").Array()
		if err != nil {
			return out, err
		}
		out.Series[i].Values = make([]float64, len(vals))
		for j, x := range vals {
			if out.Series[i].Values[j], err = x.Float64(); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// jsontextTree builds our node tree (each value's JSON type, offset and,
// outside number arrays, a number's literal; all-number arrays as nums) with
// the tokenizer of go-json-experiment/json, the one peer that reports
// offsets: the same work as our parser on a valid body. Its errors are not
// CPython's, so it could only replace our parser on the success path.
func jsontextTree(src []byte) (ingest.Node, error) {
	d := jsontext.NewDecoder(bytes.NewReader(src), jsontext.AllowDuplicateNames(true))
	p := ingest.Parser{Src: src}
	var value func() (ingest.Node, error)
	value = func() (ingest.Node, error) {
		off := p.Space(int(d.InputOffset()))
		if off < len(src) && src[off] == ',' || off < len(src) && src[off] == ':' {
			off = p.Space(off + 1)
		}
		tok, err := d.ReadToken()
		if err != nil {
			return ingest.Node{}, err
		}
		switch tok.Kind() {
		case 'n':
			return ingest.Node{Kind: ingest.KindNull, Offset: off}, nil
		case 't', 'f':
			return ingest.Node{Kind: ingest.KindBool, Offset: off, Bool: tok.Bool()}, nil
		case '"':
			return ingest.Node{Kind: ingest.KindString, Offset: off, Str: tok.String()}, nil
		case '0':
			f, _ := tok.Float()
			return ingest.Node{Kind: ingest.KindNumber, Offset: off, Num: f, Str: tok.String()}, nil
		case '{':
			n := ingest.Node{Kind: ingest.KindObject, Offset: off, Members: []ingest.Member{}}
			for d.PeekKind() != '}' {
				k, err := d.ReadToken()
				if err != nil {
					return ingest.Node{}, err
				}
				key := k.String() // the next read voids the token
				v, err := value()
				if err != nil {
					return ingest.Node{}, err
				}
				n.Members = append(n.Members, ingest.Member{Key: key, Val: v})
			}
			_, err := d.ReadToken()
			return n, err
		case '[':
			n := ingest.Node{Kind: ingest.KindArray, Offset: off}
			var nums []float64
			allNums := true
			for d.PeekKind() != ']' {
				if allNums && d.PeekKind() == '0' {
					t, err := d.ReadToken()
					if err != nil {
						return ingest.Node{}, err
					}
					f, _ := t.Float()
					nums = append(nums, f)
					continue
				}
				allNums = false
				v, err := value()
				if err != nil {
					return ingest.Node{}, err
				}
				n.Arr = append(n.Arr, v)
			}
			if allNums {
				n.Nums = nums
				if n.Nums == nil {
					n.Nums = []float64{}
				}
			}
			_, err := d.ReadToken()
			return n, err
		}
		return ingest.Node{}, fmt.Errorf("unexpected token %v", tok)
	}
	return value()
}

func BenchmarkJSONPeers(b *testing.B) {
	bodies := []struct {
		name    string
		body    []byte
		typed   func() any
		full    func([]byte) error
		fastAny func(*fastjson.Parser, []byte) error
	}{
		{"metered10k", meteredBody(10000, false), func() any { return &peerMetered{} },
			func(body []byte) error { _, err := DecodeMeteredData(body, ingest.Rules{}); return err },
			func(p *fastjson.Parser, body []byte) error { _, err := fastjsonMetered(p, body); return err }},
		{"metered10kFullPrecision", meteredBody(10000, true), func() any { return &peerMetered{} },
			func(body []byte) error { _, err := DecodeMeteredData(body, ingest.Rules{}); return err },
			func(p *fastjson.Parser, body []byte) error { _, err := fastjsonMetered(p, body); return err }},
		{"forecast96", forecastBenchBody(), func() any { return &peerForecast{} },
			func(body []byte) error { _, err := DecodeForecast(body, forecastBenchRules); return err },
			func(p *fastjson.Parser, body []byte) error { _, err := fastjsonForecast(p, body); return err }},
	}
	for _, bb := range bodies {
		ours := func() error { _, _, err := ingest.DecodeObject(bb.body); return err }
		// Each peer runs in turn with ours in the same loop, so that both see
		// the same load of a shared machine; peer/ours is the ratio to read.
		run := func(name string, peer func() error) {
			b.Run(bb.name+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				var oursNs, peerNs time.Duration
				for b.Loop() {
					t0 := time.Now()
					if err := ours(); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					if err := peer(); err != nil {
						b.Fatal(err)
					}
					oursNs, peerNs = oursNs+t1.Sub(t0), peerNs+time.Since(t1)
				}
				b.ReportMetric(float64(oursNs.Nanoseconds())/float64(b.N), "ours-ns/op")
				b.ReportMetric(float64(peerNs.Nanoseconds())/float64(b.N), "peer-ns/op")
				b.ReportMetric(float64(peerNs)/float64(oursNs), "peer/ours")
			})
		}
		run("jsontext-tree", func() error { _, err := jsontextTree(bb.body); return err })
		run("encoding-json-typed", func() error { return json.Unmarshal(bb.body, bb.typed()) })
		run("encoding-json-any", func() error { var v any; return json.Unmarshal(bb.body, &v) })
		run("goccy-go-json-typed", func() error { return gojson.Unmarshal(bb.body, bb.typed()) })
		run("sonic-typed", func() error { return sonic.Unmarshal(bb.body, bb.typed()) })
		var p fastjson.Parser
		run("fastjson-walked", func() error { return bb.fastAny(&p, bb.body) })
		run("full", func() error { return bb.full(bb.body) })
	}
}

// TestJSONPeersAgree keeps BenchmarkJSONPeers honest: every peer reads the
// same values from the bodies as our parser, bit for bit, so that the
// benchmark compares the same work.
func TestJSONPeersAgree(t *testing.T) {
	for _, full := range []bool{false, true} {
		body := meteredBody(200, full)
		_, root, err := ingest.DecodeObject(body)
		if err != nil {
			t.Fatal(err)
		}
		want := meteredOf(root)
		var p fastjson.Parser
		peers := map[string]func() (peerMetered, error){
			"go-json-experiment/json/jsontext": func() (peerMetered, error) {
				root, err := jsontextTree(body)
				return meteredOf(&root), err
			},
			"encoding/json":    func() (m peerMetered, err error) { err = json.Unmarshal(body, &m); return },
			"goccy/go-json":    func() (m peerMetered, err error) { err = gojson.Unmarshal(body, &m); return },
			"sonic":            func() (m peerMetered, err error) { err = sonic.Unmarshal(body, &m); return },
			"valyala/fastjson": func() (peerMetered, error) { return fastjsonMetered(&p, body) },
		}
		for name, dec := range peers {
			got, err := dec()
			if err != nil {
				t.Fatalf("%s full=%v: %v", name, full, err)
			}
			if err := sameMetered(got, want); err != nil {
				t.Errorf("%s full=%v: %v", name, full, err)
			}
		}
	}
	body := forecastBenchBody()
	sub, err := DecodeForecast(body, forecastBenchRules)
	if err != nil {
		t.Fatal(err)
	}
	for name, dec := range map[string]func(*peerForecast) error{
		"encoding/json": func(f *peerForecast) error { return json.Unmarshal(body, f) },
		"goccy/go-json": func(f *peerForecast) error { return gojson.Unmarshal(body, f) },
		"sonic":         func(f *peerForecast) error { return sonic.Unmarshal(body, f) },
		"valyala/fastjson": func(f *peerForecast) (err error) {
			var p fastjson.Parser
			*f, err = fastjsonForecast(&p, body)
			return
		},
	} {
		var f peerForecast
		if err := dec(&f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(f.Series) != 1 || !sameFloats(f.Series[0].Values, sub.Forecast.Series[0].Values) {
			t.Errorf("%s: forecast values differ from ours", name)
		}
	}
}

func meteredOf(root *ingest.Node) peerMetered {
	var m peerMetered
	for _, e := range root.Field("entries").Arr {
		m.Entries = append(m.Entries, peerEntry{Malo: e.Field("malo").Str, Day: e.Field("day").Str,
			Unit: e.Field("unit").Str, Values: e.Field("values").Nums})
	}
	return m
}

func sameMetered(got, want peerMetered) error {
	if len(got.Entries) != len(want.Entries) {
		return fmt.Errorf("%d entries, want %d", len(got.Entries), len(want.Entries))
	}
	for i, e := range got.Entries {
		w := want.Entries[i]
		if e.Malo != w.Malo || e.Day != w.Day || e.Unit != w.Unit || !sameFloats(e.Values, w.Values) {
			return fmt.Errorf("entry %d differs: %+v, want %+v", i, e, w)
		}
	}
	return nil
}

func sameFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}
