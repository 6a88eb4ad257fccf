package inbox_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/ingest/inbox"
)

func latest(t *testing.T, e *env, inboxKey string) inbox.Latest {
	t.Helper()
	var l inbox.Latest
	if err := json.Unmarshal(e.get(t, inbox.LatestKey(inboxKey)), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLatestKey(t *testing.T) {
	for in, want := range map[string]string{
		"inbox/acme/metered-data/x.csv":     "receipts/acme/metered-data/x.csv.json",
		"inbox/acme/forecasts/f.json.gz":    "receipts/acme/forecasts/f.json.gz.json",
		"inbox/tso/20261124_ACK.xml":        "receipts/tso/20261124_ACK.xml.json",
		"inbox/nobody/metered-data/m.csv":   "receipts/nobody/metered-data/m.csv.json",
		"inbox/acme/stray.csv":              "receipts/acme/stray.csv.json",
		"inbox/acme/metered-data/sub/x.csv": "receipts/acme/metered-data/sub/x.csv.json",
	} {
		if got := inbox.LatestKey(in); got != want {
			t.Errorf("LatestKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLatestReceipt uploads x.csv three times (valid, invalid, valid again):
// receipts/p1/metered-data/x.csv.json always holds the newest result, the
// numbered documents in processed/ and rejected/ all stay, and a resumed
// finish of an older file never replaces a newer file's result.
func TestLatestReceipt(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		p := e.processor(t, "A")
		const key = "inbox/p1/metered-data/x.csv"
		bad := bytes.Replace(meteredCSV(";", twoDays...), []byte("KWH;1;"), []byte("KWH;abc;"), 1)
		var ids []int64
		for i, step := range []struct {
			body         []byte
			outcome, doc string // doc: the numbered document, "" for "the one with the id"
			status       string
			errorCount   int
		}{
			{meteredCSV(";", twoDays...), "processed", processedDir + "x.csv.receipt.json", "created", 0},
			{bad, "rejected", "rejected/p1/x.csv.errors.json", "", 1},
			{meteredCSV(";", twoDays...), "processed", "", "unchanged", 0},
		} {
			e.put(t, key, step.body)
			if sum := scan(t, p); sum.Processed+sum.Rejected != 1 {
				t.Fatalf("upload %d: scan = %+v", i+1, sum)
			}
			l := latest(t, e, key)
			if step.doc == "" {
				step.doc = fmt.Sprintf("%sx.%d.csv.receipt.json", processedDir, l.ID)
			}
			if l.Outcome != step.outcome || l.File != key || l.Document != step.doc {
				t.Fatalf("upload %d: latest = %s %s %s, want %s %s", i+1, l.Outcome, l.File, l.Document, step.outcome, step.doc)
			}
			// The result is the numbered document, byte for byte.
			var numbered bytes.Buffer
			if err := json.Compact(&numbered, e.get(t, step.doc)); err != nil {
				t.Fatal(err)
			}
			var res bytes.Buffer
			if err := json.Compact(&res, l.Result); err != nil || res.String() != numbered.String() {
				t.Errorf("upload %d: result %s, want the numbered document %s (%v)", i+1, l.Result, numbered.String(), err)
			}
			var doc struct {
				ID         int64  `json:"id"`
				Status     string `json:"status"`
				ErrorCount int    `json:"error_count"`
			}
			if err := json.Unmarshal(l.Result, &doc); err != nil || doc.ID != l.ID || doc.Status != step.status || doc.ErrorCount != step.errorCount {
				t.Errorf("upload %d: result %+v, %v; want id %d, status %q, %d errors", i+1, doc, err, l.ID, step.status, step.errorCount)
			}
			if len(ids) > 0 && l.ID <= ids[len(ids)-1] {
				t.Errorf("upload %d: id %d not above the previous %v", i+1, l.ID, ids)
			}
			ids = append(ids, l.ID)
		}
		// The history stays: two receipts and one errors document.
		var docs []string
		for _, k := range append(e.keys(t, processedDir), e.keys(t, "rejected/p1/")...) {
			if strings.HasSuffix(k, ".receipt.json") || strings.HasSuffix(k, ".errors.json") {
				docs = append(docs, k)
			}
		}
		if len(docs) != 3 {
			t.Errorf("numbered documents = %v, want 3", docs)
		}
		if got := e.keys(t, "receipts/"); len(got) != 1 || got[0] != inbox.LatestKey(key) {
			t.Errorf("receipts/ = %v, want the one latest document", got)
		}

		// A finish resumed after an interrupted attempt does not replace the
		// document of a newer file (a higher id).
		const other = "inbox/p1/metered-data/y.csv"
		crashing, err := inbox.New(&failingBucket{Bucket: e.bucket, failMoves: 1}, store{e.db},
			inbox.Config{Owner: "crashing", Lease: time.Minute, Now: e.clock.Now, SpoolDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		e.put(t, other, meteredCSV(";", twoDays...))
		if sum := scan(t, crashing); sum.Failed != 1 {
			t.Fatalf("y.csv with a failing move: scan = %+v", sum)
		}
		newer := []byte(`{"outcome":"processed","id":999999,"file":"` + other + `","document":"elsewhere","result":{}}`)
		e.put(t, inbox.LatestKey(other), newer)
		e.clock.Add(2 * time.Minute)
		if sum := scan(t, p); sum.Processed != 1 {
			t.Fatalf("y.csv resumed: scan = %+v", sum)
		}
		if got := e.get(t, inbox.LatestKey(other)); !bytes.Equal(got, newer) {
			t.Errorf("a newer file's result was replaced: %s", got)
		}

		// An unknown portfolio's file is rejected, and its result is found
		// under its name too.
		const stray = "inbox/nobody/metered-data/m.csv"
		e.put(t, stray, meteredCSV(";", twoDays...))
		if sum := scan(t, p); sum.Rejected != 1 {
			t.Fatalf("unknown portfolio: scan = %+v", sum)
		}
		if l := latest(t, e, stray); l.Outcome != "rejected" || !strings.Contains(string(l.Result), "unknown portfolio") {
			t.Errorf("unknown portfolio: latest = %+v", l)
		}
	})
}
