package pipeline

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Portfolio is a supplier's portfolio: the unit that owns submissions, keys and
// schedules. ControlAreas is its active set; submissions for other areas are
// rejected.
type Portfolio struct {
	ID             string        `json:"id"`
	Name           string        `json:"name"`
	ControlAreas   []ControlArea `json:"control_areas"`
	BalancingGroup string        `json:"balancing_group,omitempty"`
	// ExchangeBalancingGroup (EIC, optional) is the counterparty of the open
	// position in the schedules when no trades were imported for a day.
	ExchangeBalancingGroup string    `json:"exchange_balancing_group,omitempty"`
	CreatedAt              time.Time `json:"created_at"`
	UpdatedAt              time.Time `json:"updated_at"`
}

var (
	portfolioIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	// An EIC is 16 characters: 2 issuer digits, a type letter, 12 code
	// characters and a check character. Balancing groups are type X.
	eicPattern = regexp.MustCompile(`^[0-9]{2}[A-Z][0-9A-Z-]{12}[0-9A-Z]$`)
)

// ReservedInboxFolders are the folders under inbox/ that are not portfolios:
// the TSOs' answers, the partner registry, the EDIFACT channel, dropped
// mails, market prices and series activation lists. Each has its own
// reader, so no portfolio may take their names.
var ReservedInboxFolders = []string{"tso", "registry", "edifact", "mail", "prices", "zeitreihen"}

// ValidEIC reports whether s has the shape of an EIC. It does not check the
// check character, which anonymised codes in reference files get wrong: use
// ValidateEIC where a code is sent on to a TSO.
func ValidEIC(s string) bool { return eicPattern.MatchString(s) }

// EICField is an EIC-valued field of a portfolio, named as in its JSON.
type EICField struct{ Name, Value string }

// EICFields lists the portfolio's EIC-valued fields that are set.
func (p Portfolio) EICFields() []EICField {
	var out []EICField
	for _, f := range []EICField{
		{"balancing_group", p.BalancingGroup},
		{"exchange_balancing_group", p.ExchangeBalancingGroup},
	} {
		if f.Value != "" {
			out = append(out, f)
		}
	}
	return out
}

// ValidateEICs checks the portfolio's balancing groups with the full EIC check
// (type X and the check character), the check the schedules apply later, so a
// typo is refused when the portfolio is stored rather than when its schedules
// are built. The error names the field by its JSON name.
func (p Portfolio) ValidateEICs() error {
	for _, f := range p.EICFields() {
		if err := ValidateEIC(f.Value, EICParty); err != nil {
			return fmt.Errorf("portfolio %s: %s: %w", p.ID, f.Name, err)
		}
	}
	return nil
}

// Active returns the portfolio's active set.
func (p Portfolio) Active() AreaSet { return NewAreaSet(p.ControlAreas...) }

// Validate checks the portfolio's fields.
func (p Portfolio) Validate() error {
	switch {
	case !portfolioIDPattern.MatchString(p.ID):
		return Errorf(Invalid, "portfolio id %q: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", p.ID)
	case slices.Contains(ReservedInboxFolders, p.ID):
		return Errorf(Invalid, "portfolio id %q is reserved: inbox/%s/ holds files of the market communication", p.ID, p.ID)
	case p.Name == "":
		return Errorf(Invalid, "portfolio %s: name is required", p.ID)
	case len(p.ControlAreas) == 0:
		return Errorf(Invalid, "portfolio %s: at least one control area is required", p.ID)
	}
	if err := p.ValidateEICs(); err != nil {
		return err
	}
	for _, a := range p.ControlAreas {
		if _, ok := ParseControlArea(string(a)); !ok {
			return Errorf(Invalid, "portfolio %s: unknown control area %q (want 50Hertz, Amprion, TenneT or TransnetBW)", p.ID, a)
		}
	}
	return nil
}
