package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/ingest/edifact"
	"github.com/schedbridge/schedbridge/ingest/mail"
	"github.com/schedbridge/schedbridge/jobs"
	"github.com/schedbridge/schedbridge/pipeline/mako"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// imapBox adapts ingest/mail's IMAP client to the jobs.Mailbox the sync uses.
type imapBox struct{ *mail.Mailbox }

func (b imapBox) Fetch(ctx context.Context, folder string, uidValidity, afterUID uint32, batch int, fn func(uid uint32, raw []byte) error) (uint32, uint32, error) {
	st, err := b.Mailbox.Fetch(ctx, folder, uidValidity, afterUID, batch, fn)
	return st.UIDValidity, st.LastUID, err
}

// newMako wires the market communication over the database and the bucket.
func (a *app) newMako(db *sqldb.DB, bucket objstore.Bucket) (*jobs.Mako, error) {
	c := a.cfg.Mako
	folders := map[string]mako.Direction{"INBOX": mako.In, "Sent": mako.Out, "Gesendet": mako.Out, "Gesendete Elemente": mako.Out}
	for f, d := range c.MailFolders {
		folders[f] = mako.Direction(d)
	}
	cfg := jobs.MakoConfig{
		Now: a.now, Logger: a.log.With("component", "mako"),
		ParseEDI: edifact.Parse, ParseMail: mail.Parse, MailFolders: folders, IMAPFolders: c.IMAP.Folders,
		Self: jobs.Identity{
			MPID: c.Self.MPID, Name: c.Self.Name, Street: c.Self.Street, PostalCode: c.Self.PostalCode, City: c.Self.City,
			ContactName: c.Self.ContactName, Email: c.Self.Email, Phone: c.Self.Phone, PartinProcessID: c.Self.PartinProcessID,
			BalancingGroup: c.Self.BalancingGroup, Supplier: c.Self.Supplier, SeriesTypes: c.Self.SeriesTypes,
		},
	}
	if c.IMAP.Addr != "" {
		ic := mail.IMAPConfig{Addr: c.IMAP.Addr, Username: c.IMAP.Username, Password: c.IMAP.Password, Security: c.IMAP.Security, Timeout: 30 * time.Second}
		cfg.IMAP = func(ctx context.Context) (jobs.Mailbox, error) {
			box, err := mail.DialIMAP(ctx, ic)
			if err != nil {
				return nil, err
			}
			return imapBox{box}, nil
		}
	}
	return jobs.NewMako(db, bucket, cfg)
}

// runMakoSync syncs the channels every interval until ctx ends. Every
// process may sync: the index is keyed by file and mail, so a file indexed
// twice changes nothing.
func (a *app) runMakoSync(ctx context.Context, m *jobs.Mako, md *jobs.Marktdaten, b jobs.DropBucket) {
	t := time.NewTicker(a.cfg.Mako.Interval)
	defer t.Stop()
	for {
		if _, err := m.Sync(ctx); err != nil && ctx.Err() == nil {
			a.log.Error("mako sync failed", "err", err)
		}
		// The price and activation drop folders are read on the same beat.
		if _, err := md.SyncDrops(ctx, b); err != nil && ctx.Err() == nil {
			a.log.Error("market data drop sync failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

const makoUsage = `usage:
  schedbridge mako sync                          index new EDIFACT files, mails and registry files once
  schedbridge mako registry FILE                 replace the partner registry with a CSV export
  schedbridge mako send MP_ID partin_out|zuordnungsermaechtigung_out
  schedbridge mako nachversand [--list]          send everything pre-listed (or list the queue)
  schedbridge mako overview [--tage N] [--ordnung status|kontakt]
  schedbridge mako antworten [--tage N]          the reply reconciliation as JSON`

func (a *app) makoCmd(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("%s", makoUsage)
	}
	db, bucket, err := a.openStores(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	m, err := a.newMako(db, bucket)
	if err != nil {
		return err
	}
	out := json.NewEncoder(a.stdout)
	out.SetIndent("", "  ")
	sub, rest := args[0], args[1:]
	switch sub {
	case "sync":
		start := time.Now()
		fmt.Fprintln(a.stderr, "mako sync: indexing registry, outbox/edifact, inbox/edifact, inbox/mail and IMAP ...")
		rep, err := m.Sync(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "mako sync: %d EDIFACT files (%d unparseable), %d mail files, %d IMAP mails, %d pre-listed in %s\n",
			rep.EDIFiles, rep.EDIUnparsable, rep.MailFiles, rep.IMAPMails, rep.Noted, time.Since(start).Round(time.Millisecond))
		return out.Encode(rep)
	case "registry":
		if len(rest) != 1 {
			return usagef("%s", makoUsage)
		}
		f, err := os.Open(rest[0])
		if err != nil {
			return err
		}
		defer f.Close()
		res, skipped, err := m.ImportRegistry(ctx, "cli:"+rest[0], f)
		if err != nil {
			return err
		}
		return out.Encode(map[string]any{"result": res, "skipped_rows": skipped})
	case "send":
		if len(rest) != 2 {
			return usagef("%s", makoUsage)
		}
		st, ok := mako.ParseSendStream(rest[1])
		if !ok {
			return usagef("stream %q: want partin_out or zuordnungsermaechtigung_out", rest[1])
		}
		s, err := m.Send(ctx, rest[0], st)
		if err != nil {
			return err
		}
		return out.Encode(s)
	case "nachversand":
		fs := newFlagSet("mako nachversand", a.stderr)
		list := fs.Bool("list", false, "list the queue instead of sending it")
		if pos, err := parseInterspersed(fs, rest); err != nil {
			return err
		} else if len(pos) > 0 {
			return usagef("mako nachversand takes no arguments")
		}
		if *list {
			vs, err := m.Vormerkungen(ctx)
			if err != nil {
				return err
			}
			return out.Encode(vs)
		}
		res, err := m.SendPrelisted(ctx)
		if err != nil {
			return err
		}
		for i, r := range res {
			state := "sent"
			if r.Error != "" {
				state = "kept: " + r.Error
			}
			fmt.Fprintf(a.stderr, "nachversand %d/%d %s %s\n", i+1, len(res), r.Vormerkung.Key(), state)
		}
		return out.Encode(res)
	case "overview", "antworten":
		fs := newFlagSet("mako "+sub, a.stderr)
		tage := fs.Int("tage", map[string]int{"overview": 365, "antworten": 7}[sub], "look-back days")
		ordnung := fs.String("ordnung", mako.OrderStatus, "status or kontakt")
		if pos, err := parseInterspersed(fs, rest); err != nil {
			return err
		} else if len(pos) > 0 {
			return usagef("mako %s takes no arguments", sub)
		}
		if sub == "overview" {
			if *tage < 1 || *tage > 730 || (*ordnung != mako.OrderStatus && *ordnung != mako.OrderKontakt) {
				return usagef("--tage 1..730, --ordnung status or kontakt")
			}
			ov, err := m.Overview(ctx, *tage, *ordnung)
			if err != nil {
				return err
			}
			return out.Encode(ov)
		}
		if *tage < 1 || *tage > 90 {
			return usagef("--tage 1..90")
		}
		r, err := m.Reconcile(ctx, *tage)
		if err != nil {
			return err
		}
		return out.Encode(r)
	}
	return usagef("unknown mako command %q\n%s", sub, strings.TrimSpace(makoUsage))
}
