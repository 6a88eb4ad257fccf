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

// Sweep expires the catalog's snapshots older than olderThan (each table's
// current snapshot stays) and then deletes what no remaining snapshot
// references, and returns how many objects it removed:
//   - temporary objects (lake/_tmp/...) older than olderThan, the parts of
//     aborted or crashed writers;
//   - files of run folders that no remaining snapshot references and whose
//     newest object is older than olderThan: runs that crashed before their
//     catalog commit or lost to a newer run. Iceberg-go itself deletes the
//     files that only the expired snapshots referenced.
//
// A replaced run therefore stays readable, by time travel and by readers
// that planned their scan before it was replaced, until the snapshot that
// published it is older than olderThan. olderThan must exceed the longest
// time a run takes to write and commit its snapshot, because the parts of a
// run in progress are only as old as the run. Sweep also imports the _latest
// pointers that the lake wrote before it had a catalog (ImportPointers), so
// that their runs are kept.
func (l *Lake) Sweep(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan < 0 {
		return 0, pipeline.Errorf(pipeline.Invalid, "lake sweep: negative age %s", olderThan)
	}
	cat, err := l.catalog()
	if err != nil {
		return 0, err
	}
	live, err := cat.Expire(ctx, olderThan)
	if err != nil {
		return 0, fmt.Errorf("lake sweep: %w", err)
	}
	// One listing, after the expiry has deleted what only expired
	// snapshots referenced, serves the import, the temporary parts and
	// the run folders.
	cutoff := l.opts.Now().Add(-olderThan)
	type run struct {
		keys   []string
		live   bool
		newest time.Time
	}
	runs := map[string]*run{}
	var tmp, pointers []string
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
		// <dataset>/delivery_day=<day>/run=<id>/<file>; the tables'
		// metadata (<dataset>/metadata/...) is the catalog's.
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
		return 0, fmt.Errorf("lake sweep: list: %w", err)
	}
	_, imported, err := l.importPointers(ctx, cat, pointers)
	if err != nil {
		return 0, err
	}
	for _, k := range imported {
		live[k] = true
	}
	for _, r := range runs {
		r.live = slices.ContainsFunc(r.keys, func(k string) bool { return live[k] })
	}

	removed := 0
	for _, k := range tmp {
		if err := l.b.Delete(ctx, k); err != nil {
			return removed, fmt.Errorf("lake sweep: delete %s: %w", k, err)
		}
		removed++
	}
	for _, rk := range slices.Sorted(maps.Keys(runs)) {
		r := runs[rk]
		if r.live || !r.newest.Before(cutoff) {
			continue // referenced by a snapshot, or may still be written
		}
		for _, k := range r.keys {
			if err := l.b.Delete(ctx, k); err != nil {
				return removed, fmt.Errorf("lake sweep: delete %s: %w", k, err)
			}
			removed++
		}
		slog.InfoContext(ctx, "lake sweep removed unpublished run", "run", rk, "objects", len(r.keys))
	}
	if len(tmp) > 0 {
		slog.InfoContext(ctx, "lake sweep removed temporary objects", "objects", len(tmp))
	}
	return removed, nil
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
