package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// This file holds the market-communication repository's registry, the
// interchange references, the IMAP positions and the pre-listings; the
// EDIFACT index is in mako_edi.go, the mail channel in mako_mail.go. The
// contract is jobs.MakoStore.

// makoTime is a time as the market-communication tables store it: UTC at the
// microsecond precision both backends keep, so that a time compared in Go
// equals the one read back.
func makoTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// nullTimeArg is timeArg for a nullable column: the zero time is NULL.
func (db *DB) nullTimeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return db.timeArg(t)
}

// txExec runs a statement with driver placeholders in the transaction,
// without bun's formatting that would inline every value into the text.
func (db *DB) txExec(ctx context.Context, tx bun.Tx, q string, args ...any) (sql.Result, error) {
	return tx.Tx.ExecContext(ctx, db.rebind(q), args...)
}

// normEmail is an address as the registry and the mail index keep it.
func normEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

type makoPartnerRow struct {
	MPID          string `bun:"mp_id"`
	Name          string `bun:"name"`
	ControlArea   string `bun:"control_area"`
	BalancingArea string `bun:"balancing_area"`
}

type makoContactRow struct {
	ID        int64      `bun:"id"`
	MPID      string     `bun:"mp_id"`
	Email     string     `bun:"email"`
	ValidFrom time.Time  `bun:"valid_from"`
	ValidTo   *time.Time `bun:"valid_to"`
}

// validateRegistry checks the whole import before anything is written and
// returns the partners with their addresses normalised (lower-cased,
// trimmed, without empty entries and duplicates).
func validateRegistry(imp mako.RegistryImport) ([]mako.Partner, error) {
	if imp.At.IsZero() {
		return nil, pipeline.Errorf(pipeline.Invalid, "registry import from %q: the import time is required", imp.Source)
	}
	seen := make(map[string]int, len(imp.Partners))
	out := make([]mako.Partner, len(imp.Partners))
	for i, p := range imp.Partners {
		switch {
		case !mako.ValidMPID(p.MPID):
			return nil, pipeline.Errorf(pipeline.Invalid, "registry entry %d (%q): mp_id %q is not a 13-digit market-partner id",
				i+1, p.Name, p.MPID)
		case strings.TrimSpace(p.Name) == "":
			return nil, pipeline.Errorf(pipeline.Invalid, "registry entry %d (mp_id %s): the name is empty", i+1, p.MPID)
		}
		if j, dup := seen[p.MPID]; dup {
			return nil, pipeline.Errorf(pipeline.Invalid, "registry entry %d (%q): mp_id %s is listed twice (also entry %d)",
				i+1, p.Name, p.MPID, j+1)
		}
		seen[p.MPID] = i
		var emails []string
		for _, e := range p.Emails {
			if e = normEmail(e); e != "" && !slices.Contains(emails, e) {
				emails = append(emails, e)
			}
		}
		sort.Strings(emails)
		p.Emails = emails
		out[i] = p
	}
	return out, nil
}

// ReplacePartners replaces the registry as a whole. The import is validated
// first (13-digit mp_ids, names, no mp_id twice); an invalid import changes
// nothing. An import whose hash equals the last import's writes nothing and
// reports Unchanged. Otherwise, in one transaction: the partners become
// exactly the listed ones; an address newly listed for a partner starts a
// contact valid from imp.At, an address no longer listed (also of a partner
// that left the registry) ends its contact at imp.At, an address still listed
// is left alone, and an address listed again after it ended starts a new
// contact. Messages and mails are never deleted with a partner.
func (db *DB) ReplacePartners(ctx context.Context, imp mako.RegistryImport) (mako.RegistryResult, error) {
	partners, err := validateRegistry(imp)
	if err != nil {
		return mako.RegistryResult{}, err
	}
	at := makoTime(imp.At)
	res := mako.RegistryResult{Partners: len(partners), Hash: imp.Hash}
	err = db.inTx(ctx, func(tx bun.Tx) error {
		if db.dialect == Postgres {
			// Two imports at once would both end and add the same contacts.
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('mako/registry', 0))"); err != nil {
				return err
			}
		}
		var last []string
		if err := tx.NewRaw("SELECT hash FROM mako_registry_imports ORDER BY id DESC LIMIT 1").Scan(ctx, &last); err != nil {
			return err
		}
		if imp.Hash != "" && len(last) == 1 && last[0] == imp.Hash {
			var n []int
			if err := tx.NewRaw("SELECT COUNT(*) FROM mako_partners").Scan(ctx, &n); err != nil {
				return err
			}
			res = mako.RegistryResult{Partners: n[0], Hash: imp.Hash, Unchanged: true}
			return nil
		}

		var old []string
		if err := tx.NewRaw("SELECT mp_id FROM mako_partners").Scan(ctx, &old); err != nil {
			return err
		}
		listed := make(map[string]bool, len(partners))
		for _, p := range partners {
			listed[p.MPID] = true
		}
		oldSet := make(map[string]bool, len(old))
		for _, id := range old {
			oldSet[id] = true
			if !listed[id] {
				res.Removed++
			}
		}
		for _, p := range partners {
			if !oldSet[p.MPID] {
				res.Added++
			}
		}

		var current []makoContactRow
		if err := tx.NewRaw("SELECT id, mp_id, email, valid_from, valid_to FROM mako_contacts WHERE valid_to IS NULL").
			Scan(ctx, &current); err != nil {
			return err
		}
		want := make(map[[2]string]bool)
		for _, p := range partners {
			for _, e := range p.Emails {
				want[[2]string{p.MPID, e}] = true
			}
		}
		var ended []any
		for _, c := range current {
			k := [2]string{c.MPID, c.Email}
			if want[k] {
				delete(want, k) // still listed: untouched
				continue
			}
			ended = append(ended, c.ID)
		}
		res.ContactsEnded = len(ended)
		res.ContactsAdded = len(want)

		var importID int64
		if err := tx.Tx.QueryRowContext(ctx, db.rebind("INSERT INTO mako_registry_imports "+
			"(source, hash, at, partners, added, removed, contacts_added, contacts_ended) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"),
			imp.Source, imp.Hash, db.timeArg(at), res.Partners, res.Added, res.Removed, res.ContactsAdded, res.ContactsEnded).
			Scan(&importID); err != nil {
			return fmt.Errorf("record import: %w", err)
		}
		if _, err := db.txExec(ctx, tx, "DELETE FROM mako_partners"); err != nil {
			return err
		}
		chunk := db.insertChunk()
		for start := 0; start < len(partners); start += chunk {
			part := partners[start:min(start+chunk, len(partners))]
			args := make([]any, 0, 5*len(part))
			for _, p := range part {
				args = append(args, p.MPID, strings.TrimSpace(p.Name), p.ControlArea, p.BalancingArea, importID)
			}
			if _, err := db.txExec(ctx, tx, "INSERT INTO mako_partners (mp_id, name, control_area, balancing_area, import_id) VALUES "+
				rowsPH(5, len(part)), args...); err != nil {
				return fmt.Errorf("insert partners: %w", err)
			}
		}
		for start := 0; start < len(ended); start += chunk {
			ids := ended[start:min(start+chunk, len(ended))]
			if _, err := db.txExec(ctx, tx, "UPDATE mako_contacts SET valid_to = ? WHERE id IN ("+placeholders(len(ids))+")",
				append([]any{db.timeArg(at)}, ids...)...); err != nil {
				return fmt.Errorf("end contacts: %w", err)
			}
		}
		added := make([][2]string, 0, len(want))
		for k := range want {
			added = append(added, k)
		}
		for start := 0; start < len(added); start += chunk {
			part := added[start:min(start+chunk, len(added))]
			args := make([]any, 0, 3*len(part))
			for _, k := range part {
				args = append(args, k[0], k[1], db.timeArg(at))
			}
			if _, err := db.txExec(ctx, tx, "INSERT INTO mako_contacts (mp_id, email, valid_from) VALUES "+rowsPH(3, len(part)), args...); err != nil {
				return fmt.Errorf("add contacts: %w", err)
			}
		}
		return db.bumpMakoVersion(ctx, tx, makoWriterRegistry)
	})
	if err != nil {
		return mako.RegistryResult{}, fmt.Errorf("replace market partners from %s: %w", imp.Source, err)
	}
	return res, nil
}

// rowsPH is the VALUES list of n rows of cols placeholders each.
func rowsPH(cols, n int) string {
	row := "(" + placeholders(cols) + ")"
	var b strings.Builder
	b.Grow(n * (len(row) + 2))
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

// Partners lists the current registry sorted by mp_id, each with its
// current addresses in alphabetical order.
func (db *DB) Partners(ctx context.Context) ([]mako.Partner, error) {
	return db.partners(ctx, "")
}

func (db *DB) partners(ctx context.Context, mpid string) ([]mako.Partner, error) {
	var rows []makoPartnerRow
	pq := db.bun.NewRaw("SELECT mp_id, name, control_area, balancing_area FROM mako_partners")
	cq := db.bun.NewRaw("SELECT mp_id, email FROM mako_contacts WHERE valid_to IS NULL")
	if mpid != "" {
		pq = db.bun.NewRaw("SELECT mp_id, name, control_area, balancing_area FROM mako_partners WHERE mp_id = ?", mpid)
		cq = db.bun.NewRaw("SELECT mp_id, email FROM mako_contacts WHERE valid_to IS NULL AND mp_id = ?", mpid)
	}
	if err := pq.Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("list market partners: %w", err)
	}
	var contacts []makoContactRow
	if err := cq.Scan(ctx, &contacts); err != nil {
		return nil, fmt.Errorf("list market partner contacts: %w", err)
	}
	emails := make(map[string][]string, len(rows))
	for _, c := range contacts {
		emails[c.MPID] = append(emails[c.MPID], c.Email)
	}
	out := make([]mako.Partner, len(rows))
	for i, r := range rows {
		e := emails[r.MPID]
		sort.Strings(e)
		if e == nil {
			e = []string{}
		}
		out[i] = mako.Partner{MPID: r.MPID, Name: r.Name, ControlArea: r.ControlArea, BalancingArea: r.BalancingArea, Emails: e}
	}
	// Sorted here: mp_ids are digits, but the server's collation is not ours to assume.
	sort.Slice(out, func(i, j int) bool { return out[i].MPID < out[j].MPID })
	return out, nil
}

// Partner returns one partner of the current registry or a NotFound error.
func (db *DB) Partner(ctx context.Context, mpid string) (mako.Partner, error) {
	ps, err := db.partners(ctx, mpid)
	if err != nil {
		return mako.Partner{}, err
	}
	if len(ps) == 0 {
		return mako.Partner{}, pipeline.Errorf(pipeline.NotFound, "no market partner %s in the registry", mpid)
	}
	return ps[0], nil
}

// PartnerEmails maps every address ever listed for a partner to its mp_id.
// A current listing wins over history; of several current listings of one
// address (a service provider answering for several DSOs) the smallest mp_id
// wins, and of several ended ones the one that ended last.
func (db *DB) PartnerEmails(ctx context.Context) (map[string]string, error) {
	var rows []makoContactRow
	if err := db.bun.NewRaw("SELECT id, mp_id, email, valid_from, valid_to FROM mako_contacts").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("list partner addresses: %w", err)
	}
	return partnerEmails(rows), nil
}

func partnerEmails(rows []makoContactRow) map[string]string {
	best := make(map[string]makoContactRow, len(rows))
	// better reports whether contact a is a stronger claim on its address than b.
	better := func(a, b makoContactRow) bool {
		switch {
		case (a.ValidTo == nil) != (b.ValidTo == nil):
			return a.ValidTo == nil
		case a.ValidTo != nil && !a.ValidTo.Equal(*b.ValidTo):
			return a.ValidTo.After(*b.ValidTo)
		}
		return a.MPID < b.MPID
	}
	for _, r := range rows {
		if cur, ok := best[r.Email]; !ok || better(r, cur) {
			best[r.Email] = r
		}
	}
	out := make(map[string]string, len(best))
	for e, r := range best {
		out[e] = r.MPID
	}
	return out
}

// NextInterchangeRef returns a new interchange reference: "SB" and twelve
// digits of a database sequence, 14 characters, the most UNB 0020 takes.
// Identity columns and AUTOINCREMENT never hand out an id twice, so the
// references are unique across processes sharing the database.
func (db *DB) NextInterchangeRef(ctx context.Context) (string, error) {
	var id int64
	err := busyAsUnavailable(db.bun.DB.QueryRowContext(ctx, "INSERT INTO mako_ref_seq DEFAULT VALUES RETURNING id").Scan(&id))
	if err != nil {
		return "", fmt.Errorf("next interchange reference: %w", err)
	}
	if id >= 1e12 {
		return "", pipeline.Errorf(pipeline.Internal, "interchange references exhausted (sequence at %d)", id)
	}
	return fmt.Sprintf("SB%012d", id), nil
}

// IMAPState returns the sync position of an IMAP folder, zeros for a folder
// never synced.
func (db *DB) IMAPState(ctx context.Context, folder string) (uint32, uint32, error) {
	var rows []struct {
		UIDValidity int64 `bun:"uid_validity"`
		LastUID     int64 `bun:"last_uid"`
	}
	if err := db.bun.NewRaw("SELECT uid_validity, last_uid FROM mako_imap_state WHERE folder = ?", folder).Scan(ctx, &rows); err != nil {
		return 0, 0, fmt.Errorf("imap state of %s: %w", folder, err)
	}
	if len(rows) == 0 {
		return 0, 0, nil
	}
	return uint32(rows[0].UIDValidity), uint32(rows[0].LastUID), nil
}

// SetIMAPState stores the sync position of an IMAP folder.
func (db *DB) SetIMAPState(ctx context.Context, folder string, uidValidity, lastUID uint32) error {
	_, err := db.bun.DB.ExecContext(ctx, db.rebind("INSERT INTO mako_imap_state (folder, uid_validity, last_uid) VALUES (?, ?, ?) "+
		"ON CONFLICT (folder) DO UPDATE SET uid_validity = excluded.uid_validity, last_uid = excluded.last_uid"),
		folder, int64(uidValidity), int64(lastUID))
	if err != nil {
		return fmt.Errorf("set imap state of %s: %w", folder, busyAsUnavailable(err))
	}
	return nil
}

type vormerkungRow struct {
	MPID    string    `bun:"mp_id"`
	Stream  string    `bun:"stream"`
	Reason  string    `bun:"reason"`
	NotedAt time.Time `bun:"noted_at"`
	Basis   string    `bun:"basis"`
	Name    string    `bun:"name"`
}

func (r vormerkungRow) domain() mako.Vormerkung {
	return mako.Vormerkung{MPID: r.MPID, Stream: mako.Stream(r.Stream), Reason: r.Reason, NotedAt: r.NotedAt.UTC(),
		Basis: r.Basis, Name: r.Name}
}

const vormerkungSelect = "SELECT v.mp_id, v.stream, v.reason, v.noted_at, v.basis, COALESCE(p.name, '') AS name " +
	"FROM mako_vormerkungen v LEFT JOIN mako_partners p ON p.mp_id = v.mp_id"

func vormerkung(ctx context.Context, conn bun.IDB, mpid string, st mako.Stream) (mako.Vormerkung, bool, error) {
	var rows []vormerkungRow
	if err := conn.NewRaw(vormerkungSelect+" WHERE v.mp_id = ? AND v.stream = ?", mpid, string(st)).Scan(ctx, &rows); err != nil {
		return mako.Vormerkung{}, false, err
	}
	if len(rows) == 0 {
		return mako.Vormerkung{}, false, nil
	}
	return rows[0].domain(), true, nil
}

// NoteVormerkung pre-lists a stream of a partner for re-sending; an existing
// pre-listing of the key is kept as it is and returned with false. The
// partner need not be in the registry (Name is then empty); v.Name is not
// stored, the name is always the registry's. A dismissal of the key stays:
// the caller compares it with the basis before noting.
func (db *DB) NoteVormerkung(ctx context.Context, v mako.Vormerkung) (mako.Vormerkung, bool, error) {
	if !mako.ValidMPID(v.MPID) {
		return v, false, pipeline.Errorf(pipeline.Invalid, "pre-listing: mp_id %q is not a 13-digit market-partner id", v.MPID)
	}
	if _, ok := mako.ParseSendStream(string(v.Stream)); !ok {
		return v, false, pipeline.Errorf(pipeline.Invalid, "pre-listing %s: stream %q cannot be re-sent", v.MPID, v.Stream)
	}
	if v.NotedAt.IsZero() {
		return v, false, pipeline.Errorf(pipeline.Invalid, "pre-listing %s: the time noted is required", v.Key())
	}
	var out mako.Vormerkung
	created := false
	err := db.inTx(ctx, func(tx bun.Tx) error {
		r, err := db.txExec(ctx, tx, "INSERT INTO mako_vormerkungen (mp_id, stream, reason, noted_at, basis) VALUES (?, ?, ?, ?, ?) "+
			"ON CONFLICT (mp_id, stream) DO NOTHING", v.MPID, string(v.Stream), v.Reason, db.timeArg(makoTime(v.NotedAt)), v.Basis)
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		created = n == 1
		out, _, err = vormerkung(ctx, tx, v.MPID, v.Stream)
		return err
	})
	if err != nil {
		return v, false, fmt.Errorf("note pre-listing %s: %w", v.Key(), err)
	}
	return out, created, nil
}

// Vormerkungen lists the pre-listings by noted_at, then key, each with the
// partner's name in the current registry ("" when it is not listed).
func (db *DB) Vormerkungen(ctx context.Context) ([]mako.Vormerkung, error) {
	var rows []vormerkungRow
	if err := db.bun.NewRaw(vormerkungSelect).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("list pre-listings: %w", err)
	}
	out := make([]mako.Vormerkung, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].NotedAt.Equal(out[j].NotedAt) {
			return out[i].NotedAt.Before(out[j].NotedAt)
		}
		return out[i].Key() < out[j].Key()
	})
	return out, nil
}

// DeleteVormerkung removes a pre-listing and returns it as it was, or a
// NotFound error. In the same transaction it records the pre-listing's basis
// as the dismissal of its key, replacing an earlier one.
func (db *DB) DeleteVormerkung(ctx context.Context, mpid string, st mako.Stream) (mako.Vormerkung, error) {
	key := mako.VormerkungKey(mpid, st)
	var out mako.Vormerkung
	err := db.inTx(ctx, func(tx bun.Tx) error {
		v, ok, err := vormerkung(ctx, tx, mpid, st)
		if err != nil {
			return err
		}
		if !ok {
			return pipeline.Errorf(pipeline.NotFound, "no pre-listing %s", key)
		}
		out = v
		if _, err := db.txExec(ctx, tx, "DELETE FROM mako_vormerkungen WHERE mp_id = ? AND stream = ?", mpid, string(st)); err != nil {
			return err
		}
		_, err = db.txExec(ctx, tx, "INSERT INTO mako_dismissals (mp_id, stream, basis) VALUES (?, ?, ?) "+
			"ON CONFLICT (mp_id, stream) DO UPDATE SET basis = excluded.basis", mpid, string(st), v.Basis)
		return err
	})
	if err != nil {
		var pe *pipeline.Error
		if errors.As(err, &pe) && pe.Kind == pipeline.NotFound {
			return mako.Vormerkung{}, err
		}
		return mako.Vormerkung{}, fmt.Errorf("delete pre-listing %s: %w", key, err)
	}
	return out, nil
}

// ResolveVormerkung removes the pre-listing of a key because its stream no
// longer needs sending (it was sent, or answered since). Unlike a deletion it
// also forgets an operator's dismissal of the key: the stream was in order,
// so a later failure is new and is pre-listed again.
func (db *DB) ResolveVormerkung(ctx context.Context, mpid string, st mako.Stream) error {
	err := db.inTx(ctx, func(tx bun.Tx) error {
		if _, err := db.txExec(ctx, tx, "DELETE FROM mako_vormerkungen WHERE mp_id = ? AND stream = ?", mpid, string(st)); err != nil {
			return err
		}
		_, err := db.txExec(ctx, tx, "DELETE FROM mako_dismissals WHERE mp_id = ? AND stream = ?", mpid, string(st))
		return err
	})
	if err != nil {
		return fmt.Errorf("resolve pre-listing %s: %w", mako.VormerkungKey(mpid, st), err)
	}
	return nil
}

// Dismissed maps the keys (mako.VormerkungKey) of deleted pre-listings to
// the basis they had when deleted.
func (db *DB) Dismissed(ctx context.Context) (map[string]string, error) {
	var rows []struct {
		MPID   string `bun:"mp_id"`
		Stream string `bun:"stream"`
		Basis  string `bun:"basis"`
	}
	if err := db.bun.NewRaw("SELECT mp_id, stream, basis FROM mako_dismissals").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("list dismissed pre-listings: %w", err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[mako.VormerkungKey(r.MPID, mako.Stream(r.Stream))] = r.Basis
	}
	return out, nil
}
