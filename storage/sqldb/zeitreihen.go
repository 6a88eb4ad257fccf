package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/zeitreihen"
)

// This file keeps the inputs of the Zeitreihen tree: the customer ramp-up
// snapshots and the activation records of the sum time series.

type snapshotRow struct {
	bun.BaseModel `bun:"table:hochlauf_snapshots"`

	ID           int64      `bun:"id,pk,autoincrement"`
	Quelle       string     `bun:"quelle"`
	Stand        time.Time  `bun:"stand"`
	Hash         string     `bun:"hash"`
	KeyID        string     `bun:"key_id"`
	Entries      string     `bun:"entries"`
	ReceivedAt   time.Time  `bun:"received_at"`
	SupersededAt *time.Time `bun:"superseded_at"`
}

// domain converts the row; the entries are decoded only when withEntries.
func (r snapshotRow) domain(withEntries bool) (zeitreihen.StoredSnapshot, error) {
	s := zeitreihen.StoredSnapshot{ID: r.ID, Hash: r.Hash, ReceivedAt: r.ReceivedAt.UTC(), KeyID: r.KeyID,
		Snapshot: zeitreihen.Snapshot{Quelle: r.Quelle, Stand: r.Stand.UTC()}}
	if r.SupersededAt != nil {
		t := r.SupersededAt.UTC()
		s.Superseded = &t
	}
	if withEntries {
		if err := json.Unmarshal([]byte(r.Entries), &s.Eintraege); err != nil {
			return s, fmt.Errorf("snapshot %d: stored entries: %w", r.ID, err)
		}
	}
	return s, nil
}

// PutSnapshot makes s, whose canonical hash the caller computed, the current
// ramp-up snapshot, received at now with the API key keyID. When the current
// snapshot has the same hash nothing is written and it is returned with
// false. Otherwise, in one transaction, the current snapshot is superseded
// at now and kept as history, and s is stored as the current one and
// returned with true. Writers queue (the SQLite write lock, an advisory lock
// on PostgreSQL); the unique index of the current row turns any writer that
// slipped past them into a Conflict rather than a second current snapshot.
func (db *DB) PutSnapshot(ctx context.Context, s zeitreihen.Snapshot, hash, keyID string, now time.Time) (zeitreihen.StoredSnapshot, bool, error) {
	switch {
	case hash == "":
		return zeitreihen.StoredSnapshot{}, false, pipeline.Errorf(pipeline.Invalid, "ramp-up snapshot: the hash is required")
	case now.IsZero():
		return zeitreihen.StoredSnapshot{}, false, pipeline.Errorf(pipeline.Invalid, "ramp-up snapshot: the time received is required")
	}
	entries := s.Eintraege
	if entries == nil {
		entries = []zeitreihen.Entry{}
	}
	body, err := json.Marshal(entries)
	if err != nil {
		return zeitreihen.StoredSnapshot{}, false, fmt.Errorf("ramp-up snapshot: encode entries: %w", err)
	}
	var out zeitreihen.StoredSnapshot
	replaced := false
	err = db.inTx(ctx, func(tx bun.Tx) error {
		if db.dialect == Postgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('zeitreihen/snapshot', 0))"); err != nil {
				return err
			}
		}
		var cur snapshotRow
		err := tx.NewSelect().Model(&cur).Where("superseded_at IS NULL").Scan(ctx)
		switch {
		case err == nil && cur.Hash == hash:
			out, err = cur.domain(true)
			return err
		case err == nil:
			if _, err := tx.NewUpdate().Model((*snapshotRow)(nil)).Set("superseded_at = ?", makoTime(now)).
				Where("id = ?", cur.ID).Exec(ctx); err != nil {
				return err
			}
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		row := snapshotRow{Quelle: s.Quelle, Stand: makoTime(s.Stand), Hash: hash, KeyID: keyID, Entries: string(body),
			ReceivedAt: makoTime(now)}
		if _, err := tx.NewInsert().Model(&row).Returning("id").Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return &pipeline.Error{Kind: pipeline.Conflict, Err: err,
					Message: "another ramp-up snapshot was stored at the same time; send it again"}
			}
			return err
		}
		out, replaced = row.domainWith(entries), true
		return nil
	})
	if err != nil {
		return zeitreihen.StoredSnapshot{}, false, fmt.Errorf("put ramp-up snapshot from %q: %w", s.Quelle, err)
	}
	return out, replaced, nil
}

// domainWith converts a row just written, whose entries are at hand.
func (r snapshotRow) domainWith(entries []zeitreihen.Entry) zeitreihen.StoredSnapshot {
	s, _ := r.domain(false)
	s.Eintraege = entries
	return s
}

// CurrentSnapshot returns the current ramp-up snapshot with its entries, or
// NotFound when none was received.
func (db *DB) CurrentSnapshot(ctx context.Context) (zeitreihen.StoredSnapshot, error) {
	var row snapshotRow
	err := db.bun.NewSelect().Model(&row).Where("superseded_at IS NULL").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return zeitreihen.StoredSnapshot{}, pipeline.Errorf(pipeline.NotFound, "no ramp-up snapshot was received")
	}
	if err != nil {
		return zeitreihen.StoredSnapshot{}, fmt.Errorf("current ramp-up snapshot: %w", err)
	}
	return row.domain(true)
}

// Snapshots lists the ramp-up snapshots newest first, the current one
// included, without their entries (a history listing); limit <= 0 lists
// all.
func (db *DB) Snapshots(ctx context.Context, limit int) ([]zeitreihen.StoredSnapshot, error) {
	var rows []snapshotRow
	q := db.bun.NewSelect().Model(&rows).ExcludeColumn("entries").OrderExpr("id DESC")
	if limit > 0 {
		q = q.Limit(int64(limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list ramp-up snapshots: %w", err)
	}
	out := make([]zeitreihen.StoredSnapshot, len(rows))
	for i, r := range rows {
		out[i], _ = r.domain(false)
	}
	return out, nil
}

type activationRow struct {
	bun.BaseModel `bun:"table:zeitreihen_aktivierungen"`

	ID                  int64     `bun:"id,pk,autoincrement"`
	Source              string    `bun:"source"`
	SourceKey           string    `bun:"source_key"`
	Marktrolle          string    `bun:"marktrolle"`
	NetzbetreiberMPID   string    `bun:"netzbetreiber_mp_id"`
	Bilanzierungsgebiet string    `bun:"bilanzierungsgebiet"`
	Bilanzkreis         string    `bun:"bilanzkreis"`
	Zeitreihentyp       string    `bun:"zeitreihentyp"`
	Aktion              string    `bun:"aktion"`
	GueltigAb           string    `bun:"gueltig_ab"`
	GueltigBis          *string   `bun:"gueltig_bis"`
	Referenz            string    `bun:"referenz"`
	ReceivedAt          time.Time `bun:"received_at"`
}

func newActivationRow(src zeitreihen.Source, key string, a zeitreihen.Activation, now time.Time) activationRow {
	r := activationRow{Source: string(src), SourceKey: key, Marktrolle: string(a.Marktrolle),
		NetzbetreiberMPID: a.NetzbetreiberMPID, Bilanzierungsgebiet: a.Bilanzierungsgebiet, Bilanzkreis: a.Bilanzkreis,
		Zeitreihentyp: string(a.Zeitreihentyp), Aktion: string(a.Aktion), GueltigAb: a.GueltigAb.String(),
		Referenz: a.Referenz, ReceivedAt: now}
	if a.GueltigBis != nil {
		s := a.GueltigBis.String()
		r.GueltigBis = &s
	}
	return r
}

// fingerprint identifies the record's content, for comparing sets.
func (r activationRow) fingerprint() string {
	bis := "-"
	if r.GueltigBis != nil {
		bis = *r.GueltigBis
	}
	return strings.Join([]string{r.Marktrolle, r.NetzbetreiberMPID, r.Bilanzierungsgebiet, r.Bilanzkreis,
		r.Zeitreihentyp, r.Aktion, r.GueltigAb, bis, r.Referenz}, "\x00")
}

func (r activationRow) domain() (zeitreihen.StoredActivation, error) {
	ab, err := pipeline.ParseDay(r.GueltigAb)
	if err != nil {
		return zeitreihen.StoredActivation{}, fmt.Errorf("activation %d: stored gueltig_ab: %w", r.ID, err)
	}
	a := zeitreihen.StoredActivation{Quelle: zeitreihen.Source(r.Source), SourceKey: r.SourceKey, ReceivedAt: r.ReceivedAt.UTC(),
		Activation: zeitreihen.Activation{Marktrolle: zeitreihen.Role(r.Marktrolle), NetzbetreiberMPID: r.NetzbetreiberMPID,
			Bilanzierungsgebiet: r.Bilanzierungsgebiet, Bilanzkreis: r.Bilanzkreis,
			Zeitreihentyp: zeitreihen.SeriesType(r.Zeitreihentyp), Aktion: zeitreihen.Action(r.Aktion), GueltigAb: ab,
			Referenz: r.Referenz}}
	if r.GueltigBis != nil {
		bis, err := pipeline.ParseDay(*r.GueltigBis)
		if err != nil {
			return zeitreihen.StoredActivation{}, fmt.Errorf("activation %d: stored gueltig_bis: %w", r.ID, err)
		}
		a.GueltigBis = &bis
	}
	return a, nil
}

// validActivation checks what the store relies on: a record whose days can
// be stored and read back. The content (roles, series types, actions) is the
// importer's to check.
func validActivation(src zeitreihen.Source, key string, i int, a zeitreihen.Activation) error {
	switch {
	case a.GueltigAb.IsZero():
		return pipeline.Errorf(pipeline.Invalid, "activations of %s %s: record %d has no gueltig_ab", src, key, i+1)
	case a.GueltigBis != nil && a.GueltigBis.IsZero():
		return pipeline.Errorf(pipeline.Invalid, "activations of %s %s: record %d has a zero gueltig_bis", src, key, i+1)
	}
	return nil
}

// ReplaceActivations makes recs the activation records of the source and
// key (an import, or one EDIFACT file), received at now, and reports whether
// anything changed. A set equal to the stored one, the same records in any
// order, keeps the stored rows and their received_at and returns false. An
// empty recs deletes the set. Sets of other keys are not touched.
func (db *DB) ReplaceActivations(ctx context.Context, src zeitreihen.Source, key string, recs []zeitreihen.Activation, now time.Time) (bool, error) {
	switch {
	case src != zeitreihen.SourceImport && src != zeitreihen.SourceUTILMD:
		return false, pipeline.Errorf(pipeline.Invalid, "activations: source %q (want import or utilmd)", src)
	case key == "":
		return false, pipeline.Errorf(pipeline.Invalid, "activations of %s: the source key is required", src)
	case len(recs) > 0 && now.IsZero():
		return false, pipeline.Errorf(pipeline.Invalid, "activations of %s %s: the time received is required", src, key)
	}
	rows := make([]activationRow, len(recs))
	want := make([]string, len(recs))
	for i, a := range recs {
		if err := validActivation(src, key, i, a); err != nil {
			return false, err
		}
		rows[i] = newActivationRow(src, key, a, makoTime(now))
		want[i] = rows[i].fingerprint()
	}
	slices.Sort(want)
	changed := false
	err := db.inTx(ctx, func(tx bun.Tx) error {
		if db.dialect == Postgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
				"zeitreihen/activations/"+string(src)+"/"+key); err != nil {
				return err
			}
		}
		var old []activationRow
		if err := tx.NewSelect().Model(&old).Where("source = ?", string(src)).Where("source_key = ?", key).Scan(ctx); err != nil {
			return err
		}
		have := make([]string, len(old))
		for i, r := range old {
			have[i] = r.fingerprint()
		}
		slices.Sort(have)
		if slices.Equal(have, want) {
			return nil
		}
		changed = true
		if _, err := tx.NewDelete().Model((*activationRow)(nil)).Where("source = ?", string(src)).
			Where("source_key = ?", key).Exec(ctx); err != nil {
			return err
		}
		// A few hundred parameters a statement stay below SQLite's limit
		// with the 12 columns of a record.
		for start := 0; start < len(rows); start += sqliteInsertChunk {
			part := rows[start:min(start+sqliteInsertChunk, len(rows))]
			if _, err := tx.NewInsert().Model(&part).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("replace activations of %s %s: %w", src, key, err)
	}
	return changed, nil
}

// Activations returns every stored activation record, ordered by id (the
// order they were stored in).
func (db *DB) Activations(ctx context.Context) ([]zeitreihen.StoredActivation, error) {
	var rows []activationRow
	if err := db.bun.NewSelect().Model(&rows).OrderExpr("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list activations: %w", err)
	}
	out := make([]zeitreihen.StoredActivation, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = r.domain(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
