package pipeline

import (
	"strings"
	"testing"
)

func TestPortfolioValidate(t *testing.T) {
	ok := Portfolio{ID: "p1", Name: "Test", ControlAreas: []ControlArea{TenneT}}
	cases := []struct {
		name string
		mod  func(*Portfolio)
		want string // "" for valid
	}{
		{"valid", func(*Portfolio) {}, ""},
		{"bad id", func(p *Portfolio) { p.ID = "-x" }, "use 1-64 letters"},
		{"reserved tso", func(p *Portfolio) { p.ID = "tso" }, "is reserved"},
		{"reserved edifact", func(p *Portfolio) { p.ID = "edifact" }, "is reserved"},
		{"reserved mail", func(p *Portfolio) { p.ID = "mail" }, "is reserved"},
		{"reserved registry", func(p *Portfolio) { p.ID = "registry" }, "is reserved"},
		{"similar name is fine", func(p *Portfolio) { p.ID = "mail2" }, ""},
		{"no name", func(p *Portfolio) { p.Name = "" }, "name is required"},
		{"no areas", func(p *Portfolio) { p.ControlAreas = nil }, "at least one control area"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ok
			c.mod(&p)
			err := p.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || KindOf(err) != Invalid):
				t.Fatalf("Validate() = %v, want an invalid error containing %q", err, c.want)
			}
		})
	}
}
