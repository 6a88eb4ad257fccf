package catalog_test

import (
	"bufio"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/lake/laketest"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/sqldb/sqltest"
)

// crashPutEnv names, in the environment of TestCrashedPutChild, the local
// store's directory to upload into.
const crashPutEnv = "SCHEDBRIDGE_TEST_CRASH_PUT_DIR"

// crashPutMarker is the line the child prints once its Put has written a
// part of the body to the store's staging file.
const crashPutMarker = "put under way"

// TestCrashedPutChild is not a test of its own: TestSweepAfterCrash runs
// the test binary with crashPutEnv set, and this process uploads into the
// local store until it is killed, as `kill -9` kills the service during an
// upload.
func TestCrashedPutChild(t *testing.T) {
	dir := os.Getenv(crashPutEnv)
	if dir == "" {
		t.Skip("run by TestSweepAfterCrash")
	}
	b, err := objstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	body := &stalledBody{chunk: make([]byte, 1<<20), stalled: func() {
		os.Stdout.WriteString(crashPutMarker + "\n")
	}, release: make(chan struct{})}
	t.Fatal(b.Put(context.Background(), "inbox/acme/metered-data/big.csv", body, -1))
}

// stalledBody hands out its chunk and then calls stalled and blocks until
// release is closed: an upload whose body is still arriving. The store
// has written the chunk to its staging file before it asks for more.
type stalledBody struct {
	chunk   []byte
	stalled func()
	release chan struct{}
}

func (r *stalledBody) Read(p []byte) (int, error) {
	if len(r.chunk) > 0 {
		n := copy(p, r.chunk)
		r.chunk = r.chunk[n:]
		return n, nil
	}
	r.stalled()
	<-r.release
	return 0, io.EOF
}

// TestSweepAfterCrash: a process killed during a local-store upload leaves
// its staging file (.tmp/put-*), and a commit that died after writing the
// table's next metadata file, manifest list and manifest leaves them
// referenced by nothing. Once they are older than the limit, a sweep
// removes them; nothing live goes: not the staging file of an upload in
// progress, not the files of a commit in progress, not the current run nor
// the replaced run whose snapshot has not expired. A later expiry leaves no
// empty run folder.
func TestSweepAfterCrash(t *testing.T) {
	day := pipeline.NewDay(2026, time.November, 24)
	run1 := map[string]float64{"TenneT": 10, "Amprion": 20}
	run2 := map[string]float64{"TenneT": 11.5, "50Hertz": 7}
	for _, d := range sqltest.Backends {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e, _ := newEnv(t, d, false)
			for i, base := range []map[string]float64{run1, run2} {
				if _, err := e.publish(t, day, int64(i+1), base); err != nil {
					t.Fatalf("publish run %d: %v", i+1, err)
				}
			}
			staging := filepath.Join(e.localDir, ".tmp")

			// The crash during an upload.
			child := exec.Command(os.Args[0], "-test.run=^TestCrashedPutChild$", "-test.count=1")
			child.Env = append(os.Environ(), crashPutEnv+"="+e.localDir)
			out, err := child.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(out)
			for lines.Scan() && lines.Text() != crashPutMarker {
			}
			if err := child.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			_ = child.Wait()
			crashed := globOne(t, filepath.Join(staging, "put-*"))
			if info, err := os.Stat(crashed); err != nil || info.Size() != 1<<20 {
				t.Fatalf("the killed upload's staging file: %v, %v", info, err)
			}

			// The files that a commit which died before the catalog took
			// it leaves: the next metadata file, a manifest list, a
			// manifest, copies of the table's own.
			tbl := e.table(t)
			key := func(uri string) string { return strings.TrimPrefix(uri, e.cat.URI("")) }
			meta := "lake/position_control_area/metadata/"
			cur := tbl.CurrentSnapshot()
			mans, err := cur.Manifests(mustFS(t, tbl))
			if err != nil {
				t.Fatal(err)
			}
			orphans := map[string]string{
				meta + "00099-6f1d2c3b-8a4e-4b5f-9c6d-7e8f9a0b1c2d.metadata.json":    key(tbl.MetadataLocation()),
				meta + "snap-4242424242-1-0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9.avro": key(cur.ManifestList),
				meta + "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9-m0.avro":                key(mans[0].FilePath()),
			}
			for dst, src := range orphans {
				laketest.CopyObject(t, e.bucket, src, dst)
			}

			// Everything so far was written two hours before the lake's
			// clock (the machine's at the start): the crash's leftovers, and the live runs' files and
			// metadata too, which must stay for what references them.
			old := e.clock.Now().Add(-2 * time.Hour)
			err = filepath.WalkDir(e.localDir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				return os.Chtimes(p, old, old)
			})
			if err != nil {
				t.Fatal(err)
			}

			// Live now: an upload under way and a commit under way.
			live := &stalledBody{chunk: []byte("live"), release: make(chan struct{})}
			underway := make(chan struct{})
			live.stalled = func() { close(underway) }
			done := make(chan error, 1)
			go func() { done <- e.bucket.Put(ctx, "inbox/acme/metered-data/live.csv", live, -1) }()
			<-underway
			var liveTmp string
			for _, p := range globAll(t, filepath.Join(staging, "put-*")) {
				if p != crashed {
					liveTmp = p
				}
			}
			committing := meta + "00100-1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d.metadata.json"
			laketest.CopyObject(t, e.bucket, key(tbl.MetadataLocation()), committing)

			if _, err := e.lake.Sweep(ctx, time.Hour); err != nil {
				t.Fatal(err)
			}
			if left := globAll(t, filepath.Join(staging, "put-*")); !slices.Equal(left, []string{liveTmp}) {
				t.Errorf("staging files after the sweep: %v; want only the live upload's %s", left, liveTmp)
			}
			for k := range orphans {
				if e.exists(t, k) {
					t.Errorf("the sweep kept %s, which nothing references", k)
				}
			}
			if !e.exists(t, committing) {
				t.Errorf("the sweep removed %s, the young file of a commit under way", committing)
			}
			e.checkReferenced(t)
			e.scanRows(t, day, 0, run2)
			e.scanRows(t, day, snapshotOf(t, e.table(t), day, 1).SnapshotID, run1) // not expired yet
			close(live.release)
			if err := <-done; err != nil {
				t.Fatalf("the live upload: %v", err)
			}
			if !e.exists(t, "inbox/acme/metered-data/live.csv") {
				t.Error("the live upload did not land")
			}

			// Expiry of run 1's snapshot: its files go, and with them its
			// folder.
			e.clock.Add(time.Minute)
			if _, err := e.lake.Sweep(ctx, 0); err != nil {
				t.Fatal(err)
			}
			if e.exists(t, "lake/position_control_area/delivery_day=2026-11-24/run=1/part-00000.parquet") {
				t.Error("run 1's file survived the expiry of its snapshot")
			}
			var empty []string
			err = filepath.WalkDir(filepath.Join(e.localDir, "lake"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					if entries, err := os.ReadDir(p); err == nil && len(entries) == 0 {
						empty = append(empty, p)
					}
				}
				return err
			})
			if err != nil || len(empty) > 0 {
				t.Errorf("empty folders after the expiry: %v, %v", empty, err)
			}
			e.checkReferenced(t)
			e.scanRows(t, day, 0, run2)
		})
	}
}

// checkReferenced checks that every file the table's metadata references is
// there: the current metadata file and those of its log, the manifest lists
// and manifests of its snapshots and their data files.
func (e *env) checkReferenced(t *testing.T) {
	t.Helper()
	tbl := e.table(t)
	fs := mustFS(t, tbl)
	uris := []string{tbl.MetadataLocation()}
	for l := range tbl.Metadata().PreviousFiles() {
		uris = append(uris, l.MetadataFile)
	}
	for _, s := range tbl.Metadata().Snapshots() {
		uris = append(uris, s.ManifestList)
		mans, err := s.Manifests(fs)
		if err != nil {
			t.Fatalf("manifests of snapshot %d: %v", s.SnapshotID, err)
		}
		for _, m := range mans {
			uris = append(uris, m.FilePath())
			entries, err := m.FetchEntries(fs, true)
			if err != nil {
				t.Fatalf("manifest %s: %v", m.FilePath(), err)
			}
			for _, en := range entries {
				uris = append(uris, en.DataFile().FilePath())
			}
		}
	}
	for _, u := range uris {
		if k := strings.TrimPrefix(u, e.cat.URI("")); !e.exists(t, k) {
			t.Errorf("%s is referenced by the table but gone", k)
		}
	}
}

func mustFS(t *testing.T, tbl *table.Table) iceio.IO {
	t.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func globAll(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

func globOne(t *testing.T, pattern string) string {
	t.Helper()
	m := globAll(t, pattern)
	if len(m) != 1 {
		t.Fatalf("%s: %v, want one file", pattern, m)
	}
	return m[0]
}
