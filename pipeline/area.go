package pipeline

// ControlArea is a German control area (Regelzone) by its TSO name. Names are
// case-sensitive, as the contract requires: "tennet" is not a control area.
type ControlArea string

// The four German control areas.
const (
	FiftyHertz ControlArea = "50Hertz"
	Amprion    ControlArea = "Amprion"
	TenneT     ControlArea = "TenneT"
	TransnetBW ControlArea = "TransnetBW"
)

// ControlAreas lists the control areas in a stable order.
var ControlAreas = []ControlArea{FiftyHertz, Amprion, TenneT, TransnetBW}

// ParseControlArea accepts exactly one of the four names.
func ParseControlArea(s string) (ControlArea, bool) {
	for _, a := range ControlAreas {
		if string(a) == s {
			return a, true
		}
	}
	return "", false
}

// AreaSet is a set of control areas, such as a portfolio's active set.
type AreaSet map[ControlArea]bool

// NewAreaSet builds a set from a list.
func NewAreaSet(areas ...ControlArea) AreaSet {
	s := make(AreaSet, len(areas))
	for _, a := range areas {
		s[a] = true
	}
	return s
}

// Has reports whether the name is in the set; unknown names are never in it.
func (s AreaSet) Has(name string) bool { return s[ControlArea(name)] }

// Sorted returns the members in the order of ControlAreas.
func (s AreaSet) Sorted() []ControlArea {
	out := make([]ControlArea, 0, len(s))
	for _, a := range ControlAreas {
		if s[a] {
			out = append(out, a)
		}
	}
	return out
}
