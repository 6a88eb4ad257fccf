package jobs

import (
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
)

// TestLocationIndex: the packed index gives every location its area and
// sign once, for 11-digit ids and ids of any other form alike, and nothing
// for locations it does not hold.
func TestLocationIndex(t *testing.T) {
	add := []struct {
		malo string
		p    place
	}{
		{"51238696781", place{pipeline.TenneT, false}},
		{"00000000001", place{pipeline.FiftyHertz, true}},
		{"99999999999", place{pipeline.TransnetBW, false}},
		{"10000000000", place{pipeline.Amprion, true}},
		{"m-7", place{pipeline.Amprion, false}},            // not 11 digits
		{"5123869678x", place{pipeline.TenneT, true}},      // not all digits
		{"512386967810", place{pipeline.FiftyHertz, true}}, // 12 digits
	}
	var x locationIndex
	for _, a := range add {
		x.add(a.malo, a.p)
	}
	if x.len() != len(add) {
		t.Fatalf("len %d, want %d", x.len(), len(add))
	}
	x.seal()
	for _, a := range add {
		got, ok := x.take(a.malo)
		if !ok || got != a.p {
			t.Errorf("take(%q) = %+v %v, want %+v", a.malo, got, ok, a.p)
		}
		if _, ok := x.take(a.malo); ok {
			t.Errorf("take(%q) a second time found it again", a.malo)
		}
	}
	for _, malo := range []string{"51238696782", "", "m-8", "00000000000"} {
		if p, ok := x.take(malo); ok {
			t.Errorf("take(%q) = %+v for a location not added", malo, p)
		}
	}
}
