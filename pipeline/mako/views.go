package mako

import "time"

// Status is the colour of an overview row; the rules are in the doc comment
// of BuildOverview and in docs/mako.md.
type Status string

// Row statuses. Red rows sort first under the "status" ordering.
const (
	Red    Status = "red"
	Yellow Status = "yellow"
	Green  Status = "green"
	Grey   Status = "grey"
)

// State is the state of one stream in an overview row.
type State string

// Stream states.
const (
	StateMissing  State = "fehlt"         // nothing in the window
	StateSent     State = "gesendet"      // sent, no answer yet, deadline not passed
	StateOverdue  State = "unbeantwortet" // sent, no answer after the deadline
	StateAccepted State = "bestaetigt"    // answered positively (or a positive acknowledgment received)
	StateRejected State = "abgelehnt"     // answered negatively (or a negative acknowledgment received)
	StateReceived State = "erhalten"      // received (PARTIN in; CONTRL 8)
)

// StreamState is one stream cell of an overview row.
type StreamState struct {
	State State      `json:"state"`
	At    *time.Time `json:"date"` // time of the newest message of the stream in the window
	// Type and ProcessID name the newest message, e.g. PARTIN 37000.
	Type      string `json:"edi_type,omitempty"`
	ProcessID string `json:"pruefidentifikator,omitempty"`
	// Ref is its interchange reference.
	Ref string `json:"referenz,omitempty"`
	// AnsweredAt is when the answer that set the state arrived.
	AnsweredAt *time.Time `json:"beantwortet_at,omitempty"`
}

// OverviewRow is one DSO of the overview.
type OverviewRow struct {
	MPID        string `json:"mp_id"`
	Name        string `json:"name"`
	ControlArea string `json:"control_area"`
	Status      Status `json:"status"`
	// Reasons say why the row has its status, one sentence per finding.
	Reasons          []string    `json:"status_gruende"`
	PartinOut        StreamState `json:"partin_out"`
	AckIn            StreamState `json:"ack_in"`
	PartinIn         StreamState `json:"partin_in"`
	ZuordnungOut     StreamState `json:"zuordnungsermaechtigung_out"`
	LetzterKontaktAt *time.Time  `json:"letzter_kontakt_at"`
	LetzterKontakt   *string     `json:"letzter_kontakt"`
	// Open lists the streams not in a final good state (see OpenStreams).
	Open []Stream `json:"offen"`
}

// OverviewGroup is the rows of one control area.
type OverviewGroup struct {
	ControlArea string         `json:"control_area"`
	Counts      map[Status]int `json:"counts"`
	Partners    []OverviewRow  `json:"partners"`
}

// Overview is the answer of GET /v1/process/market-partners/overview.
type Overview struct {
	Tage    int             `json:"tage"`
	Ordnung string          `json:"ordnung"`
	Stand   time.Time       `json:"stand"`
	Counts  map[Status]int  `json:"counts"`
	Groups  []OverviewGroup `json:"regelzonen"`
}

// Orderings of the overview rows within a control area.
const (
	OrderStatus  = "status"  // red first, then by name
	OrderKontakt = "kontakt" // newest letzter_kontakt_at first, no contact last
)

// Citation is one reference a reply cites, looked up among our messages.
type Citation struct {
	Referenz string `json:"referenz"`
	Gefunden bool   `json:"gefunden"`
	// Richtung, EDIType, Date: the message found ("" when not found).
	Richtung string `json:"richtung"`
	EDIType  string `json:"edi_type"`
	Date     string `json:"date"`
	// Bezug is the found message's "<interchange ref>/<message ref>";
	// BezugTyp says which of its references matched.
	Bezug    string  `json:"bezug"`
	BezugTyp string  `json:"bezug_typ"`
	Verdict  Verdict `json:"verdict"`
}

// Reference kinds (bezug_typ).
const (
	BezugInterchange = "uebertragungsdatei" // UNB 0020
	BezugMessage     = "nachricht"          // UNH 0062
	BezugDocument    = "dokument"           // BGM 1004
	BezugNone        = "keiner"
)

// Bewertung is the overall assessment of a reply.
type Bewertung string

// Assessments of a reply.
const (
	BewertungAbgelehnt    Bewertung = "abgelehnt"     // a cited message of ours was rejected
	BewertungBestaetigt   Bewertung = "bestaetigt"    // every cited message found was accepted
	BewertungOffen        Bewertung = "offen"         // cited messages found, not all answered
	BewertungOhneBezug    Bewertung = "ohne_bezug"    // references cited, none found
	BewertungOhneReferenz Bewertung = "ohne_referenz" // no reference cited
)

// Reply is one received mail in the reconciliation.
type Reply struct {
	Folder    string     `json:"folder"`
	Date      string     `json:"date"` // RFC 3339
	Sender    string     `json:"sender"`
	Subject   string     `json:"subject"`
	Zitiert   []Citation `json:"zitiert"`
	Bewertung Bewertung  `json:"bewertung"`
	MPID      string     `json:"mp_id"`
	Name      string     `json:"name"`
	Offen     []string   `json:"offen"`
	Text      string     `json:"text"`
}

// Reconciliation is the answer of GET /v1/process/mail/antworten-abgleich.
type Reconciliation struct {
	LookbackDays int     `json:"lookback_days"`
	Antworten    []Reply `json:"antworten"`
}
