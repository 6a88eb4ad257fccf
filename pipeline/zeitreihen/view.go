package zeitreihen

import (
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// View is the ramp-up snapshot as GET /v1/process/kundenhochlauf shows it:
// totals by DSO, balancing area, control area, supply-start month, meter
// type and forecast type.
type View struct {
	Stand       time.Time    `json:"stand"`
	Quelle      string       `json:"quelle"`
	EmpfangenAt time.Time    `json:"empfangen_at"`
	Stichtag    pipeline.Day `json:"stichtag"`
	Eintraege   int          `json:"eintraege"`
	Summe       int          `json:"summe"`
	// Begonnen counts the customers whose supply started on or before the
	// key day, Kuenftig the rest.
	Begonnen int       `json:"begonnen"`
	Kuenftig int       `json:"kuenftig"`
	Kunden   Customers `json:"kunden"`

	NachNetzbetreiber       []Total `json:"nach_netzbetreiber"`
	NachBilanzierungsgebiet []Total `json:"nach_bilanzierungsgebiet"`
	NachRegelzone           []Total `json:"nach_regelzone"`
	NachLieferbeginnMonat   []Total `json:"nach_lieferbeginn_monat"`
	NachZaehlertyp          []Total `json:"nach_zaehlertyp"`
	NachPrognoseart         []Total `json:"nach_prognoseart"`
}

// Total is the customer count of one key of a grouping. Name is set for
// DSOs (from the snapshot or the registry); Kunden splits the count by
// customer group.
type Total struct {
	Schluessel string    `json:"schluessel"`
	Name       string    `json:"name,omitempty"`
	Anzahl     int       `json:"anzahl"`
	Begonnen   int       `json:"begonnen"`
	Kunden     Customers `json:"kunden"`
}
