package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/pipeline"
)

// DropBucket is what a drop folder needs of the object store.
type DropBucket interface {
	List(ctx context.Context, prefix, startAfter string, limit int) ([]pipeline.ObjectInfo, error)
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	Move(ctx context.Context, src, dst string) error
}

// dropFolder is a folder of the bucket into which operators drop files that
// are imported once: each file directly under Prefix is handed to the
// importer in key order and then moved to Processed, or, when the importer
// finds it invalid, to Rejected with its error in a .error.json beside it.
// Other errors (the database is down) leave the file where it is for the
// next sync. The move names carry a time stamp, so a file dropped again
// under the same name does not overwrite the earlier one.
type dropFolder struct {
	Prefix, Processed, Rejected string
	MaxBytes                    int64
	Now                         func() time.Time
	Logger                      *slog.Logger
}

// DropFile is what became of one dropped file.
type DropFile struct {
	Key    string `json:"key"`
	Result any    `json:"result,omitempty"` // the importer's result when imported
	Error  string `json:"error,omitempty"`  // why it was rejected
}

// sync imports the folder's files.
func (d dropFolder) sync(ctx context.Context, b DropBucket, importer func(ctx context.Context, key string, data []byte) (any, error)) ([]DropFile, error) {
	var keys []string
	if err := listAll(ctx, b, d.Prefix, func(o pipeline.ObjectInfo) error {
		if rel := strings.TrimPrefix(o.Key, d.Prefix); rel != "" && !strings.Contains(rel, "/") {
			keys = append(keys, o.Key)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var out []DropFile
	for _, key := range keys {
		stamp := d.Now().UTC().Format("20060102T150405Z") + "-"
		data, err := readCapped(ctx, b, key, d.MaxBytes)
		if pipeline.KindOf(err) == pipeline.NotFound {
			// Another process took the file between the listing and now.
			continue
		}
		if err == nil {
			var res any
			if res, err = importer(ctx, key, data); err == nil {
				if err := b.Move(ctx, key, d.Processed+stamp+path.Base(key)); err != nil {
					return out, fmt.Errorf("%s: move: %w", key, err)
				}
				out = append(out, DropFile{Key: key, Result: res})
				continue
			}
		}
		if k := pipeline.KindOf(err); k != pipeline.Invalid && k != pipeline.TooLarge {
			return out, fmt.Errorf("%s: %w", key, err)
		}
		why, detail := rejection(err)
		dst := d.Rejected + stamp + path.Base(key)
		msg, _ := json.MarshalIndent(map[string]any{"key": key, "error": why, "detail": detail}, "", "  ")
		if err := b.Put(ctx, dst+".error.json", bytes.NewReader(msg), int64(len(msg))); err != nil {
			return out, fmt.Errorf("%s: %w", key, err)
		}
		if err := b.Move(ctx, key, dst); err != nil {
			return out, fmt.Errorf("%s: move: %w", key, err)
		}
		d.Logger.Warn("dropped file rejected", "key", key, "err", why)
		out = append(out, DropFile{Key: key, Error: why})
	}
	return out, nil
}

// listPage is the page size of the listings. S3 servers answer at most
// 1000 keys per request whatever the page, but the local store reads and
// sorts the whole folder once per page: with 200,000 files in a folder and
// pages of 5,000 an idle mako sync took 7.7 s, nearly all of it listing. A
// page of 100,000 keys (about 10 MB) lists such a folder in two walks.
const listPage = 100_000

// lister lists a bucket's keys in pages.
type lister interface {
	List(ctx context.Context, prefix, startAfter string, limit int) ([]pipeline.ObjectInfo, error)
}

// listAll walks every object under prefix, in key order.
func listAll(ctx context.Context, b lister, prefix string, fn func(pipeline.ObjectInfo) error) error {
	after := ""
	for {
		page, err := b.List(ctx, prefix, after, listPage)
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, o := range page {
			if err := fn(o); err != nil {
				return err
			}
		}
		if len(page) < listPage {
			return nil
		}
		after = page[len(page)-1].Key
	}
}

// readCapped fetches a whole object, refusing more than limit bytes with a
// TooLarge error.
func readCapped(ctx context.Context, b interface {
	Get(ctx context.Context, key string) (io.ReadCloser, error)
}, key string, limit int64) ([]byte, error) {
	rc, err := b.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if int64(len(data)) > limit {
		return nil, pipeline.Errorf(pipeline.TooLarge, "%s is larger than %d bytes", key, limit)
	}
	return data, nil
}

// rejection is what a rejected file's .error.json says: the message, and
// the problems of a schema error with their line and column.
func rejection(err error) (string, any) {
	var se *ingest.SchemaError
	if errors.As(err, &se) {
		return se.Error(), se.Problems
	}
	return pipeline.MessageOf(err), nil
}
