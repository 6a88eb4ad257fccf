package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/storage/objstore"
	"github.com/schedbridge/schedbridge/storage/objstore/objtest"
)

func TestMain(m *testing.M) { os.Exit(objtest.Main(m)) }

// backend is one implementation under the contract.
type backend struct {
	name string
	open func(t *testing.T) objstore.Bucket
	// fileTree marks stores that map keys onto a directory tree and therefore
	// cannot hold "a/b" and "a/b/c" at the same time.
	fileTree bool
}

func openS3(t *testing.T, c objstore.S3Config) objstore.Bucket {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := objstore.NewS3(ctx, c)
	if err != nil {
		t.Fatalf("NewS3: %v", err)
	}
	return b
}

var backends = []backend{
	{name: "local", fileTree: true, open: func(t *testing.T) objstore.Bucket {
		b, err := objstore.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}},
	{name: "minio", fileTree: false, open: func(t *testing.T) objstore.Bucket { return openS3(t, objtest.MinIO(t)) }},
	{name: "versitygw", fileTree: true, open: func(t *testing.T) objstore.Bucket { return openS3(t, objtest.Versity(t)) }},
}

// TestContract runs the same suite against every implementation.
func TestContract(t *testing.T) {
	suite := []struct {
		name string
		run  func(t *testing.T, b objstore.Bucket, be backend)
	}{
		{"RoundTrip", testRoundTrip},
		{"OddValidKeys", testOddValidKeys},
		{"OverwriteChangesETag", testOverwrite},
		{"GetIfMatch", testGetIfMatch},
		{"NotFound", testNotFound},
		{"DeleteIdempotent", testDelete},
		{"ListOrder", testListOrder},
		{"ListPaging", testListPaging},
		{"Move", testMove},
		{"InvalidKeys", testInvalidKeys},
		{"FailedPutKeepsOldObject", testFailedPut},
		{"ConcurrentPut", testConcurrentPut},
		{"ContextCancelled", testContextCancelled},
		{"KeyIsDirectoryOfOtherKeys", testFileDirConflict},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel() // each backend, and each subtest, has its own bucket
			for _, tc := range suite {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, be.open(t), be) })
			}
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func randomBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	var s [32]byte
	s[0], s[1] = byte(seed), byte(seed>>8)
	_, _ = rand.NewChaCha8(s).Read(b)
	return b
}

// opaque hides everything but Read, so that clients cannot learn the size or
// seek: the path a streamed upload of unknown length takes.
type opaque struct{ r io.Reader }

func (o opaque) Read(p []byte) (int, error) { return o.r.Read(p) }

func put(t *testing.T, b objstore.Bucket, key string, data []byte) {
	t.Helper()
	if err := b.Put(ctxT(t), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put %q: %v", key, err)
	}
}

func get(t *testing.T, b objstore.Bucket, key string) []byte {
	t.Helper()
	r, err := b.Get(ctxT(t), key)
	if err != nil {
		t.Fatalf("Get %q: %v", key, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return data
}

func keysOf(infos []objstore.ObjectInfo) []string {
	keys := make([]string, len(infos))
	for i, o := range infos {
		keys[i] = o.Key
	}
	return keys
}

func testRoundTrip(t *testing.T, b objstore.Bucket, _ backend) {
	cases := []struct {
		name    string
		size    int
		unknown bool // pass size -1
	}{
		{"empty", 0, false},
		{"empty unknown size", 0, true},
		{"one byte", 1, false},
		{"small unknown size", 1000, true},
		{"17MiB known size", 17 << 20, false},  // multipart from a plain reader
		{"20MiB unknown size", 20 << 20, true}, // streamed multipart, two parts
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxT(t)
			key := fmt.Sprintf("round/%d/obj.bin", i)
			data := randomBytes(uint64(i), c.size)
			var err error
			before := time.Now().Add(-2 * time.Second)
			if c.unknown {
				err = b.Put(ctx, key, opaque{bytes.NewReader(data)}, -1)
			} else {
				err = b.Put(ctx, key, opaque{bytes.NewReader(data)}, int64(c.size))
			}
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			if got := get(t, b, key); !bytes.Equal(got, data) {
				t.Fatalf("Get returned %d bytes that differ from the %d put", len(got), len(data))
			}
			info, err := b.Stat(ctx, key)
			if err != nil {
				t.Fatalf("Stat: %v", err)
			}
			if info.Key != key || info.Size != int64(c.size) || info.ETag == "" {
				t.Errorf("Stat = %+v, want key %q, size %d and an ETag", info, key, c.size)
			}
			if info.Modified.Location() != time.UTC || info.Modified.Before(before) || info.Modified.After(time.Now().Add(2*time.Second)) {
				t.Errorf("Modified = %v, want a UTC time around now", info.Modified)
			}
		})
	}

	t.Run("random access", func(t *testing.T) {
		data := randomBytes(99, 100_000)
		put(t, b, "ra/obj", data)
		r, err := b.Get(ctxT(t), "ra/obj")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		ra, ok := r.(io.ReaderAt)
		if !ok {
			t.Fatalf("Get returned %T, which is no io.ReaderAt", r)
		}
		buf := make([]byte, 100)
		if _, err := ra.ReadAt(buf, 50_000); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, data[50_000:50_100]) {
			t.Error("ReadAt returned the wrong bytes")
		}
	})
}

func testOddValidKeys(t *testing.T, b objstore.Bucket, _ backend) {
	keys := []string{
		"a..b", ".hidden", "x/.tmp", "sp ace/f", "ü/ñ.json", "a+b=c&d", "%41", "q?x#y", "a!", "tab\tkey",
		strings.Repeat("s", 255) + "/x",
	}
	for _, k := range keys {
		put(t, b, k, []byte(k))
		if got := get(t, b, k); string(got) != k {
			t.Errorf("Get(%q) = %q", k, got)
		}
		if _, err := b.Stat(ctxT(t), k); err != nil {
			t.Errorf("Stat(%q): %v", k, err)
		}
	}
	list, err := b.List(ctxT(t), "", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if got := keysOf(list); !slices.Equal(got, want) {
		t.Errorf("List = %q\nwant   %q", got, want)
	}
}

func testOverwrite(t *testing.T, b objstore.Bucket, _ backend) {
	ctx := ctxT(t)
	put(t, b, "ow/k", []byte("version one"))
	first, err := b.Stat(ctx, "ow/k")
	if err != nil {
		t.Fatal(err)
	}
	put(t, b, "ow/k", []byte("version two")) // same size on purpose
	second, err := b.Stat(ctx, "ow/k")
	if err != nil {
		t.Fatal(err)
	}
	if first.ETag == second.ETag {
		t.Errorf("ETag %q did not change when the object was replaced", first.ETag)
	}
	if got := string(get(t, b, "ow/k")); got != "version two" {
		t.Errorf("Get = %q after overwrite", got)
	}
	list, err := b.List(ctx, "ow/", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ETag != second.ETag || list[0].Size != second.Size {
		t.Errorf("List = %+v, want the one object as Stat describes it: %+v", list, second)
	}
}

func testNotFound(t *testing.T, b objstore.Bucket, _ backend) {
	ctx := ctxT(t)
	put(t, b, "nf/dir/child", []byte("x")) // "nf/dir" and "nf" are prefixes, not objects
	for _, key := range []string{"nf/missing", "nf/dir", "nf", "nf/dir/child/deeper"} {
		_, err := b.Get(ctx, key)
		checkNotFound(t, "Get "+key, err)
		_, err = b.Stat(ctx, key)
		checkNotFound(t, "Stat "+key, err)
		err = b.Move(ctx, key, "nf/target")
		checkNotFound(t, "Move "+key, err)
	}
	if _, err := b.Stat(ctx, "nf/target"); !objstore.IsNotFound(err) {
		t.Errorf("a failed Move created its target: %v", err)
	}
}

func checkNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if pipeline.KindOf(err) != pipeline.NotFound || !objstore.IsNotFound(err) {
		t.Errorf("%s: error %v (kind %s), want kind not_found", what, err, pipeline.KindOf(err))
	}
}

func testDelete(t *testing.T, b objstore.Bucket, _ backend) {
	ctx := ctxT(t)
	put(t, b, "del/a/b", []byte("x"))
	put(t, b, "del/keep", []byte("y"))
	for i := range 2 {
		if err := b.Delete(ctx, "del/a/b"); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if err := b.Delete(ctx, "never/existed"); err != nil {
		t.Errorf("Delete of a key that never existed: %v", err)
	}
	if err := b.Delete(ctx, "del"); err != nil { // a prefix, not an object
		t.Errorf("Delete of a prefix: %v", err)
	}
	_, err := b.Stat(ctx, "del/a/b")
	checkNotFound(t, "Stat after Delete", err)
	list, err := b.List(ctx, "", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(list); !slices.Equal(got, []string{"del/keep"}) {
		t.Errorf("List after Delete = %q", got)
	}
	// The pruned directory can be used again at once.
	put(t, b, "del/a/c", []byte("z"))
}

func testListOrder(t *testing.T, b objstore.Bucket, _ backend) {
	// '!' < '-' < '.' < '/' < '0' < 'b' < 'z' < 'ä' (0xc3): a directory walk
	// visits "a/..." right after "a" and out of key order.
	keys := []string{"a/b", "a-c", "a/d/e", "a0", "a.b", "b/c", "ab", "a!", "a/b0", "z", "äx"}
	for _, k := range keys {
		put(t, b, k, []byte("data of "+k))
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	if want := []string{"a!", "a-c", "a.b", "a/b", "a/b0", "a/d/e", "a0", "ab", "b/c", "z", "äx"}; !slices.Equal(sorted, want) {
		t.Fatalf("test bug: byte order is %q", sorted)
	}
	cases := []struct {
		prefix, startAfter string
		limit              int
		want               []string
	}{
		{"", "", 100, sorted},
		{"", "", 3, []string{"a!", "a-c", "a.b"}},
		{"a/", "", 100, []string{"a/b", "a/b0", "a/d/e"}},
		{"a", "", 100, []string{"a!", "a-c", "a.b", "a/b", "a/b0", "a/d/e", "a0", "ab"}},
		{"a/d", "", 100, []string{"a/d/e"}},
		{"a/d/", "", 100, []string{"a/d/e"}},
		{"a/b", "", 100, []string{"a/b", "a/b0"}},
		{"a", "a/b", 100, []string{"a/b0", "a/d/e", "a0", "ab"}},
		{"a", "a/", 2, []string{"a/b", "a/b0"}},
		{"", "a/c", 3, []string{"a/d/e", "a0", "ab"}},
		{"", "b", 100, []string{"b/c", "z", "äx"}},
		{"", "äx", 100, nil},
		{"zz", "", 100, nil},
		{"no/such/dir/", "", 100, nil},
		{"../", "", 100, nil},
	}
	for _, c := range cases {
		got, err := b.List(ctxT(t), c.prefix, c.startAfter, c.limit)
		if err != nil {
			t.Errorf("List(%q, %q, %d): %v", c.prefix, c.startAfter, c.limit, err)
			continue
		}
		if !slices.Equal(keysOf(got), c.want) {
			t.Errorf("List(%q, %q, %d) = %q\nwant %q", c.prefix, c.startAfter, c.limit, keysOf(got), c.want)
		}
		for _, o := range got {
			if o.Size != int64(len("data of "+o.Key)) || o.ETag == "" || o.Modified.IsZero() {
				t.Errorf("List entry %+v lacks size, ETag or time", o)
			}
		}
	}
	if _, err := b.List(ctxT(t), "", "", 0); pipeline.KindOf(err) != pipeline.Invalid {
		t.Errorf("List with limit 0: %v, want kind invalid", err)
	}
}

func testListPaging(t *testing.T, b objstore.Bucket, _ backend) {
	var want []string
	for i := range 25 {
		k := fmt.Sprintf("p/%c/%02d", 'a'+i%3, i)
		put(t, b, k, []byte{byte(i)})
		want = append(want, k)
	}
	put(t, b, "p-x", nil) // sorts before "p/" but has not the prefix
	put(t, b, "q/x", nil)
	slices.Sort(want)

	var got []string
	var sizes []int
	after := ""
	for {
		page, err := b.List(ctxT(t), "p/", after, 7)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(page))
		if len(page) == 0 {
			break
		}
		got = append(got, keysOf(page)...)
		after = page[len(page)-1].Key
		if len(sizes) > 10 {
			t.Fatal("paging does not end")
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages joined = %q\nwant %q", got, want)
	}
	if !slices.Equal(sizes, []int{7, 7, 7, 4, 0}) {
		t.Errorf("page sizes = %v, want [7 7 7 4 0]", sizes)
	}
}

func testMove(t *testing.T, b objstore.Bucket, _ backend) {
	ctx := ctxT(t)
	src := randomBytes(7, 300_000)
	put(t, b, "mv/src", src)
	put(t, b, "mv/dst", []byte("old destination"))
	if err := b.Move(ctx, "mv/src", "mv/dst"); err != nil {
		t.Fatalf("Move onto an existing key: %v", err)
	}
	if got := get(t, b, "mv/dst"); !bytes.Equal(got, src) {
		t.Error("Move did not carry the content to dst")
	}
	_, err := b.Stat(ctx, "mv/src")
	checkNotFound(t, "Stat of the moved source", err)

	// Into a new directory, and out of one that becomes empty.
	if err := b.Move(ctx, "mv/dst", "moved/deep/er/x"); err != nil {
		t.Fatalf("Move to a new directory: %v", err)
	}
	if got := get(t, b, "moved/deep/er/x"); !bytes.Equal(got, src) {
		t.Error("Move to a new directory lost the content")
	}

	// A large object: S3 copies it in parts side by side (copyPartSize,
	// which the tests set to 10 MiB), which must give the same bytes.
	large := randomBytes(8, 24<<20+12345)
	put(t, b, "mv/large", large)
	if err := b.Move(ctx, "mv/large", "moved/large"); err != nil {
		t.Fatalf("Move of a large object: %v", err)
	}
	if got := get(t, b, "moved/large"); !bytes.Equal(got, large) {
		t.Errorf("Move of a large object gave %d bytes, not the %d moved", len(got), len(large))
	}
	_, err = b.Stat(ctx, "mv/large")
	checkNotFound(t, "Stat of the large moved source", err)
	if err := b.Delete(ctx, "moved/large"); err != nil {
		t.Fatal(err)
	}

	// Onto itself: nothing changes, nothing is lost.
	if err := b.Move(ctx, "moved/deep/er/x", "moved/deep/er/x"); err != nil {
		t.Fatalf("Move onto itself: %v", err)
	}
	if got := get(t, b, "moved/deep/er/x"); !bytes.Equal(got, src) {
		t.Error("Move onto itself lost the content")
	}
	list, err := b.List(ctx, "", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(list); !slices.Equal(got, []string{"moved/deep/er/x"}) {
		t.Errorf("List after moves = %q", got)
	}
}

func testInvalidKeys(t *testing.T, b objstore.Bucket, _ backend) {
	ctx := ctxT(t)
	put(t, b, "ok", []byte("x"))
	bad := []string{
		"", "/a", "a/", "/", "a//b", "..", ".", "../a", "a/..", "a/../b", "a/./b", "./a",
		`a\b`, "a\x00b", ".tmp/x", ".tmp", "\xff\xfe", strings.Repeat("k", 1025),
		strings.Repeat("s", 256) + "/x",
	}
	for _, k := range bad {
		checks := map[string]error{}
		checks["Put"] = b.Put(ctx, k, strings.NewReader("x"), 1)
		_, checks["Get"] = b.Get(ctx, k)
		_, checks["Stat"] = b.Stat(ctx, k)
		checks["Delete"] = b.Delete(ctx, k)
		checks["Move from"] = b.Move(ctx, k, "ok2")
		checks["Move to"] = b.Move(ctx, "ok", k)
		for op, err := range checks {
			if pipeline.KindOf(err) != pipeline.Invalid {
				t.Errorf("%s(%q): %v (kind %s), want kind invalid", op, k, err, pipeline.KindOf(err))
			}
		}
	}
	list, err := b.List(ctx, "", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(list); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("after rejected calls List = %q, want only \"ok\"", got)
	}
}

// errAfter yields n bytes, then fails, like a client that disconnects mid-upload.
type errAfter struct {
	r io.Reader
}

var errBroken = errors.New("connection reset by test")

func (e *errAfter) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, errBroken
	}
	return n, err
}

func testFailedPut(t *testing.T, b objstore.Bucket, _ backend) {
	ctx := ctxT(t)
	old := []byte("the old object")
	put(t, b, "fp/k", old)
	cases := []struct {
		name string
		r    func() io.Reader
		size int64
		kind pipeline.ErrorKind // wanted error kind, if any in particular
	}{
		// 17 MiB then an error: one 16 MiB part is uploaded before the failure.
		{"reader fails during multipart", func() io.Reader { return &errAfter{bytes.NewReader(randomBytes(1, 17<<20))} }, -1, ""},
		{"reader fails, known size", func() io.Reader { return &errAfter{bytes.NewReader(randomBytes(2, 1000))} }, 2000, ""},
		{"body shorter than announced", func() io.Reader { return opaque{bytes.NewReader(make([]byte, 10))} }, 20, pipeline.Invalid},
		{"body longer than announced", func() io.Reader { return bytes.NewReader(make([]byte, 30)) }, 20, pipeline.Invalid},
		{"empty announced, one byte sent", func() io.Reader { return strings.NewReader("x") }, 0, pipeline.Invalid},
		{"multipart body longer than announced", func() io.Reader { return bytes.NewReader(make([]byte, 17<<20+1)) }, 17 << 20, pipeline.Invalid},
		{"multipart body shorter than announced", func() io.Reader { return bytes.NewReader(make([]byte, 17<<20-1)) }, 17 << 20, pipeline.Invalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := b.Put(ctx, "fp/k", c.r(), c.size)
			if err == nil {
				t.Fatal("Put succeeded with a broken body")
			}
			if c.kind != "" && pipeline.KindOf(err) != c.kind {
				t.Errorf("Put: %v (kind %s), want kind %s", err, pipeline.KindOf(err), c.kind)
			}
			if got := get(t, b, "fp/k"); !bytes.Equal(got, old) {
				t.Errorf("after a failed Put the object has %d bytes, want the old %d", len(got), len(old))
			}
			if err := b.Put(ctx, "fp/new", c.r(), c.size); err == nil {
				t.Fatal("Put of a new key succeeded with a broken body")
			}
			_, err = b.Stat(ctx, "fp/new")
			checkNotFound(t, "Stat after failed Put", err)
		})
	}
}

func testConcurrentPut(t *testing.T, b objstore.Bucket, _ backend) {
	ctx := ctxT(t)
	const writers = 8
	const size = 1 << 20
	// Readers run from the start against a first complete object.
	put(t, b, "cc/k", bytes.Repeat([]byte{'A'}, size))
	stop := make(chan struct{})
	var readers sync.WaitGroup
	var mu sync.Mutex
	var readErrs []string
	var fullReads int
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := b.Get(ctx, "cc/k")
				if objstore.IsNotFound(err) {
					continue
				}
				var data []byte
				if err == nil {
					data, err = io.ReadAll(r)
					r.Close()
				}
				mu.Lock()
				if err != nil {
					readErrs = append(readErrs, err.Error())
				} else if msg := uniform(data, size); msg != "" {
					readErrs = append(readErrs, msg)
				} else {
					fullReads++
				}
				mu.Unlock()
			}
		})
	}
	var writersWG sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		writersWG.Go(func() {
			data := bytes.Repeat([]byte{byte('A' + i)}, size)
			sz := int64(size)
			var r io.Reader = bytes.NewReader(data)
			if i%2 == 1 {
				sz, r = -1, opaque{r}
			}
			errs[i] = b.Put(ctx, "cc/k", r, sz)
		})
	}
	writersWG.Wait()
	close(stop)
	readers.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if len(readErrs) > 0 {
		t.Errorf("%d concurrent reads saw a broken object, e.g. %s", len(readErrs), readErrs[0])
	}
	if msg := uniform(get(t, b, "cc/k"), size); msg != "" {
		t.Error("final object: " + msg)
	}
	t.Logf("%d complete concurrent reads", fullReads)
}

// uniform checks that data is one writer's complete object.
func uniform(data []byte, size int) string {
	if len(data) != size {
		return fmt.Sprintf("read %d bytes, want %d", len(data), size)
	}
	if i := bytes.IndexFunc(data, func(r rune) bool { return byte(r) != data[0] }); i >= 0 {
		return fmt.Sprintf("object mixes writers %q and %q", data[0], data[i])
	}
	if data[0] < 'A' || data[0] >= 'A'+8 {
		return fmt.Sprintf("unexpected content %q", data[0])
	}
	return ""
}

func testContextCancelled(t *testing.T, b objstore.Bucket, _ backend) {
	put(t, b, "ctx/k", []byte("x"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	checks := map[string]error{}
	_, checks["Get"] = b.Get(ctx, "ctx/k")
	_, checks["List"] = b.List(ctx, "", "", 10)
	_, checks["Stat"] = b.Stat(ctx, "ctx/k")
	checks["Put"] = b.Put(ctx, "ctx/new", strings.NewReader("y"), 1)
	checks["Delete"] = b.Delete(ctx, "ctx/k")
	checks["Move"] = b.Move(ctx, "ctx/k", "ctx/moved")
	for op, err := range checks {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", op, err)
		}
	}
	// Nothing happened.
	if got := string(get(t, b, "ctx/k")); got != "x" {
		t.Errorf("object changed to %q", got)
	}
	if _, err := b.Stat(ctxT(t), "ctx/new"); !objstore.IsNotFound(err) {
		t.Errorf("Put with a cancelled context stored the object: %v", err)
	}

	// A deadline that passes during a long upload stops it.
	dctx, dcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer dcancel()
	slow := &slowReader{n: 64 << 20}
	err := b.Put(dctx, "ctx/slow", slow, -1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Put past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if _, err := b.Stat(ctxT(t), "ctx/slow"); !objstore.IsNotFound(err) {
		t.Errorf("Put past its deadline stored the object: %v", err)
	}
}

// slowReader yields zeros in small sleeps so that a deadline passes mid-upload.
type slowReader struct{ n int }

func (s *slowReader) Read(p []byte) (int, error) {
	if s.n <= 0 {
		return 0, io.EOF
	}
	time.Sleep(5 * time.Millisecond)
	n := min(len(p), s.n, 64<<10)
	clear(p[:n])
	s.n -= n
	return n, nil
}

func testFileDirConflict(t *testing.T, b objstore.Bucket, be backend) {
	ctx := ctxT(t)
	put(t, b, "fd/a", []byte("leaf"))
	errChild := b.Put(ctx, "fd/a/child", strings.NewReader("x"), 1)
	put(t, b, "fd/d/x", []byte("in dir"))
	errParent := b.Put(ctx, "fd/d", strings.NewReader("x"), 1)
	errMove := b.Move(ctx, "fd/a", "fd/d")
	if be.fileTree {
		for name, err := range map[string]error{"Put under an object": errChild, "Put onto a directory": errParent, "Move onto a directory": errMove} {
			if pipeline.KindOf(err) != pipeline.Conflict {
				t.Errorf("%s: %v (kind %s), want kind conflict", name, err, pipeline.KindOf(err))
			}
		}
		if got := string(get(t, b, "fd/a")); got != "leaf" {
			t.Errorf("the conflicting calls changed fd/a to %q", got)
		}
	} else {
		if errChild != nil || errParent != nil || errMove != nil {
			t.Errorf("flat key space: Put under an object: %v; Put onto a prefix: %v; Move: %v", errChild, errParent, errMove)
		}
	}
	if got := string(get(t, b, "fd/d/x")); got != "in dir" {
		t.Errorf("fd/d/x = %q", got)
	}
}

// testGetIfMatch: a read pinned to the version a listing saw gets that
// version, and fails with Conflict once the key holds another one, even of
// the same size.
func testGetIfMatch(t *testing.T, b objstore.Bucket, _ backend) {
	ctx := ctxT(t)
	put(t, b, "inbox/p1/a.csv", []byte("first"))
	infos, err := b.List(ctx, "inbox/", "", 10)
	if err != nil || len(infos) != 1 {
		t.Fatalf("List = %v, %v", infos, err)
	}
	r, err := b.GetIfMatch(ctx, "inbox/p1/a.csv", infos[0].ETag)
	if err != nil {
		t.Fatalf("GetIfMatch of the listed version: %v", err)
	}
	data, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(data) != "first" {
		t.Errorf("read %q, %v", data, err)
	}
	// Same size: the directory store tells the versions apart by inode (a
	// Put renames a new file over the old one).
	put(t, b, "inbox/p1/a.csv", []byte("other"))
	if r, err := b.GetIfMatch(ctx, "inbox/p1/a.csv", infos[0].ETag); pipeline.KindOf(err) != pipeline.Conflict {
		if r != nil {
			r.Close()
		}
		t.Errorf("GetIfMatch of a replaced version: %v, want conflict", err)
	}
	st, err := b.Stat(ctx, "inbox/p1/a.csv")
	if err != nil {
		t.Fatal(err)
	}
	r, err = b.GetIfMatch(ctx, "inbox/p1/a.csv", st.ETag)
	if err != nil {
		t.Fatalf("GetIfMatch of the current version: %v", err)
	}
	r.Close()
	if _, err := b.GetIfMatch(ctx, "inbox/p1/missing.csv", st.ETag); !objstore.IsNotFound(err) {
		t.Errorf("GetIfMatch of a missing key: %v, want not found", err)
	}
}
