package lake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// listPage is the page size of the lake's listings.
const listPage = 1000

// Sweep deletes what no reader will follow any more and returns how many
// objects it removed:
//   - temporary objects (lake/_tmp/...) older than olderThan, the parts of
//     aborted or crashed writers;
//   - run folders that the day's _latest pointer does not name and whose
//     newest object is older than olderThan: runs that crashed before they
//     were published, and runs that a later one replaced. A replaced run is
//     kept until the pointer that replaced it is itself older than
//     olderThan, so that a reader who followed the previous pointer just
//     before has that long to finish.
//
// The published run of every day is never removed. olderThan must exceed the
// longest time a run takes to write and commit its snapshot, because the
// parts of a run in progress are only as old as the run. A day whose pointer
// cannot be read keeps all its runs; the error is returned after the rest of
// the lake is swept.
func (l *Lake) Sweep(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan < 0 {
		return 0, pipeline.Errorf(pipeline.Invalid, "lake sweep: negative age %s", olderThan)
	}
	cutoff := l.opts.Now().Add(-olderThan)
	type run struct {
		keys   []string
		newest time.Time
	}
	type dayRuns struct {
		dataset string
		day     pipeline.Day
		pointer bool
		runs    map[int64]*run
	}
	days := map[string]*dayRuns{}
	var tmp []string
	for after := ""; ; {
		page, err := l.b.List(ctx, root, after, listPage)
		if err != nil {
			return 0, fmt.Errorf("lake sweep: list: %w", err)
		}
		for _, o := range page {
			after = o.Key
			rest := strings.TrimPrefix(o.Key, root)
			if strings.HasPrefix(rest, "_tmp/") {
				if o.Modified.Before(cutoff) {
					tmp = append(tmp, o.Key)
				}
				continue
			}
			// <dataset>/delivery_day=<day>/(_latest | run=<id>/<file>)
			seg := strings.SplitN(rest, "/", 4)
			if len(seg) < 3 || !strings.HasPrefix(seg[1], "delivery_day=") {
				continue // not ours: leave it alone
			}
			day, err := pipeline.ParseDay(strings.TrimPrefix(seg[1], "delivery_day="))
			if err != nil {
				continue
			}
			dk := seg[0] + "/" + seg[1]
			d := days[dk]
			if d == nil {
				d = &dayRuns{dataset: seg[0], day: day, runs: map[int64]*run{}}
				days[dk] = d
			}
			if len(seg) == 3 && seg[2] == pointerSeg {
				d.pointer = true
				continue
			}
			id, err := strconv.ParseInt(strings.TrimPrefix(seg[2], "run="), 10, 64)
			if len(seg) != 4 || !strings.HasPrefix(seg[2], "run=") || err != nil {
				continue
			}
			r := d.runs[id]
			if r == nil {
				r = &run{}
				d.runs[id] = r
			}
			r.keys = append(r.keys, o.Key)
			if o.Modified.After(r.newest) {
				r.newest = o.Modified
			}
		}
		if len(page) < listPage {
			break
		}
	}

	removed := 0
	for _, k := range tmp {
		if err := l.b.Delete(ctx, k); err != nil {
			return removed, fmt.Errorf("lake sweep: delete %s: %w", k, err)
		}
		removed++
	}
	var errs []error
	for _, dk := range slices.Sorted(maps.Keys(days)) {
		d := days[dk]
		var latest Snapshot
		if d.pointer {
			s, err := l.Latest(ctx, d.dataset, d.day)
			if err != nil && pipeline.KindOf(err) != pipeline.NotFound {
				errs = append(errs, err)
				continue
			}
			latest = s
		}
		for _, id := range slices.Sorted(maps.Keys(d.runs)) {
			r := d.runs[id]
			switch {
			case id == latest.RunID:
				continue // published
			case !r.newest.Before(cutoff):
				continue // may still be written
			case id < latest.RunID && !latest.WrittenAt.Before(cutoff):
				continue // replaced too recently: may still be read
			}
			for _, k := range r.keys {
				if err := l.b.Delete(ctx, k); err != nil {
					return removed, fmt.Errorf("lake sweep: delete %s: %w", k, err)
				}
				removed++
			}
			slog.InfoContext(ctx, "lake sweep removed run", "dataset", d.dataset, "day", d.day.String(), "run", id, "objects", len(r.keys))
		}
	}
	if len(tmp) > 0 {
		slog.InfoContext(ctx, "lake sweep removed temporary objects", "objects", len(tmp))
	}
	return removed, errors.Join(errs...)
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
