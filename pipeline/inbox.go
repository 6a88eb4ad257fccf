package pipeline

import (
	"encoding/json"
	"time"
)

// InboxState is where a dropped file is in its life. A file is open while it
// is processing, staged or rejecting; the open states exist so that a crash
// between staging and moving the file finishes the move on restart instead of
// staging the file a second time.
type InboxState string

// Inbox states.
const (
	InboxProcessing InboxState = "processing" // claimed, being validated or staged
	InboxStaged     InboxState = "staged"     // staged and committed, not yet moved to processed/
	InboxRejecting  InboxState = "rejecting"  // found invalid, not yet moved to rejected/
	InboxProcessed  InboxState = "processed"  // moved to processed/ with its receipt
	InboxRejected   InboxState = "rejected"   // moved to rejected/ with its errors
	// InboxFailed is a file the processor gave up on after its attempts
	// ended in errors that were not the file's fault (a store that kept
	// failing, a bug). It stays where it is in the inbox, skipped by the
	// scans, until an operator retries it. It is a closed state: nothing
	// was staged for the file, and its next life is a new record.
	InboxFailed InboxState = "failed"
)

// Open reports whether a file in this state still has work to do. Failed is
// not open: the processor is done with the record.
func (s InboxState) Open() bool {
	return s == InboxProcessing || s == InboxStaged || s == InboxRejecting
}

// InboxFile is one life of a dropped file: from its claim until it has been
// moved out of the inbox. A file dropped again under the same name starts a
// new life with a new ID.
type InboxFile struct {
	ID          int64      `json:"id"`
	Key         string     `json:"key"`
	ETag        string     `json:"etag"`
	Size        int64      `json:"size"`
	PortfolioID string     `json:"portfolio,omitempty"`
	Kind        string     `json:"kind,omitempty"`
	Name        string     `json:"name,omitempty"`
	State       InboxState `json:"state"`
	Owner       string     `json:"owner,omitempty"`
	LeaseUntil  time.Time  `json:"lease_until"`
	Attempts    int        `json:"attempts"`
	InputHash   string     `json:"input_hash,omitempty"`
	Status      Status     `json:"status,omitempty"`
	Reason      string     `json:"reason,omitempty"`
	DestKey     string     `json:"dest,omitempty"`
	// Result is the receipt or the errors document; reports pick from it.
	Result     json.RawMessage `json:"-"`
	ClaimedAt  time.Time       `json:"claimed_at"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
	// RetriedAt is when an operator sent a failed or rejected file back
	// into the inbox; the next life of the file is a new record.
	RetriedAt *time.Time `json:"retried_at,omitempty"`
	// LastError is the error of the last attempt that ended without an
	// outcome (a store or the database failing, a bug), for operators and
	// without secrets. A failed file's Reason sums it up as well.
	LastError string `json:"last_error,omitempty"`
	// RetryOf is set on a processing record that only holds the key while
	// the rejected file of record RetryOf is moved back into the inbox; the
	// record is deleted when the move is done.
	RetryOf int64 `json:"retry_of,omitempty"`
}

// InboxCounts are the inbox figures the console summary and the metrics
// show: open files (Processing, a retry moving a file back included), and
// the files that failed or were rejected since a time (failed ones not yet
// retried; rejected ones whether retried or not).
type InboxCounts struct {
	Processing int `json:"processing"`
	Failed     int `json:"failed"`
	Rejected   int `json:"rejected"`
}

// Event is one entry of the operators' console feed.
type Event struct {
	ID          int64     `json:"id"`
	At          time.Time `json:"at"`
	Kind        string    `json:"kind"`
	PortfolioID string    `json:"portfolio,omitempty"`
	Subject     string    `json:"subject"`
	// DeliveryDay is the delivery day the event concerns, when it concerns
	// one (runs, schedules, TSO answers, staged files of one day).
	DeliveryDay *Day            `json:"delivery_day,omitempty"`
	Data        json.RawMessage `json:"data"`
}

// ObjectInfo describes an object in a bucket. ETag is a change token: it
// differs when the object at the key is replaced, and is not necessarily a
// hash of the content.
type ObjectInfo struct {
	Key      string    `json:"key"`
	Size     int64     `json:"size"`
	ETag     string    `json:"etag"`
	Modified time.Time `json:"modified"`
}

// InboxQuery selects file records for the inbox report.
type InboxQuery struct {
	Portfolio string       // "" for all
	States    []InboxState // none for all
	// BeforeID pages by keyset: only records with a smaller id; 0 does not
	// bound.
	BeforeID int64
	// NotRetried leaves out failed and rejected files sent back already.
	NotRetried bool
	Limit      int
}

// EventQuery pages through the console feed.
type EventQuery struct {
	AfterID   int64  // only events with a greater id
	Kind      string // "" for all; a trailing "*" matches a prefix
	Portfolio string // "" for all
	// From and To bound the event time (From inclusive, To exclusive); zero
	// values do not bound.
	From, To time.Time
	Day      *Day // only events about this delivery day
	Limit    int
}

// PendingInbox sums up the files waiting in the inbox that no process has
// claimed yet: how many, and since when the oldest waits. Counting stops at
// a cap; Truncated says it did, and Oldest is then the oldest of the files
// counted.
type PendingInbox struct {
	Count     int        `json:"count"`
	Oldest    *time.Time `json:"oldest_since,omitempty"`
	Truncated bool       `json:"truncated"`
}
