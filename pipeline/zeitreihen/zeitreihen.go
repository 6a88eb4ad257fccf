// Package zeitreihen holds the customer ramp-up (Kundenhochlauf) and the
// activation tree of the MaBiS sum time series (Zeitreihen): which series the
// balancing group needs for the customers whose supply the DSOs confirmed,
// which ones the DSOs activated, and where the two disagree.
//
// The package does no I/O: the snapshot, the activation records and the
// contracts are handed in, and the views come out.
package zeitreihen

import (
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Group is a customer group of the tree, by how its customers are balanced.
type Group string

// Customer groups. OhneTyp holds customers whose snapshot entry names no
// forecast type, so that no series type can be derived for them.
const (
	GroupIMSys   Group = "imsys"
	GroupRLM     Group = "rlm"
	GroupSLP     Group = "slp"
	GroupTLP     Group = "tlp"
	GroupOhneTyp Group = "ohne_typ"
)

// Groups lists the customer groups in the order of the views.
var Groups = []Group{GroupIMSys, GroupRLM, GroupSLP, GroupTLP, GroupOhneTyp}

// Prognoseart is the forecast type of a snapshot entry: BO4E's
// Bilanzierungsmethode, which says how the customers are balanced.
type Prognoseart string

// Forecast types (BO4E Bilanzierungsmethode).
const (
	PrognoseRLM          Prognoseart = "RLM"
	PrognoseSLP          Prognoseart = "SLP"
	PrognoseTLPGemeinsam Prognoseart = "TLP_GEMEINSAM"
	PrognoseTLPGetrennt  Prognoseart = "TLP_GETRENNT"
	PrognosePauschal     Prognoseart = "PAUSCHAL"
	PrognoseIMS          Prognoseart = "IMS"
)

// Prognosearten lists the accepted forecast types.
var Prognosearten = []Prognoseart{PrognoseRLM, PrognoseSLP, PrognoseTLPGemeinsam, PrognoseTLPGetrennt, PrognosePauschal, PrognoseIMS}

// Group is the customer group of the forecast type. Flat-rate (PAUSCHAL)
// locations are balanced with a standard load profile, so they count as
// SLP; an entry without a forecast type is OhneTyp.
func (p Prognoseart) Group() Group {
	switch p {
	case PrognoseRLM:
		return GroupRLM
	case PrognoseSLP, PrognosePauschal:
		return GroupSLP
	case PrognoseTLPGemeinsam, PrognoseTLPGetrennt:
		return GroupTLP
	case PrognoseIMS:
		return GroupIMSys
	}
	return GroupOhneTyp
}

// Zaehlertyp is the meter type of a snapshot entry (BO4E Zaehlertyp).
type Zaehlertyp string

// Meter types (BO4E Zaehlertyp).
var Zaehlertypen = []Zaehlertyp{
	"DREHSTROMZAEHLER", "WECHSELSTROMZAEHLER", "LEISTUNGSZAEHLER", "MAXIMUMZAEHLER",
	"MODERNE_MESSEINRICHTUNG", "INTELLIGENTES_MESSSYSTEM", "ELEKTRONISCHER_ZAEHLER",
}

// Entry is one line of a ramp-up snapshot: how many customers of one forecast
// and meter type start supply on one day at one DSO in one balancing area.
// Counts only: a snapshot carries no market location ids.
type Entry struct {
	NetzbetreiberMPID   string               `json:"netzbetreiber_mp_id"`
	Netzbetreiber       string               `json:"netzbetreiber,omitempty"`
	Bilanzierungsgebiet string               `json:"bilanzierungsgebiet"`
	Regelzone           pipeline.ControlArea `json:"regelzone"`
	Lieferbeginn        pipeline.Day         `json:"lieferbeginn"`
	Prognoseart         Prognoseart          `json:"prognoseart,omitempty"`
	Zaehlertyp          Zaehlertyp           `json:"zaehlertyp,omitempty"`
	Anzahl              int                  `json:"anzahl"`
}

// Snapshot is a partner's confirmed supply starts as one whole: a new one
// replaces the stored one.
type Snapshot struct {
	Eintraege []Entry   `json:"eintraege"`
	Quelle    string    `json:"quelle"` // the name of the sending script
	Stand     time.Time `json:"stand"`  // when the source data were taken
}

// StoredSnapshot is a snapshot as kept: the current one or one of its
// predecessors.
type StoredSnapshot struct {
	ID         int64      `json:"id"`
	Snapshot              // the snapshot as received
	Hash       string     `json:"hash"` // sha256 of the canonical snapshot; an identical one replaces nothing
	ReceivedAt time.Time  `json:"empfangen_at"`
	KeyID      string     `json:"key_id,omitempty"`
	Superseded *time.Time `json:"ersetzt_at,omitempty"`
}

// Role is the market role that receives a series.
type Role string

// Market roles of the tree: the balancing responsible party receives the
// balancing-group sum series (BK-SZR), the supplier the supplier sum series
// (LF-SZR).
const (
	RoleBKV Role = "BKV"
	RoleLF  Role = "LF"
)

// Roles lists the market roles in the order of the tree.
var Roles = []Role{RoleBKV, RoleLF}

// SeriesType is a MaBiS series type code (ZRT).
type SeriesType string

// Series types.
const (
	SLS SeriesType = "SLS" // standard load profile sum (SLP)
	TLS SeriesType = "TLS" // temperature-dependent load profile sum (TLP)
	LGS SeriesType = "LGS" // load-curve sum (interval metered)
	EGS SeriesType = "EGS" // feed-in curve sum
	SES SeriesType = "SES" // standard feed-in profile sum
	TES SeriesType = "TES" // temperature-dependent feed-in profile sum
)

// SeriesTypes lists the accepted series types.
var SeriesTypes = []SeriesType{SLS, TLS, LGS, EGS, SES, TES}

// Action says whether a record activates or deactivates a series.
type Action string

// Actions: UTILMD 55062 activates, 55063 deactivates.
const (
	Aktivierung   Action = "aktivierung"
	Deaktivierung Action = "deaktivierung"
)

// Source says where an activation record came from.
type Source string

// Sources. Import is the set last imported through the API or a dropped
// file, replaced as a whole by the next import; UTILMD records come from
// the EDIFACT inbox, one set per file.
const (
	SourceImport Source = "import"
	SourceUTILMD Source = "utilmd"
)

// Activation is one record of a series' activation or deactivation by a DSO:
// the series of Zeitreihentyp for the contract (the balancing group EIC
// Bilanzkreis) in a balancing area, towards a market role. An activation is
// in force on [GueltigAb, GueltigBis); a deactivation ends the series from
// GueltigAb on.
type Activation struct {
	Marktrolle          Role          `json:"marktrolle"`
	NetzbetreiberMPID   string        `json:"netzbetreiber_mp_id"`
	Bilanzierungsgebiet string        `json:"bilanzierungsgebiet"`
	Bilanzkreis         string        `json:"bilanzkreis"`
	Zeitreihentyp       SeriesType    `json:"zeitreihentyp"`
	Aktion              Action        `json:"aktion"`
	GueltigAb           pipeline.Day  `json:"gueltig_ab"`
	GueltigBis          *pipeline.Day `json:"gueltig_bis,omitempty"`
	Referenz            string        `json:"referenz,omitempty"` // e.g. the UTILMD transaction (IDE+24)
}

// StoredActivation is an activation record with its origin.
type StoredActivation struct {
	Activation
	Quelle     Source    `json:"quelle"`
	SourceKey  string    `json:"quelle_schluessel"` // "import", or the EDIFACT file's bucket key
	ReceivedAt time.Time `json:"empfangen_at"`
}

// State is the state (zustand) of a series cell of the tree.
type State string

// Cell states (contract section 3).
const (
	Erwartet    State = "erwartet"    // expected, needed from a day still to come
	Aktiv       State = "aktiv"       // active on the key day
	Deaktiviert State = "deaktiviert" // deactivated and no longer needed
	Fehlt       State = "fehlt"       // needed for customers whose supply started, not active
	Unerwartet  State = "unerwartet"  // active but not expected
)

// States lists the cell states.
var States = []State{Erwartet, Aktiv, Deaktiviert, Fehlt, Unerwartet}

// Rules say which series the tree expects: for each customer group the
// series types it needs, towards each of Roles.
type Rules struct {
	Roles []Role
	Types map[Group][]SeriesType
}

// DefaultRules expect, towards BKV and LF, SLS for SLP customers, TLS for
// TLP customers and LGS for RLM and iMSys customers (quarter-hour balanced
// iMSys locations aggregate as LGS: unverified, see domain notes), and no
// series for customers without a forecast type.
func DefaultRules() Rules {
	return Rules{
		Roles: []Role{RoleBKV, RoleLF},
		Types: map[Group][]SeriesType{
			GroupSLP: {SLS}, GroupTLP: {TLS}, GroupRLM: {LGS}, GroupIMSys: {LGS},
		},
	}
}

// Filter narrows the tree. Empty fields match everything.
type Filter struct {
	Netzbetreiber       string               // DSO mp_id
	Bilanzierungsgebiet string               // balancing area EIC
	Regelzone           pipeline.ControlArea // control area
	Marktrolle          Role
	Zustand             State // only cells in this state (and the nodes above them)
}

// Input is everything the tree is built from.
type Input struct {
	Snapshot    *StoredSnapshot // nil when no snapshot was received
	Activations []StoredActivation
	// Contracts are the balancing groups (EIC) that customers in a control
	// area belong to; Default applies where a control area has none.
	Contracts        map[pipeline.ControlArea][]string
	DefaultContracts []string
	// Names maps DSO mp_ids to names (the market-partner registry), used
	// where the snapshot names none.
	Names    map[string]string
	Stichtag pipeline.Day // the key day: states are as of this day
	Rules    Rules
	Filter   Filter
}

// Counts are the series of a node by state.
type Counts struct {
	Erwartet    int `json:"erwartet"`
	Aktiv       int `json:"aktiv"`
	Deaktiviert int `json:"deaktiviert"`
	Fehlt       int `json:"fehlt"`
	Unerwartet  int `json:"unerwartet"`
}

// Customers are the confirmed customers of a node by group.
type Customers struct {
	IMSys   int `json:"imsys"`
	RLM     int `json:"rlm"`
	SLP     int `json:"slp"`
	TLP     int `json:"tlp"`
	OhneTyp int `json:"ohne_typ"`
}

// Cell is one series of the tree: a series type of a contract at a DSO and
// balancing area, towards a market role.
type Cell struct {
	Zeitreihentyp SeriesType `json:"zeitreihentyp"`
	Zustand       State      `json:"zustand"`
	// BenoetigtAb is the earliest supply start of the customers that need
	// the series (nil when not expected); Kunden counts those customers.
	BenoetigtAb *pipeline.Day `json:"benoetigt_ab"`
	Kunden      int           `json:"kunden"`
	// AktivAb/AktivBis is the activation in force on the key day, or the
	// last one before it; DeaktiviertAb the day a deactivation took effect.
	AktivAb       *pipeline.Day `json:"aktiv_ab"`
	AktivBis      *pipeline.Day `json:"aktiv_bis"`
	DeaktiviertAb *pipeline.Day `json:"deaktiviert_ab"`
	// Quelle and Referenz name the record that decided the state.
	Quelle   Source `json:"quelle,omitempty"`
	Referenz string `json:"referenz,omitempty"`
}

// ContractNode is a contract (balancing group) at a DSO and balancing area.
type ContractNode struct {
	Vertrag    string    `json:"vertrag"`
	Vertraege  []string  `json:"vertraege"`
	Kunden     Customers `json:"kunden"`
	Zaehler    Counts    `json:"zaehler"`
	Zeitreihen []Cell    `json:"zeitreihen"`
}

// AreaNode is a DSO and balancing area under a market role.
type AreaNode struct {
	NetzbetreiberMPID   string               `json:"netzbetreiber_mp_id"`
	Netzbetreiber       string               `json:"netzbetreiber"`
	Bilanzierungsgebiet string               `json:"bilanzierungsgebiet"`
	Regelzone           pipeline.ControlArea `json:"regelzone"` // "" when no snapshot entry names it
	Vertraege           []string             `json:"vertraege"`
	Kunden              Customers            `json:"kunden"`
	Zaehler             Counts               `json:"zaehler"`
	Knoten              []ContractNode       `json:"knoten"`
}

// RoleNode is a market role.
type RoleNode struct {
	Marktrolle Role       `json:"marktrolle"`
	Vertraege  []string   `json:"vertraege"`
	Kunden     Customers  `json:"kunden"`
	Zaehler    Counts     `json:"zaehler"`
	Knoten     []AreaNode `json:"knoten"`
}

// Tree is the activation tree (/zeitreihen/aktivierungen).
type Tree struct {
	Vertraege []string   `json:"vertraege"`
	Kunden    Customers  `json:"kunden"`
	Zaehler   Counts     `json:"zaehler"`
	Knoten    []RoleNode `json:"knoten"`
}
