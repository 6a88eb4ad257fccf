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

func TestS3Specifics(t *testing.T) {
	for _, srv := range []struct {
		name string
		cfg  func(testing.TB) objstore.S3Config
	}{{"minio", objtest.MinIO}, {"versitygw", objtest.Versity}} {
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
