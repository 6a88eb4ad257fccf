package zeitreihen

import (
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// SnapshotResult is the answer to a ramp-up snapshot.
type SnapshotResult struct {
	Ersetzt     bool      `json:"ersetzt"` // false: identical to the stored snapshot, nothing changed
	Stand       time.Time `json:"stand"`
	Quelle      string    `json:"quelle"`
	Eintraege   int       `json:"eintraege"`
	Summe       int       `json:"summe"`
	EmpfangenAt time.Time `json:"empfangen_at"`
}

// SnapshotInfo names the snapshot a view was built from.
type SnapshotInfo struct {
	Stand       time.Time `json:"stand"`
	Quelle      string    `json:"quelle"`
	EmpfangenAt time.Time `json:"empfangen_at"`
}

// Marktrollen is the answer of GET /v1/process/marktrollen: the activation
// tree under zeitreihen.aktivierungen, with the rules it was built by.
type Marktrollen struct {
	Stichtag pipeline.Day  `json:"stichtag"`
	Hochlauf *SnapshotInfo `json:"hochlauf"` // null when no snapshot was received
	// Regeln are the series types each customer group needs, towards the
	// market roles in Rollen.
	Regeln     map[Group][]SeriesType `json:"regeln"`
	Rollen     []Role                 `json:"rollen"`
	Zeitreihen struct {
		Aktivierungen Tree `json:"aktivierungen"`
	} `json:"zeitreihen"`
}

// ActivationImport is the answer to an import of activation records.
type ActivationImport struct {
	Datensaetze int  `json:"datensaetze"`
	Geaendert   bool `json:"geaendert"` // false: the same records as the stored import
}
