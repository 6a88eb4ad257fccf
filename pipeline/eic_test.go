package pipeline

import (
	"strings"
	"testing"
)

func TestEICCheckChar(t *testing.T) {
	tests := []struct {
		code string
		want byte
		ok   bool
	}{
		// Real codes from the ENTSO-E lists.
		{"10YDE-EON------1", '1', true},
		{"10YDE-RWENET---I", 'I', true},
		{"10XDE-VE-TRANSMK", 'K', true},
		{"10X1001A1001A094", '4', true},
		// Only the first 15 characters count.
		{"11XACME-ENERGIE1", 'Z', true},
		{"11XACME-ENERGIE", 'Z', true},
		// No code exists whose check character would be '-'.
		{"11XSCHEDBRIDGE-1", '-', false},
		{"11XACME-ENERGI", 0, false},
		{"11xACME-ENERGIE1", 0, false},
	}
	for _, tt := range tests {
		got, ok := EICCheckChar(tt.code)
		if got != tt.want || ok != tt.ok {
			t.Errorf("EICCheckChar(%q) = %q, %v; want %q, %v", tt.code, got, ok, tt.want, tt.ok)
		}
	}
}

func TestValidateEICMessage(t *testing.T) {
	tests := []struct {
		code string
		typ  byte
		want string // "" for valid
	}{
		{"11XACME-ENERGIEZ", EICParty, ""},
		{"11XACME-ENERGIEZ", 0, ""},
		{"11XACME-ENERGIE1", EICParty, `wrong check character '1', want 'Z' (11XACME-ENERGIEZ)`},
		{"11XSCHEDBRIDGE-1", EICParty, "no check character is valid"},
		{"10YDE-EON------1", EICParty, "want type X"},
		{"11XACME-ENERGIEZZ", EICParty, "want 16 characters"},
		{"11XACME_ENERGIEZ", EICParty, "not allowed"},
		{"A1XACME-ENERGIEZ", EICParty, "two digits"},
	}
	for _, tt := range tests {
		err := ValidateEIC(tt.code, tt.typ)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ValidateEIC(%q) = %v, want nil", tt.code, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || KindOf(err) != Invalid):
			t.Errorf("ValidateEIC(%q) = %v, want an invalid error containing %q", tt.code, err, tt.want)
		}
	}
}

// TestValidateEIC: real codes pass, and every way a code can be malformed
// fails as invalid.
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
		if err != nil && KindOf(err) != Invalid {
			t.Errorf("ValidateEIC(%q): kind %s, want invalid", tt.code, KindOf(err))
		}
	}
}
