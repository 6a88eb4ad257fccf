package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// The EDIFACT index. Each message row carries the partner (the other side of
// its file), its time and stream, and for our messages the answer of record.
// Answers are matched to our messages by reference, never by id, so that
// either may be indexed first: whenever a message of ours, or an answer, is
// indexed or removed, the verdicts of the messages concerned are recomputed
// from every stored answer to them (recomputeVerdicts). mako_edi_latest keeps
// the newest message per partner and stream, and per partner of any kind
// (stream latestAny), for MakoFacts.

// latestAny is the mako_edi_latest stream of the newest message of any kind.
const latestAny = "*"

// refChunk is how many values one IN list of a lookup carries.
const refChunk = 500

func isAckType(typ string) bool { return typ == "CONTRL" || typ == "APERAK" }

// ediAnswer is an acknowledgment of a partner as it may apply to messages of
// ours.
type ediAnswer struct {
	ID      int64     `bun:"id"`
	Partner string    `bun:"partner_mp_id"`
	Type    string    `bun:"type"`
	RefIC   string    `bun:"ack_ref_interchange"`
	RefMsg  string    `bun:"ack_ref_message"`
	Verdict string    `bun:"verdict"`
	At      time.Time `bun:"at"`
}

// ediTarget is a message of ours that answers may apply to.
type ediTarget struct {
	ID         int64      `bun:"id"`
	Direction  string     `bun:"direction"`
	Partner    string     `bun:"partner_mp_id"`
	Type       string     `bun:"type"`
	ICRef      string     `bun:"interchange_ref"`
	MsgRef     string     `bun:"message_ref"`
	DocNo      string     `bun:"document_no"`
	Verdict    string     `bun:"verdict"`
	AnsweredAt *time.Time `bun:"answered_at"`
}

// answerable reports whether answers can apply to a message: one of ours
// that is no acknowledgment itself. No APERAK answers a CONTRL or an APERAK,
// and a CONTRL's verdict column holds its own verdict.
func (t ediTarget) answerable() bool {
	return t.Direction == string(mako.Out) && !isAckType(t.Type) && t.Partner != ""
}

// answers reports whether acknowledgment a of a partner answers our message
// t. A CONTRL answers every message of ours to that partner in the
// interchange it names (a rejection means the whole file counts as not
// received), or only the one message it names; an APERAK answers the message
// whose message reference or document number its RFF+ACE names.
func (a ediAnswer) answers(t ediTarget) bool {
	if a.Partner != t.Partner || !t.answerable() {
		return false
	}
	switch a.Type {
	case "CONTRL":
		return a.RefIC != "" && a.RefIC == t.ICRef && (a.RefMsg == "" || a.RefMsg == t.MsgRef)
	case "APERAK":
		return a.RefMsg != "" && (a.RefMsg == t.MsgRef || a.RefMsg == t.DocNo)
	}
	return false
}

// answersIndex finds the answers that may apply to a message by its references.
type answersIndex struct {
	byIC  map[string][]ediAnswer // CONTRL by the interchange answered
	byMsg map[string][]ediAnswer // APERAK by the message or document answered
}

func newAnswersIndex(as []ediAnswer) answersIndex {
	ix := answersIndex{byIC: map[string][]ediAnswer{}, byMsg: map[string][]ediAnswer{}}
	for _, a := range as {
		switch a.Type {
		case "CONTRL":
			if a.RefIC != "" {
				ix.byIC[a.RefIC] = append(ix.byIC[a.RefIC], a)
			}
		case "APERAK":
			if a.RefMsg != "" {
				ix.byMsg[a.RefMsg] = append(ix.byMsg[a.RefMsg], a)
			}
		}
	}
	return ix
}

// of returns the answers to t, in the order they were indexed.
func (ix answersIndex) of(t ediTarget) []ediAnswer {
	var out []ediAnswer
	seen := map[int64]bool{}
	add := func(as []ediAnswer) {
		for _, a := range as {
			if !seen[a.ID] && a.answers(t) {
				seen[a.ID] = true
				out = append(out, a)
			}
		}
	}
	add(ix.byIC[t.ICRef])
	if t.MsgRef != "" {
		add(ix.byMsg[t.MsgRef])
	}
	if t.DocNo != "" {
		add(ix.byMsg[t.DocNo])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ediMessage is a message as IndexEDIFiles writes it.
type ediMessage struct {
	id     int64
	fileID int64
	seq    int
	dir    mako.Direction
	target ediTarget // partner, type and references
	proc   string
	bgm    string
	at     time.Time
	stream mako.Stream
	ack    *mako.Ack
}

type latestKey struct{ partner, stream string }

type latestVal struct {
	ID int64     `bun:"message_id"`
	At time.Time `bun:"at"`
}

func (a latestVal) newer(b latestVal) bool {
	return a.At.After(b.At) || (a.At.Equal(b.At) && a.ID > b.ID)
}

func validEDIFile(i int, f mako.EDIFile) error {
	switch {
	case f.Key == "":
		return pipeline.Errorf(pipeline.Invalid, "edifact file %d: the key is empty", i+1)
	case f.Direction != mako.In && f.Direction != mako.Out:
		return pipeline.Errorf(pipeline.Invalid, "edifact file %s: direction %q (want in or out)", f.Key, f.Direction)
	case f.Interchange == nil && f.Error == "":
		return pipeline.Errorf(pipeline.Invalid, "edifact file %s: neither an interchange nor a parse error", f.Key)
	}
	return nil
}

// IndexEDIFiles indexes files and their messages in one transaction. A key
// indexed before with the same ETag is left alone; with another ETag its
// messages are replaced. A key listed twice in files counts with its last
// listing. Answers are applied to the messages of ours they answer whichever
// is indexed first, and replacing a file recomputes the verdicts its old and
// new answers touched.
func (db *DB) IndexEDIFiles(ctx context.Context, files []mako.EDIFile) error {
	if len(files) == 0 {
		return nil
	}
	pos := make(map[string]int, len(files))
	list := make([]mako.EDIFile, 0, len(files))
	for i, f := range files {
		if err := validEDIFile(i, f); err != nil {
			return err
		}
		if j, ok := pos[f.Key]; ok {
			list[j] = f
			continue
		}
		pos[f.Key] = len(list)
		list = append(list, f)
	}
	err := db.inTx(ctx, func(tx bun.Tx) error {
		stmts := stmtCache{}
		defer func() {
			for _, s := range stmts {
				s.Close()
			}
		}()
		return db.indexEDI(ctx, tx, stmts, list)
	})
	if err != nil {
		return fmt.Errorf("index %d edifact files (first %s): %w", len(list), list[0].Key, err)
	}
	return nil
}

func (db *DB) indexEDI(ctx context.Context, tx bun.Tx, stmts stmtCache, list []mako.EDIFile) error {
	if db.dialect == Postgres {
		// The verdicts and the newest-message table are read, compared and
		// written; two indexing runs at once must not interleave. JIT off:
		// see makoRead.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('mako/edifact', 0)), "+
			"set_config('jit', 'off', true)"); err != nil {
			return err
		}
	}
	keys := make([]string, len(list))
	for i, f := range list {
		keys[i] = f.Key
	}
	type fileRow struct {
		ID   int64  `bun:"id"`
		Key  string `bun:"object_key"`
		ETag string `bun:"etag"`
	}
	known := make(map[string]fileRow, len(list))
	for start := 0; start < len(keys); start += refChunk {
		var rows []fileRow
		if err := tx.NewRaw("SELECT id, object_key, etag FROM mako_edi_files WHERE object_key IN (?)",
			bun.In(keys[start:min(start+refChunk, len(keys))])).Scan(ctx, &rows); err != nil {
			return fmt.Errorf("look up indexed files: %w", err)
		}
		for _, r := range rows {
			known[r.Key] = r
		}
	}

	fileIDs := make([]int64, len(list)) // 0: unchanged, not written
	var fresh []int
	var replacedIDs []int64
	for i, f := range list {
		k, ok := known[f.Key]
		switch {
		case !ok:
			fresh = append(fresh, i)
		case k.ETag != f.ETag:
			fileIDs[i] = k.ID
			replacedIDs = append(replacedIDs, k.ID)
		}
	}

	dirty := map[latestKey]bool{}
	var oldAnswers []ediAnswer
	if len(replacedIDs) > 0 {
		var err error
		if oldAnswers, err = db.dropMessages(ctx, tx, replacedIDs, dirty); err != nil {
			return err
		}
		for i, f := range list {
			if fileIDs[i] == 0 {
				continue
			}
			ref, sender, receiver, prepared := fileFacts(f)
			if _, err := db.txExec(ctx, tx, "UPDATE mako_edi_files SET etag = ?, size = ?, direction = ?, seen_at = ?, error = ?, "+
				"interchange_ref = ?, sender = ?, receiver = ?, prepared_at = ? WHERE id = ?",
				f.ETag, f.Size, string(f.Direction), db.timeArg(makoTime(f.SeenAt)), f.Error, ref, sender, receiver,
				db.nullTimeArg(prepared), fileIDs[i]); err != nil {
				return fmt.Errorf("update file %s: %w", f.Key, err)
			}
		}
	}
	if len(fresh) == 0 && len(replacedIDs) == 0 {
		return nil // every file is indexed with its ETag already
	}
	if err := db.bumpMakoVersion(ctx, tx, makoWriterEDIFACT); err != nil {
		return err
	}
	if err := db.insertEDIFiles(ctx, tx, stmts, list, fresh, fileIDs); err != nil {
		return err
	}

	msgs := buildMessages(list, fileIDs)
	if err := db.insertMessages(ctx, tx, stmts, msgs); err != nil {
		return err
	}

	// The messages whose verdict may have changed: our new messages, and
	// those the new and the removed answers answer.
	answers := oldAnswers
	var targets []int64
	for _, m := range msgs {
		switch {
		case m.target.answerable():
			targets = append(targets, m.id)
		case m.dir == mako.In && isAckType(m.target.Type) && m.ack != nil:
			answers = append(answers, ediAnswer{ID: m.id, Partner: m.target.Partner, Type: m.target.Type,
				RefIC: m.ack.RefInterchange, RefMsg: m.ack.RefMessage, Verdict: string(m.ack.Verdict), At: m.at})
		}
	}
	answered, err := db.answeredBy(ctx, tx, answers)
	if err != nil {
		return err
	}
	changed, err := db.recomputeVerdicts(ctx, tx, stmts, append(targets, answered...))
	if err != nil {
		return err
	}
	return db.updateLatest(ctx, tx, stmts, msgs, dirty, changed)
}

// fileFacts are the interchange's facts a file row keeps.
func fileFacts(f mako.EDIFile) (ref, sender, receiver string, prepared time.Time) {
	if ic := f.Interchange; ic != nil {
		return ic.Ref, ic.Sender, ic.Receiver, makoTime(ic.PreparedAt)
	}
	return "", "", "", time.Time{}
}

// dropMessages deletes the messages of replaced files, marks the partners'
// newest-message entries they touched for recomputation and returns the
// answers among them, whose targets need their verdicts recomputed.
func (db *DB) dropMessages(ctx context.Context, tx bun.Tx, fileIDs []int64, dirty map[latestKey]bool) ([]ediAnswer, error) {
	var answers []ediAnswer
	for start := 0; start < len(fileIDs); start += refChunk {
		ids := fileIDs[start:min(start+refChunk, len(fileIDs))]
		var rows []struct {
			ediAnswer
			Direction string `bun:"direction"`
			Stream    string `bun:"stream"`
		}
		if err := tx.NewRaw("SELECT id, direction, partner_mp_id, type, stream, ack_ref_interchange, ack_ref_message, verdict, at "+
			"FROM mako_edi_messages WHERE file_id IN (?)", bun.In(ids)).Scan(ctx, &rows); err != nil {
			return nil, fmt.Errorf("read replaced messages: %w", err)
		}
		for _, r := range rows {
			if r.Partner != "" {
				dirty[latestKey{r.Partner, latestAny}] = true
				if r.Stream != "" {
					dirty[latestKey{r.Partner, r.Stream}] = true
				}
			}
			if r.Direction == string(mako.In) && isAckType(r.Type) {
				answers = append(answers, r.ediAnswer)
			}
		}
		if _, err := tx.NewRaw("DELETE FROM mako_edi_messages WHERE file_id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
			return nil, fmt.Errorf("delete replaced messages: %w", err)
		}
	}
	return answers, nil
}

func (db *DB) insertEDIFiles(ctx context.Context, tx bun.Tx, stmts stmtCache, list []mako.EDIFile, fresh []int, fileIDs []int64) error {
	const cols = 10
	chunk := db.insertChunk()
	for start := 0; start < len(fresh); start += chunk {
		part := fresh[start:min(start+chunk, len(fresh))]
		args := make([]any, 0, cols*len(part))
		for _, i := range part {
			f := list[i]
			ref, sender, receiver, prepared := fileFacts(f)
			args = append(args, f.Key, f.ETag, f.Size, string(f.Direction), db.timeArg(makoTime(f.SeenAt)), f.Error,
				ref, sender, receiver, db.nullTimeArg(prepared))
		}
		rows, err := stmts.query(ctx, db, tx, "INSERT INTO mako_edi_files (object_key, etag, size, direction, seen_at, error, "+
			"interchange_ref, sender, receiver, prepared_at) VALUES "+rowsPH(cols, len(part))+" RETURNING id, object_key", args...)
		if err != nil {
			return fmt.Errorf("insert files: %w", err)
		}
		ids, err := scanIDs(rows)
		if err != nil {
			return fmt.Errorf("insert files: %w", err)
		}
		for _, i := range part {
			if fileIDs[i] = ids[list[i].Key]; fileIDs[i] == 0 {
				return fmt.Errorf("insert files: no id returned for %s", list[i].Key)
			}
		}
	}
	return nil
}

// buildMessages lists the messages of the files to be written. The partner
// is the other side of the file; the time is DTM+137, else the UNB time.
func buildMessages(list []mako.EDIFile, fileIDs []int64) []ediMessage {
	var msgs []ediMessage
	for i, f := range list {
		ic := f.Interchange
		if fileIDs[i] == 0 || ic == nil {
			continue
		}
		partner := ic.Sender
		if f.Direction == mako.Out {
			partner = ic.Receiver
		}
		for seq, m := range ic.Messages {
			at := m.Date
			if at.IsZero() {
				at = ic.PreparedAt
			}
			msgs = append(msgs, ediMessage{
				fileID: fileIDs[i], seq: seq, dir: f.Direction,
				target: ediTarget{Direction: string(f.Direction), Partner: partner, Type: m.Type, ICRef: ic.Ref,
					MsgRef: m.Ref, DocNo: m.DocumentNo},
				proc: m.ProcessID, bgm: m.BGM, at: makoTime(at), stream: mako.StreamOf(f.Direction, m), ack: m.Ack,
			})
		}
	}
	return msgs
}

func (db *DB) insertMessages(ctx context.Context, tx bun.Tx, stmts stmtCache, msgs []ediMessage) error {
	const cols = 15
	chunk := db.insertChunk()
	type slot struct {
		file int64
		seq  int
	}
	for start := 0; start < len(msgs); start += chunk {
		part := msgs[start:min(start+chunk, len(msgs))]
		args := make([]any, 0, cols*len(part))
		for _, m := range part {
			var verdict, refIC, refMsg string
			if m.ack != nil {
				verdict, refIC, refMsg = string(m.ack.Verdict), m.ack.RefInterchange, m.ack.RefMessage
			}
			t := m.target
			args = append(args, m.fileID, m.seq, string(m.dir), t.Partner, t.Type, m.proc, m.bgm, t.DocNo, t.ICRef, t.MsgRef,
				db.timeArg(m.at), string(m.stream), verdict, refIC, refMsg)
		}
		rows, err := stmts.query(ctx, db, tx, "INSERT INTO mako_edi_messages (file_id, seq, direction, partner_mp_id, type, "+
			"process_id, bgm, document_no, interchange_ref, message_ref, at, stream, verdict, ack_ref_interchange, ack_ref_message) VALUES "+
			rowsPH(cols, len(part))+" RETURNING id, file_id, seq", args...)
		if err != nil {
			return fmt.Errorf("insert messages: %w", err)
		}
		ids := make(map[slot]int64, len(part))
		for rows.Next() {
			var id int64
			var s slot
			if err := rows.Scan(&id, &s.file, &s.seq); err != nil {
				rows.Close()
				return err
			}
			ids[s] = id
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range part {
			m := &part[i]
			if m.id = ids[slot{m.fileID, m.seq}]; m.id == 0 {
				return fmt.Errorf("insert messages: no id returned for file %d message %d", m.fileID, m.seq)
			}
			m.target.ID = m.id
		}
	}
	return nil
}

const targetCols = "id, direction, partner_mp_id, type, interchange_ref, message_ref, document_no, verdict, answered_at"

// answeredBy returns the ids of our messages that the answers answer.
func (db *DB) answeredBy(ctx context.Context, tx bun.Tx, answers []ediAnswer) ([]int64, error) {
	if len(answers) == 0 {
		return nil, nil
	}
	ix := newAnswersIndex(answers)
	var ids []int64
	seen := map[int64]bool{}
	scan := func(col string, refs map[string][]ediAnswer) error {
		vals := make([]string, 0, len(refs))
		for r := range refs {
			vals = append(vals, r)
		}
		for start := 0; start < len(vals); start += refChunk {
			var rows []ediTarget
			if err := db.messagesByRef(tx, targetCols, "", col, " AND m.direction = 'out'",
				vals[start:min(start+refChunk, len(vals))]).Scan(ctx, &rows); err != nil {
				return fmt.Errorf("find answered messages: %w", err)
			}
			for _, t := range rows {
				if !seen[t.ID] && len(ix.of(t)) > 0 {
					seen[t.ID] = true
					ids = append(ids, t.ID)
				}
			}
		}
		return nil
	}
	if err := scan("interchange_ref", ix.byIC); err != nil {
		return nil, err
	}
	if err := scan("message_ref", ix.byMsg); err != nil {
		return nil, err
	}
	if err := scan("document_no", ix.byMsg); err != nil {
		return nil, err
	}
	return ids, nil
}

// recomputeVerdicts sets the answer of record of each of the messages from
// all stored answers to it (mako.Answer.Supersedes decides, in the order the
// answers were indexed), writes those that changed and returns their ids.
func (db *DB) recomputeVerdicts(ctx context.Context, tx bun.Tx, stmts stmtCache, ids []int64) ([]int64, error) {
	var changed []int64
	seen := make(map[int64]bool, len(ids))
	uniq := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	for start := 0; start < len(uniq); start += refChunk {
		var targets []ediTarget
		if err := tx.NewRaw("SELECT "+targetCols+" FROM mako_edi_messages WHERE id IN (?)",
			bun.In(uniq[start:min(start+refChunk, len(uniq))])).Scan(ctx, &targets); err != nil {
			return nil, fmt.Errorf("read answered messages: %w", err)
		}
		icRefs, msgRefs := map[string]bool{}, map[string]bool{}
		for _, t := range targets {
			if !t.answerable() {
				continue
			}
			if t.ICRef != "" {
				icRefs[t.ICRef] = true
			}
			for _, r := range []string{t.MsgRef, t.DocNo} {
				if r != "" {
					msgRefs[r] = true
				}
			}
		}
		var answers []ediAnswer
		load := func(typ, col string, refs map[string]bool) error {
			vals := make([]string, 0, len(refs))
			for r := range refs {
				vals = append(vals, r)
			}
			for s := 0; s < len(vals); s += refChunk {
				var rows []ediAnswer
				// The type is a literal: the partial index's condition
				// (col <> '') is spelled out for SQLite to use it.
				if err := db.messagesByRef(tx, "id, partner_mp_id, type, ack_ref_interchange, ack_ref_message, verdict, at", "", col,
					" AND m.direction = 'in' AND m.type = '"+typ+"' AND m."+col+" <> ''",
					vals[s:min(s+refChunk, len(vals))]).Scan(ctx, &rows); err != nil {
					return fmt.Errorf("read answers: %w", err)
				}
				answers = append(answers, rows...)
			}
			return nil
		}
		if err := load("CONTRL", "ack_ref_interchange", icRefs); err != nil {
			return nil, err
		}
		if err := load("APERAK", "ack_ref_message", msgRefs); err != nil {
			return nil, err
		}
		ix := newAnswersIndex(answers)
		for _, t := range targets {
			if !t.answerable() {
				continue
			}
			var best mako.Answer
			for _, a := range ix.of(t) {
				if ans := (mako.Answer{Verdict: mako.Verdict(a.Verdict), At: a.At.UTC()}); ans.Supersedes(best) {
					best = ans
				}
			}
			var answeredAt time.Time
			if best.Verdict != mako.VerdictNone {
				answeredAt = makoTime(best.At)
			}
			stored := time.Time{}
			if t.AnsweredAt != nil {
				stored = t.AnsweredAt.UTC()
			}
			if string(best.Verdict) == t.Verdict && stored.Equal(answeredAt) {
				continue
			}
			if err := stmts.exec(ctx, db, tx, "UPDATE mako_edi_messages SET verdict = ?, answered_at = ? WHERE id = ?",
				string(best.Verdict), db.nullTimeArg(answeredAt), t.ID); err != nil {
				return nil, fmt.Errorf("record answer of message %d: %w", t.ID, err)
			}
			changed = append(changed, t.ID)
		}
	}
	return changed, nil
}

// updateLatest keeps mako_edi_latest: a new message replaces the entry of
// its partner and stream (and of its partner and latestAny) when it is newer
// (a later time, at the same time the later indexed). Entries marked dirty
// lost a message to a replaced file and are recomputed from the table.
// Entries keep a copy of their message's columns (see copyLatestColumns);
// changed are the messages whose answer of record changed.
func (db *DB) updateLatest(ctx context.Context, tx bun.Tx, stmts stmtCache, msgs []ediMessage, dirty map[latestKey]bool, changed []int64) error {
	cand := map[latestKey]latestVal{}
	offer := func(k latestKey, v latestVal) {
		if cur, ok := cand[k]; !ok || v.newer(cur) {
			cand[k] = v
		}
	}
	for _, m := range msgs {
		if m.target.Partner == "" {
			continue
		}
		v := latestVal{ID: m.id, At: m.at}
		offer(latestKey{m.target.Partner, latestAny}, v)
		if m.stream != "" {
			offer(latestKey{m.target.Partner, string(m.stream)}, v)
		}
	}
	for k := range dirty {
		delete(cand, k)
	}
	partners := map[string]bool{}
	for k := range cand {
		partners[k.partner] = true
	}
	plist := make([]string, 0, len(partners))
	for p := range partners {
		plist = append(plist, p)
	}
	for start := 0; start < len(plist); start += refChunk {
		var rows []struct {
			latestVal
			Partner string `bun:"partner_mp_id"`
			Stream  string `bun:"stream"`
		}
		if err := tx.NewRaw("SELECT partner_mp_id, stream, message_id, at FROM mako_edi_latest WHERE partner_mp_id IN (?)",
			bun.In(plist[start:min(start+refChunk, len(plist))])).Scan(ctx, &rows); err != nil {
			return fmt.Errorf("read newest messages: %w", err)
		}
		for _, r := range rows {
			k := latestKey{r.Partner, r.Stream}
			if c, ok := cand[k]; ok && !c.newer(latestVal{ID: r.ID, At: r.At.UTC()}) {
				delete(cand, k)
			}
		}
	}
	for k := range dirty {
		var rows []latestVal
		q := tx.NewRaw("SELECT id AS message_id, at FROM mako_edi_messages WHERE partner_mp_id = ? AND stream = ? "+
			"ORDER BY at DESC, id DESC LIMIT 1", k.partner, k.stream)
		if k.stream == latestAny {
			q = tx.NewRaw("SELECT id AS message_id, at FROM mako_edi_messages WHERE partner_mp_id = ? "+
				"ORDER BY at DESC, id DESC LIMIT 1", k.partner)
		}
		if err := q.Scan(ctx, &rows); err != nil {
			return fmt.Errorf("recompute newest message of %s %s: %w", k.partner, k.stream, err)
		}
		if len(rows) == 0 {
			if _, err := db.txExec(ctx, tx, "DELETE FROM mako_edi_latest WHERE partner_mp_id = ? AND stream = ?", k.partner, k.stream); err != nil {
				return err
			}
			continue
		}
		cand[k] = latestVal{ID: rows[0].ID, At: rows[0].At.UTC()}
	}
	ks := make([]latestKey, 0, len(cand))
	for k := range cand {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].partner != ks[j].partner {
			return ks[i].partner < ks[j].partner
		}
		return ks[i].stream < ks[j].stream
	})
	const cols = 4
	chunk := db.insertChunk()
	for start := 0; start < len(ks); start += chunk {
		part := ks[start:min(start+chunk, len(ks))]
		args := make([]any, 0, cols*len(part))
		for _, k := range part {
			v := cand[k]
			args = append(args, k.partner, k.stream, v.ID, db.timeArg(v.At))
		}
		if err := stmts.exec(ctx, db, tx, "INSERT INTO mako_edi_latest (partner_mp_id, stream, message_id, at) VALUES "+
			rowsPH(cols, len(part))+" ON CONFLICT (partner_mp_id, stream) DO UPDATE SET message_id = excluded.message_id, at = excluded.at",
			args...); err != nil {
			return fmt.Errorf("write newest messages: %w", err)
		}
	}
	copies := make([]int64, 0, len(ks)+len(changed))
	for _, k := range ks {
		copies = append(copies, cand[k].ID)
	}
	return db.copyLatestColumns(ctx, tx, append(copies, changed...))
}

// latestCopyCols are the columns of a message (m) and its file (f) that
// mako_edi_latest keeps a copy of, in the order of latestCols.
const (
	latestCopyCols = "f.object_key, m.direction, m.type, m.process_id, m.bgm, m.document_no, m.interchange_ref, " +
		"m.message_ref, m.stream, m.verdict, m.answered_at"
	latestCols = "object_key, direction, type, process_id, bgm, document_no, interchange_ref, " +
		"message_ref, message_stream, verdict, answered_at"
)

// copyLatestColumns copies the columns the overview shows from the messages
// ids (and their files) into the mako_edi_latest entries that point at
// them. The overview then reads the few thousand entries alone instead of
// probing the message and file tables once per entry, which took 60-90 ms
// at 900 DSOs (migration 20261128000006). A message's columns change only
// when its answer of record does; so the copy is taken for the entries this
// run wrote and for the messages whose answer changed. The copy is a
// correlated subquery per entry, found through mako_edi_latest_message: one
// primary-key probe into each table, whatever the statistics say.
func (db *DB) copyLatestColumns(ctx context.Context, tx bun.Tx, ids []int64) error {
	for start := 0; start < len(ids); start += refChunk {
		if _, err := tx.NewRaw("UPDATE mako_edi_latest SET ("+latestCols+") = (SELECT "+latestCopyCols+
			" FROM mako_edi_messages m JOIN mako_edi_files f ON f.id = m.file_id WHERE m.id = mako_edi_latest.message_id) "+
			"WHERE message_id IN (?)", bun.In(ids[start:min(start+refChunk, len(ids))])).Exec(ctx); err != nil {
			return fmt.Errorf("copy the newest messages' columns: %w", err)
		}
	}
	return nil
}

// EDIFileETags maps the keys of the indexed files under prefix to the ETag
// they were indexed with.
func (db *DB) EDIFileETags(ctx context.Context, prefix string) (map[string]string, error) {
	var rows []struct {
		Key  string `bun:"object_key"`
		ETag string `bun:"etag"`
	}
	// substr counts characters on both backends; a range on the key would
	// depend on the server's collation.
	if err := db.bun.NewRaw("SELECT object_key, etag FROM mako_edi_files WHERE substr(object_key, 1, ?) = ?",
		utf8.RuneCountInString(prefix), prefix).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("list indexed edifact files under %q: %w", prefix, err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		if strings.HasPrefix(r.Key, prefix) {
			out[r.Key] = r.ETag
		}
	}
	return out, nil
}

// EDIFileErrors lists the files that could not be parsed, newest first (by
// the time they were seen); limit <= 0 lists all.
func (db *DB) EDIFileErrors(ctx context.Context, limit int) ([]mako.EDIFile, error) {
	var rows []struct {
		Key       string    `bun:"object_key"`
		ETag      string    `bun:"etag"`
		Size      int64     `bun:"size"`
		Direction string    `bun:"direction"`
		SeenAt    time.Time `bun:"seen_at"`
		Error     string    `bun:"error"`
	}
	q := "SELECT object_key, etag, size, direction, seen_at, error FROM mako_edi_files WHERE error <> '' ORDER BY seen_at DESC, id DESC"
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	if err := db.bun.NewRaw(q).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("list unparseable edifact files: %w", err)
	}
	out := make([]mako.EDIFile, len(rows))
	for i, r := range rows {
		out[i] = mako.EDIFile{Key: r.Key, ETag: r.ETag, Size: r.Size, Direction: mako.Direction(r.Direction),
			SeenAt: r.SeenAt.UTC(), Error: r.Error}
	}
	return out, nil
}

// storedMessageRow is a message as the views read it back.
type storedMessageRow struct {
	ID             int64      `bun:"id"`
	FileKey        string     `bun:"object_key"`
	Direction      string     `bun:"direction"`
	PartnerMPID    string     `bun:"partner_mp_id"`
	Type           string     `bun:"type"`
	ProcessID      string     `bun:"process_id"`
	BGM            string     `bun:"bgm"`
	DocumentNo     string     `bun:"document_no"`
	InterchangeRef string     `bun:"interchange_ref"`
	MessageRef     string     `bun:"message_ref"`
	At             time.Time  `bun:"at"`
	Stream         string     `bun:"stream"`
	Verdict        string     `bun:"verdict"`
	AnsweredAt     *time.Time `bun:"answered_at"`
	// LatestStream is the mako_edi_latest entry the row was read for.
	LatestStream string `bun:"-"`
}

const storedMessageCols = "m.id, f.object_key, m.direction, m.partner_mp_id, m.type, m.process_id, m.bgm, m.document_no, " +
	"m.interchange_ref, m.message_ref, m.at, m.stream, m.verdict, m.answered_at"

// fileJoin joins the files (f) of messages (m) for storedMessageCols.
// PostgreSQL hashed the whole file table for a join of a few rows while its
// statistics lagged behind a bulk load (200 ms for 200 refs against 200,000
// files); LATERAL makes it one primary-key probe per message. SQLite probes
// by itself.
func (db *DB) fileJoin() string {
	if db.dialect == Postgres {
		return " CROSS JOIN LATERAL (SELECT object_key FROM mako_edi_files WHERE id = m.file_id OFFSET 0) f"
	}
	return " JOIN mako_edi_files f ON f.id = m.file_id"
}

// messagesByRef selects cols of the messages (m, joined with join) whose
// column col equals one of refs and that meet cond (" AND m.x = ..."). On
// PostgreSQL an IN list was planned from the statistics, which lag behind a
// bulk load: 200 refs looked like 20,000 rows, so it scanned the table (350
// ms at 250,000 messages, and indexing slowed down as the table grew). Each
// unnest()ed ref is one probe of col's index instead, whatever the
// statistics say; OFFSET 0 keeps the planner from flattening the probe into
// a join. SQLite plans IN lists on the index.
func (db *DB) messagesByRef(conn bun.IDB, cols, join, col, cond string, refs []string) *bun.RawQuery {
	if db.dialect == Postgres {
		return conn.NewRaw("SELECT "+cols+" FROM unnest(ARRAY[?]::text[]) AS k(ref) CROSS JOIN LATERAL "+
			"(SELECT * FROM mako_edi_messages m WHERE m."+col+" = k.ref"+cond+" OFFSET 0) m"+join, bun.In(refs))
	}
	return conn.NewRaw("SELECT "+cols+" FROM mako_edi_messages m"+join+" WHERE m."+col+" IN (?)"+cond, bun.In(refs))
}

func (r storedMessageRow) domain() mako.StoredMessage {
	m := mako.StoredMessage{ID: r.ID, FileKey: r.FileKey, Direction: mako.Direction(r.Direction), PartnerMPID: r.PartnerMPID,
		Type: r.Type, ProcessID: r.ProcessID, BGM: r.BGM, DocumentNo: r.DocumentNo, InterchangeRef: r.InterchangeRef,
		MessageRef: r.MessageRef, At: r.At.UTC(), Stream: mako.Stream(r.Stream), Verdict: mako.Verdict(r.Verdict)}
	if r.AnsweredAt != nil {
		m.AnsweredAt = r.AnsweredAt.UTC()
	}
	return m
}

// LookupReferences finds the messages whose interchange reference, message
// reference or document number equals one of refs (exactly); the map is
// keyed by the ref looked up, its messages ordered by time, and refs without
// a message are absent.
func (db *DB) LookupReferences(ctx context.Context, refs []string) (map[string][]mako.StoredMessage, error) {
	want := make(map[string]bool, len(refs))
	vals := make([]string, 0, len(refs))
	for _, r := range refs {
		if r != "" && !want[r] {
			want[r] = true
			vals = append(vals, r)
		}
	}
	out := map[string][]mako.StoredMessage{}
	seen := map[string]map[int64]bool{}
	err := db.makoRead(ctx, func(conn bun.IDB) error {
		for start := 0; start < len(vals); start += refChunk {
			part := vals[start:min(start+refChunk, len(vals))]
			for _, col := range []string{"interchange_ref", "message_ref", "document_no"} {
				var rows []storedMessageRow
				if err := db.messagesByRef(conn, storedMessageCols, db.fileJoin(), col, "", part).Scan(ctx, &rows); err != nil {
					return err
				}
				for _, r := range rows {
					var ref string
					switch col {
					case "interchange_ref":
						ref = r.InterchangeRef
					case "message_ref":
						ref = r.MessageRef
					default:
						ref = r.DocumentNo
					}
					if seen[ref] == nil {
						seen[ref] = map[int64]bool{}
					}
					if seen[ref][r.ID] {
						continue
					}
					seen[ref][r.ID] = true
					out[ref] = append(out[ref], r.domain())
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look up references: %w", err)
	}
	for _, ms := range out {
		sort.Slice(ms, func(i, j int) bool {
			if !ms[i].At.Equal(ms[j].At) {
				return ms[i].At.Before(ms[j].At)
			}
			return ms[i].ID < ms[j].ID
		})
	}
	return out, nil
}

// ediWhat describes an EDIFACT contact, e.g. "PARTIN 37001 erhalten",
// "UTILMD 55071 gesendet" or "APERAK abgelehnt erhalten".
func ediWhat(m mako.StoredMessage) string {
	parts := []string{m.Type}
	if m.ProcessID != "" {
		parts = append(parts, m.ProcessID)
	}
	if isAckType(m.Type) && m.Verdict != mako.VerdictNone {
		parts = append(parts, string(m.Verdict))
	}
	if m.Direction == mako.In {
		parts = append(parts, "erhalten")
	} else {
		parts = append(parts, "gesendet")
	}
	return strings.Join(parts, " ")
}

// MakoFacts returns per partner mp_id (every partner of the registry, and
// every mp_id messages were exchanged with) the newest message of each
// stream, the newest EDIFACT contact (any message, either direction) and the
// newest mail contact: a received mail from, or a sent mail to, an address
// that PartnerEmails attributes to the partner. While no registry import
// and no indexing run has written since the last call, it answers from that
// call's read (see mako_cache.go).
func (db *DB) MakoFacts(ctx context.Context) (map[string]mako.PartnerFacts, error) {
	now := time.Now()
	versions, err := db.makoVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("mako facts: %w", err)
	}
	if facts, ok := db.makoFacts.get(versions, now); ok {
		return facts, nil
	}
	var out map[string]mako.PartnerFacts
	err = db.makoRead(ctx, func(conn bun.IDB) error {
		var err error
		out, err = db.readMakoFacts(ctx, conn)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mako facts: %w", err)
	}
	db.makoFacts.put(versions, now, out)
	return out, nil
}

func (db *DB) readMakoFacts(ctx context.Context, conn bun.IDB) (map[string]mako.PartnerFacts, error) {
	out := map[string]mako.PartnerFacts{}
	get := func(mpid string) mako.PartnerFacts {
		f, ok := out[mpid]
		if !ok {
			f = mako.PartnerFacts{Latest: map[mako.Stream]mako.StoredMessage{}}
			out[mpid] = f
		}
		return f
	}
	var mpids []string
	if err := conn.NewRaw("SELECT mp_id FROM mako_partners").Scan(ctx, &mpids); err != nil {
		return nil, fmt.Errorf("partners: %w", err)
	}
	for _, id := range mpids {
		get(id)
	}

	latest, err := db.latestMessages(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("newest messages: %w", err)
	}
	for _, r := range latest {
		f := get(r.PartnerMPID)
		m := r.domain()
		if r.LatestStream == latestAny {
			f.Edi = &mako.Contact{At: m.At, Channel: "edifact", Direction: m.Direction, What: ediWhat(m)}
			out[r.PartnerMPID] = f
			continue
		}
		f.Latest[mako.Stream(r.LatestStream)] = m
	}

	var contacts []makoContactRow
	if err := conn.NewRaw("SELECT id, mp_id, email, valid_from, valid_to FROM mako_contacts").Scan(ctx, &contacts); err != nil {
		return nil, fmt.Errorf("partner addresses: %w", err)
	}
	owner := partnerEmails(contacts)
	mailQuery := "SELECT x.email, m.id, m.at, m.direction, m.subject FROM (SELECT c.email, " +
		"(SELECT a.mail_id FROM mako_mail_addresses a WHERE a.address = c.email AND a.partner_side = 1 " +
		"ORDER BY a.at DESC, a.mail_id DESC LIMIT 1) AS mail_id FROM (SELECT DISTINCT email FROM mako_contacts) c) x " +
		"JOIN mako_mails m ON m.id = x.mail_id"
	if db.dialect == Postgres {
		// PostgreSQL would hash the whole mail table; LATERAL keeps it to
		// one index probe per address and one per mail found.
		mailQuery = "SELECT c.email, m.id, m.at, m.direction, m.subject FROM (SELECT DISTINCT email FROM mako_contacts) c " +
			"CROSS JOIN LATERAL (SELECT a.mail_id FROM mako_mail_addresses a WHERE a.address = c.email AND a.partner_side = 1 " +
			"ORDER BY a.at DESC, a.mail_id DESC LIMIT 1) x " +
			"CROSS JOIN LATERAL (SELECT id, at, direction, subject FROM mako_mails WHERE id = x.mail_id OFFSET 0) m"
	}
	var mails []struct {
		Email     string    `bun:"email"`
		ID        int64     `bun:"id"`
		At        time.Time `bun:"at"`
		Direction string    `bun:"direction"`
		Subject   string    `bun:"subject"`
	}
	// One probe of the partial address index per partner address: the
	// newest mail on the partner's side of it.
	if err := conn.NewRaw(mailQuery).Scan(ctx, &mails); err != nil {
		return nil, fmt.Errorf("newest mails: %w", err)
	}
	newestMail := map[string]latestVal{}
	for _, m := range mails {
		mpid, ok := owner[m.Email]
		if !ok {
			continue
		}
		v := latestVal{ID: m.ID, At: m.At.UTC()}
		if cur, ok := newestMail[mpid]; ok && !v.newer(cur) {
			continue
		}
		newestMail[mpid] = v
		f := get(mpid)
		c := &mako.Contact{At: v.At, Channel: "mail", Direction: mako.Direction(m.Direction)}
		verb := "E-Mail erhalten"
		if c.Direction == mako.Out {
			verb = "E-Mail gesendet"
		}
		c.What = verb
		if m.Subject != "" {
			c.What = verb + ": " + m.Subject
		}
		f.Mail = c
		out[mpid] = f
	}
	return out, nil
}

// latestMessages reads the messages mako_edi_latest points at, from the
// copy of their columns it keeps (see copyLatestColumns). It scans without
// bun's reflection, which took as long as the query itself for the few
// thousand rows.
func (db *DB) latestMessages(ctx context.Context, conn bun.IDB) ([]storedMessageRow, error) {
	q := "SELECT stream, message_id, object_key, direction, partner_mp_id, type, process_id, bgm, document_no, " +
		"interchange_ref, message_ref, at, message_stream, verdict, answered_at FROM mako_edi_latest"
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// Room for five entries (the four streams and the newest of any) of
	// each of about 1,000 DSOs, the German market, so that the slice of
	// large rows is not copied as it grows.
	out := make([]storedMessageRow, 0, 5*1000)
	for rows.Next() {
		var r storedMessageRow
		var at, answered scanTime
		if err := rows.Scan(&r.LatestStream, &r.ID, &r.FileKey, &r.Direction, &r.PartnerMPID, &r.Type, &r.ProcessID, &r.BGM,
			&r.DocumentNo, &r.InterchangeRef, &r.MessageRef, &at, &r.Stream, &r.Verdict, &answered); err != nil {
			return nil, err
		}
		r.At = at.t
		if answered.valid {
			t := answered.t
			r.AnsweredAt = &t
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// scanTime scans a timestamp column: PostgreSQL's drivers return a
// time.Time, SQLite's a time.Time for columns declared TIMESTAMP or the text
// bun wrote.
type scanTime struct {
	t     time.Time
	valid bool
}

var scanTimeLayouts = []string{"2006-01-02 15:04:05.999999999-07:00", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"}

func (s *scanTime) Scan(v any) error {
	var text string
	switch x := v.(type) {
	case nil:
		*s = scanTime{}
		return nil
	case time.Time:
		*s = scanTime{t: x.UTC(), valid: true}
		return nil
	case string:
		text = x
	case []byte:
		text = string(x)
	default:
		return fmt.Errorf("timestamp: cannot scan %T", v)
	}
	for _, l := range scanTimeLayouts {
		if t, err := time.Parse(l, text); err == nil {
			*s = scanTime{t: t.UTC(), valid: true}
			return nil
		}
	}
	return fmt.Errorf("timestamp: cannot parse %q", text)
}

// makoRead runs the reads of fn. On PostgreSQL they run in a read-only
// transaction (one snapshot) with JIT compilation off: the planner's cost
// estimates, inflated by statistics that lag behind a bulk load, crossed the
// JIT thresholds, and compiling took 60 ms per lookup whose execution took
// under 1 ms. SQLite reads without a transaction, which would take the
// write lock here (_txlock=immediate).
func (db *DB) makoRead(ctx context.Context, fn func(conn bun.IDB) error) error {
	if db.dialect != Postgres {
		return fn(db.bun)
	}
	return db.bun.RunInTx(ctx, &sql.TxOptions{ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "SELECT set_config('jit', 'off', true)"); err != nil {
			return err
		}
		return fn(tx)
	})
}

// scanIDs reads the (id, key) pairs a multi-row INSERT ... RETURNING gives
// back, keyed by the key, and closes the rows.
func scanIDs(rows *sql.Rows) (map[string]int64, error) {
	defer rows.Close()
	ids := map[string]int64{}
	for rows.Next() {
		var id int64
		var key string
		if err := rows.Scan(&id, &key); err != nil {
			return nil, err
		}
		ids[key] = id
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return ids, rows.Close()
}
