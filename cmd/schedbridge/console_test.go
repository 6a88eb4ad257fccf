package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// drop puts a file into the instance's bucket under key as a supplier's own
// S3 client (or a copy into the directory) would: past the checks of
// inbox put.
func (in *instance) drop(file, key string) {
	in.t.Helper()
	ctx := context.Background()
	var b objstore.Bucket
	var err error
	if ep := envValue(in.env, "SCHEDBRIDGE_S3_ENDPOINT"); ep != "" {
		b, err = objstore.NewS3(ctx, objstore.S3Config{Endpoint: ep, Bucket: envValue(in.env, "SCHEDBRIDGE_S3_BUCKET"),
			AccessKey: envValue(in.env, "SCHEDBRIDGE_S3_ACCESS_KEY"), SecretKey: envValue(in.env, "SCHEDBRIDGE_S3_SECRET_KEY")})
	} else {
		b, err = objstore.NewLocal(filepath.Join(in.dataDir(), "bucket"))
	}
	if err != nil {
		in.t.Fatal(err)
	}
	body, err := os.ReadFile(file)
	if err != nil {
		in.t.Fatal(err)
	}
	if err := b.Put(ctx, key, bytes.NewReader(body), int64(len(body))); err != nil {
		in.t.Fatal(err)
	}
}

// consoleInbox lists the console's inbox in a state.
func (in *instance) consoleInbox(key, state string) (int, http.Header, []map[string]any) {
	in.t.Helper()
	code, hdr, b := in.raw("GET", "/v1/console/inbox?state="+state, key, nil)
	var page struct {
		Items []map[string]any `json:"items"`
	}
	if code == 200 {
		if err := json.Unmarshal(b, &page); err != nil {
			in.t.Fatalf("inbox %s: %s", state, b)
		}
	}
	return code, hdr, page.Items
}

// meteredVersions counts the metered-data versions staged for a portfolio.
func (in *instance) meteredVersions(portfolio string) int {
	in.t.Helper()
	db, err := sqldb.Open(context.Background(), sqldb.Options{URL: in.dbURL})
	if err != nil {
		in.t.Fatal(err)
	}
	defer db.Close()
	n, err := db.CountVersions(context.Background(), "metered", portfolio, false)
	if err != nil {
		in.t.Fatal(err)
	}
	return n
}

// TestConsoleInboxRetry drives the inbox desk end to end, on SQLite with the
// local store and on PostgreSQL with MinIO: a dropped file is pending; a
// file for an unknown portfolio is rejected; once the portfolio exists, the
// operator sends it back and it is staged, once, however often the retry
// is sent.
func TestConsoleInboxRetry(t *testing.T) {
	for _, c := range []struct {
		d     sqldb.Dialect
		minio bool
	}{{sqldb.SQLite, false}, {sqldb.Postgres, true}} {
		t.Run(string(c.d), func(t *testing.T) {
			t.Parallel()
			in := newInstance(t, c.d)
			in.withInbox(c.minio)
			// One scan at start, then only when woken: a dropped file waits.
			in.env = append(in.env, "SCHEDBRIDGE_INBOX_INTERVAL=1h", "SCHEDBRIDGE_INBOX_WEBHOOK_OPEN=true")
			key := in.setup()
			_, logs := in.serve()
			defer func() {
				if t.Failed() {
					t.Logf("server log:\n%s", logs)
				}
			}()

			csv := filepath.Join(t.TempDir(), "m.csv")
			const rows = 20 // a version per market location and day
			writeCSV(t, csv, rows, 1)
			// The scan at start must be over before the file lands, or it
			// would reject the file before the console lists it as pending.
			waitFor(t, "the inbox's first scan", 30*time.Second, func() bool {
				return in.metric("schedbridge_inbox_scan_duration_seconds_count") >= 1
			})
			// A supplier's own S3 client drops a file for a portfolio that
			// does not exist yet; inbox put would refuse it.
			in.drop(csv, "inbox/p9/metered-data/m.csv")
			code, hdr, pending := in.consoleInbox(key, "pending")
			if code != 200 || len(pending) != 1 || pending[0]["file"] != "inbox/p9/metered-data/m.csv" ||
				pending[0]["portfolio"] != "p9" || pending[0]["kind"] != "metered-data" || pending[0]["size"].(float64) == 0 {
				t.Fatalf("pending: %d %v", code, pending)
			}
			req, _ := http.NewRequest("GET", "http://"+in.addr+"/v1/console/inbox?state=pending", nil)
			req.Header.Set("X-API-Key", key)
			req.Header.Set("If-None-Match", hdr.Get("ETag"))
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 304 {
				t.Fatalf("unchanged pending list: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}

			wake := func() {
				if code, _, body := in.do("POST", "/v1/inbox/events", "", []byte(`{"EventName":"s3:ObjectCreated:Put"}`)); code != 204 && code != 200 {
					t.Fatalf("wake: %d %v", code, body)
				}
			}
			wake()
			var rejected []map[string]any
			waitFor(t, "the file to be rejected", 20*time.Second, func() bool {
				_, _, rejected = in.consoleInbox(key, "rejected")
				return len(rejected) == 1
			})
			r := rejected[0]
			if !strings.Contains(fmt.Sprint(r["reason"]), `unknown portfolio "p9"`) || !strings.HasSuffix(fmt.Sprint(r["receipt"]), ".errors.json") ||
				r["file"] != "inbox/p9/metered-data/m.csv" {
				t.Errorf("rejected: %v", r)
			}
			id := int64(r["id"].(float64))

			// The cause is fixed; the operator sends the file back.
			in.cli(0, "portfolio", "put", "p9", "--name", "Nine", "--control-areas", "TenneT")
			retry := func() (int, map[string]any) {
				code, _, body := in.do("POST", "/v1/console/inbox/retry", key, []byte(fmt.Sprintf(`{"id":%d}`, id)))
				return code, body
			}
			if code, body := retry(); code != 202 || body["retried_at"] == nil || body["state"] != "rejected" {
				t.Fatalf("retry: %d %v", code, body)
			}
			waitFor(t, "the retried file to be staged", 20*time.Second, func() bool { return in.meteredVersions("p9") == rows })
			waitFor(t, "the inbox to settle", 20*time.Second, func() bool {
				_, _, p := in.consoleInbox(key, "processing")
				_, _, rj := in.consoleInbox(key, "rejected")
				_, _, pe := in.consoleInbox(key, "pending")
				return len(p) == 0 && len(rj) == 0 && len(pe) == 0
			})
			// Sending it back again moves nothing and stages nothing.
			if code, body := retry(); code != 202 || body["retried_at"] == nil {
				t.Fatalf("second retry: %d %v", code, body)
			}
			// Two more finished scans, each woken, so that a whole one began
			// after the retry (the first may have begun before it): it would
			// have staged the file a second time.
			scans := in.metric("schedbridge_inbox_scan_duration_seconds_count")
			for n := range 2 {
				wake()
				waitFor(t, "a whole scan after the retry", 20*time.Second, func() bool {
					return in.metric("schedbridge_inbox_scan_duration_seconds_count") >= scans+float64(n+1)
				})
			}
			if n := in.meteredVersions("p9"); n != rows {
				t.Errorf("%d versions staged, want %d: staged twice", n, rows)
			}

			// The processed file's record cannot be sent back; unknown ids
			// and bodies that are no id are refused.
			var processed float64
			for _, row := range in.report(key)["processed"] {
				if row["key"] == "inbox/p9/metered-data/m.csv" {
					processed = row["id"].(float64)
				}
			}
			for _, tc := range []struct {
				body string
				want int
			}{
				{fmt.Sprintf(`{"id":%d}`, int64(processed)), 409},
				{`{"id":999999}`, 404},
				{`{"id":"one"}`, 422},
				{`{}`, 422},
			} {
				if code, _, body := in.do("POST", "/v1/console/inbox/retry", key, []byte(tc.body)); code != tc.want {
					t.Errorf("retry %s: %d %v, want %d", tc.body, code, body, tc.want)
				}
			}
			if code, _, _ := in.consoleInbox(key, "lost"); code != 422 {
				t.Errorf("unknown state: %d", code)
			}
		})
	}
}
