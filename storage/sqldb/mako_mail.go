package sqldb

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// The mail channel. A mail's addresses live in mako_mail_addresses, with the
// partner's side of the mail (the sender of a received mail, the recipients
// of a sent one) marked, so that MakoFacts finds the newest mail per partner
// address with one index probe.

// MailSources lists the Source values of indexed mails that start with prefix.
func (db *DB) MailSources(ctx context.Context, prefix string) (map[string]bool, error) {
	var rows []string
	if err := db.bun.NewRaw("SELECT source FROM mako_mails WHERE substr(source, 1, ?) = ?",
		utf8.RuneCountInString(prefix), prefix).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("list mail sources under %q: %w", prefix, err)
	}
	out := make(map[string]bool, len(rows))
	for _, s := range rows {
		if strings.HasPrefix(s, prefix) {
			out[s] = true
		}
	}
	return out, nil
}

// IndexMails stores mails, skipping those whose Source, or Folder and
// non-empty MessageID, are indexed already (or came earlier in mails); it
// returns how many were new. Addresses are stored lower-cased.
func (db *DB) IndexMails(ctx context.Context, mails []mako.Mail) (int, error) {
	bySource := map[string]bool{}
	byMessage := map[[2]string]bool{}
	list := make([]mako.Mail, 0, len(mails))
	for i, m := range mails {
		switch {
		case m.Source == "":
			return 0, pipeline.Errorf(pipeline.Invalid, "mail %d: the source is empty", i+1)
		case m.Direction != mako.In && m.Direction != mako.Out:
			return 0, pipeline.Errorf(pipeline.Invalid, "mail %s: direction %q (want in or out)", m.Source, m.Direction)
		}
		mk := [2]string{m.Folder, m.MessageID}
		if bySource[m.Source] || (m.MessageID != "" && byMessage[mk]) {
			continue
		}
		bySource[m.Source] = true
		if m.MessageID != "" {
			byMessage[mk] = true
		}
		m.From = normEmail(m.From)
		to := make([]string, 0, len(m.To))
		for _, a := range m.To {
			if a = normEmail(a); a != "" {
				to = append(to, a)
			}
		}
		m.To = to
		m.Date = makoTime(m.Date)
		list = append(list, m)
	}
	if len(list) == 0 {
		return 0, nil
	}
	added := 0
	err := db.inTx(ctx, func(tx bun.Tx) error {
		stmts := stmtCache{}
		defer func() {
			for _, s := range stmts {
				s.Close()
			}
		}()
		added = 0
		const cols = 11
		chunk := db.insertChunk()
		for start := 0; start < len(list); start += chunk {
			part := list[start:min(start+chunk, len(list))]
			args := make([]any, 0, cols*len(part))
			for _, m := range part {
				att, err := json.Marshal(m.Attachments)
				if err != nil {
					return err
				}
				if m.Attachments == nil {
					att = []byte("[]")
				}
				args = append(args, m.Source, m.Folder, string(m.Direction), m.MessageID, m.InReplyTo, db.timeArg(m.Date),
					m.From, m.FromName, m.Subject, m.Text, string(att))
			}
			// DO NOTHING without a target skips a conflict on the source as well
			// as on the folder and message id; RETURNING names only the new rows.
			rows, err := stmts.query(ctx, db, tx, "INSERT INTO mako_mails (source, folder, direction, message_id, in_reply_to, at, "+
				"from_addr, from_name, subject, body, attachments) VALUES "+rowsPH(cols, len(part))+
				" ON CONFLICT DO NOTHING RETURNING id, source", args...)
			if err != nil {
				return fmt.Errorf("insert mails: %w", err)
			}
			ids, err := scanIDs(rows)
			if err != nil {
				return fmt.Errorf("insert mails: %w", err)
			}
			added += len(ids)
			var addr []any
			n := 0
			for _, m := range part {
				id, ok := ids[m.Source]
				if !ok {
					continue
				}
				if m.From != "" {
					addr = append(addr, id, "from", 0, m.From, boolInt(m.Direction == mako.In), db.timeArg(m.Date))
					n++
				}
				for i, a := range m.To {
					addr = append(addr, id, "to", i, a, boolInt(m.Direction == mako.Out), db.timeArg(m.Date))
					n++
				}
			}
			const acols = 6
			for s := 0; s < n; s += chunk {
				e := min(s+chunk, n)
				if _, err := db.txExec(ctx, tx, "INSERT INTO mako_mail_addresses (mail_id, role, pos, address, partner_side, at) VALUES "+
					rowsPH(acols, e-s), addr[s*acols:e*acols]...); err != nil {
					return fmt.Errorf("insert mail addresses: %w", err)
				}
			}
		}
		if added == 0 {
			return nil
		}
		return db.bumpMakoVersion(ctx, tx, makoWriterMail)
	})
	if err != nil {
		return 0, fmt.Errorf("index %d mails: %w", len(list), err)
	}
	return added, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

type mailRow struct {
	ID          int64     `bun:"id"`
	Source      string    `bun:"source"`
	Folder      string    `bun:"folder"`
	Direction   string    `bun:"direction"`
	MessageID   string    `bun:"message_id"`
	InReplyTo   string    `bun:"in_reply_to"`
	At          time.Time `bun:"at"`
	From        string    `bun:"from_addr"`
	FromName    string    `bun:"from_name"`
	Subject     string    `bun:"subject"`
	Body        string    `bun:"body"`
	Attachments string    `bun:"attachments"`
}

// Mails lists the mails of a direction dated at or after since, newest first
// (by date, then the later indexed first).
func (db *DB) Mails(ctx context.Context, dir mako.Direction, since time.Time) ([]mako.Mail, error) {
	var rows []mailRow
	if err := db.bun.NewRaw("SELECT id, source, folder, direction, message_id, in_reply_to, at, from_addr, from_name, subject, body, "+
		"attachments FROM mako_mails WHERE direction = ? AND at >= ? ORDER BY at DESC, id DESC",
		string(dir), makoTime(since)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("list %s mails: %w", dir, err)
	}
	to := map[int64][]string{}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	for start := 0; start < len(ids); start += refChunk {
		var addrs []struct {
			MailID  int64  `bun:"mail_id"`
			Address string `bun:"address"`
		}
		if err := db.bun.NewRaw("SELECT mail_id, address FROM mako_mail_addresses WHERE role = 'to' AND mail_id IN (?) ORDER BY mail_id, pos",
			bun.In(ids[start:min(start+refChunk, len(ids))])).Scan(ctx, &addrs); err != nil {
			return nil, fmt.Errorf("list %s mail recipients: %w", dir, err)
		}
		for _, a := range addrs {
			to[a.MailID] = append(to[a.MailID], a.Address)
		}
	}
	out := make([]mako.Mail, len(rows))
	for i, r := range rows {
		var att []string
		if err := json.Unmarshal([]byte(r.Attachments), &att); err != nil {
			return nil, fmt.Errorf("mail %s: stored attachments: %w", r.Source, err)
		}
		if len(att) == 0 {
			att = nil
		}
		recipients := to[r.ID]
		if recipients == nil {
			recipients = []string{}
		}
		out[i] = mako.Mail{Source: r.Source, Folder: r.Folder, Direction: mako.Direction(r.Direction), MessageID: r.MessageID,
			InReplyTo: r.InReplyTo, Date: r.At.UTC(), From: r.From, FromName: r.FromName, To: recipients, Subject: r.Subject,
			Text: r.Body, Attachments: att}
	}
	return out, nil
}
