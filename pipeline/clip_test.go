package pipeline

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	if got := Clip("short"); got != "short" {
		t.Errorf("short value changed: %q", got)
	}
	exact := strings.Repeat("a", MaxQuoted)
	if got := Clip(exact); got != exact {
		t.Errorf("a value of MaxQuoted bytes was cut")
	}
	// "ä" is two bytes: an odd cap would split one, which Clip never does.
	long := "x" + strings.Repeat("ä", MaxQuoted)
	got := Clip(long)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > MaxQuoted+len("…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("Clip(%d bytes) = %q", len(long), got)
	}
}

func TestClipTo(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"GET", 32, "GET"},
		{"abcdef", 3, "abc…"},
		{"äää", 3, "ä…"}, // byte 3 is inside the second "ä"
		{"äää", 1, "…"},
	} {
		if got := ClipTo(tt.in, tt.n); got != tt.want {
			t.Errorf("ClipTo(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
