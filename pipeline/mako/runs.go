package mako

import "time"

// SyncReport says what a sync found.
type SyncReport struct {
	Registry      []RegistryReport `json:"registry"`
	EDIFiles      int              `json:"edifact_files"`
	EDIUnparsable int              `json:"edifact_unparseable"`
	MailFiles     int              `json:"mail_files"`
	MailRejected  int              `json:"mail_unparseable"`
	IMAPMails     int              `json:"imap_mails"`
	Noted         int              `json:"vormerkungen_noted"`
	Duration      time.Duration    `json:"-"`
}

// RegistryReport is the outcome of one registry file.
type RegistryReport struct {
	Key     string          `json:"key"`
	Result  *RegistryResult `json:"result,omitempty"`
	Skipped int             `json:"skipped_rows"`
	Error   string          `json:"error,omitempty"`
}

// Sent describes an interchange the service wrote to the outbox.
type Sent struct {
	MPID           string    `json:"mp_id"`
	Stream         Stream    `json:"stream"`
	Key            string    `json:"key"`
	InterchangeRef string    `json:"interchange_ref"`
	MessageRef     string    `json:"message_ref"`
	SentAt         time.Time `json:"sent_at"`
}

// SendResult is the outcome of re-sending one pre-listing.
type SendResult struct {
	Vormerkung Vormerkung `json:"vormerkung"`
	Sent       *Sent      `json:"sent,omitempty"`
	Error      string     `json:"error,omitempty"`
}
