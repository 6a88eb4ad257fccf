package inbox_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/ingest/inbox"
	"github.com/schedbridge/schedbridge/pipeline"
)

// TestOnePass checks what reading a file once, validating and staging it
// as it is read, must keep, on each database and bucket. The batches are one
// entry each, so that entries are staged before the rest of the file is
// read:
//   - a problem in the file's last entry rolls back every entry staged
//     before it, and the file is rejected with that problem;
//   - a valid file's versions carry the input hash that the receipt names,
//     which is known only at the commit;
//   - a JSON file that asks for validation only after its entries stages
//     nothing and is receipted as validated.
func TestOnePass(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		p := e.processor(t, "A", func(c *inbox.Config) { c.Decode.BatchSize = 1 })
		days := []row{day("12345678901", "2026-11-20", 96, 1), day("12345678901", "2026-11-21", 96, 2),
			day("12345678902", "2026-11-20", 96, 3)}

		bad := meteredCSV(";", append(days, day("12345678903", "2026-11-20", 96, 4))...)
		bad = bytes.Replace(bad, []byte("12345678903;2026-11-20;KWH;4;"), []byte("12345678903;2026-11-20;KWH;vier;"), 1)
		e.put(t, "inbox/p1/metered-data/late.csv", bad)
		if sum := scan(t, p); sum.Rejected != 1 {
			t.Fatalf("scan of the file with a late problem = %+v", sum)
		}
		d := errorsDoc(t, e, "rejected/p1/late.csv")
		if d.ErrorCount != 1 || len(d.Errors) != 1 || d.Errors[0].Line != 5 || !strings.Contains(d.Reason, "nothing was staged") {
			t.Errorf("errors document = %+v", d)
		}
		if n := e.versions(t); n != 0 {
			t.Fatalf("a rejected file left %d versions staged", n)
		}

		e.put(t, "inbox/p1/metered-data/good.csv", meteredCSV(";", days...))
		if sum := scan(t, p); sum.Processed != 1 {
			t.Fatalf("scan of the valid file = %+v", sum)
		}
		r := receipt(t, e, processedDir+"good.csv")
		if r.Status != "created" || r.Counts["created"] != 3 || len(r.InputHash) != 64 {
			t.Fatalf("receipt = %+v", r)
		}
		for _, x := range days {
			got, err := e.db.MeteredDay(ctx, "p1", x.malo, mustDay(t, x.day))
			if err != nil || got.InputHash != r.InputHash || got.ReceivedAt.IsZero() {
				t.Errorf("%s %s staged as %+v, %v; want input hash %s", x.malo, x.day, got.Version, err, r.InputHash)
			}
		}

		doc := meteredJSON(day("12345678909", "2026-11-20", 96, 5))
		doc = append(doc[:len(doc)-1], []byte(`,"validate_only":true}`)...)
		e.put(t, "inbox/p1/metered-data/check.json", doc)
		if sum := scan(t, p); sum.Processed != 1 {
			t.Fatalf("scan of the validation-only file = %+v", sum)
		}
		if r := receipt(t, e, processedDir+"check.json"); r.Status != string(pipeline.Validated) || r.Counts["created"] != 0 {
			t.Errorf("validation-only receipt = %+v", r)
		}
		if n := e.versions(t); n != 3 {
			t.Errorf("versions after the validation-only file = %d, want 3", n)
		}
	})
}

func mustDay(t *testing.T, s string) pipeline.Day {
	t.Helper()
	d, err := pipeline.ParseDay(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
