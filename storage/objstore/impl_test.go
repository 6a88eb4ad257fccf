package objstore_test

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
)

// Behaviour that only one implementation has: file layout, names, concrete
// reader types, bucket creation.

func TestLocalLayout(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	b, err := objstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "file://" + filepath.ToSlash(dir); b.String() != want {
		t.Errorf("String() = %q, want %q", b.String(), want)
	}

	put(t, b, "x/y/z", []byte("hello"))
	if data, err := os.ReadFile(filepath.Join(dir, "x", "y", "z")); err != nil || string(data) != "hello" {
		t.Errorf("key x/y/z is not the file x/y/z: %q, %v", data, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, ".tmp")); len(entries) != 0 {
		t.Errorf("Put left %d staging files", len(entries))
	}

	// Files in the staging directory are never objects.
	if err := os.WriteFile(filepath.Join(dir, ".tmp", "put-123"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	list, err := b.List(ctx, "", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(list); !slices.Equal(got, []string{"x/y/z"}) {
		t.Errorf("List = %q, want only x/y/z", got)
	}

	// Get hands out the file itself, for random access.
	r, err := b.Get(ctx, "x/y/z")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.(*os.File); !ok {
		t.Errorf("Get returned %T, want *os.File", r)
	}
	r.Close()

	// Delete and Move prune the directories they empty, never the root.
	put(t, b, "x/keep", []byte("k"))
	if err := b.Delete(ctx, "x/y/z"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x", "y")); !os.IsNotExist(err) {
		t.Errorf("Delete left the empty directory x/y: %v", err)
	}
	if err := b.Move(ctx, "x/keep", "top"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Errorf("Move left the empty directory x: %v", err)
	}
	if err := b.Delete(ctx, "top"); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			left = append(left, rel)
		}
		return err
	})
	if !slices.Equal(left, []string{".tmp", filepath.Join(".tmp", "put-123")}) {
		t.Errorf("after deleting everything the directory holds %q", left)
	}
}

func TestLocalRemovesStaleStagingFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := objstore.NewLocal(dir); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, ".tmp", "put-stale")
	fresh := filepath.Join(dir, ".tmp", "put-fresh")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := objstore.NewLocal(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale staging file survived: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh staging file (maybe a running Put) was removed: %v", err)
	}
}

// TestLocalConcurrentPutDelete races Put into a directory with Deletes that
// prune it; Put must recreate the directory rather than fail.
func TestLocalConcurrentPutDelete(t *testing.T) {
	b, err := objstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				key := "race/d/" + string(rune('a'+w))
				if err := b.Put(ctx, key, strings.NewReader("x"), 1); err != nil {
					t.Errorf("Put #%d: %v", i, err)
					return
				}
				if err := b.Delete(ctx, key); err != nil {
					t.Errorf("Delete #%d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// s3Servers are the S3 servers that the S3 store's own tests run against.
var s3Servers = []struct {
	name string
	cfg  func(testing.TB) objstore.S3Config
}{{"minio", objtest.MinIO}, {"versitygw", objtest.Versity}}

func TestS3Specifics(t *testing.T) {
	for _, srv := range s3Servers {
		t.Run(srv.name, func(t *testing.T) {
			ctx := ctxT(t)
			cfg := srv.cfg(t)

			// Several instances starting at once all find or create the bucket.
			var wg sync.WaitGroup
			stores := make([]*objstore.S3, 6)
			errs := make([]error, len(stores))
			for i := range stores {
				wg.Go(func() { stores[i], errs[i] = objstore.NewS3(ctx, cfg) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("NewS3 #%d: %v", i, err)
				}
			}
			b := stores[0]
			if want := "s3://" + cfg.Endpoint + "/" + cfg.Bucket; b.String() != want {
				t.Errorf("String() = %q, want %q", b.String(), want)
			}
			if strings.Contains(b.String(), cfg.SecretKey) || strings.Contains(b.String(), cfg.AccessKey) {
				t.Error("String() leaks credentials")
			}

			// One instance sees what another wrote: they share the bucket.
			put(t, stores[1], "shared/k", []byte("0123456789"))
			r, err := stores[2].Get(ctx, "shared/k")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			obj, ok := r.(*minio.Object)
			if !ok {
				t.Fatalf("Get returned %T, want *minio.Object", r)
			}
			info, err := obj.Stat()
			if err != nil || info.Size != 10 {
				t.Errorf("Stat on the returned object: %+v, %v", info, err)
			}
			if _, err := obj.Seek(4, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			if rest, err := io.ReadAll(obj); err != nil || string(rest) != "456789" {
				t.Errorf("read after Seek = %q, %v", rest, err)
			}

			// A Move of at least two parts (copyPartSize) is a multipart
			// copy, whose ETag names its parts: 24 MiB in 3 parts here.
			put(t, b, "big/src", randomBytes(9, 24<<20))
			if err := b.Move(ctx, "big/src", "big/dst"); err != nil {
				t.Fatal(err)
			}
			if info, err := b.Stat(ctx, "big/dst"); err != nil || !strings.HasSuffix(strings.Trim(info.ETag, `"`), "-3") {
				t.Errorf("large moved object = %+v, %v; want the ETag of a copy in 3 parts", info, err)
			}
		})
	}

	t.Run("wrong credentials", func(t *testing.T) {
		cfg := objtest.MinIO(t)
		cfg.SecretKey = "wrong-" + cfg.SecretKey
		if _, err := objstore.NewS3(ctxT(t), cfg); err == nil || strings.Contains(err.Error(), cfg.SecretKey) {
			t.Errorf("NewS3 with a wrong secret: %v", err)
		}
	})
	t.Run("endpoint with scheme", func(t *testing.T) {
		cfg := objtest.MinIO(t)
		cfg.Endpoint = objtest.EndpointURL(cfg)
		if _, err := objstore.NewS3(ctxT(t), cfg); pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("NewS3 with %q: %v, want kind invalid", cfg.Endpoint, err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := objstore.NewS3(ctx, objtest.Versity(t)); err == nil {
			t.Error("NewS3 with a cancelled context succeeded")
		}
	})
}

// blockingReader hands out one chunk, says so on started, and then blocks
// until release is closed: a Put whose body is still arriving.
type blockingReader struct {
	chunk   []byte
	started chan struct{}
	release chan struct{}
	sent    bool
}

func (r *blockingReader) Read(p []byte) (int, error) {
	if !r.sent {
		r.sent = true
		close(r.started)
		return copy(p, r.chunk), nil
	}
	<-r.release
	return 0, io.EOF
}

// TestLocalSweepTemp: the staging files of crashed Puts go once they are
// older than the limit; the staging file of a Put in progress, which is
// young, stays, and its Put completes.
func TestLocalSweepTemp(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	b, err := objstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	live := &blockingReader{chunk: []byte("body"), started: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- b.Put(ctx, "inbox/live", live, -1) }()
	<-live.started
	staged, err := filepath.Glob(filepath.Join(dir, ".tmp", "put-*"))
	if err != nil || len(staged) != 1 {
		t.Fatalf("staging files of the Put in progress: %v, %v", staged, err)
	}
	info, err := os.Stat(staged[0])
	if err != nil {
		t.Fatal(err)
	}
	// The crashed Put's file was last written two hours before the live
	// one's; the limit is one hour before it.
	now := info.ModTime()
	crashed := filepath.Join(dir, ".tmp", "put-crashed")
	if err := os.WriteFile(crashed, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(crashed, now.Add(-2*time.Hour), now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n, err := b.SweepTemp(ctx, now.Add(-3*time.Hour)); err != nil || n != 0 {
		t.Errorf("SweepTemp before both files: removed %d, %v; want 0", n, err)
	}
	if n, err := b.SweepTemp(ctx, now.Add(-time.Hour)); err != nil || n != 1 {
		t.Errorf("SweepTemp: removed %d, %v; want the crashed Put's file", n, err)
	}
	if _, err := os.Stat(crashed); !os.IsNotExist(err) {
		t.Errorf("the crashed Put's staging file survived: %v", err)
	}
	if _, err := os.Stat(staged[0]); err != nil {
		t.Errorf("the live Put's staging file was removed: %v", err)
	}
	close(live.release)
	if err := <-done; err != nil {
		t.Fatalf("the live Put: %v", err)
	}
	if got := get(t, b, "inbox/live"); string(got) != "body" {
		t.Errorf("the live Put stored %q", got)
	}
}

// TestLocalPruneEmpty: the folders that another client of the files (the
// Iceberg file IO) emptied go, the prefix's own folder, the folders that
// hold files and the staging directory stay.
func TestLocalPruneEmpty(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	b, err := objstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	put(t, b, "lake/t/delivery_day=2026-03-29/run=2/part-00000.parquet", []byte("x"))
	put(t, b, "other/keep", []byte("x"))
	for _, d := range []string{"lake/t/delivery_day=2026-03-29/run=1", "lake/t/delivery_day=2026-03-30/run=3", "other/empty"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(d)), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.PruneEmpty(ctx, "lake"); pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("PruneEmpty without the trailing slash: %v, want Invalid", err)
	}
	n, err := b.PruneEmpty(ctx, "lake/")
	if err != nil || n != 3 {
		t.Errorf("PruneEmpty(lake/) removed %d, %v; want run=1, run=3 and delivery_day=2026-03-30", n, err)
	}
	var left []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if p != dir && d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			left = append(left, filepath.ToSlash(rel))
		}
		return err
	})
	want := []string{".tmp", "lake", "lake/t", "lake/t/delivery_day=2026-03-29", "lake/t/delivery_day=2026-03-29/run=2", "other", "other/empty"}
	if !slices.Equal(left, want) {
		t.Errorf("folders after PruneEmpty(lake/): %q, want %q", left, want)
	}
	if err := b.Delete(ctx, "lake/t/delivery_day=2026-03-29/run=2/part-00000.parquet"); err != nil {
		t.Fatal(err)
	}
	if n, err := b.PruneEmpty(ctx, ""); err != nil || n != 1 {
		t.Errorf("PruneEmpty of the whole store removed %d, %v; want other/empty", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".tmp")); err != nil {
		t.Errorf("PruneEmpty removed the staging directory: %v", err)
	}
}

// TestS3SweepTemp: a multipart upload that a crashed process began and
// never finished is aborted once it was initiated before the limit; before
// that it stays, and stored objects always do.
func TestS3SweepTemp(t *testing.T) {
	for _, srv := range s3Servers {
		t.Run(srv.name, func(t *testing.T) {
			ctx := ctxT(t)
			cfg := srv.cfg(t)
			b, err := objstore.NewS3(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			put(t, b, "inbox/kept", []byte("x"))
			client, err := minio.New(cfg.Endpoint, &minio.Options{
				Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""), Secure: cfg.UseSSL, Region: cfg.Region})
			if err != nil {
				t.Fatal(err)
			}
			core := minio.Core{Client: client}
			id, err := core.NewMultipartUpload(ctx, cfg.Bucket, "inbox/crashed", minio.PutObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := core.PutObjectPart(ctx, cfg.Bucket, "inbox/crashed", id, 1, strings.NewReader("part"), 4, minio.PutObjectPartOptions{}); err != nil {
				t.Fatal(err)
			}
			uploads := func() []minio.ObjectMultipartInfo {
				var out []minio.ObjectMultipartInfo
				for u := range client.ListIncompleteUploads(ctx, cfg.Bucket, "", true) {
					if u.Err != nil {
						t.Fatal(u.Err)
					}
					out = append(out, u)
				}
				return out
			}
			us := uploads()
			if len(us) != 1 || us[0].UploadID != id {
				t.Fatalf("incomplete uploads %+v, want the one begun", us)
			}
			// The server's clock stamps the upload; the limits are set by it.
			began := us[0].Initiated
			if n, err := b.SweepTemp(ctx, began.Add(-time.Second)); err != nil || n != 0 {
				t.Errorf("SweepTemp before the upload began: aborted %d, %v; want 0", n, err)
			}
			if us := uploads(); len(us) != 1 {
				t.Errorf("a young upload was aborted: %+v", us)
			}
			if n, err := b.SweepTemp(ctx, began.Add(time.Second)); err != nil || n != 1 {
				t.Errorf("SweepTemp after the upload began: aborted %d, %v; want 1", n, err)
			}
			if us := uploads(); len(us) != 0 {
				t.Errorf("incomplete uploads after the sweep: %+v", us)
			}
			if got := get(t, b, "inbox/kept"); string(got) != "x" {
				t.Errorf("the stored object reads %q after the sweep", got)
			}
		})
	}
}
