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
