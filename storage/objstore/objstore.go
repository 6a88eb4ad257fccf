// Package objstore stores uploaded files and pipeline artefacts as objects
// behind one small contract, Bucket, so that the same code runs on a plain
// directory (the embedded default, ./var/bucket, no server needed) and on any
// S3-compatible server (MinIO, versitygw, AWS) in production. Both
// implementations pass the same contract test suite, and both reject the same
// keys, so a key that works locally also works on S3 and the other way round.
//
// Keys are slash-separated paths such as "acme/forecasts/2026-03-29/v1.json".
// Because the directory store and file-tree S3 servers (versitygw's posix
// backend) map keys onto files, a key cannot name an object and at the same
// time be a directory of other keys ("a/b" next to "a/b/c"); such a Put
// returns a pipeline.Conflict error on those stores. Callers should choose key
// layouts where objects are leaves.
package objstore

import (
	"context"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/pipeline"
)

// ObjectInfo describes a stored object without reading it, so that callers can
// page through listings and detect replaced objects cheaply. It is the
// domain's type, so that consumers such as the inbox declare their bucket
// interfaces without importing this adapter.
type ObjectInfo = pipeline.ObjectInfo

// Bucket is the object-store contract that the rest of schedbridge programs
// against, so that the storage backend is a deployment choice rather than a
// code change. Missing objects yield errors for which IsNotFound is true;
// invalid keys yield pipeline.Invalid errors.
type Bucket interface {
	// Put stores r under key atomically: readers see the old object or the
	// complete new one, never a part. size is the exact length of r, or -1
	// when unknown.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get opens the object for reading; the caller closes it. A missing key
	// fails here, not on the first Read.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// GetIfMatch is Get pinned to one version: it opens the object only if
	// its ETag (as Stat and List report it) is etag, and fails with a
	// pipeline.Conflict error if the key holds another version by now. A
	// reader that reads a file twice uses it to be sure both reads see the
	// same content.
	GetIfMatch(ctx context.Context, key, etag string) (io.ReadCloser, error)
	// Stat describes the object without reading it.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// List returns up to limit objects whose key starts with prefix and sorts
	// after startAfter (byte-wise lexicographic order, recursive, no
	// directory entries), for paging: pass the last key of one page as
	// startAfter of the next.
	List(ctx context.Context, prefix, startAfter string, limit int) ([]ObjectInfo, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Move renames src to dst, replacing dst. On the directory store it is an
	// atomic rename; on S3 it is a server-side copy followed by a delete of
	// src, so for a moment both keys exist.
	Move(ctx context.Context, src, dst string) error
	// String names the store for logs without secrets, e.g.
	// "s3://127.0.0.1:9000/schedbridge" or "file:///abs/var/bucket".
	String() string
}

// IsNotFound reports whether err says that an object does not exist, so that
// callers need not import the pipeline error vocabulary for the common check.
func IsNotFound(err error) bool {
	return err != nil && pipeline.KindOf(err) == pipeline.NotFound
}

// changed is the error of GetIfMatch when the key holds another version.
func changed(key string) error {
	return pipeline.Errorf(pipeline.Conflict, "object %q changed: it is not the version asked for", key)
}

func notFound(key string) error {
	return pipeline.Errorf(pipeline.NotFound, "object %q not found", key)
}

// maxKeyLen is S3's limit on object key length in bytes.
const maxKeyLen = 1024

// maxSegmentLen is the usual file-system limit on one path component
// (NAME_MAX); the directory store and versitygw map segments to file names.
const maxSegmentLen = 255

// tmpDirName is the directory store's staging directory for Put. Keys cannot
// start with it, on every backend, so that the two implementations accept the
// same keys.
const tmpDirName = ".tmp"

// checkKey is the one key validation both implementations share.
func checkKey(key string) error {
	bad := func(why string) error {
		return pipeline.Errorf(pipeline.Invalid, "invalid object key %q: %s", key, why)
	}
	switch {
	case key == "":
		return pipeline.Errorf(pipeline.Invalid, "invalid object key: empty")
	case len(key) > maxKeyLen:
		return bad("longer than 1024 bytes")
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	case strings.ContainsRune(key, 0):
		return bad("contains NUL")
	case strings.ContainsRune(key, '\\'):
		return bad("contains a backslash")
	case strings.HasPrefix(key, "/"):
		return bad("starts with /")
	case strings.HasSuffix(key, "/"):
		return bad("ends with /")
	}
	for i, seg := range strings.Split(key, "/") {
		switch {
		case seg == "":
			return bad("empty path segment")
		case seg == "." || seg == "..":
			return bad(`contains a "." or ".." segment`)
		case len(seg) > maxSegmentLen:
			return bad("path segment longer than 255 bytes")
		case i == 0 && seg == tmpDirName:
			return bad(`the first segment ".tmp" is reserved`)
		}
	}
	return nil
}

// prefixDir returns the part of a List prefix up to its last "/", the
// deepest directory that every matching key lies in, and whether any valid key
// can start with the prefix at all: if that directory is not a valid key path,
// none can, and List returns nothing on every backend (S3 servers would
// otherwise differ, MinIO rejects "../" as a prefix).
func prefixDir(prefix string) (dir string, possible bool) {
	i := strings.LastIndexByte(prefix, '/')
	if i < 0 {
		return "", true
	}
	dir = prefix[:i]
	return dir, checkKey(dir) == nil
}

// checkList validates the paging arguments shared by both List implementations.
func checkList(limit int) error {
	if limit <= 0 {
		return pipeline.Errorf(pipeline.Invalid, "list limit must be positive, got %d", limit)
	}
	return nil
}

// exactReader holds a Put body to its announced size, so that both
// implementations reject a body that is shorter or longer than announced with
// the same Invalid error instead of storing a truncated object. It checks for
// surplus data before handing out the last announced byte, so a clearly
// oversized body never completes an upload.
type exactReader struct {
	key      string
	r        io.Reader
	want     int64
	got      int64
	mismatch error // sticky once the body is known to have the wrong size
}

func newExactReader(key string, r io.Reader, size int64) *exactReader {
	return &exactReader{key: key, r: r, want: size}
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.mismatch != nil {
		return 0, e.mismatch
	}
	if len(p) == 0 {
		return 0, nil
	}
	if rem := e.want - e.got; int64(len(p)) > rem {
		p = p[:rem]
	}
	n := 0
	var err error
	if len(p) > 0 {
		n, err = e.r.Read(p)
		e.got += int64(n)
	}
	switch {
	case err == io.EOF && e.got < e.want:
		e.mismatch = pipeline.Errorf(pipeline.Invalid, "object %q: body has %d bytes, announced %d", e.key, e.got, e.want)
		return 0, e.mismatch
	case err != nil:
		return n, err
	case e.got < e.want:
		return n, nil
	}
	// All announced bytes are read; the body must end here.
	var one [1]byte
	for range 100 {
		m, perr := e.r.Read(one[:])
		if m > 0 {
			e.mismatch = pipeline.Errorf(pipeline.Invalid, "object %q: body is longer than the announced %d bytes", e.key, e.want)
			return 0, e.mismatch
		}
		if perr == io.EOF {
			return n, io.EOF
		}
		if perr != nil {
			return 0, perr
		}
	}
	return 0, io.ErrNoProgress
}
