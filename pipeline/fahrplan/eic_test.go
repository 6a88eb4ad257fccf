package fahrplan

import (
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
)

func TestDefaultMaps(t *testing.T) {
	for _, area := range pipeline.ControlAreas {
		y, ok := ControlAreaEIC[area]
		if !ok {
			t.Fatalf("ControlAreaEIC has no %s", area)
		}
		if err := pipeline.ValidateEIC(y, pipeline.EICArea); err != nil {
			t.Errorf("ControlAreaEIC[%s]: %v", area, err)
		}
		x, ok := DefaultTSOParty[area]
		if !ok {
			t.Fatalf("DefaultTSOParty has no %s", area)
		}
		if err := pipeline.ValidateEIC(x, pipeline.EICParty); err != nil {
			t.Errorf("DefaultTSOParty[%s]: %v", area, err)
		}
	}
	// The TSO parties seen in the reference files and in domain.md.
	want := map[pipeline.ControlArea]string{
		pipeline.Amprion:    "10XDE-RWENET---W",
		pipeline.TenneT:     "10XDE-EON-NETZ-C",
		pipeline.FiftyHertz: "10XDE-VE-TRANSMK",
		pipeline.TransnetBW: "10XDE-ENBW--TNGX",
	}
	for area, code := range want {
		if DefaultTSOParty[area] != code {
			t.Errorf("DefaultTSOParty[%s] = %s, want %s", area, DefaultTSOParty[area], code)
		}
	}
}
