package requestid_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/api/requestid"
)

func TestOf(t *testing.T) {
	fresh := regexp.MustCompile(`^[0-9a-f]{32}$`)
	tests := []struct {
		name, sent string
		kept       bool
	}{
		{"uuid", "0b9c6a8e-4d1f-4c55-9f7e-2a2d1c3b4e5f", true},
		{"hex", "4bf92f3577b34da6a3ce929d0e0e4736", true},
		{"proxy trace", "Root=1-67891233-abcdef012345678912345678", true},
		{"one char", "x", true},
		{"max length", strings.Repeat("a", requestid.MaxLen), true},
		{"too long", strings.Repeat("a", requestid.MaxLen+1), false},
		{"empty", "", false},
		{"space", "a b", false},
		{"quote", `a"b`, false},
		{"newline", "a\nlevel=ERROR", false},
		{"non-ascii", "réquest", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := requestid.Of(tt.sent)
			if tt.kept && got != tt.sent {
				t.Errorf("Of(%q) = %q, want it kept", tt.sent, got)
			}
			if !tt.kept && (got == tt.sent || !fresh.MatchString(got)) {
				t.Errorf("Of(%q) = %q, want a fresh id", tt.sent, got)
			}
		})
	}
	if a, b := requestid.New(), requestid.New(); a == b {
		t.Errorf("two new ids are equal: %s", a)
	}
}

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(requestid.Handler(slog.NewJSONHandler(&buf, nil))).With("component", "api")
	ctx := requestid.With(context.Background(), "req-1")
	log.InfoContext(ctx, "with id", "n", 1)
	log.Info("without id")
	log.WarnContext(context.Background(), "background")
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 {
		t.Fatalf("lines: %s", buf.String())
	}
	if lines[0]["request_id"] != "req-1" || lines[0]["component"] != "api" || lines[0]["n"] != 1.0 {
		t.Errorf("line with id = %v", lines[0])
	}
	if strings.Count(buf.String(), "request_id") != 1 {
		t.Errorf("request_id written other than once:\n%s", buf.String())
	}
	if requestid.From(context.Background()) != "" || requestid.From(ctx) != "req-1" {
		t.Error("From does not read what With stored")
	}
}
