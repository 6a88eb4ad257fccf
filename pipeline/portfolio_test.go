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
		{"valid balancing groups", func(p *Portfolio) {
			p.BalancingGroup, p.ExchangeBalancingGroup = "11XACME-ENERGIEZ", "10X1001A1001A094"
		}, ""},
		{"balancing group check character", func(p *Portfolio) { p.BalancingGroup = "11XACME-ENERGIE1" },
			`portfolio p1: balancing_group: EIC "11XACME-ENERGIE1": wrong check character '1', want 'Z'`},
		{"exchange balancing group check character", func(p *Portfolio) { p.ExchangeBalancingGroup = "11XEPEXSPOT-DE-X" },
			`portfolio p1: exchange_balancing_group: EIC "11XEPEXSPOT-DE-X": wrong check character 'X', want 'S'`},
		{"balancing group is an area", func(p *Portfolio) { p.BalancingGroup = "10YDE-EON------1" },
			"balancing_group: EIC \"10YDE-EON------1\": want type X"},
		{"balancing group shape", func(p *Portfolio) { p.BalancingGroup = "ACME" }, "balancing_group: EIC \"ACME\": want 16 characters"},
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
