package main

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// The samples that the webhook tests read from /metrics.
const (
	scansMetric    = "schedbridge_inbox_scan_duration_seconds_count"
	hookAccepted   = `schedbridge_http_requests_total{code="204",method="POST",route="/v1/inbox/events"}`
	hookUnaccepted = `schedbridge_http_requests_total{code="401",method="POST",route="/v1/inbox/events"}`
)

// withWebhookInbox points the instance at the bucket and sets a scan interval
// that no test outlives, so that a file is processed promptly only when a
// bucket notification wakes the scan. Without a token, the webhook is opened
// explicitly, as it is off otherwise.
func (in *instance) withWebhookInbox(c objstore.S3Config, token string) {
	in.env = append(in.env, "SCHEDBRIDGE_INBOX_INTERVAL=1h", "SCHEDBRIDGE_LOG_LEVEL=debug",
		"SCHEDBRIDGE_S3_ENDPOINT="+c.Endpoint, "SCHEDBRIDGE_S3_BUCKET="+c.Bucket,
		"SCHEDBRIDGE_S3_ACCESS_KEY="+c.AccessKey, "SCHEDBRIDGE_S3_SECRET_KEY="+c.SecretKey)
	if token != "" {
		in.env = append(in.env, "SCHEDBRIDGE_INBOX_WEBHOOK_TOKEN="+token)
	} else {
		in.env = append(in.env, "SCHEDBRIDGE_INBOX_WEBHOOK_OPEN=true")
	}
}

// eventsURL is where the S3 server posts its notifications.
func (in *instance) eventsURL() string { return "http://" + in.addr + "/v1/inbox/events" }

// postEvent posts an S3-like event with the given Authorization header
// (none when empty) and returns the status.
func (in *instance) postEvent(auth string) int {
	in.t.Helper()
	req, _ := http.NewRequest("POST", in.eventsURL(), strings.NewReader(`{"Records":[]}`))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// putAndAwait uploads a metered-data CSV with the CLI and waits until the
// inbox has processed it.
func (in *instance) putAndAwait(key string, rows int, logs *syncBuffer) {
	in.t.Helper()
	file := filepath.Join(in.t.TempDir(), "hooked.csv")
	writeCSV(in.t, file, rows, 3)
	in.cli(0, "inbox", "put", file, "--portfolio", "p1", "--kind", "metered-data")
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := in.report(key)
		if len(r["processed"]) == 1 && len(r["pending"]) == 0 && len(r["processing"]) == 0 {
			if dest, _ := r["processed"][0]["dest"].(string); !strings.HasPrefix(dest, "processed/p1/") {
				in.t.Errorf("processed to %q", dest)
			}
			break
		}
		if time.Now().After(deadline) {
			in.t.Fatalf("the notification did not get the file processed: %+v\nserve log:\n%s", r, tail(logs.String()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := in.versions(); n != rows {
		in.t.Errorf("versions = %d, want %d", n, rows)
	}
}

// TestWebhookMinIO has a real MinIO notify serve of an upload through its
// webhook target, with the token as a Bearer header. The scan interval is an
// hour, so only the notification can get the file processed within the
// deadline; requests without the token are refused and wake nothing.
func TestWebhookMinIO(t *testing.T) {
	const token = "minio-webhook-token"
	in := newInstance(t, sqldb.SQLite)
	s3 := objtest.MinIOWithWebhook(t, in.eventsURL(), token)
	objtest.MinIONotify(t, s3, "inbox/")
	in.withWebhookInbox(s3, token)
	key := in.setup()
	srv, logs := in.serve()
	// serve scans once at start; every later scan is a wake-up.
	waitFor(t, "the start-up scan", 30*time.Second, func() bool { return in.metric(scansMetric) == 1 })

	if code := in.postEvent("Bearer wrong-token"); code != 401 {
		t.Errorf("wrong token: %d, want 401", code)
	}
	if code := in.postEvent(""); code != 401 {
		t.Errorf("no token: %d, want 401", code)
	}
	if n := in.metric(scansMetric); n != 1 {
		t.Errorf("scans after the refused requests = %v, want 1", n)
	}

	in.putAndAwait(key, 50, logs)
	// One upload is one notification (the processor's own writes under
	// processed/ are outside the prefix, and removals are not subscribed),
	// which is one scan. A scan woken by a refused request would make three.
	waitFor(t, "MinIO's notification to be counted", 10*time.Second, func() bool { return in.metric(hookAccepted) == 1 })
	waitFor(t, "the woken scan to end", 10*time.Second, func() bool { return in.metric(scansMetric) >= 2 })
	if n := in.metric(scansMetric); n != 2 {
		t.Errorf("scans = %v, want 2: the start-up scan and the notified one", n)
	}
	if n := in.metric(hookUnaccepted); n != 2 {
		t.Errorf("refused webhook requests = %v, want 2", n)
	}
	stop(t, srv, logs)
	if strings.Contains(logs.String(), token) {
		t.Error("the server log contains the webhook token")
	}
}

// TestWebhookVersity has a real versitygw notify serve of an upload. versitygw
// sends no Authorization header and has no setting for one, so serve runs
// with the webhook opened explicitly here, on loopback (a reverse proxy in
// front of serve could add a token instead), and warns that it is open.
// versitygw posts a test event while it starts and refuses to start when
// nothing listens, so a stand-in answers on serve's address until serve runs.
func TestWebhookVersity(t *testing.T) {
	in := newInstance(t, sqldb.SQLite)
	standIn := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})}
	ln, err := net.Listen("tcp", in.addr)
	if err != nil {
		t.Fatal(err)
	}
	go standIn.Serve(ln)
	s3 := objtest.VersityWithWebhook(t, in.eventsURL(), "s3:ObjectCreated:*")
	standIn.Close()
	in.withWebhookInbox(s3, "")
	key := in.setup()
	srv, logs := in.serve()
	waitFor(t, "the start-up scan", 30*time.Second, func() bool { return in.metric(scansMetric) == 1 })

	in.putAndAwait(key, 50, logs)
	// versitygw cannot filter by prefix, so the processor's writes under
	// processed/ notify too and wake scans that find nothing; only the
	// lower bounds are exact.
	waitFor(t, "versitygw's notifications to be counted", 10*time.Second, func() bool { return in.metric(hookAccepted) >= 1 })
	waitFor(t, "the woken scan to end", 10*time.Second, func() bool { return in.metric(scansMetric) >= 2 })
	stop(t, srv, logs)
	if !strings.Contains(logs.String(), "the bucket-notification webhook is open") {
		t.Error("serve did not warn that the webhook is open")
	}
}
