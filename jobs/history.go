package jobs

import (
	"context"
	"errors"
	"sync"

	"github.com/schedbridge/schedbridge/pipeline"
)

// history streams a portfolio's metered entries on the history days in malo
// order, so that the forecast stage can merge them with the locations (also
// in malo order) and hold one location's history at a time. The database read
// runs in its own goroutine and hands entries over a small channel.
type history struct {
	ch      chan pipeline.MeteredEntry
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	readErr error
	pending *pipeline.MeteredEntry
	done    bool
}

// historyReader is the part of the store that history needs.
type historyReader interface {
	MeteredHistory(ctx context.Context, portfolio string, days []pipeline.Day, fn func(pipeline.MeteredEntry) error) error
}

func startHistory(ctx context.Context, store historyReader, portfolio string, days []pipeline.Day) *history {
	ctx, cancel := context.WithCancel(ctx)
	h := &history{ch: make(chan pipeline.MeteredEntry, 4096), cancel: cancel}
	if len(days) == 0 {
		close(h.ch)
		return h
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer close(h.ch)
		h.readErr = store.MeteredHistory(ctx, portfolio, days, func(e pipeline.MeteredEntry) error {
			select {
			case h.ch <- e:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return h
}

// next returns the next entry, or false at the end of the stream.
func (h *history) next() (pipeline.MeteredEntry, bool) {
	if h.pending != nil {
		e := *h.pending
		h.pending = nil
		return e, true
	}
	if h.done {
		return pipeline.MeteredEntry{}, false
	}
	e, ok := <-h.ch
	if !ok {
		h.done = true
	}
	return e, ok
}

// take returns the entries of malo. Calls must come in ascending malo
// order; entries of malos that nobody asks for are skipped.
func (h *history) take(malo string) ([]pipeline.MeteredEntry, error) {
	var out []pipeline.MeteredEntry
	for {
		e, ok := h.next()
		if !ok {
			return out, h.err()
		}
		switch {
		case e.Malo < malo:
			continue
		case e.Malo == malo:
			out = append(out, e)
		default:
			h.pending = &e
			return out, nil
		}
	}
}

// err is the reader's error once the stream has ended.
func (h *history) err() error {
	if !h.done {
		return nil
	}
	h.wg.Wait()
	if errors.Is(h.readErr, context.Canceled) {
		return nil
	}
	return h.readErr
}

// stop ends the reader and waits for it.
func (h *history) stop() {
	h.cancel()
	for range h.ch {
	}
	h.wg.Wait()
}
