// Package mako is the domain of the market communication with the distribution
// system operators (DSOs): the partner registry, the EDIFACT interchanges and
// mails that went out and came in, the four streams an operator watches per
// DSO, the morning triage of mail replies and the re-send queue
// (Nachversand). It holds types and pure functions only; parsing lives in
// ingest/edifact and ingest/mail, storage in storage/sqldb, and the wiring of
// sync and send runs in jobs.
package mako

import (
	"regexp"
	"time"
)

// Direction says whether we sent a message or received it.
type Direction string

// The two directions.
const (
	Out Direction = "out"
	In  Direction = "in"
)

// Stream is one of the four market-communication streams of a DSO row.
type Stream string

// The four streams, in the order of the overview row.
const (
	// PartinOut is our own communication data (PARTIN 37000 as supplier,
	// 37003 as BKV) sent to the DSO.
	PartinOut Stream = "partin_out"
	// AckIn is the newest acknowledgment (CONTRL or APERAK) the DSO sent us.
	AckIn Stream = "ack_in"
	// PartinIn is the DSO's communication data (PARTIN 37001) received.
	PartinIn Stream = "partin_in"
	// ZuordnungOut is the Zuordnungsermaechtigung (UTILMD 55071) sent to the
	// DSO.
	ZuordnungOut Stream = "zuordnungsermaechtigung_out"
)

// Streams lists the streams in row order.
var Streams = []Stream{PartinOut, AckIn, PartinIn, ZuordnungOut}

// SendStreams are the streams the service writes itself and can re-send.
var SendStreams = []Stream{PartinOut, ZuordnungOut}

// ParseSendStream accepts one of SendStreams.
func ParseSendStream(s string) (Stream, bool) {
	for _, st := range SendStreams {
		if string(st) == s {
			return st, true
		}
	}
	return "", false
}

// Verdict is what an acknowledgment says about the message it answers, and
// for a sent message what the answers to it said so far.
type Verdict string

// Verdicts. Accepted and Rejected are final; Received (CONTRL action code 8)
// only says the file arrived.
const (
	VerdictNone     Verdict = ""
	Accepted        Verdict = "bestaetigt" // CONTRL 7, APERAK BGM+312
	Rejected        Verdict = "abgelehnt"  // CONTRL 4, APERAK BGM+313
	Received        Verdict = "erhalten"   // CONTRL 8
	VerdictUnknown  Verdict = "unbekannt"  // the answered message is not ours or not found
	VerdictNoAnswer Verdict = "offen"      // a sent message without an answer yet
)

// Partner is a DSO of the BDEW code registry.
type Partner struct {
	// MPID is the 13-digit BDEW market-partner id (prefix 99 for electricity).
	MPID string `json:"mp_id"`
	Name string `json:"name"`
	// ControlArea is one of the four control area names, or "" when the
	// registry export does not say.
	ControlArea string `json:"control_area"`
	// Emails are the addresses for market communication, lower-cased.
	Emails []string `json:"emails"`
	// BalancingArea is the DSO's balancing area EIC (type Y), needed for the
	// Zuordnungsermaechtigung; "" when unknown.
	BalancingArea string `json:"balancing_area,omitempty"`
}

// mpIDPattern is 13 digits; electricity ids start with 99, gas ids with 98.
var mpIDPattern = regexp.MustCompile(`^\d{13}$`)

// ValidMPID reports whether s is a 13-digit BDEW market-partner id.
func ValidMPID(s string) bool { return mpIDPattern.MatchString(s) }

// RegistryImport is one import of the partner registry: it replaces the
// registry as a whole; the contacts of earlier imports stay as history.
type RegistryImport struct {
	Source   string // "api" or the bucket key
	Hash     string // SHA-256 (hex) of the file
	At       time.Time
	Partners []Partner
}

// RegistryResult reports what an import changed.
type RegistryResult struct {
	Partners      int    `json:"partners"`
	Added         int    `json:"added"`
	Removed       int    `json:"removed"`
	ContactsAdded int    `json:"contacts_added"`
	ContactsEnded int    `json:"contacts_ended"`
	Hash          string `json:"input_hash"`
	Unchanged     bool   `json:"unchanged"`
}

// Interchange is one parsed EDIFACT file (UNB..UNZ).
type Interchange struct {
	// Sender and Receiver are the UNB party ids with their code qualifiers
	// (500 = BDEW, 14 = GLN, 502 = DVGW).
	Sender            string
	SenderQualifier   string
	Receiver          string
	ReceiverQualifier string
	Ref               string    // UNB 0020, the interchange reference
	PreparedAt        time.Time // UNB date and time (UTC)
	AppRef            string    // UNB 0026, e.g. the process family
	Test              bool      // UNB 0035 = 1
	Messages          []Message
}

// Message is one UNH..UNT message of an interchange.
type Message struct {
	Ref          string    // UNH 0062, the message reference
	Type         string    // UNH 0065: PARTIN, CONTRL, APERAK, UTILMD, MSCONS, ...
	Version      string    // e.g. "D:07B:UN:2.2"
	BGM          string    // BGM document name code, e.g. E01, 312, 313, Z31
	DocumentNo   string    // BGM 1004
	ProcessID    string    // RFF+Z13 Pruefidentifikator, e.g. 37000, 55071
	Date         time.Time // DTM+137 (UTC), zero when missing
	References   []Reference
	Parties      []Party
	Ack          *Ack // CONTRL and APERAK only
	SegmentCount int  // UNT 0074 as checked
	// Series holds the transactions of a UTILMD message that activate or
	// deactivate a series (55062/55063), one entry per transaction in file
	// order. A UTILMD message may bundle several transactions, and each is a
	// request of its own, so none may be dropped. Transactions of other
	// processes are left out, and Series is nil when none is kept and for
	// all other message types.
	Series []SeriesInfo
}

// SeriesInfo is what one UTILMD transaction (SG4, starting with IDE+24) of
// an activation or deactivation of a series (55062/55063) says. Segments
// that come before the first IDE+24 of a message form a transaction of
// their own, since some senders leave out the IDE. Within a transaction the
// first value of each kind counts. The CCI qualifiers and the CAV position
// are taken from sample files, not from the UTILMD MIG: unverified.
type SeriesInfo struct {
	Transaction string // IDE+24, "" when the transaction has no IDE
	// ProcessID is the RFF+Z13 inside the transaction, "" when it has none;
	// the message's ProcessID then applies.
	ProcessID  string
	Start, End time.Time // DTM+158 / DTM+159 (UTC), zero when absent
	Area       string    // CCI+Z20: balancing area EIC (Y)
	Group      string    // CCI+Z19: balancing group EIC (X)
	Family     string    // CCI+15 code: Z21 = BK-SZR (towards the BKV), Z20 = LF-SZR (towards the supplier); unverified
	Type       string    // CAV: series type, e.g. SLS
}

// Reference is an RFF segment.
type Reference struct {
	Qualifier string `json:"qualifier"` // ACE, Z13, AGO, TN, ...
	Value     string `json:"value"`
}

// Party is a NAD segment.
type Party struct {
	Qualifier string `json:"qualifier"` // MS (sender), MR (receiver), ...
	ID        string `json:"id"`
	CodeList  string `json:"code_list"` // 293 = BDEW, 9 = GLN, 332 = DVGW
}

// Ack is what a CONTRL or APERAK says and which message it answers.
type Ack struct {
	Verdict Verdict
	// RefInterchange is the interchange answered (CONTRL UCI 0020).
	RefInterchange string
	// RefMessage is the message answered (APERAK RFF+ACE, or a CONTRL UCM
	// message reference).
	RefMessage string
	// Codes are ERC error codes (APERAK) or syntax error codes (CONTRL).
	Codes []string
	// Text is the FTX free text, joined.
	Text string
}

// EDIFile is a file of the EDIFACT channel as indexed: where it lies, which
// way it went, and either its interchange or why it could not be parsed.
type EDIFile struct {
	Key       string    `json:"key"` // bucket key under outbox/edifact/ or inbox/edifact/
	ETag      string    `json:"etag"`
	Size      int64     `json:"size"`
	Direction Direction `json:"direction"`
	SeenAt    time.Time `json:"seen_at"`
	// Error is set when the file is no parseable interchange; the file is
	// kept and reported, its Interchange is nil.
	Error       string       `json:"error,omitempty"`
	Interchange *Interchange `json:"-"`
}

// Mail is one mail of the mail channel.
type Mail struct {
	// Source identifies the mail for deduplication: "imap:<folder>:<uidvalidity>:<uid>"
	// or the bucket key of a dropped .eml file.
	Source    string    `json:"source"`
	Folder    string    `json:"folder"`
	Direction Direction `json:"direction"`
	MessageID string    `json:"message_id"`
	InReplyTo string    `json:"in_reply_to,omitempty"`
	Date      time.Time `json:"date"`
	From      string    `json:"from"` // address only, lower-cased
	FromName  string    `json:"from_name,omitempty"`
	To        []string  `json:"to"` // addresses, lower-cased (To and Cc)
	Subject   string    `json:"subject"`
	// Text is the decoded plain-text body (HTML bodies reduced to text).
	Text string `json:"text"`
	// Attachments names the attached files.
	Attachments []string `json:"attachments,omitempty"`
}

// StoredMessage is an indexed EDIFACT message as the views read it back: the
// message with the facts of its file and what answered it.
type StoredMessage struct {
	ID             int64
	FileKey        string
	Direction      Direction
	PartnerMPID    string // the other side: UNB receiver of ours, UNB sender of theirs
	Type           string
	ProcessID      string
	BGM            string
	DocumentNo     string
	InterchangeRef string
	MessageRef     string
	At             time.Time // DTM+137, else the UNB time
	Stream         Stream    // "" for messages outside the four streams
	// For acknowledgments: their own verdict. For our messages: the verdict
	// of the newest answer, VerdictNone while unanswered.
	Verdict Verdict
	// AnsweredAt is the time of the newest answer to our message.
	AnsweredAt time.Time
}

// Contact is the newest contact with a partner on one channel.
type Contact struct {
	At        time.Time
	Channel   string // "edifact" or "mail"
	Direction Direction
	// What describes the contact, e.g. "PARTIN 37001 erhalten" or the mail
	// subject.
	What string
}

// PartnerFacts are the stored facts the overview of one partner is derived
// from: the newest message per stream and the newest contact per channel.
type PartnerFacts struct {
	Latest map[Stream]StoredMessage
	Edi    *Contact
	Mail   *Contact
}

// Vormerkung is a pre-listing for the re-send queue (Nachversand).
type Vormerkung struct {
	MPID    string    `json:"mp_id"`
	Stream  Stream    `json:"stream"`
	Reason  string    `json:"reason"`
	NotedAt time.Time `json:"noted_at"`
	Name    string    `json:"name"`
	// Basis fingerprints the stream state that caused the pre-listing (state
	// and the newest message's reference). Deleting a pre-listing remembers
	// its basis, and the automatic noting does not bring it back until the
	// stream's state changes.
	Basis string `json:"-"`
}

// Key is the pre-listing's key in the API: "<mp_id>:<stream>".
func (v Vormerkung) Key() string { return VormerkungKey(v.MPID, v.Stream) }

// VormerkungKey builds the key of a pre-listing.
func VormerkungKey(mpid string, st Stream) string { return mpid + ":" + string(st) }

// ParseVormerkungKey splits "<mp_id>:<stream>"; ok is false for a malformed
// key (not 13 digits, or a stream the service cannot send).
func ParseVormerkungKey(key string) (mpid string, st Stream, ok bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == ':' {
			mpid = key[:i]
			st, ok = ParseSendStream(key[i+1:])
			return mpid, st, ok && ValidMPID(mpid)
		}
	}
	return "", "", false
}
