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

// dropOutcome is what became of one dropped file.
type dropOutcome struct {
	Key    string
	Result any    // the importer's result when imported
	Error  string // why it was rejected
}

// sync imports the folder's files.
func (d dropFolder) sync(ctx context.Context, b DropBucket, importer func(ctx context.Context, key string, data []byte) (any, error)) ([]dropOutcome, error) {
	var keys []string
	after := ""
	for {
		page, err := b.List(ctx, d.Prefix, after, listPage)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", d.Prefix, err)
		}
		for _, o := range page {
			if rel := strings.TrimPrefix(o.Key, d.Prefix); rel != "" && !strings.Contains(rel, "/") {
				keys = append(keys, o.Key)
			}
		}
		if len(page) < listPage {
			break
		}
		after = page[len(page)-1].Key
	}
	var out []dropOutcome
	for _, key := range keys {
		stamp := d.Now().UTC().Format("20060102T150405Z") + "-"
		data, err := d.read(ctx, b, key)
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
				out = append(out, dropOutcome{Key: key, Result: res})
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
		out = append(out, dropOutcome{Key: key, Error: why})
	}
	return out, nil
}

// read fetches a whole dropped file, refusing more than the cap.
func (d dropFolder) read(ctx context.Context, b DropBucket, key string) ([]byte, error) {
	rc, err := b.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, d.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if int64(len(data)) > d.MaxBytes {
		return nil, pipeline.Errorf(pipeline.TooLarge, "%s is larger than %d bytes", key, d.MaxBytes)
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
