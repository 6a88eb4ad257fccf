package jobs

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// runLogKey is the context key of the run whose log lines a context's log
// calls write.
type runLogKey struct{}

// runLog numbers the log lines of one run. One process runs a run, so a
// counter in memory numbers its lines without asking the database.
type runLog struct {
	id  int64
	seq atomic.Int64
}

// withRunLog returns ctx for the work of run id: the runner's log lines
// written with it are recorded with that run. A context derived from it for
// another run (a chain's stage run) records with that run instead; one that
// is for the run already is returned as it is, so that the run's lines
// keep one count.
func withRunLog(ctx context.Context, id int64) context.Context {
	if rl := runLogOf(ctx); rl != nil && rl.id == id {
		return ctx
	}
	return context.WithValue(ctx, runLogKey{}, &runLog{id: id})
}

func runLogOf(ctx context.Context) *runLog {
	rl, _ := ctx.Value(runLogKey{}).(*runLog)
	return rl
}

// runLogLevel is the least level of the lines recorded with a run.
const runLogLevel = slog.LevelInfo

// runLogRecorder writes the lines of runs to the store.
type runLogRecorder struct {
	store interface {
		AppendRunLog(ctx context.Context, line pipeline.RunLogLine) error
	}
	now func() time.Time
	// log is the runner's configured logger, which does not record lines
	// with runs: a failure to record one is reported there and nowhere else.
	log *slog.Logger
}

// runLogHandler passes every record on to the configured handler and, when
// the context names a run, records lines of info level and above with it.
type runLogHandler struct {
	next slog.Handler
	rec  *runLogRecorder
	// bound are the attributes of Logger.With, each under the groups that
	// were open when it was bound; groups are the groups open now.
	bound  []boundAttr
	groups []string
}

type boundAttr struct {
	groups []string
	attr   slog.Attr
}

// Enabled is true for a line the run records even when the configured
// handler would drop it.
func (h *runLogHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return (level >= runLogLevel && runLogOf(ctx) != nil) || h.next.Enabled(ctx, level)
}

func (h *runLogHandler) Handle(ctx context.Context, rec slog.Record) error {
	if rl := runLogOf(ctx); rl != nil && rec.Level >= runLogLevel {
		h.record(ctx, rl, rec)
	}
	if !h.next.Enabled(ctx, rec.Level) {
		return nil
	}
	return h.next.Handle(ctx, rec)
}

func (h *runLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(attrs)
	c.bound = append(h.bound[:len(h.bound):len(h.bound)], make([]boundAttr, 0, len(attrs))...)
	for _, a := range attrs {
		c.bound = append(c.bound, boundAttr{groups: h.groups, attr: a})
	}
	return &c
}

func (h *runLogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.next = h.next.WithGroup(name)
	c.groups = append(h.groups[:len(h.groups):len(h.groups)], name)
	return &c
}

// record writes one line of the run. It never fails the run: a line that
// cannot be recorded is reported at debug level and dropped.
func (h *runLogHandler) record(ctx context.Context, rl *runLog, rec slog.Record) {
	root := map[string]any{}
	for _, b := range h.bound {
		addAttr(groupMap(root, b.groups), b.attr)
	}
	here := groupMap(root, h.groups)
	rec.Attrs(func(a slog.Attr) bool {
		addAttr(here, a)
		return true
	})
	line := pipeline.RunLogLine{RunID: rl.id, Seq: int(rl.seq.Add(1)), At: h.rec.now(), Level: rec.Level.String(), Message: rec.Message}
	if len(root) > 0 {
		b, err := json.Marshal(root)
		if err != nil {
			b, _ = json.Marshal(map[string]string{"attrs": fmt.Sprint(root)})
		}
		line.Attrs = b
	}
	// The line is recorded even when the run is being cancelled: the lines
	// that say so matter most.
	if err := h.rec.store.AppendRunLog(context.WithoutCancel(ctx), line); err != nil {
		h.rec.log.DebugContext(ctx, "record run log line", "run", rl.id, "seq", line.Seq, "err", err)
	}
}

// groupMap returns the map of the group path under root, creating it.
func groupMap(root map[string]any, groups []string) map[string]any {
	m := root
	for _, g := range groups {
		sub, ok := m[g].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[g] = sub
		}
		m = sub
	}
	return m
}

// addAttr adds an attribute to m as slog's JSON handler would: empty
// attributes are left out and a group without a key is inlined.
func addAttr(m map[string]any, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		attrs := a.Value.Group()
		if len(attrs) == 0 {
			return
		}
		dst := m
		if a.Key != "" {
			dst = groupMap(m, []string{a.Key})
		}
		for _, g := range attrs {
			addAttr(dst, g)
		}
		return
	}
	m[a.Key] = jsonValue(a.Value)
}

// jsonValue turns an attribute's value into one that encoding/json takes
// and that reads well: errors by their text, durations and times as
// strings, and values JSON cannot encode by their fmt form.
func jsonValue(v slog.Value) any {
	switch v.Kind() {
	case slog.KindDuration:
		return v.Duration().String()
	case slog.KindTime:
		return v.Time().UTC().Format(time.RFC3339Nano)
	case slog.KindFloat64:
		if f := v.Float64(); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprint(f)
		}
		return v.Float64()
	case slog.KindAny:
		x := v.Any()
		if err, ok := x.(error); ok {
			return err.Error()
		}
		// A type that says how it is encoded is taken at its word; other
		// Stringers (pipeline.Day among them) read best by their String.
		_, isJSON := x.(json.Marshaler)
		_, isText := x.(encoding.TextMarshaler)
		if s, ok := x.(fmt.Stringer); ok && !isJSON && !isText {
			return s.String()
		}
		if _, err := json.Marshal(x); err != nil {
			return fmt.Sprint(x)
		}
		return x
	}
	return v.Any()
}
