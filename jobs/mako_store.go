package jobs

import (
	"context"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
)

// MakoStore is what the market communication needs of the database
// (implemented by sqldb.DB; the contract suite in storage/sqldb runs against
// SQLite and PostgreSQL).
type MakoStore interface {
	// ReplacePartners replaces the registry as a whole in one transaction.
	// Contacts (e-mail addresses) no longer listed get an end date and stay
	// as history; an import with the hash of the current one changes nothing.
	ReplacePartners(ctx context.Context, imp mako.RegistryImport) (mako.RegistryResult, error)
	// Partners lists the current registry sorted by mp_id.
	Partners(ctx context.Context) ([]mako.Partner, error)
	// Partner returns one partner or a NotFound error.
	Partner(ctx context.Context, mpid string) (mako.Partner, error)
	// PartnerEmails maps every address ever listed for a partner (current and
	// history, lower-cased) to its mp_id; a current listing wins over history.
	PartnerEmails(ctx context.Context) (map[string]string, error)

	// EDIFileETags maps the keys of the indexed files under prefix to the
	// ETag they were indexed with.
	EDIFileETags(ctx context.Context, prefix string) (map[string]string, error)
	// IndexEDIFiles indexes files and their messages in one transaction. A key
	// indexed before with the same ETag is left alone; with another ETag its
	// messages are replaced. Answers (CONTRL/APERAK in) are applied to the
	// messages of ours they answer whichever of the two is indexed first
	// (mako.Answer.Supersedes decides between answers).
	IndexEDIFiles(ctx context.Context, files []mako.EDIFile) error
	// EDIFileErrors lists the files that could not be parsed, newest first.
	EDIFileErrors(ctx context.Context, limit int) ([]mako.EDIFile, error)
	// LookupReferences finds messages whose interchange reference, message
	// reference or document number equals one of refs; the map is keyed by
	// the ref looked up.
	LookupReferences(ctx context.Context, refs []string) (map[string][]mako.StoredMessage, error)
	// MakoFacts returns per partner mp_id the newest message of each stream
	// and the newest contact per channel (mails are attributed to partners
	// through PartnerEmails).
	MakoFacts(ctx context.Context) (map[string]mako.PartnerFacts, error)
	// NextInterchangeRef returns a new, never repeated interchange reference
	// (at most 14 characters), unique across processes sharing the database.
	NextInterchangeRef(ctx context.Context) (string, error)

	// ReplaceActivations replaces the series activation records taken from
	// one received EDIFACT file (source utilmd, key = the file's key).
	ReplaceActivations(ctx context.Context, src zeitreihen.Source, key string, recs []zeitreihen.Activation, now time.Time) (bool, error)

	// MailSources lists the Source values of indexed mails that start with prefix.
	MailSources(ctx context.Context, prefix string) (map[string]bool, error)
	// IndexMails stores mails, skipping those whose Source, or Folder and
	// non-empty MessageID, are indexed already; it returns how many were new.
	IndexMails(ctx context.Context, mails []mako.Mail) (int, error)
	// Mails lists the mails of a direction dated at or after since, newest first.
	Mails(ctx context.Context, dir mako.Direction, since time.Time) ([]mako.Mail, error)
	// IMAPState and SetIMAPState keep the sync position of an IMAP folder.
	IMAPState(ctx context.Context, folder string) (uidValidity, lastUID uint32, err error)
	SetIMAPState(ctx context.Context, folder string, uidValidity, lastUID uint32) error

	// NoteVormerkung pre-lists a stream of a partner for re-sending. An
	// existing pre-listing of the same key is kept as it is (created false).
	NoteVormerkung(ctx context.Context, v mako.Vormerkung) (mako.Vormerkung, bool, error)
	// Vormerkungen lists the pre-listings by noted_at, then key, with the
	// partner's current name.
	Vormerkungen(ctx context.Context) ([]mako.Vormerkung, error)
	// DeleteVormerkung removes a pre-listing and returns it, or NotFound. In
	// the same transaction it records the dismissal of the pre-listing's
	// Basis for the key (replacing an earlier dismissal of the key).
	DeleteVormerkung(ctx context.Context, mpid string, st mako.Stream) (mako.Vormerkung, error)
	// ResolveVormerkung removes the pre-listing of a key, if any, and forgets
	// a dismissal of it: the stream needs no sending any more.
	ResolveVormerkung(ctx context.Context, mpid string, st mako.Stream) error
	// Dismissed maps the keys (mako.VormerkungKey) of deleted pre-listings to
	// the Basis they had when deleted.
	Dismissed(ctx context.Context) (map[string]string, error)

	// RecordEvent appends to the console feed.
	RecordEvent(ctx context.Context, ev pipeline.Event) error
}
