package lake

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
)

// listPage is the page size of the lake's listings.
const listPage = 1000

// Retained is what a catalog's tables reference after an expiry
// (Catalog.Expire); the sweep deletes no file that it names.
type Retained struct {
	// Keys are the keys of every file that a table still references: the
	// data files of its remaining snapshots, their manifest lists and
	// manifests, statistics files, the current metadata file and the files
	// of its metadata log.
	Keys map[string]bool
	// Expired are the keys of the data files that only the snapshots that
	// this expiry removed referenced: the files of replaced runs.
	Expired map[string]bool
	// Snapshots is how many snapshots the expiry removed.
	Snapshots int
	// Metadata are the tables' metadata folders (lake/<dataset>/metadata/),
	// in which the sweep deletes the old metadata files that Keys lacks.
	Metadata []string
}

// Swept counts what a sweep removed, by kind.
type Swept struct {
	// Snapshots is how many snapshots the sweep expired from the tables.
	Snapshots int
	// Uploads are the object store's partial uploads: the staging files of
	// the local store's Puts (.tmp/put-*) and the incomplete multipart
	// uploads of an S3 store, of processes that died during an upload.
	Uploads int
	// Parts are the temporary parts of aborted or crashed writers
	// (lake/_tmp/).
	Parts int
	// Unpublished are the files of runs that no snapshot published: runs
	// that crashed before their catalog commit or lost to a newer run.
	Unpublished int
	// Expired are the data files that only expired snapshots referenced:
	// the files of replaced runs.
	Expired int
	// Metadata are the tables' metadata files (NNNNN-<uuid>.metadata.json,
	// manifest lists and manifests) that no table references any more:
	// those of expired snapshots, those that fell out of a metadata log,
	// and those of commits that a crash or a lost race left behind.
	Metadata int
	// Folders is how many empty folders the sweep removed (local store).
	Folders int
}

// Files is how many files the sweep removed, of every kind.
func (s Swept) Files() int { return s.Uploads + s.Parts + s.Unpublished + s.Expired + s.Metadata }

// LogValue logs the counts as a group.
func (s Swept) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("files", s.Files()), slog.Int("snapshots_expired", s.Snapshots),
		slog.Int("uploads", s.Uploads), slog.Int("parts", s.Parts), slog.Int("unpublished", s.Unpublished),
		slog.Int("expired", s.Expired), slog.Int("metadata", s.Metadata), slog.Int("folders", s.Folders))
}

// tempSweeper is a store that keeps partial uploads apart from its objects
// (objstore.Local's staging files, objstore.S3's incomplete multipart
// uploads) and removes those that were last written to before a time.
type tempSweeper interface {
	SweepTemp(ctx context.Context, before time.Time) (int, error)
}

// emptyPruner is a store with folders (objstore.Local) that removes the
// empty ones below a prefix: iceberg-go and older versions of the sweep
// left emptied run folders behind.
type emptyPruner interface {
	PruneEmpty(ctx context.Context, prefix string) (int, error)
}

// Sweep expires the catalog's snapshots older than olderThan (each table's
// current snapshot stays) and then deletes, through the store, what no
// remaining snapshot references once it is older than olderThan by the
// lake's clock, and returns what it removed by kind (Swept):
//   - the store's partial uploads (Swept.Uploads), when the store keeps
//     them apart (objstore.Local, objstore.S3);
//   - temporary objects (lake/_tmp/...), the parts of aborted or crashed
//     writers;
//   - the files of run folders that no remaining snapshot references and
//     whose newest object is older than olderThan: runs that crashed before
//     their catalog commit or lost to a newer run, and runs whose snapshots
//     expired;
//   - the files in the tables' metadata folders (metadata files, manifest
//     lists, manifests) that the tables' current metadata does not
//     reference;
//   - on the local store, the empty folders under lake/.
//
// A replaced run therefore stays readable, by time travel and by readers
// that planned their scan before it was replaced, until the snapshot that
// published it is older than olderThan. olderThan must exceed the longest
// time a run takes to write and commit its snapshot and the longest upload,
// because the parts, metadata files and uploads in progress are only as old
// as they are. Sweep also imports the _latest pointers that the lake wrote
// before it had a catalog (ImportPointers), so that their runs are kept.
func (l *Lake) Sweep(ctx context.Context, olderThan time.Duration) (Swept, error) {
	var res Swept
	if olderThan < 0 {
		return res, pipeline.Errorf(pipeline.Invalid, "lake sweep: negative age %s", olderThan)
	}
	cat, err := l.catalog()
	if err != nil {
		return res, err
	}
	kept, err := cat.Expire(ctx, olderThan)
	if err != nil {
		return res, fmt.Errorf("lake sweep: %w", err)
	}
	res.Snapshots = kept.Snapshots
	cutoff := l.opts.Now().Add(-olderThan)
	if ts, ok := l.b.(tempSweeper); ok {
		if res.Uploads, err = ts.SweepTemp(ctx, cutoff); err != nil {
			return res, fmt.Errorf("lake sweep: partial uploads: %w", err)
		}
	}
	// One listing, after the expiry, serves the import, the temporary
	// parts, the run folders and the metadata files.
	type run struct {
		keys    []string
		live    bool
		expired bool
		newest  time.Time
	}
	runs := map[string]*run{}
	var tmp, meta, pointers []string
	err = l.each(ctx, func(o pipeline.ObjectInfo) {
		rest := strings.TrimPrefix(o.Key, root)
		if isPointer(o.Key) {
			pointers = append(pointers, o.Key)
			return
		}
		if strings.HasPrefix(rest, "_tmp/") {
			if o.Modified.Before(cutoff) {
				tmp = append(tmp, o.Key)
			}
			return
		}
		if slices.ContainsFunc(kept.Metadata, func(p string) bool { return strings.HasPrefix(o.Key, p) }) {
			if isMetadataFile(o.Key) && !kept.Keys[o.Key] && o.Modified.Before(cutoff) {
				meta = append(meta, o.Key)
			}
			return
		}
		// <dataset>/delivery_day=<day>/run=<id>/<file>
		seg := strings.SplitN(rest, "/", 4)
		if len(seg) != 4 || !strings.HasPrefix(seg[1], "delivery_day=") || !strings.HasPrefix(seg[2], "run=") {
			return
		}
		if _, err := strconv.ParseInt(strings.TrimPrefix(seg[2], "run="), 10, 64); err != nil {
			return
		}
		rk := strings.Join(seg[:3], "/")
		r := runs[rk]
		if r == nil {
			r = &run{}
			runs[rk] = r
		}
		r.keys = append(r.keys, o.Key)
		if o.Modified.After(r.newest) {
			r.newest = o.Modified
		}
	})
	if err != nil {
		return res, fmt.Errorf("lake sweep: list: %w", err)
	}
	_, imported, err := l.importPointers(ctx, cat, pointers)
	if err != nil {
		return res, err
	}
	for _, k := range imported {
		kept.Keys[k] = true
	}
	for _, r := range runs {
		r.live = slices.ContainsFunc(r.keys, func(k string) bool { return kept.Keys[k] })
		r.expired = slices.ContainsFunc(r.keys, func(k string) bool { return kept.Expired[k] })
	}

	del := func(keys []string, n *int) error {
		for _, k := range keys {
			if err := l.b.Delete(ctx, k); err != nil {
				return fmt.Errorf("lake sweep: delete %s: %w", k, err)
			}
			*n++
		}
		return nil
	}
	if err := del(tmp, &res.Parts); err != nil {
		return res, err
	}
	for _, rk := range slices.Sorted(maps.Keys(runs)) {
		r := runs[rk]
		if r.live || !r.newest.Before(cutoff) {
			continue // referenced by a snapshot, or may still be written
		}
		n, kind := &res.Unpublished, "unpublished"
		if r.expired {
			n, kind = &res.Expired, "expired"
		}
		if err := del(r.keys, n); err != nil {
			return res, err
		}
		slog.InfoContext(ctx, "lake sweep removed a run that no snapshot references", "run", rk, "kind", kind, "objects", len(r.keys))
	}
	if err := del(meta, &res.Metadata); err != nil {
		return res, err
	}
	if p, ok := l.b.(emptyPruner); ok {
		if res.Folders, err = p.PruneEmpty(ctx, root); err != nil {
			return res, fmt.Errorf("lake sweep: empty folders: %w", err)
		}
	}
	return res, nil
}

// isMetadataFile tells whether key names a file that Iceberg writes into a
// table's metadata folder: a metadata file (NNNNN-<uuid>.metadata.json), a
// manifest list (snap-*.avro) or a manifest (*.avro). Anything else in the
// folder is not the catalog's, and the sweep leaves it.
func isMetadataFile(key string) bool {
	return strings.HasSuffix(key, ".metadata.json") || strings.HasSuffix(key, ".avro")
}

// each calls fn for every object under the lake's root, in key order.
func (l *Lake) each(ctx context.Context, fn func(pipeline.ObjectInfo)) error {
	for after := ""; ; {
		page, err := l.b.List(ctx, root, after, listPage)
		if err != nil {
			return err
		}
		for _, o := range page {
			after = o.Key
			fn(o)
		}
		if len(page) < listPage {
			return nil
		}
	}
}

// ImportPointers publishes in the catalog the runs that the _latest pointers
// name, which the lake wrote before it had a catalog, unless the catalog
// already has that run or a later one for the day, and deletes each pointer
// once its run is in the catalog. It returns how many runs it published.
func (l *Lake) ImportPointers(ctx context.Context) (int, error) {
	cat, err := l.catalog()
	if err != nil {
		return 0, err
	}
	var pointers []string
	err = l.each(ctx, func(o pipeline.ObjectInfo) {
		if isPointer(o.Key) {
			pointers = append(pointers, o.Key)
		}
	})
	if err != nil {
		return 0, fmt.Errorf("lake import: list: %w", err)
	}
	n, _, err := l.importPointers(ctx, cat, pointers)
	return n, err
}

// isPointer tells whether key is a day's _latest pointer
// (lake/<dataset>/delivery_day=<day>/_latest).
func isPointer(key string) bool {
	seg := strings.Split(strings.TrimPrefix(key, root), "/")
	return len(seg) == 3 && strings.HasPrefix(seg[1], "delivery_day=") && seg[2] == pointerSeg
}

// importPointers publishes the runs that the pointers at keys name, as
// ImportPointers describes, and returns how many it published and the keys
// of their files, which are current now.
func (l *Lake) importPointers(ctx context.Context, cat Catalog, pointers []string) (int, []string, error) {
	n := 0
	var current []string
	for _, key := range pointers {
		s, err := l.readPointer(ctx, key)
		if err != nil {
			return n, current, fmt.Errorf("lake import: %w", err)
		}
		schema, err := l.fileSchema(ctx, s.Files[0].Key)
		if err != nil {
			return n, current, fmt.Errorf("lake import %s: %w", key, err)
		}
		if micro, ok := microTimestamps(schema); ok {
			// Files from before ts_utc was in microseconds: Iceberg reads
			// timestamps and their bounds in microseconds, and iceberg-go's
			// scan refuses other units, so the run is written again, in
			// place, and published by that writer's commit.
			err = l.rewrite(ctx, s, micro)
		} else {
			err = cat.Publish(ctx, Publication{Dataset: s.Dataset, Day: s.Day, RunID: s.RunID, Schema: schema, Files: s.Files,
				WrittenAt: s.WrittenAt})
		}
		switch {
		case err == nil:
			n++
			for _, f := range s.Files {
				current = append(current, f.Key)
			}
			slog.InfoContext(ctx, "lake: imported a run from its _latest pointer into the catalog",
				"dataset", s.Dataset, "day", s.Day.String(), "run", s.RunID)
		case pipeline.KindOf(err) != pipeline.Conflict:
			return n, current, fmt.Errorf("lake import %s: %w", key, err)
		}
		if err := l.b.Delete(ctx, key); err != nil {
			return n, current, fmt.Errorf("lake import: delete %s: %w", key, err)
		}
	}
	return n, current, nil
}

// microTimestamps returns schema with its timestamps in microseconds, and
// whether any field was in another unit.
func microTimestamps(schema *arrow.Schema) (*arrow.Schema, bool) {
	fields := slices.Clone(schema.Fields())
	changed := false
	for i, f := range fields {
		if ts, ok := f.Type.(*arrow.TimestampType); ok && ts.Unit != arrow.Microsecond {
			fields[i].Type = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: ts.TimeZone}
			changed = true
		}
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md), changed
}

// rewrite writes the run of snapshot s again with schema, whose timestamps
// are in microseconds, under the same run id: the writer's Commit replaces
// the run's files and publishes them. A failure leaves the old files and
// the pointer for the next sweep.
func (l *Lake) rewrite(ctx context.Context, s Snapshot, schema *arrow.Schema) error {
	w, err := l.Create(ctx, s.Dataset, s.Day, s.RunID, schema)
	if err != nil {
		return err
	}
	defer w.Abort()
	err = l.Read(ctx, s, nil, func(rec arrow.RecordBatch) error {
		conv := toSchema(rec, schema, l.opts.Alloc)
		defer conv.Release()
		return w.Write(conv)
	})
	if err != nil {
		return err
	}
	_, err = w.Commit(ctx)
	return err
}

// toSchema returns rec under schema, whose timestamp columns may be in
// another unit than rec's; the other columns are shared.
func toSchema(rec arrow.RecordBatch, schema *arrow.Schema, alloc memory.Allocator) arrow.RecordBatch {
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range rec.Columns() {
		to, ok := schema.Field(i).Type.(*arrow.TimestampType)
		from, isTS := c.DataType().(*arrow.TimestampType)
		if !ok || !isTS || from.Unit == to.Unit {
			c.Retain()
			cols[i] = c
			continue
		}
		vals := c.(*array.Timestamp)
		b := array.NewTimestampBuilder(alloc, to)
		b.Reserve(vals.Len())
		for j := range vals.Len() {
			if vals.IsNull(j) {
				b.AppendNull()
			} else {
				b.Append(arrow.Timestamp(arrow.ConvertTimestampValue(from.Unit, to.Unit, int64(vals.Value(j)))))
			}
		}
		cols[i] = b.NewArray()
		b.Release()
	}
	return array.NewRecordBatch(schema, cols, rec.NumRows())
}

// deletePrefix removes every object under prefix.
func (l *Lake) deletePrefix(ctx context.Context, prefix string) (int, error) {
	n := 0
	for {
		page, err := l.b.List(ctx, prefix, "", listPage)
		if err != nil {
			return n, err
		}
		for _, o := range page {
			if err := l.b.Delete(ctx, o.Key); err != nil {
				return n, err
			}
			n++
		}
		if len(page) < listPage {
			return n, nil
		}
	}
}
