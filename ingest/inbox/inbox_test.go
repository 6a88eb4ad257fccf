package inbox_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/schedbridge/schedbridge/clocktest"
	"github.com/schedbridge/schedbridge/ingest/inbox"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
	"github.com/schedbridge/schedbridge/storage/sqldb"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

func TestMain(m *testing.M) {
	os.Exit(objtest.Main(objtest.RunFunc(func() int { return sqltest.Main(m) })))
}

// t0 is a Berlin afternoon: processed files land under 2026-11-22.
var t0 = time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)

// store is the same adapter the binary uses.
type store struct{ *sqldb.DB }

func (s store) BeginBulk(ctx context.Context, kind, portfolio string, now time.Time) (inbox.Stager, error) {
	return s.DB.BeginBulk(ctx, kind, portfolio, now)
}

// env is one combination of database and bucket.
type env struct {
	db     *sqldb.DB
	bucket objstore.Bucket
	s3     *objstore.S3Config
	clock  *clocktest.Clock
}

type combo struct {
	name  string
	db    sqldb.Dialect
	minio bool
}

var combos = []combo{
	{"sqlite+local", sqldb.SQLite, false},
	{"postgres+local", sqldb.Postgres, false},
	{"sqlite+minio", sqldb.SQLite, true},
	{"postgres+minio", sqldb.Postgres, true},
}

func eachCombo(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, c := range combos {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fn(t, newEnv(t, c))
		})
	}
}

func newEnv(t *testing.T, c combo) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{db: sqltest.Open(t, c.db), clock: clocktest.New(t0)}
	if c.minio {
		cfg := objtest.MinIO(t)
		b, err := objstore.NewS3(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.bucket, e.s3 = b, &cfg
	} else {
		b, err := objstore.NewLocal(filepath.Join(t.TempDir(), "bucket"))
		if err != nil {
			t.Fatal(err)
		}
		e.bucket = b
	}
	p := pipeline.Portfolio{ID: "p1", Name: "Test", ControlAreas: []pipeline.ControlArea{pipeline.TenneT, pipeline.Amprion}}
	if _, err := e.db.PutPortfolio(ctx, p, t0); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) processor(t testing.TB, owner string, mod ...func(*inbox.Config)) *inbox.Processor {
	t.Helper()
	cfg := inbox.Config{Owner: owner, Lease: time.Minute, Now: e.clock.Now, SpoolDir: t.TempDir()}
	for _, m := range mod {
		m(&cfg)
	}
	p, err := inbox.New(e.bucket, store{e.db}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) put(t *testing.T, key string, body []byte) {
	t.Helper()
	if err := e.bucket.Put(context.Background(), key, bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
}

func (e *env) get(t *testing.T, key string) []byte {
	t.Helper()
	rc, err := e.bucket.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) keys(t *testing.T, prefix string) []string {
	t.Helper()
	objs, err := e.bucket.List(context.Background(), prefix, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

func (e *env) versions(t *testing.T) int {
	t.Helper()
	n, err := e.db.CountVersions(context.Background(), "metered", "p1", false)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func scan(t *testing.T, p *inbox.Processor) inbox.Summary {
	t.Helper()
	sum, err := p.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func receipt(t *testing.T, e *env, key string) inbox.Receipt {
	t.Helper()
	var r inbox.Receipt
	if err := json.Unmarshal(e.get(t, key+".receipt.json"), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func errorsDoc(t *testing.T, e *env, key string) inbox.Errors {
	t.Helper()
	var d inbox.Errors
	if err := json.Unmarshal(e.get(t, key+".errors.json"), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// row is one metered day for the test files.
type row struct {
	malo, day string
	vals      []float64
}

func day(malo, d string, n int, base float64) row {
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = base + float64(i)/4
	}
	return row{malo, d, vals}
}

func meteredCSV(sep string, rows ...row) []byte {
	var b strings.Builder
	b.WriteString(strings.Join([]string{"malo", "day", "unit"}, sep))
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "%sv%d", sep, i)
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString(r.malo + sep + r.day + sep + "KWH")
		for _, v := range r.vals {
			s := fmt.Sprint(v)
			if sep == ";" {
				s = strings.Replace(s, ".", ",", 1)
			}
			b.WriteString(sep + s)
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

func meteredJSON(rows ...row) []byte {
	type entry struct {
		Malo   string    `json:"malo"`
		Day    string    `json:"day"`
		Unit   string    `json:"unit"`
		Values []float64 `json:"values"`
	}
	var es []entry
	for _, r := range rows {
		es = append(es, entry{r.malo, r.day, "KWH", r.vals})
	}
	b, _ := json.Marshal(map[string]any{"entries": es})
	return b
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

var twoDays = []row{day("12345678901", "2026-11-20", 96, 1), day("12345678902", "2026-11-20", 96, 2)}

const processedDir = "processed/p1/2026-11-22/"

// TestFilesEndToEnd drops valid files of every format, an identical
// re-drop, and invalid files, on each database and bucket.
func TestFilesEndToEnd(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		p := e.processor(t, "A")
		e.put(t, "inbox/p1/metered-data/m.csv", meteredCSV(";", twoDays...))
		if sum := scan(t, p); sum.Processed != 1 || sum.Seen != 1 {
			t.Fatalf("first scan = %+v", sum)
		}
		if left := e.keys(t, "inbox/"); len(left) != 0 {
			t.Fatalf("inbox still has %v", left)
		}
		first := receipt(t, e, processedDir+"m.csv")
		if first.Status != "created" || first.Counts["entries"] != 2 || first.Counts["values"] != 192 ||
			first.Counts["created"] != 2 || first.Format != "csv" || len(first.InputHash) != 64 {
			t.Fatalf("receipt = %+v", first)
		}
		if got := e.get(t, processedDir+"m.csv"); !bytes.Equal(got, meteredCSV(";", twoDays...)) {
			t.Error("processed file differs from the dropped one")
		}
		if n := e.versions(t); n != 2 {
			t.Fatalf("staged %d versions, want 2", n)
		}

		// The same content again, and as gzip'd JSON: unchanged, same hash, nothing written.
		e.put(t, "inbox/p1/metered-data/m.csv", meteredCSV(";", twoDays...))
		e.put(t, "inbox/p1/metered-data/m.json.gz", gz(meteredJSON(twoDays...)))
		if sum := scan(t, p); sum.Processed != 2 {
			t.Fatalf("re-drop scan = %+v", sum)
		}
		keys := e.keys(t, processedDir)
		var again string
		for _, k := range keys {
			if strings.HasPrefix(k, processedDir+"m.") && strings.HasSuffix(k, ".csv") && k != processedDir+"m.csv" {
				again = k
			}
		}
		if again == "" {
			t.Fatalf("re-drop overwrote the first processed file: %v", keys)
		}
		for _, k := range []string{again, processedDir + "m.json.gz"} {
			r := receipt(t, e, k)
			if r.Status != "unchanged" || r.InputHash != first.InputHash || r.Counts["unchanged"] != 2 {
				t.Errorf("%s receipt = %+v, want unchanged with hash %s", k, r, first.InputHash)
			}
		}
		if n := e.versions(t); n != 2 {
			t.Fatalf("re-drops staged %d versions, want 2", n)
		}

		// Invalid files: rejected with reasons, nothing staged.
		dst := []row{day("12345678903", "2026-03-29", 96, 1)} // 92 quarter-hours that day
		bad := meteredCSV(",", twoDays[0], day("12345678904", "2026-11-21", 96, 1))
		bad = bytes.Replace(bad, []byte("12345678904,2026-11-21,KWH,1,"), []byte("12345678904,2026-11-21,KWH,abc,"), 1)
		e.put(t, "inbox/p1/metered-data/dst.csv", meteredCSV(";", dst...))
		e.put(t, "inbox/p1/metered-data/bad.csv", bad)
		e.put(t, "inbox/p1/stray.csv", []byte("x"))
		e.put(t, "inbox/p1/weather/w.csv", []byte("x"))
		e.put(t, "inbox/p1/metered-data/m.xlsx", []byte("x"))
		e.put(t, "inbox/nobody/metered-data/m.csv", meteredCSV(";", twoDays...))
		if sum := scan(t, p); sum.Rejected != 6 || sum.Processed != 0 {
			t.Fatalf("invalid scan = %+v", sum)
		}
		d := errorsDoc(t, e, "rejected/p1/dst.csv")
		if d.ErrorCount != 1 || d.Errors[0].Line != 2 || !strings.Contains(d.Errors[0].Msg, "expected 92") {
			t.Errorf("DST errors = %+v", d)
		}
		d = errorsDoc(t, e, "rejected/p1/bad.csv")
		if d.ErrorCount != 1 || d.Errors[0].Line != 3 || d.Errors[0].Type != "float_parsing" || d.Errors[0].Column != "v1" {
			t.Errorf("malformed line errors = %+v", d)
		}
		for key, want := range map[string]string{
			"rejected/p1/stray.csv": "outside the inbox layout",
			"rejected/p1/w.csv":     "weather",
			"rejected/p1/m.xlsx":    ".xlsx",
			"rejected/nobody/m.csv": "unknown portfolio",
		} {
			if d := errorsDoc(t, e, key); !strings.Contains(d.Reason, want) {
				t.Errorf("%s reason = %q, want it to mention %q", key, d.Reason, want)
			}
		}
		if n := e.versions(t); n != 2 {
			t.Fatalf("rejected files staged: %d versions", n)
		}
		if left := e.keys(t, "inbox/"); len(left) != 0 {
			t.Fatalf("inbox still has %v", left)
		}

		// Too large for the configured limit.
		small := e.processor(t, "B", func(c *inbox.Config) { c.MaxFileBytes = 100 })
		e.put(t, "inbox/p1/metered-data/big.csv", meteredCSV(";", twoDays...))
		if sum := scan(t, small); sum.Rejected != 1 {
			t.Fatalf("too-large scan = %+v", sum)
		}
		if d := errorsDoc(t, e, "rejected/p1/big.csv"); !strings.Contains(d.Reason, "exceeds") {
			t.Errorf("too-large reason = %q", d.Reason)
		}

		// Every outcome is a console event.
		evs, err := e.db.Events(ctx, pipeline.EventQuery{Kind: "inbox.*", Limit: 100})
		if err != nil || len(evs) != 10 {
			t.Fatalf("events = %d, %v", len(evs), err)
		}
		done, _ := e.db.InboxFiles(ctx, pipeline.InboxQuery{States: []pipeline.InboxState{pipeline.InboxRejected}, Limit: 100})
		if len(done) != 7 {
			t.Errorf("rejected rows = %d, want 7", len(done))
		}
	})
}

// failingBucket fails Move once, as a crash between staging and moving would.
type failingBucket struct {
	objstore.Bucket
	mu        sync.Mutex
	failMoves int
}

func (b *failingBucket) Move(ctx context.Context, src, dst string) error {
	b.mu.Lock()
	fail := b.failMoves > 0
	b.failMoves--
	b.mu.Unlock()
	if fail {
		return errors.New("injected crash before the move")
	}
	return b.Bucket.Move(ctx, src, dst)
}

// failingStore fails FinishInboxFile once, as a crash after the move would.
type failingStore struct {
	store
	mu         sync.Mutex
	failFinish int
}

func (s *failingStore) FinishInboxFile(ctx context.Context, id int64, owner string, now time.Time, ev pipeline.Event) error {
	s.mu.Lock()
	fail := s.failFinish > 0
	s.failFinish--
	s.mu.Unlock()
	if fail {
		return errors.New("injected crash after the move")
	}
	return s.store.FinishInboxFile(ctx, id, owner, now, ev)
}

// TestCrashRecovery interrupts a file at each step and checks that the next
// run ends exactly as an uninterrupted run would.
func TestCrashRecovery(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		cfg := inbox.Config{Lease: time.Minute, Now: e.clock.Now, SpoolDir: t.TempDir()}

		// 1. A process claimed the file and died: taken over after the lease.
		e.put(t, "inbox/p1/metered-data/a.csv", meteredCSV(";", twoDays[0]))
		objs, _ := e.bucket.List(ctx, "inbox/p1/metered-data/a.csv", "", 1)
		dead := pipeline.InboxFile{Key: objs[0].Key, ETag: objs[0].ETag, Size: objs[0].Size, PortfolioID: "p1", Kind: "metered-data", Name: "a.csv"}
		if _, ok, err := e.db.ClaimInboxFile(ctx, dead, "dead", e.clock.Now(), time.Minute); err != nil || !ok {
			t.Fatal(err)
		}
		p := e.processor(t, "A")
		if sum := scan(t, p); sum.Busy != 1 {
			t.Fatalf("scan during the dead claim's lease = %+v", sum)
		}
		e.clock.Add(2 * time.Minute)
		if sum := scan(t, p); sum.Processed != 1 {
			t.Fatalf("scan after the lease = %+v", sum)
		}
		if r := receipt(t, e, processedDir+"a.csv"); r.Status != "created" || r.Attempts != 2 {
			t.Errorf("taken-over receipt = %+v", r)
		}

		// 2. Staged, then the move failed: the next scan moves it, staging stays single.
		fb := &failingBucket{Bucket: e.bucket, failMoves: 1}
		c := cfg
		c.Owner = "B"
		pb, err := inbox.New(fb, store{e.db}, c)
		if err != nil {
			t.Fatal(err)
		}
		e.put(t, "inbox/p1/metered-data/b.csv", meteredCSV(";", twoDays[1]))
		if sum := scan(t, pb); sum.Failed != 1 {
			t.Fatalf("scan with failing move = %+v", sum)
		}
		if n := e.versions(t); n != 2 {
			t.Fatalf("versions after staging b = %d", n)
		}
		pb2 := e.processor(t, "C")
		e.clock.Add(2 * time.Minute)
		if sum := scan(t, pb2); sum.Processed != 1 {
			t.Fatalf("recovery scan = %+v", sum)
		}
		if r := receipt(t, e, processedDir+"b.csv"); r.Status != "created" || r.Counts["created"] != 1 {
			t.Errorf("recovered receipt = %+v, want the original outcome", r)
		}

		// 3. Moved, then the process died before closing the row: the sweep closes it.
		fs := &failingStore{store: store{e.db}, failFinish: 1}
		c.Owner = "D"
		pd, err := inbox.New(e.bucket, fs, c)
		if err != nil {
			t.Fatal(err)
		}
		e.put(t, "inbox/p1/metered-data/c.csv", meteredCSV(";", day("12345678905", "2026-11-20", 96, 5)))
		if sum := scan(t, pd); sum.Failed != 1 {
			t.Fatalf("scan with failing finish = %+v", sum)
		}
		if left := e.keys(t, "inbox/"); len(left) != 0 {
			t.Fatalf("moved file still in the inbox: %v", left)
		}
		e.clock.Add(2 * time.Minute)
		if sum := scan(t, e.processor(t, "E")); sum.Processed != 1 {
			t.Fatalf("sweep scan = %+v", sum)
		}
		open, _ := e.db.OpenInboxFiles(ctx)
		if len(open) != 0 {
			t.Fatalf("open rows after recovery: %+v", open)
		}
		if n := e.versions(t); n != 3 {
			t.Fatalf("versions = %d, want 3 (each file staged once)", n)
		}
		evs, _ := e.db.Events(ctx, pipeline.EventQuery{Limit: 100})
		if len(evs) != 3 {
			t.Errorf("events = %d, want one per file", len(evs))
		}
	})
}

// TestRacingProcessors lets two processors scan the same files at once:
// every file is processed exactly once.
func TestRacingProcessors(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		const files = 12
		for i := range files {
			e.put(t, fmt.Sprintf("inbox/p1/metered-data/f%02d.csv", i),
				meteredCSV(";", day(fmt.Sprintf("1234567%04d", i), "2026-11-20", 96, float64(i))))
		}
		var wg sync.WaitGroup
		sums := make([]inbox.Summary, 2)
		for i, owner := range []string{"A", "B"} {
			p := e.processor(t, owner)
			wg.Add(1)
			go func() {
				defer wg.Done()
				sums[i], _ = p.Scan(ctx)
			}()
		}
		wg.Wait()
		if got := sums[0].Processed + sums[1].Processed; got != files {
			t.Fatalf("processed %d files in all (%+v), want %d", got, sums, files)
		}
		if n := e.versions(t); n != files {
			t.Fatalf("versions = %d, want %d", n, files)
		}
		if keys := e.keys(t, processedDir); len(keys) != 2*files {
			t.Fatalf("processed/ has %d objects, want %d files and receipts", len(keys), 2*files)
		}
		evs, _ := e.db.Events(ctx, pipeline.EventQuery{Limit: 100})
		if len(evs) != files {
			t.Errorf("events = %d, want %d", len(evs), files)
		}
	})
}

// TestThirdPartyUpload drops a file with the aws CLI, not minio-go.
func TestThirdPartyUpload(t *testing.T) {
	if _, err := exec.LookPath("aws"); err != nil {
		t.Fatal("the aws CLI is missing: run make test-deps")
	}
	e := newEnv(t, combos[2])
	file := filepath.Join(t.TempDir(), "aws.csv")
	if err := os.WriteFile(file, meteredCSV(",", twoDays...), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("aws", "--endpoint-url", objtest.EndpointURL(*e.s3), "s3", "cp", file,
		"s3://"+e.s3.Bucket+"/inbox/p1/metered-data/aws.csv")
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+e.s3.AccessKey, "AWS_SECRET_ACCESS_KEY="+e.s3.SecretKey,
		"AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("aws s3 cp: %v\n%s", err, out)
	}
	if sum := scan(t, e.processor(t, "A")); sum.Processed != 1 {
		t.Fatalf("scan = %+v", sum)
	}
	if r := receipt(t, e, processedDir+"aws.csv"); r.Status != "created" || r.Counts["values"] != 192 {
		t.Errorf("receipt = %+v", r)
	}
}

// meteredParquet writes rows in the documented Parquet schema.
func meteredParquet(t *testing.T, rows ...row) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "malo", Type: arrow.BinaryTypes.String},
		{Name: "day", Type: arrow.BinaryTypes.String},
		{Name: "unit", Type: arrow.BinaryTypes.String},
		{Name: "values", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64)},
	}, nil)
	bld := array.NewRecordBuilder(mem, schema)
	defer bld.Release()
	lb := bld.Field(3).(*array.ListBuilder)
	vb := lb.ValueBuilder().(*array.Float64Builder)
	for _, r := range rows {
		bld.Field(0).(*array.StringBuilder).Append(r.malo)
		bld.Field(1).(*array.StringBuilder).Append(r.day)
		bld.Field(2).(*array.StringBuilder).Append("KWH")
		lb.Append(true)
		vb.AppendValues(r.vals, nil)
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestParquetFile stages a Parquet file and answers unchanged for the same
// content as CSV.
func TestParquetFile(t *testing.T) {
	eachCombo(t, func(t *testing.T, e *env) {
		p := e.processor(t, "A")
		e.put(t, "inbox/p1/metered-data/m.parquet", meteredParquet(t, twoDays...))
		e.put(t, "inbox/p1/metered-data/m.csv", meteredCSV(";", twoDays...))
		if sum := scan(t, p); sum.Processed != 2 {
			t.Fatalf("scan = %+v", sum)
		}
		pq, csv := receipt(t, e, processedDir+"m.parquet"), receipt(t, e, processedDir+"m.csv")
		if pq.Format != "parquet" || pq.Counts["values"] != 192 || pq.InputHash != csv.InputHash {
			t.Errorf("parquet receipt %+v, csv hash %s", pq, csv.InputHash)
		}
		if pq.Status == csv.Status || (pq.Status != "unchanged" && csv.Status != "unchanged") {
			t.Errorf("statuses %s and %s: want one created and one unchanged", pq.Status, csv.Status)
		}
		if n := e.versions(t); n != 2 {
			t.Errorf("versions = %d", n)
		}
	})
}

// replacingBucket uploads a new version of a key just before the nth
// pinned read of it, as a supplier re-uploading the same name while the file
// is being processed would.
type replacingBucket struct {
	objstore.Bucket
	key  string
	body []byte
	nth  int
	mu   sync.Mutex
	gets int
}

func (b *replacingBucket) GetIfMatch(ctx context.Context, key, etag string) (io.ReadCloser, error) {
	b.mu.Lock()
	b.gets++
	replace := key == b.key && b.gets == b.nth
	b.mu.Unlock()
	if replace {
		if err := b.Put(ctx, key, bytes.NewReader(b.body), int64(len(b.body))); err != nil {
			return nil, err
		}
	}
	return b.Bucket.GetIfMatch(ctx, key, etag)
}

// TestReplacedWhileProcessing: a file uploaded again under the same name
// after the scan listed it is never staged from a mix of the two versions.
// The claim of the old version is released with nothing staged, and the
// next scan processes the new upload as a file of its own. The file is
// read once (validated and staged in one pass), so the replacement comes
// before that read.
func TestReplacedWhileProcessing(t *testing.T) {
	for _, c := range combos {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, c)
			ctx := context.Background()
			key := "inbox/p1/metered-data/a.csv"
			e.put(t, key, meteredCSV(";", day("12345678901", "2026-11-20", 96, 1)))
			newer := day("12345678901", "2026-11-20", 96, 7)
			rb := &replacingBucket{Bucket: e.bucket, key: key, body: meteredCSV(",", newer), nth: 1}
			p, err := inbox.New(rb, store{e.db}, inbox.Config{Owner: "A", Lease: time.Minute, Now: e.clock.Now, SpoolDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if sum := scan(t, p); sum.Processed != 0 || sum.Failed != 0 {
				t.Fatalf("scan that saw the replacement = %+v", sum)
			}
			if n := e.versions(t); n != 0 {
				t.Fatalf("versions after the released claim = %d, want 0", n)
			}
			if sum := scan(t, p); sum.Processed != 1 {
				t.Fatalf("next scan = %+v", sum)
			}
			got, err := e.db.MeteredDay(ctx, "p1", "12345678901", pipeline.NewDay(2026, time.November, 20))
			if err != nil || !slices.Equal(got.Values, newer.vals) || got.Version.Version != 1 {
				t.Errorf("staged = %+v, %v; want the new upload as version 1", got, err)
			}
			if r := receipt(t, e, processedDir+"a.csv"); r.Status != "created" || r.Counts["created"] != 1 {
				t.Errorf("receipt = %+v", r)
			}
		})
	}
}

// The folders of the market communication have their own readers: the scan
// steps over them, whatever the page size, and still finds the portfolio
// files listed before and after them.
func TestReservedFoldersSkipped(t *testing.T) {
	e := newEnv(t, combos[0])
	ctx := context.Background()
	if _, err := e.db.PutPortfolio(ctx, pipeline.Portfolio{ID: "zz", Name: "Last", ControlAreas: []pipeline.ControlArea{pipeline.TenneT}}, t0); err != nil {
		t.Fatal(err)
	}
	reserved := []string{"inbox/edifact/a.edi", "inbox/edifact/b.edi", "inbox/mail/INBOX/x.eml", "inbox/registry/r.csv"}
	for _, k := range reserved {
		e.put(t, k, []byte("x"))
	}
	e.put(t, "inbox/p1/metered-data/m.csv", meteredCSV(";", twoDays...))
	e.put(t, "inbox/zz/metered-data/m.csv", meteredCSV(";", twoDays...))
	for _, size := range []int{1, 2, 1000} {
		p := e.processor(t, "A", func(c *inbox.Config) { c.PageSize = size })
		sum := scan(t, p)
		if size == 1 && (sum.Processed != 2 || sum.Seen != 2) {
			t.Fatalf("page size %d: scan = %+v, want the two portfolio files", size, sum)
		}
		if size > 1 && sum.Seen != 0 {
			t.Fatalf("page size %d: scan saw %d files, want none", size, sum.Seen)
		}
		if left := e.keys(t, "inbox/"); !slices.Equal(left, reserved) {
			t.Fatalf("page size %d: inbox holds %v, want %v", size, left, reserved)
		}
	}
}
