package jobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schedbridge/schedbridge/ingest/edifact"
	"github.com/schedbridge/schedbridge/ingest/marketdata"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
)

// Bucket folders of the market communication. The inbox folders are reserved
// (pipeline.ReservedInboxFolders), so the bulk inbox never touches them.
const (
	EDIOutPrefix      = "outbox/edifact/"
	EDIInPrefix       = "inbox/edifact/"
	MailDropPrefix    = "inbox/mail/"
	RegistryPrefix    = "inbox/registry/"
	registryProcessed = "processed/registry/"
	registryRejected  = "rejected/registry/"
)

// MakoBucket is what the market communication needs of the object store.
type MakoBucket interface {
	List(ctx context.Context, prefix, startAfter string, limit int) ([]pipeline.ObjectInfo, error)
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	Move(ctx context.Context, src, dst string) error
	Stat(ctx context.Context, key string) (pipeline.ObjectInfo, error)
}

// Mailbox is an IMAP mailbox (ingest/mail's client behind an adapter in cmd).
type Mailbox interface {
	// Fetch hands the messages of folder after afterUID to fn in UID order
	// and returns the folder's UIDVALIDITY and the last UID handed over; a
	// changed UIDVALIDITY restarts the folder from its first message.
	Fetch(ctx context.Context, folder string, uidValidity, afterUID uint32, batch int, fn func(uid uint32, raw []byte) error) (newValidity, lastUID uint32, err error)
	Close() error
}

// Identity is who we are in the market communication: the sender of our
// PARTIN and of the Zuordnungsermaechtigung.
type Identity struct {
	MPID        string // our 13-digit BDEW code (sender of every interchange)
	Name        string
	Street      string
	PostalCode  string
	City        string
	ContactName string
	Email       string
	Phone       string
	// PartinProcessID is 37000 (supplier's data) or 37003 (BKV's data).
	PartinProcessID string
	// BalancingGroup is our balancing group's EIC (type X), which the
	// Zuordnungsermaechtigung names.
	BalancingGroup string
	// Supplier is the supplier whose locations the Zuordnungsermaechtigung
	// covers; our own MPID when empty (BKV and supplier in one company).
	Supplier string
	// SeriesTypes are the series types authorised (default SLS, TLS, LGS).
	SeriesTypes []string
}

// missing names the configuration keys a send of the stream needs and lacks:
// an interchange without our address or contact would be rejected by the DSO.
func (id Identity) missing(st mako.Stream) []string {
	var out []string
	for _, f := range []struct {
		key string
		ok  bool
	}{
		{"mako.self.mp_id (13 digits)", mako.ValidMPID(id.MPID)},
		{"mako.self.name", id.Name != ""},
		{"mako.self.street", id.Street != ""},
		{"mako.self.postal_code", id.PostalCode != ""},
		{"mako.self.city", id.City != ""},
		{"mako.self.email", id.Email != ""},
		{"mako.self.balancing_group", st != mako.ZuordnungOut || id.BalancingGroup != ""},
	} {
		if !f.ok {
			out = append(out, f.key)
		}
	}
	return out
}

// MakoConfig tunes the market communication.
type MakoConfig struct {
	Now    func() time.Time
	Logger *slog.Logger
	Self   Identity
	// ParseEDI and ParseMail decode files (ingest/edifact.Parse and
	// ingest/mail.Parse in the binary).
	ParseEDI  func([]byte) (*mako.Interchange, error)
	ParseMail func([]byte) (mako.Mail, error)
	// MailFolders maps folder names (IMAP folders and the folders under
	// inbox/mail/) to the direction of their mails; folders not listed hold
	// received mail. Default: INBOX in; mako.Sent, Gesendet, Gesendete Elemente out.
	MailFolders map[string]mako.Direction
	// IMAP opens the mailbox; nil syncs no IMAP mailbox. IMAPFolders are the
	// folders synced (default INBOX).
	IMAP        func(ctx context.Context) (Mailbox, error)
	IMAPFolders []string
	// MaxFileBytes caps the size of an EDIFACT file or mail (default 16 MiB);
	// a larger EDIFACT file is indexed as unparseable.
	MaxFileBytes int64
}

// Mako runs the market communication: it syncs what went out and came in into
// the index the views read, imports the registry, writes our own PARTIN and
// Zuordnungsermaechtigung, and keeps the re-send queue.
type Mako struct {
	store  MakoStore
	bucket MakoBucket
	cfg    MakoConfig
	syncMu sync.Mutex
	m      makoMetrics
}

// NewMako wires the market communication.
func NewMako(store MakoStore, bucket MakoBucket, cfg MakoConfig) (*Mako, error) {
	if cfg.ParseEDI == nil || cfg.ParseMail == nil {
		return nil, pipeline.Errorf(pipeline.Invalid, "mako: the EDIFACT and mail parsers are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MailFolders == nil {
		cfg.MailFolders = map[string]mako.Direction{"INBOX": mako.In, "mako.Sent": mako.Out, "Gesendet": mako.Out, "Gesendete Elemente": mako.Out}
	}
	if len(cfg.IMAPFolders) == 0 {
		cfg.IMAPFolders = []string{"INBOX"}
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = 16 << 20
	}
	if cfg.Self.Supplier == "" {
		cfg.Self.Supplier = cfg.Self.MPID
	}
	if len(cfg.Self.SeriesTypes) == 0 {
		cfg.Self.SeriesTypes = []string{"SLS", "TLS", "LGS"}
	}
	if cfg.Self.PartinProcessID == "" {
		cfg.Self.PartinProcessID = "37000"
	}
	return &Mako{store: store, bucket: bucket, cfg: cfg, m: newMakoMetrics()}, nil
}

// Sync indexes what is new on every channel, then pre-lists the streams that
// failed or are missing. One sync runs at a time per process; two processes
// syncing at once index the same files twice, which the store makes harmless.
func (m *Mako) Sync(ctx context.Context) (rep mako.SyncReport, err error) {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	start := time.Now()
	defer func() {
		rep.Duration = time.Since(start)
		m.observe(rep, err)
	}()
	if rep.Registry, err = m.syncRegistry(ctx); err != nil {
		return rep, err
	}
	for _, ch := range []struct {
		prefix string
		dir    mako.Direction
	}{{EDIOutPrefix, mako.Out}, {EDIInPrefix, mako.In}} {
		n, bad, err := m.syncEDI(ctx, ch.prefix, ch.dir)
		rep.EDIFiles += n
		rep.EDIUnparsable += bad
		if err != nil {
			return rep, err
		}
	}
	if rep.MailFiles, rep.MailRejected, err = m.syncMailDrops(ctx); err != nil {
		return rep, err
	}
	if m.cfg.IMAP != nil {
		if rep.IMAPMails, err = m.syncIMAP(ctx); err != nil {
			return rep, err
		}
	}
	noted, err := m.NoteDue(ctx)
	if err != nil {
		return rep, err
	}
	rep.Noted = len(noted)
	if rep.EDIFiles+rep.MailFiles+rep.IMAPMails+len(rep.Registry) > 0 {
		m.cfg.Logger.Info("mako sync", "edifact", rep.EDIFiles, "unparseable", rep.EDIUnparsable,
			"mail_files", rep.MailFiles, "imap_mails", rep.IMAPMails, "noted", rep.Noted, "duration_s", time.Since(start).Seconds())
	}
	return rep, nil
}

// list walks every object under prefix.
func (m *Mako) list(ctx context.Context, prefix string, fn func(pipeline.ObjectInfo) error) error {
	return listAll(ctx, m.bucket, prefix, fn)
}

// read fetches a whole object, refusing more than the cap.
func (m *Mako) read(ctx context.Context, key string) ([]byte, error) {
	return readCapped(ctx, m.bucket, key, m.cfg.MaxFileBytes)
}

// syncEDI indexes the files under prefix that are new or changed since they
// were indexed. A file that does not parse is indexed with its error, stays
// where it is and is listed by the error report; it is never dropped.
func (m *Mako) syncEDI(ctx context.Context, prefix string, dir mako.Direction) (n, bad int, err error) {
	known, err := m.store.EDIFileETags(ctx, prefix)
	if err != nil {
		return 0, 0, fmt.Errorf("mako sync %s: %w", prefix, err)
	}
	var batch []mako.EDIFile
	// The series activations (UTILMD 55062/55063) of received files go to
	// the Zeitreihen tree, one set per file, once the file is indexed. A
	// file indexed before is written again even without activations, so
	// that a changed file drops the records it no longer has.
	type fileActivations struct {
		key  string
		recs []zeitreihen.Activation
	}
	var acts []fileActivations
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := m.store.IndexEDIFiles(ctx, batch); err != nil {
			return fmt.Errorf("mako sync %s: index: %w", prefix, err)
		}
		for _, a := range acts {
			if _, err := m.store.ReplaceActivations(ctx, zeitreihen.SourceUTILMD, a.key, a.recs, m.cfg.Now()); err != nil {
				return fmt.Errorf("mako sync %s: activations: %w", a.key, err)
			}
		}
		batch, acts = batch[:0], acts[:0]
		return nil
	}
	err = m.list(ctx, prefix, func(o pipeline.ObjectInfo) error {
		etag, seen := known[o.Key]
		if seen && etag == o.ETag {
			return nil
		}
		f := mako.EDIFile{Key: o.Key, ETag: o.ETag, Size: o.Size, Direction: dir, SeenAt: m.cfg.Now()}
		data, err := m.read(ctx, o.Key)
		switch {
		case pipeline.KindOf(err) == pipeline.TooLarge:
			f.Error = pipeline.MessageOf(err)
		case err != nil:
			return err
		default:
			if f.Interchange, err = m.cfg.ParseEDI(data); err != nil {
				f.Error, f.Interchange = err.Error(), nil
			}
		}
		if f.Error != "" {
			bad++
			m.cfg.Logger.Warn("mako: unparseable EDIFACT file", "key", o.Key, "err", f.Error)
		}
		if dir == mako.In {
			var recs []zeitreihen.Activation
			if f.Interchange != nil {
				var problems []string
				recs, problems = zeitreihen.FromInterchange(f.Interchange)
				for _, p := range problems {
					m.cfg.Logger.Warn("mako: UTILMD activation not usable", "key", o.Key, "problem", p)
				}
			}
			if len(recs) > 0 || seen {
				acts = append(acts, fileActivations{o.Key, recs})
			}
		}
		n++
		batch = append(batch, f)
		if len(batch) >= 500 {
			return flush()
		}
		return nil
	})
	if err != nil {
		return n, bad, err
	}
	return n, bad, flush()
}

// direction is the direction of a mail folder's mails.
func (m *Mako) direction(folder string) mako.Direction {
	if d, ok := m.cfg.MailFolders[folder]; ok {
		return d
	}
	return mako.In
}

// syncMailDrops indexes the .eml files dropped under inbox/mail/<folder>/.
// The files stay: the folder is an archive like a mailbox.
func (m *Mako) syncMailDrops(ctx context.Context) (n, bad int, err error) {
	known, err := m.store.MailSources(ctx, MailDropPrefix)
	if err != nil {
		return 0, 0, fmt.Errorf("mako sync mail: %w", err)
	}
	var batch []mako.Mail
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		added, err := m.store.IndexMails(ctx, batch)
		if err != nil {
			return fmt.Errorf("mako sync mail: index: %w", err)
		}
		n += added
		batch = batch[:0]
		return nil
	}
	err = m.list(ctx, MailDropPrefix, func(o pipeline.ObjectInfo) error {
		rel := strings.TrimPrefix(o.Key, MailDropPrefix)
		folder, name, ok := strings.Cut(rel, "/")
		if known[o.Key] || !ok || strings.Contains(name, "/") || !strings.HasSuffix(strings.ToLower(name), ".eml") {
			return nil
		}
		data, err := m.read(ctx, o.Key)
		var ml mako.Mail
		if err == nil {
			ml, err = m.cfg.ParseMail(data)
		}
		switch k := pipeline.KindOf(err); {
		case err == nil:
			ml.Source, ml.Folder, ml.Direction = o.Key, folder, m.direction(folder)
			batch = append(batch, ml)
			if len(batch) >= 200 {
				return flush()
			}
			return nil
		case k == pipeline.Invalid || k == pipeline.TooLarge:
			// The file stays and is counted on every sync until it is
			// replaced or removed; the log says which one it is.
			bad++
			m.cfg.Logger.Warn("mako: unreadable mail file", "key", o.Key, "err", err)
			return nil
		default:
			return err
		}
	})
	if err != nil {
		return n, bad, err
	}
	return n, bad, flush()
}

// syncIMAP fetches what is new in each configured folder. The folder's
// position is saved only after its mails are indexed, so a crash in between
// fetches them again, and the store's deduplication drops the repeats.
func (m *Mako) syncIMAP(ctx context.Context) (int, error) {
	box, err := m.cfg.IMAP(ctx)
	if err != nil {
		return 0, fmt.Errorf("mako sync imap: %w", err)
	}
	defer box.Close()
	total := 0
	for _, folder := range m.cfg.IMAPFolders {
		validity, last, err := m.store.IMAPState(ctx, folder)
		if err != nil {
			return total, fmt.Errorf("mako sync imap %s: %w", folder, err)
		}
		dir := m.direction(folder)
		var batch []mako.Mail
		var uids []uint32
		newValidity, newLast, err := box.Fetch(ctx, folder, validity, last, 200, func(uid uint32, raw []byte) error {
			ml, err := m.cfg.ParseMail(raw)
			if err != nil {
				m.cfg.Logger.Warn("mako: unreadable IMAP mail", "folder", folder, "uid", uid, "err", err)
				return nil
			}
			ml.Folder, ml.Direction = folder, dir
			batch, uids = append(batch, ml), append(uids, uid)
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("mako sync imap %s: %w", folder, err)
		}
		// A UID means something only together with the folder's UIDVALIDITY,
		// which Fetch reports at its end.
		for i := range batch {
			batch[i].Source = fmt.Sprintf("imap:%s:%d:%d", folder, newValidity, uids[i])
		}
		for len(batch) > 0 {
			k := min(len(batch), 200)
			n, err := m.store.IndexMails(ctx, batch[:k])
			if err != nil {
				return total, fmt.Errorf("mako sync imap %s: index: %w", folder, err)
			}
			total += n
			batch = batch[k:]
		}
		if err := m.store.SetIMAPState(ctx, folder, newValidity, newLast); err != nil {
			return total, fmt.Errorf("mako sync imap %s: %w", folder, err)
		}
	}
	return total, nil
}

// syncRegistry imports the registry files dropped into inbox/registry/, in
// key order, and moves each to processed/registry/ or, with its error beside
// it, to rejected/registry/.
func (m *Mako) syncRegistry(ctx context.Context) ([]mako.RegistryReport, error) {
	d := dropFolder{Prefix: RegistryPrefix, Processed: registryProcessed, Rejected: registryRejected,
		MaxBytes: m.cfg.MaxFileBytes, Now: m.cfg.Now, Logger: m.cfg.Logger}
	type imported struct {
		res     mako.RegistryResult
		skipped int
	}
	outcomes, err := d.sync(ctx, m.bucket, func(ctx context.Context, key string, data []byte) (any, error) {
		res, skipped, err := m.ImportRegistry(ctx, key, bytes.NewReader(data))
		return imported{res, skipped}, err
	})
	out := make([]mako.RegistryReport, 0, len(outcomes))
	for _, o := range outcomes {
		rep := mako.RegistryReport{Key: o.Key, Error: o.Error}
		if imp, ok := o.Result.(imported); ok {
			rep.Result, rep.Skipped = &imp.res, imp.skipped
		}
		out = append(out, rep)
	}
	if err != nil {
		return out, fmt.Errorf("registry %w", err)
	}
	return out, nil
}

// ImportRegistry replaces the registry with a CSV export; source names where
// it came from ("api" or the bucket key). It returns what changed and how
// many rows of other market roles were skipped.
func (m *Mako) ImportRegistry(ctx context.Context, source string, r io.Reader) (mako.RegistryResult, int, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return mako.RegistryResult{}, 0, fmt.Errorf("registry: read: %w", err)
	}
	f, err := marketdata.ParseRegistry(bytes.NewReader(data))
	if err != nil {
		return mako.RegistryResult{}, 0, err
	}
	sum := sha256.Sum256(data)
	res, err := m.store.ReplacePartners(ctx, mako.RegistryImport{Source: source, Hash: hex.EncodeToString(sum[:]), At: m.cfg.Now(), Partners: f.Partners})
	if err != nil {
		return res, f.Skipped, fmt.Errorf("registry import: %w", err)
	}
	if !res.Unchanged {
		m.event(ctx, "mako.registry", source, res)
	}
	return res, f.Skipped, nil
}

// event records a console event; a failure is logged, as the event only
// reports what already happened.
func (m *Mako) event(ctx context.Context, kind, subject string, data any) {
	b, _ := json.Marshal(data)
	if err := m.store.RecordEvent(ctx, pipeline.Event{At: m.cfg.Now(), Kind: kind, Subject: subject, Data: b}); err != nil {
		m.cfg.Logger.Error("mako: record event", "kind", kind, "err", err)
	}
}

// Send writes our PARTIN or Zuordnungsermaechtigung for a partner to the
// outbox (outbox/edifact/<yyyy>/<mm>/<name>) and indexes it at once, so the
// overview shows it as sent before the next sync.
func (m *Mako) Send(ctx context.Context, mpid string, st mako.Stream) (mako.Sent, error) {
	if !slices.Contains(mako.SendStreams, st) {
		return mako.Sent{}, pipeline.Errorf(pipeline.Invalid, "stream %q cannot be sent; use %s or %s", st, mako.PartinOut, mako.ZuordnungOut)
	}
	p, err := m.store.Partner(ctx, mpid)
	if err != nil {
		return mako.Sent{}, err
	}
	self := m.cfg.Self
	if missing := self.missing(st); len(missing) > 0 {
		return mako.Sent{}, pipeline.Errorf(pipeline.Unavailable, "our identity as sender is incomplete: configure %s", strings.Join(missing, ", "))
	}
	ref, err := m.store.NextInterchangeRef(ctx)
	if err != nil {
		return mako.Sent{}, fmt.Errorf("send %s %s: %w", st, mpid, err)
	}
	now := m.cfg.Now()
	// The message reference and the document number are unique like the
	// interchange reference, so that an APERAK's RFF+ACE names one message
	// of ours whichever of the two it quotes.
	env := edifact.Envelope{Sender: self.MPID, Receiver: p.MPID, InterchangeRef: ref, MessageRef: "M" + strings.TrimPrefix(ref, "SB"), DocumentNo: ref, At: now}
	var data []byte
	var kind string
	switch st {
	case mako.PartinOut:
		kind = "PARTIN"
		data, err = edifact.WritePARTIN(edifact.PartinDoc{Envelope: env, ProcessID: self.PartinProcessID, Company: self.Name,
			Street: self.Street, PostalCode: self.PostalCode, City: self.City, Country: "DE",
			ContactName: self.ContactName, Email: self.Email, Phone: self.Phone, EdifactEmail: self.Email})
	case mako.ZuordnungOut:
		kind = "UTILMD"
		if p.BalancingArea == "" {
			return mako.Sent{}, pipeline.Errorf(pipeline.Invalid, "partner %s has no balancing area in the registry; the Zuordnungsermaechtigung names one", mpid)
		}
		data, err = edifact.WriteZuordnung(edifact.ZuordnungDoc{Envelope: env, BalancingGroup: self.BalancingGroup,
			BalancingArea: p.BalancingArea, Supplier: self.Supplier, SeriesTypes: self.SeriesTypes,
			// The authorisation starts with the next delivery day; the DSO
			// cannot apply it to a day already running.
			ValidFrom: now.Add(24 * time.Hour)})
	}
	if err != nil {
		return mako.Sent{}, fmt.Errorf("send %s %s: %w", st, mpid, err)
	}
	berlin := now.In(pipeline.Berlin)
	key := fmt.Sprintf("%s%04d/%02d/%s", EDIOutPrefix, berlin.Year(), berlin.Month(), edifact.FileName(kind, env))
	if err := m.bucket.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
		return mako.Sent{}, fmt.Errorf("send %s %s: %w", st, mpid, err)
	}
	ic, err := m.cfg.ParseEDI(data)
	if err != nil {
		return mako.Sent{}, fmt.Errorf("send %s %s: our own interchange does not parse: %w", st, mpid, err)
	}
	// Indexed with the store's ETag, the file is not read again by the next
	// sync.
	info, err := m.bucket.Stat(ctx, key)
	if err != nil {
		return mako.Sent{}, fmt.Errorf("send %s %s: %w", st, mpid, err)
	}
	f := mako.EDIFile{Key: key, ETag: info.ETag, Size: info.Size, Direction: mako.Out, SeenAt: now, Interchange: ic}
	if err := m.store.IndexEDIFiles(ctx, []mako.EDIFile{f}); err != nil {
		return mako.Sent{}, fmt.Errorf("send %s %s: index: %w", st, mpid, err)
	}
	// What was just sent is no longer waiting to be sent.
	if err := m.store.ResolveVormerkung(ctx, mpid, st); err != nil {
		return mako.Sent{}, fmt.Errorf("send %s %s: %w", st, mpid, err)
	}
	s := mako.Sent{MPID: mpid, Stream: st, Key: key, InterchangeRef: ref, MessageRef: env.MessageRef, SentAt: now}
	m.event(ctx, "mako.sent", key, s)
	return s, nil
}

// NoteDue pre-lists every stream of ours that is missing, rejected or
// unanswered (mako.DuePrelistings over the last 365 days), except those an
// operator deleted while the stream was in the same state. It returns the
// pre-listings it created.
func (m *Mako) NoteDue(ctx context.Context) ([]mako.Vormerkung, error) {
	partners, err := m.store.Partners(ctx)
	if err != nil || len(partners) == 0 {
		return nil, err
	}
	ov, err := m.overview(ctx, partners, 365, mako.OrderStatus)
	if err != nil {
		return nil, err
	}
	dismissed, err := m.store.Dismissed(ctx)
	if err != nil {
		return nil, fmt.Errorf("note due: %w", err)
	}
	due := mako.DuePrelistings(partners, rowsByID(ov), m.cfg.Now())
	// A pre-listing the service made itself goes once its stream is no
	// longer due (sent since, or answered); one an operator made stays until
	// it is sent or deleted.
	existing, err := m.store.Vormerkungen(ctx)
	if err != nil {
		return nil, fmt.Errorf("note due: %w", err)
	}
	stillDue := make(map[string]bool, len(due))
	for _, v := range due {
		stillDue[v.Key()] = true
	}
	queue := len(existing)
	for _, v := range existing {
		if v.Basis != manualBasis && !stillDue[v.Key()] {
			if err := m.store.ResolveVormerkung(ctx, v.MPID, v.Stream); err != nil {
				return nil, fmt.Errorf("note due: %w", err)
			}
			queue--
		}
	}
	defer func() { m.m.queue.Set(float64(queue)) }()
	listed := make(map[string]bool, len(existing))
	for _, v := range existing {
		listed[v.Key()] = true
	}
	var created []mako.Vormerkung
	for _, v := range due {
		if listed[v.Key()] {
			continue // it keeps its noted_at; nothing to write
		}
		if basis, ok := dismissed[v.Key()]; ok && basis == v.Basis {
			continue
		}
		got, isNew, err := m.store.NoteVormerkung(ctx, v)
		if err != nil {
			return created, fmt.Errorf("note due %s: %w", v.Key(), err)
		}
		if isNew {
			created = append(created, got)
			queue++
		}
	}
	return created, nil
}

// SendPrelisted re-sends every pre-listed stream. A sent pre-listing is
// removed; one that could not be sent stays with the reason in the result.
func (m *Mako) SendPrelisted(ctx context.Context) ([]mako.SendResult, error) {
	list, err := m.store.Vormerkungen(ctx)
	if err != nil {
		return nil, fmt.Errorf("nachversand: %w", err)
	}
	out := make([]mako.SendResult, 0, len(list))
	for _, v := range list {
		r := mako.SendResult{Vormerkung: v}
		s, err := m.Send(ctx, v.MPID, v.Stream)
		switch k := pipeline.KindOf(err); {
		case err == nil:
			r.Sent = &s // Send removed the pre-listing
		case k == pipeline.Invalid || k == pipeline.NotFound || k == pipeline.Unavailable:
			r.Error = pipeline.MessageOf(err)
		default:
			return out, fmt.Errorf("nachversand %s: %w", v.Key(), err)
		}
		out = append(out, r)
	}
	return out, nil
}

// Overview is the market-partner overview over the last tage days.
func (m *Mako) Overview(ctx context.Context, tage int, ordnung string) (mako.Overview, error) {
	partners, err := m.store.Partners(ctx)
	if err != nil {
		return mako.Overview{}, fmt.Errorf("overview: %w", err)
	}
	return m.overview(ctx, partners, tage, ordnung)
}

func (m *Mako) overview(ctx context.Context, partners []mako.Partner, tage int, ordnung string) (mako.Overview, error) {
	facts, err := m.store.MakoFacts(ctx)
	if err != nil {
		return mako.Overview{}, fmt.Errorf("overview: %w", err)
	}
	return mako.BuildOverview(partners, facts, mako.OverviewOptions{Now: m.cfg.Now(), Tage: tage, Ordnung: ordnung}), nil
}

func rowsByID(ov mako.Overview) map[string]mako.OverviewRow {
	rows := map[string]mako.OverviewRow{}
	for _, g := range ov.Groups {
		for _, r := range g.Partners {
			rows[r.MPID] = r
		}
	}
	return rows
}

// Reconcile is the morning triage of the mail replies of the last tage days.
// It reads only.
func (m *Mako) Reconcile(ctx context.Context, tage int) (mako.Reconciliation, error) {
	now := m.cfg.Now()
	replies, err := m.store.Mails(ctx, mako.In, now.Add(-time.Duration(tage)*24*time.Hour))
	if err != nil {
		return mako.Reconciliation{}, fmt.Errorf("reconcile: %w", err)
	}
	seen := map[string]bool{}
	var refs []string
	for _, r := range replies {
		for _, c := range mako.ExtractReferences(r.Subject, r.Text) {
			if !seen[c.Value] {
				seen[c.Value] = true
				refs = append(refs, c.Value)
			}
		}
	}
	found, err := m.store.LookupReferences(ctx, refs)
	if err != nil {
		return mako.Reconciliation{}, fmt.Errorf("reconcile: %w", err)
	}
	partners, err := m.store.Partners(ctx)
	if err != nil {
		return mako.Reconciliation{}, fmt.Errorf("reconcile: %w", err)
	}
	emails, err := m.store.PartnerEmails(ctx)
	if err != nil {
		return mako.Reconciliation{}, fmt.Errorf("reconcile: %w", err)
	}
	ov, err := m.overview(ctx, partners, 365, mako.OrderStatus)
	if err != nil {
		return mako.Reconciliation{}, err
	}
	byID := make(map[string]mako.Partner, len(partners))
	for _, p := range partners {
		byID[p.MPID] = p
	}
	return mako.Reconcile(mako.ReconcileInput{Now: now, Tage: tage, Replies: replies, Found: found,
		Partners: byID, EmailToMPID: emails, Overview: rowsByID(ov)}), nil
}

// Vormerkungen lists the re-send queue.
func (m *Mako) Vormerkungen(ctx context.Context) ([]mako.Vormerkung, error) {
	return m.store.Vormerkungen(ctx)
}

// DeleteVormerkung removes a pre-listing from the queue and returns it.
func (m *Mako) DeleteVormerkung(ctx context.Context, mpid string, st mako.Stream) (mako.Vormerkung, error) {
	v, err := m.store.DeleteVormerkung(ctx, mpid, st)
	if err == nil {
		m.event(ctx, "mako.vormerkung.deleted", v.Key(), v)
	}
	return v, err
}

// EDIErrors lists the EDIFACT files that could not be parsed.
func (m *Mako) EDIErrors(ctx context.Context, limit int) ([]mako.EDIFile, error) {
	return m.store.EDIFileErrors(ctx, limit)
}

// manualBasis marks a pre-listing an operator made.
const manualBasis = "manual"

// Partners lists the current registry.
func (m *Mako) Partners(ctx context.Context) ([]mako.Partner, error) {
	return m.store.Partners(ctx)
}

// Prelist pre-lists one stream of a partner by hand. An existing pre-listing
// of the key is returned unchanged with created false.
func (m *Mako) Prelist(ctx context.Context, mpid string, st mako.Stream, reason string) (mako.Vormerkung, bool, error) {
	p, err := m.store.Partner(ctx, mpid)
	if err != nil {
		return mako.Vormerkung{}, false, err
	}
	if reason == "" {
		reason = "von Hand vorgemerkt"
	}
	v, created, err := m.store.NoteVormerkung(ctx, mako.Vormerkung{MPID: mpid, Stream: st, Reason: reason,
		NotedAt: m.cfg.Now(), Name: p.Name, Basis: manualBasis})
	if err != nil {
		return v, false, fmt.Errorf("prelist %s: %w", mako.VormerkungKey(mpid, st), err)
	}
	if created {
		m.event(ctx, "mako.vormerkung.noted", v.Key(), v)
	}
	return v, created, nil
}
