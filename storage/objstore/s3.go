package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/schedbridge/schedbridge/pipeline"
)

// S3Config addresses one bucket on an S3-compatible server. It is plain data
// so that it can come from the configuration file or a test server.
type S3Config struct {
	// Endpoint is host[:port] without a scheme, e.g. "127.0.0.1:9000".
	Endpoint string
	// Bucket is created by NewS3 when missing.
	Bucket    string
	AccessKey string
	SecretKey string
	// Region may be empty: the client then asks the server.
	Region string
	// UseSSL selects https.
	UseSSL bool
}

// S3 is a Bucket on an S3-compatible server, for deployments that keep
// objects off the application host or share them between instances.
type S3 struct {
	client   *minio.Client
	bucket   string
	endpoint string
	secure   bool
	cfg      S3Config
}

var _ Bucket = (*S3)(nil)

const (
	// partSize bounds Put's memory: minio-go buffers one part at a time for
	// readers of unknown size (its default would be a ~537 MiB buffer). With
	// S3's 10,000 parts, unknown-size objects may be up to 156 GiB.
	partSize = 16 << 20
	// maxParts is S3's limit on parts per multipart upload.
	maxParts = 10000
	// maxCopySize is the largest object a single server-side CopyObject may
	// copy; larger ones need a multipart copy (ComposeObject).
	maxCopySize = 5 << 30
	// copyThreads is how many parts of a large object Move copies at once.
	copyThreads = 4
)

// copyPartSize is the smallest part of Move's multipart copy, which objects
// of at least two parts take; a variable so that the tests can move smaller
// objects in parts (export_test.go). minio-go splits an object evenly into
// parts of at most the given size, so a part is at least half of it, which
// must stay above S3's smallest part (5 MiB).
//
// A server-side copy costs the server CPU time for every byte (MinIO hashes
// what it reads and writes), and CopyObject is one request that one thread
// serves. Copied in parts side by side, the inbox benchmark's file of 819 MiB
// was copied in 1.5-2.6 s instead of 2.5-3.4 s on MinIO with two cores
// (docs/benchmarks.md, issue 20).
var copyPartSize int64 = 64 << 20

// NewS3 connects to the server and creates the bucket when it does not exist
// yet, so that a fresh deployment needs no manual set-up.
func NewS3(ctx context.Context, c S3Config) (*S3, error) {
	if c.Endpoint == "" || strings.Contains(c.Endpoint, "://") || strings.Contains(c.Endpoint, "/") {
		return nil, pipeline.Errorf(pipeline.Invalid, "S3 endpoint %q: want host[:port] without scheme or path", c.Endpoint)
	}
	if c.Bucket == "" {
		return nil, pipeline.Errorf(pipeline.Invalid, "S3 bucket name is empty")
	}
	client, err := minio.New(c.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""),
		Secure: c.UseSSL,
		Region: c.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("S3 client for %s: %w", c.Endpoint, err)
	}
	s := &S3{client: client, bucket: c.Bucket, endpoint: c.Endpoint, secure: c.UseSSL, cfg: c}
	exists, err := client.BucketExists(ctx, c.Bucket)
	if err != nil {
		return nil, fmt.Errorf("%s: check bucket: %w", s, err)
	}
	if !exists {
		err := client.MakeBucket(ctx, c.Bucket, minio.MakeBucketOptions{Region: c.Region})
		if err != nil && minio.ToErrorResponse(err).Code != minio.BucketAlreadyOwnedByYou {
			return nil, fmt.Errorf("%s: create bucket: %w", s, err)
		}
	}
	return s, nil
}

// Config is the configuration the store was opened with, for another client
// of the same bucket (storage/catalog's Iceberg file IO).
func (s *S3) Config() S3Config { return s.cfg }

// String names the store as "s3://endpoint/bucket" ("s3+http" is not used:
// the scheme says S3, not the transport), without credentials.
func (s *S3) String() string {
	return (&url.URL{Scheme: "s3", Host: s.endpoint, Path: "/" + s.bucket}).String()
}

// mapErr turns the server's "no such object" answers into NotFound errors and
// keeps everything else, including context errors, inspectable with errors.Is.
func (s *S3) mapErr(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		switch resp.Code {
		case minio.NoSuchKey, "NotFound":
			return notFound(key)
		case "ObjectParentIsFile", "XMinioParentIsObject":
			return conflict(key, "a parent of the key is an object")
		case "ExistingObjectIsDirectory":
			return conflict(key, "the key is a directory of other keys")
		}
	}
	return fmt.Errorf("%s: %s %q: %w", s, op, key, err)
}

// Put uploads r with minio-go's defaults (no explicit checksums, which
// versitygw rejects on multipart uploads) and 16 MiB parts, so that memory
// stays bounded when size is -1. S3 makes the new object visible only when
// the upload completes.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ps := uint64(partSize)
	if size > partSize*maxParts {
		// Round up to whole MiB so that size fits into 10,000 parts.
		ps = uint64((size/maxParts + 1<<20) &^ (1<<20 - 1))
	}
	var exact *exactReader
	if size >= 0 {
		// This hides io.ReaderAt, so minio-go streams parts through one
		// buffer instead of uploading sections in parallel: bounded memory
		// and a size check on every body.
		exact = newExactReader(key, r, size)
		r = exact
		if size == 0 {
			// minio-go sends an empty body without reading r at all.
			if _, err := exact.Read(make([]byte, 1)); err != nil && err != io.EOF {
				return err
			}
		}
	}
	_, err := s.client.PutObject(ctx, s.bucket, key, r, size, minio.PutObjectOptions{
		ContentType: "application/octet-stream",
		PartSize:    ps,
	})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if exact != nil && exact.mismatch != nil {
			return exact.mismatch
		}
	}
	return s.mapErr("put", key, err)
}

// Get fetches the object. minio-go's GetObject is lazy, so Get starts the
// download with an empty Read: a missing key fails here, in one round trip,
// and later Reads stream the version that this request saw (a HEAD first
// would let a concurrent Put slip in between and fail the first Read with
// PreconditionFailed). The result is a *minio.Object, which implements
// io.ReaderAt and io.Seeker and has a Stat method, for random access; ctx
// stays in force for its reads.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return s.get(ctx, key, "")
}

// GetIfMatch sends If-Match with the GET, so the server itself refuses
// another version (412 Precondition Failed).
func (s *S3) GetIfMatch(ctx context.Context, key, etag string) (io.ReadCloser, error) {
	return s.get(ctx, key, etag)
}

func (s *S3) get(ctx context.Context, key, etag string) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var opts minio.GetObjectOptions
	if etag != "" {
		if err := opts.SetMatchETag(etag); err != nil {
			return nil, pipeline.Errorf(pipeline.Invalid, "etag %q: %v", etag, err)
		}
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key, opts)
	if err != nil {
		return nil, s.mapErr("get", key, err)
	}
	if _, err := obj.Read(nil); err != nil && err != io.EOF {
		obj.Close()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if minio.ToErrorResponse(err).Code == "PreconditionFailed" {
			return nil, changed(key)
		}
		return nil, s.mapErr("get", key, err)
	}
	return obj, nil
}

// Stat asks the server for the object's metadata (HEAD).
func (s *S3) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return ObjectInfo{}, s.mapErr("stat", key, err)
	}
	return s3Info(info), nil
}

func s3Info(o minio.ObjectInfo) ObjectInfo {
	return ObjectInfo{Key: o.Key, Size: o.Size, ETag: o.ETag, Modified: o.LastModified.UTC()}
}

// List pages through ListObjectsV2 with StartAfter and stops after limit
// objects. S3 lists keys in byte-wise (UTF-8 binary) order.
func (s *S3) List(ctx context.Context, prefix, startAfter string, limit int) ([]ObjectInfo, error) {
	if err := checkList(limit); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := []ObjectInfo{}
	if _, possible := prefixDir(prefix); !possible {
		return out, nil
	}
	// Cancelling the inner context stops minio-go's listing goroutine when we
	// stop reading early.
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	maxKeys := min(limit, 1000)
	for o := range s.client.ListObjects(lctx, s.bucket, minio.ListObjectsOptions{
		Prefix:     prefix,
		StartAfter: startAfter,
		Recursive:  true,
		MaxKeys:    maxKeys,
	}) {
		if o.Err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			return nil, fmt.Errorf("%s: list %q: %w", s, prefix, o.Err)
		}
		if strings.HasSuffix(o.Key, "/") {
			continue // a directory marker some servers report; not an object
		}
		out = append(out, s3Info(o))
		if len(out) == limit {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Delete removes the object; S3 answers success for missing keys already.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
	if err != nil && IsNotFound(s.mapErr("delete", key, err)) {
		return nil
	}
	return s.mapErr("delete", key, err)
}

// Move copies src to dst on the server (CopyObject, or a multipart
// ComposeObject above 5 GiB), then deletes src. The copy is pinned to the
// ETag that Stat saw, so a src replaced meanwhile fails the move instead of
// copying one version and deleting another. It is not atomic: for a moment
// both keys exist, and a crash in between leaves both.
func (s *S3) Move(ctx context.Context, src, dst string) error {
	if err := checkKey(src); err != nil {
		return err
	}
	if err := checkKey(dst); err != nil {
		return err
	}
	info, err := s.Stat(ctx, src)
	if err != nil {
		return err
	}
	if src == dst {
		return nil // copying onto itself would fail, and deleting src would lose it
	}
	source := minio.CopySrcOptions{Bucket: s.bucket, Object: src, MatchETag: info.ETag}
	dest := minio.CopyDestOptions{Bucket: s.bucket, Object: dst}
	if info.Size >= 2*copyPartSize {
		// Parts of a quarter of the object each, at least copyPartSize and
		// at most S3's largest part: four for up to 20 GiB.
		part := min(max((info.Size+copyThreads-1)/copyThreads, copyPartSize), maxCopySize)
		dest.PartSize, dest.NumThreads = uint64(part), copyThreads
		_, err = s.client.ComposeObject(ctx, dest, source)
	} else {
		_, err = s.client.CopyObject(ctx, dest, source)
	}
	if err != nil {
		if resp := minio.ToErrorResponse(err); resp.Code == "PreconditionFailed" {
			return pipeline.Errorf(pipeline.Conflict, "move %q: the object changed during the move", src)
		}
		if e := s.mapErr("move to", dst, err); !IsNotFound(e) {
			return e
		}
		return notFound(src) // deleted since Stat
	}
	return s.Delete(ctx, src)
}

// SweepTemp aborts the multipart uploads that were initiated before the
// given time and never completed or aborted, and returns how many it
// aborted. An upload that a process began and did not finish, because it
// died, keeps its parts on the server, where they take up space without
// being listed as objects; a Put in progress is as young as the Put. The
// lake's sweep calls it with its age limit and clock.
func (s *S3) SweepTemp(ctx context.Context, before time.Time) (int, error) {
	// The listing's goroutine ends with the context, also when an error
	// ends the loop early.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	core := minio.Core{Client: s.client}
	n := 0
	for u := range s.client.ListIncompleteUploads(ctx, s.bucket, "", true) {
		if u.Err != nil {
			return n, fmt.Errorf("list incomplete uploads: %w", u.Err)
		}
		if !u.Initiated.Before(before) {
			continue
		}
		if err := core.AbortMultipartUpload(ctx, s.bucket, u.Key, u.UploadID); err != nil {
			if minio.ToErrorResponse(err).Code == "NoSuchUpload" {
				continue // completed or aborted meanwhile
			}
			return n, fmt.Errorf("abort the upload of %q: %w", u.Key, err)
		}
		n++
	}
	return n, nil
}
