package sqldb

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// sameAsEncodingJSON decodes b with the slice decoder and with encoding/json
// and reports a difference in result or in failing.
func sameAsEncodingJSON(t *testing.T, d *sliceDecoder, b []byte) {
	t.Helper()
	got, gotErr := d.decode(b)
	var want []pipeline.Slice
	wantErr := json.Unmarshal(b, &want)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("%s: error %v, encoding/json says %v", b, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %#v\nwant %#v", b, got, want)
	}
}

var decodeCases = []struct {
	name string
	json string
	fast bool // whether the fast path itself must take it
}{
	{"empty", `[]`, true},
	{"stored shape", `[{"active":true,"annual_consumption_kwh":3500.5,"control_area":"TenneT","dso_mp_id":"9900000000001","kind":"consumption","metering_type":"slp","mga":"MGA Süd","profile":"H25","valid_from":"2026-01-01","valid_to":"2026-07-01"},{"active":false,"kind":"consumption","valid_from":"2026-07-01"}]`, true},
	{"whitespace and key order", " [ { \"valid_from\" : \"2024-02-29\" ,\n\"active\":false , \"annual_consumption_kwh\": -0.0e+3 } ] ", true},
	{"nulls on pointers", `[{"annual_consumption_kwh":null,"valid_to":null,"valid_from":"2026-01-01"}]`, true},
	{"duplicate key, last wins", `[{"valid_to":"2026-01-02","valid_to":null,"mga":"a","mga":"b"}]`, true},
	{"empty object", `[{}]`, true},
	{"escaped string", `[{"mga":"M\u00fcnster","valid_from":"2026-01-01"}]`, false},
	{"escaped quote", `[{"profile":"a\"b"}]`, false},
	{"upper-case key", `[{"Active":true}]`, false},
	{"unknown key", `[{"foo":[1,{"a":2}],"active":true}]`, false},
	{"null on a value", `[{"active":null,"mga":null,"valid_from":null}]`, false},
	{"top-level null", `null`, false},
	{"invalid utf-8", "[{\"mga\":\"\xff\"}]", false},
	{"control character", "[{\"mga\":\"a\tb\"}]", false},
	{"bad day", `[{"valid_from":"2026-02-29"}]`, false},
	{"short day", `[{"valid_from":"2026-1-01"}]`, false},
	{"number as day", `[{"valid_from":20260101}]`, false},
	{"leading zero", `[{"annual_consumption_kwh":01}]`, false},
	{"bare dot", `[{"annual_consumption_kwh":1.}]`, false},
	{"huge number", `[{"annual_consumption_kwh":1e400}]`, false},
	{"hex-like number", `[{"annual_consumption_kwh":0x10}]`, false},
	{"string as bool", `[{"active":"true"}]`, false},
	{"trailing comma", `[{"active":true},]`, false},
	{"trailing data", `[{"active":true}] x`, false},
	{"truncated", `[{"active":tru`, false},
	{"not an array", `{"active":true}`, false},
}

func TestSliceDecoderMatchesEncodingJSON(t *testing.T) {
	for _, c := range decodeCases {
		t.Run(c.name, func(t *testing.T) {
			d := newSliceDecoder()
			d.startBatch(4)
			sameAsEncodingJSON(t, d, []byte(c.json))
			if _, err := d.fast([]byte(c.json)); (err == nil) != c.fast {
				t.Errorf("fast path took it: %v, want %v", err == nil, c.fast)
			}
		})
	}
}

// TestSliceDecoderRandom compares the decoders on master data that
// json.Marshal wrote, the stored form, over many random slices and batch
// boundaries, and checks that slices handed out earlier in a batch are not
// overwritten by later ones.
func TestSliceDecoderRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	d := newSliceDecoder()
	var kept [][]pipeline.Slice
	var keptJSON [][]byte
	for i := range 3000 {
		if i%7 == 0 {
			d.startBatch(rng.IntN(5))
		}
		var in []pipeline.Slice
		for range rng.IntN(4) {
			in = append(in, randomSlice(rng))
		}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		sameAsEncodingJSON(t, d, b)
		got, _ := d.decode(b)
		kept, keptJSON = append(kept, got), append(keptJSON, b)
	}
	for i, got := range kept {
		var want []pipeline.Slice
		_ = json.Unmarshal(keptJSON[i], &want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("slices %d changed after later decodes: %s", i, keptJSON[i])
		}
	}
}

func randomSlice(rng *rand.Rand) pipeline.Slice {
	day := pipeline.NewDay(2020+rng.IntN(10), time.Month(1+rng.IntN(12)), 1+rng.IntN(28))
	s := pipeline.Slice{Active: rng.IntN(2) == 0, ValidFrom: day, Kind: pipeline.Consumption}
	if rng.IntN(2) == 0 {
		v := rng.NormFloat64() * 1e4
		s.AnnualConsumptionKWh = &v
	}
	if rng.IntN(2) == 0 {
		to := day.AddDays(rng.IntN(400))
		s.ValidTo = &to
	}
	if rng.IntN(3) > 0 {
		s.ControlArea = pipeline.ControlAreas[rng.IntN(4)]
		s.MGA = fmt.Sprintf("MGA %d \"Nord\" <&> ü", rng.IntN(5)) // escapes go the slow way
		s.Profile, s.DSOMPID, s.MeteringType = "H25", "9900000000003", pipeline.SLP
	}
	if rng.IntN(4) == 0 {
		s.MGA, s.Kind = "MGA-1", pipeline.Production
	}
	return s
}

func FuzzSliceDecoder(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c.json))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := newSliceDecoder()
		d.startBatch(2)
		sameAsEncodingJSON(t, d, b)
	})
}

// BenchmarkDecodeSlices compares the decoder with encoding/json on stored
// master data of the usual shape (two slices per location).
func BenchmarkDecodeSlices(b *testing.B) {
	kwh := 3500.0
	to := pipeline.NewDay(2026, time.April, 1)
	s := pipeline.Slice{Active: true, AnnualConsumptionKWh: &kwh, ControlArea: pipeline.TenneT, DSOMPID: "9900000000003",
		Kind: pipeline.Consumption, MeteringType: pipeline.SLP, MGA: "MGA-017", Profile: "H25",
		ValidFrom: pipeline.NewDay(2025, time.January, 1), ValidTo: &to}
	s2 := s
	s2.ValidFrom, s2.ValidTo = to, nil
	stored, err := json.Marshal([]pipeline.Slice{s, s2})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decoder", func(b *testing.B) {
		d := newSliceDecoder()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if i%1000 == 0 {
				d.startBatch(1000)
			}
			if _, err := d.decode(stored); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out []pipeline.Slice
			if err := json.Unmarshal(stored, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
