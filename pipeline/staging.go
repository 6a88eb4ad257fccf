package pipeline

import (
	"encoding/json"
	"time"
)

// Status is the outcome of a submission for the acknowledgment.
type Status string

// Submission outcomes. Rejected requests are recorded in the audit trail with
// their own outcome words (see Outcome* constants).
const (
	Created   Status = "created"   // every key was new
	Replaced  Status = "replaced"  // at least one key got a new version
	Unchanged Status = "unchanged" // identical to what is current: no new version
	Validated Status = "validated" // validate_only: checked, nothing stored
)

// StageResult tells what staging did with a submission's keys.
type StageResult struct {
	Status    Status
	Created   int
	Replaced  int
	Unchanged int
	// Version is the current version of the single key of a forecast; for
	// multi-key submissions it is the highest version written.
	Version int
}

// Tally derives the overall status from the per-key counts.
func (r *StageResult) Tally() {
	switch {
	case r.Created+r.Replaced == 0:
		r.Status = Unchanged
	case r.Replaced > 0:
		r.Status = Replaced
	default:
		r.Status = Created
	}
}

// AuditEntry is one data request as the audit trail keeps it.
type AuditEntry struct {
	ID         int64     `json:"id"`
	ReceivedAt time.Time `json:"received_at"`
	KeyID      string    `json:"key_id,omitempty"`
	// Issuer and ClientID name the machine client of a request that sent
	// an access token instead of a key.
	Issuer      string         `json:"issuer,omitempty"`
	ClientID    string         `json:"client_id,omitempty"`
	PortfolioID string         `json:"portfolio,omitempty"`
	Endpoint    string         `json:"endpoint"`
	InputHash   string         `json:"input_hash,omitempty"`
	Outcome     string         `json:"outcome"`
	StatusCode  int            `json:"status_code"`
	Counts      map[string]int `json:"counts,omitempty"`
	Detail      string         `json:"detail,omitempty"`
	// RequestID is the request's X-Request-ID (sent by the client or
	// generated), which its log lines carry as well.
	RequestID string `json:"request_id,omitempty"`
	// Operator is the e-mail address of the operator who acted in the web
	// console (signed in by single sign-on); empty for keys and tokens.
	Operator string `json:"operator,omitempty"`
}

// Version describes one stored version of a staged key.
type Version struct {
	Version      int        `json:"version"`
	InputHash    string     `json:"input_hash"`
	ReceivedAt   time.Time  `json:"received_at"`
	SupersededAt *time.Time `json:"superseded_at,omitempty"`
}

// StoredForecast is a stored forecast version with its canonical body.
type StoredForecast struct {
	Version
	PortfolioID string          `json:"portfolio"`
	DeliveryDay Day             `json:"delivery_day"`
	Body        json.RawMessage `json:"submission"`
}

// StoredLocation is a stored master-data version of one market location.
type StoredLocation struct {
	Version
	PortfolioID string  `json:"portfolio"`
	Malo        string  `json:"malo"`
	Slices      []Slice `json:"slices"`
}

// StoredMetered is the stored version of one market location's metered day.
type StoredMetered struct {
	Version
	PortfolioID string `json:"portfolio"`
	MeteredEntry
}

// StoredProfile is the stored version of one rolled-out profile day.
type StoredProfile struct {
	Version
	PortfolioID string `json:"portfolio"`
	ProfileEntry
}
