package jobs

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// lineStore keeps the lines it is given.
type lineStore struct {
	mu    sync.Mutex
	lines []pipeline.RunLogLine
}

func (s *lineStore) AppendRunLog(_ context.Context, l pipeline.RunLogLine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, l)
	return nil
}

// TestRunLogAttrs: a line's attributes are one JSON object as slog's JSON
// handler would write them (bound attributes and groups included), with
// values JSON cannot take written as text; lines below info level and lines
// of no run are not recorded.
func TestRunLogAttrs(t *testing.T) {
	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	day := pipeline.NewDay(2026, time.November, 24)
	for _, c := range []struct {
		name  string
		log   func(ctx context.Context, l *slog.Logger)
		attrs string // "" when the line has none; "-" when nothing is recorded
	}{
		{"plain values", func(ctx context.Context, l *slog.Logger) {
			l.InfoContext(ctx, "m", "stage", pipeline.StageForecast, "n", 3, "ok", true, "x", 1.5)
		}, `{"n":3,"ok":true,"stage":"forecast","x":1.5}`},
		{"no attributes", func(ctx context.Context, l *slog.Logger) { l.InfoContext(ctx, "m") }, ``},
		{"errors, durations, times, days", func(ctx context.Context, l *slog.Logger) {
			l.ErrorContext(ctx, "m", "err", errors.New("boom"), "wait", 30*time.Second, "at", at.In(pipeline.Berlin), "day", day)
		}, `{"at":"2026-11-23T09:00:00Z","day":"2026-11-24","err":"boom","wait":"30s"}`},
		{"values JSON cannot take", func(ctx context.Context, l *slog.Logger) {
			l.WarnContext(ctx, "m", "nan", math.NaN(), "inf", math.Inf(-1), "c", complex(1, 2), "m", map[struct{}]int{{}: 1})
		}, `{"c":"(1+2i)","inf":"-Inf","m":"map[{}:1]","nan":"NaN"}`},
		{"bound attributes and groups", func(ctx context.Context, l *slog.Logger) {
			l.With("run", 7).WithGroup("g").With("a", 1).InfoContext(ctx, "m", "b", 2, slog.Group("h", "c", 3), slog.Group("", "d", 4))
		}, `{"g":{"a":1,"b":2,"d":4,"h":{"c":3}},"run":7}`},
		{"empty group", func(ctx context.Context, l *slog.Logger) { l.InfoContext(ctx, "m", slog.Group("e")) }, ``},
		{"debug", func(ctx context.Context, l *slog.Logger) { l.DebugContext(ctx, "m", "a", 1) }, `-`},
		{"no run", func(_ context.Context, l *slog.Logger) { l.InfoContext(context.Background(), "m") }, `-`},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := &lineStore{}
			h := &runLogHandler{next: slog.DiscardHandler,
				rec: &runLogRecorder{store: store, now: func() time.Time { return at }, log: slog.New(slog.DiscardHandler)}}
			c.log(withRunLog(context.Background(), 42), slog.New(h))
			if c.attrs == "-" {
				if len(store.lines) != 0 {
					t.Errorf("recorded %+v", store.lines)
				}
				return
			}
			if len(store.lines) != 1 {
				t.Fatalf("lines = %+v", store.lines)
			}
			l := store.lines[0]
			if l.RunID != 42 || l.Seq != 1 || !l.At.Equal(at) || l.Message != "m" || string(l.Attrs) != c.attrs {
				t.Errorf("line = %+v attrs %s, want attrs %s", l, l.Attrs, c.attrs)
			}
		})
	}
}
