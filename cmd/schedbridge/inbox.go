package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedbridge/schedbridge/ingest/bulk"
	"github.com/schedbridge/schedbridge/ingest/inbox"
	"github.com/schedbridge/schedbridge/pipeline/fahrplan"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// openBucket opens the configured object store: S3 when an endpoint is set,
// else the local directory <data_dir>/bucket.
func (a *app) openBucket(ctx context.Context) (objstore.Bucket, error) {
	if a.cfg.S3.Endpoint == "" {
		return objstore.NewLocal(filepath.Join(a.cfg.DataDir, "bucket"))
	}
	return objstore.NewS3(ctx, objstore.S3Config{
		Endpoint: a.cfg.S3.Endpoint, Bucket: a.cfg.S3.Bucket, AccessKey: a.cfg.S3.AccessKey,
		SecretKey: a.cfg.S3.SecretKey, UseSSL: a.cfg.S3.UseSSL, Region: a.cfg.S3.Region,
	})
}

// inboxStore adapts the database to the inbox's Store: BeginBulk returns the
// concrete staging transaction, which the inbox sees as its Stager.
type inboxStore struct{ *sqldb.DB }

func (s inboxStore) BeginBulk(ctx context.Context, kind, portfolio string, now time.Time) (inbox.Stager, error) {
	return s.DB.BeginBulk(ctx, kind, portfolio, now)
}

// ownerName names this process in inbox claims: host and pid for operators,
// plus random bits because pids repeat across restarts and containers.
func ownerName() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

func (a *app) newProcessor(bucket objstore.Bucket, db *sqldb.DB, reg prometheus.Registerer) (*inbox.Processor, error) {
	spool := filepath.Join(a.cfg.DataDir, "tmp")
	if err := os.MkdirAll(spool, 0o750); err != nil {
		return nil, err
	}
	return inbox.New(bucket, inboxStore{db}, inbox.Config{
		Owner: ownerName(), Interval: a.cfg.Inbox.Interval, Lease: a.cfg.Inbox.Lease,
		MaxFileBytes: a.cfg.Inbox.MaxFileBytes, MaxAttempts: a.cfg.Inbox.MaxAttempts, SpoolDir: spool, Now: a.now, Logger: a.log.With("component", "inbox"),
		Registerer: reg, ParseAnswer: fahrplan.ParseAnswer, Answers: db,
	})
}

// cmdInboxScan processes what waits in the inbox once and exits, for
// operators who drive the inbox from cron instead of serve.
func cmdInboxScan(a *app, fs *flag.FlagSet) action {
	return noArgs(func(ctx context.Context) error {
		db, err := a.openDB(ctx)
		if err != nil {
			return err
		}
		defer db.Close()
		bucket, err := a.openBucket(ctx)
		if err != nil {
			return err
		}
		p, err := a.newProcessor(bucket, db, nil)
		if err != nil {
			return err
		}
		sum, err := p.Scan(ctx)
		fmt.Fprintf(a.stdout, "seen %d, processed %d, rejected %d, busy %d, failed %d\n",
			sum.Seen, sum.Processed, sum.Rejected, sum.Busy, sum.Failed)
		if err == nil && sum.Failed > 0 {
			err = fmt.Errorf("%d file(s) failed and stay in the inbox; see the log", sum.Failed)
		}
		return err
	})
}

// cmdInboxPut uploads a file to inbox/<portfolio>/<kind>/<name>, showing its
// progress. It checks the names the inbox would reject before sending a byte.
func cmdInboxPut(a *app, fs *flag.FlagSet) action {
	portfolio := fs.String("portfolio", "", "portfolio id (required)")
	kind := fs.String("kind", "", "metered-data, profiles, master-data or forecasts (required)")
	name := fs.String("name", "", "object name in the inbox (default: the file's base name)")
	return func(ctx context.Context, rest []string) error {
		if len(rest) != 1 || *portfolio == "" || *kind == "" {
			return usagef("want FILE --portfolio ID --kind KIND [--name NAME]")
		}
		// The file first: a missing one is the cause to name, whatever
		// its name would say about its format.
		f, err := inputFile(rest[0])
		if err != nil {
			return err
		}
		defer f.Close()
		k, err := bulk.ParseBulkKind(*kind)
		if err != nil {
			return err
		}
		objName := *name
		if objName == "" {
			objName = filepath.Base(rest[0])
		}
		if strings.Contains(objName, "/") {
			return usagef("--name must not contain '/'")
		}
		if _, _, err := bulk.DetectFormat(k, objName); err != nil {
			return err
		}
		// The inbox would reject a file of an unknown portfolio only after the
		// upload, and the command would have reported success; ask the database
		// first, so that nothing is sent.
		if err := a.withDB(ctx, func(db *sqldb.DB) error { return knownPortfolio(ctx, db, *portfolio) }); err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			return err
		}
		bucket, err := a.openBucket(ctx)
		if err != nil {
			return err
		}
		key := fmt.Sprintf("%s%s/%s/%s", inbox.InboxPrefix, *portfolio, k, objName)
		pr := a.newProgress("task", true)
		err = bucket.Put(ctx, key, io.TeeReader(f, &byteProgress{p: pr, task: "upload " + objName, size: st.Size()}), st.Size())
		pr.finish()
		if err != nil {
			return fmt.Errorf("upload %s: %w", key, err)
		}
		a.note(fmt.Sprintf("uploaded %s (%s)", key, mib(st.Size())), "key", key, "bytes", st.Size())
		fmt.Fprintln(a.stdout, key)
		return nil
	}
}
