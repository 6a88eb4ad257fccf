package fahrplan

import (
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
)

func TestValidateEIC(t *testing.T) {
	tests := []struct {
		code  string
		typ   byte
		valid bool
	}{
		// Real codes from the ENTSO-E lists: the check characters must agree.
		{"10YDE-EON------1", EICArea, true},
		{"10YDE-RWENET---I", EICArea, true},
		{"10YDE-VE-------2", EICArea, true},
		{"10YDE-ENBW-----N", EICArea, true},
		{"10XDE-ENBW--TNGX", EICParty, true},
		{"10XDE-EON-NETZ-C", EICParty, true},
		{"10XDE-RWENET---W", EICParty, true},
		{"10XDE-VE-TRANSMK", EICParty, true},
		{"10X1001A1001A094", EICParty, true},
		{"11XSWVIERNHEIMVR", EICParty, true},
		{"11XEES-K-------9", 0, true},
		// Anonymised codes of the reference files fail their check character.
		{"11X0-1111-0762-I", EICParty, false},
		{"10XDE-AOE-HTCC-C", EICParty, false},
		{"10YDE-XIN------1", EICArea, false},
		// A code whose check character would be '-' does not exist.
		{"11XSCHEDBRIDGE--", EICParty, false},
		{"10YDE-EON------1", EICParty, false}, // area where a party is wanted
		{"10XDE-EON-NETZ-C", EICArea, false},  // party where an area is wanted
		{"10YDE-EON------", EICArea, false},   // 15 characters
		{"10YDE-EON-------1", EICArea, false}, // 17 characters
		{"10ydE-EON------1", EICArea, false},  // lower case
		{"1AYDE-EON------1", EICArea, false},  // issuing office not two digits
		{"10YDE_EON------1", EICArea, false},  // underscore
		{"", 0, false},
	}
	for _, tt := range tests {
		err := ValidateEIC(tt.code, tt.typ)
		if (err == nil) != tt.valid {
			t.Errorf("ValidateEIC(%q, %q) = %v, want valid=%v", tt.code, tt.typ, err, tt.valid)
		}
		if err != nil && pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("ValidateEIC(%q): kind %s, want invalid", tt.code, pipeline.KindOf(err))
		}
	}
}

func TestDefaultMaps(t *testing.T) {
	for _, area := range pipeline.ControlAreas {
		y, ok := ControlAreaEIC[area]
		if !ok {
			t.Fatalf("ControlAreaEIC has no %s", area)
		}
		if err := ValidateEIC(y, EICArea); err != nil {
			t.Errorf("ControlAreaEIC[%s]: %v", area, err)
		}
		x, ok := DefaultTSOParty[area]
		if !ok {
			t.Fatalf("DefaultTSOParty has no %s", area)
		}
		if err := ValidateEIC(x, EICParty); err != nil {
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
