package main

import (
	"context"
	"flag"
	"fmt"
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
	// The configuration's folders hold the defaults (defaultMailFolders)
	// with the file's and the environment's entries over them.
	folders := map[string]mako.Direction{}
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

// withMako runs fn on the market communication over the configured stores
// and prints its result as JSON, as withMarktdaten does.
func (a *app) withMako(ctx context.Context, fn func(m *jobs.Mako) (any, error)) error {
	db, bucket, err := a.openStores(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	m, err := a.newMako(db, bucket)
	if err != nil {
		return err
	}
	res, err := fn(m)
	if err != nil {
		return err
	}
	return a.printJSON(res)
}

func cmdMakoSync(a *app, fs *flag.FlagSet) action {
	return noArgs(func(ctx context.Context) error {
		return a.withMako(ctx, func(m *jobs.Mako) (any, error) {
			start := time.Now()
			a.note("mako sync: indexing registry, outbox/edifact, inbox/edifact, inbox/mail and IMAP ...")
			rep, err := m.Sync(ctx)
			if err != nil {
				return nil, err
			}
			took := time.Since(start)
			a.note(fmt.Sprintf("mako sync: %d EDIFACT files (%d unparseable), %d mail files, %d IMAP mails, %d pre-listed in %s",
				rep.EDIFiles, rep.EDIUnparsable, rep.MailFiles, rep.IMAPMails, rep.Noted, took.Round(time.Millisecond)),
				"edifact_files", rep.EDIFiles, "edifact_unparseable", rep.EDIUnparsable, "mail_files", rep.MailFiles,
				"imap_mails", rep.IMAPMails, "prelisted", rep.Noted, "duration_s", roundSeconds(took.Seconds()))
			return rep, nil
		})
	})
}

func cmdMakoRegistry(a *app, fs *flag.FlagSet) action {
	return oneArg("FILE", func(ctx context.Context, path string) error {
		f, err := inputFile(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return a.withMako(ctx, func(m *jobs.Mako) (any, error) {
			res, skipped, err := m.ImportRegistry(ctx, "cli:"+path, f)
			if err != nil {
				return nil, err
			}
			return map[string]any{"result": res, "skipped_rows": skipped}, nil
		})
	})
}

func cmdMakoSend(a *app, fs *flag.FlagSet) action {
	return func(ctx context.Context, pos []string) error {
		if len(pos) != 2 {
			return usagef("want MP_ID and partin_out or zuordnungsermaechtigung_out")
		}
		st, ok := mako.ParseSendStream(pos[1])
		if !ok {
			return usagef("stream %q: want partin_out or zuordnungsermaechtigung_out", pos[1])
		}
		return a.withMako(ctx, func(m *jobs.Mako) (any, error) {
			return m.Send(ctx, pos[0], st)
		})
	}
}

func cmdMakoNachversand(a *app, fs *flag.FlagSet) action {
	list := fs.Bool("list", false, "list the queue instead of sending it")
	return noArgs(func(ctx context.Context) error {
		return a.withMako(ctx, func(m *jobs.Mako) (any, error) {
			if *list {
				return m.Vormerkungen(ctx)
			}
			res, err := m.SendPrelisted(ctx)
			if err != nil {
				return nil, err
			}
			for i, r := range res {
				state := "sent"
				if r.Error != "" {
					state = "kept: " + r.Error
				}
				a.note(fmt.Sprintf("nachversand %d/%d %s %s", i+1, len(res), r.Vormerkung.Key(), state),
					"done", i+1, "total", len(res), "vormerkung", r.Vormerkung.Key(), "sent", r.Error == "")
			}
			return res, nil
		})
	})
}

func cmdMakoOverview(a *app, fs *flag.FlagSet) action {
	tage := fs.Int("tage", 365, "look-back days, 1 to 730")
	ordnung := fs.String("ordnung", mako.OrderStatus, "order: status or kontakt")
	return noArgs(func(ctx context.Context) error {
		if *tage < 1 || *tage > 730 || (*ordnung != mako.OrderStatus && *ordnung != mako.OrderKontakt) {
			return usagef("want --tage 1..730 and --ordnung status or kontakt")
		}
		return a.withMako(ctx, func(m *jobs.Mako) (any, error) {
			return m.Overview(ctx, *tage, *ordnung)
		})
	})
}

func cmdMakoAntworten(a *app, fs *flag.FlagSet) action {
	tage := fs.Int("tage", 7, "look-back days, 1 to 90")
	return noArgs(func(ctx context.Context) error {
		if *tage < 1 || *tage > 90 {
			return usagef("want --tage 1..90")
		}
		return a.withMako(ctx, func(m *jobs.Mako) (any, error) {
			return m.Reconcile(ctx, *tage)
		})
	})
}
