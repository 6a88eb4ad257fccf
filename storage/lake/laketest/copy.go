package laketest

import (
	"context"
	"io"
	"testing"
)

// Bucket is what CopyObject needs of a store (storage/objstore's stores and
// the lake's Bucket have it).
type Bucket interface {
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	Put(ctx context.Context, key string, r io.Reader, size int64) error
}

// CopyObject copies the object at src to dst, as a crashed commit leaves a
// file like one that a table references.
func CopyObject(tb testing.TB, b Bucket, src, dst string) {
	tb.Helper()
	ctx := context.Background()
	rc, err := b.Get(ctx, src)
	if err != nil {
		tb.Fatal(err)
	}
	defer rc.Close()
	if err := b.Put(ctx, dst, rc, -1); err != nil {
		tb.Fatal(err)
	}
}
