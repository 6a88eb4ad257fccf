package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// What a command tells a person while it works takes two forms. On a
// terminal, a progress bar redrawn in place and plain sentences; anywhere
// else (cron, systemd, a container's log) log records only, so that a log
// file in the JSON format stays one JSON object per line: a redrawn bar's
// carriage returns and a bare sentence would break every line-wise reader.

// note reports a sentence for a person: a plain line on a terminal, else an
// info record with the sentence as its message and attrs beside it.
func (a *app) note(sentence string, attrs ...any) {
	if a.terminal {
		fmt.Fprintln(a.stderr, sentence)
		return
	}
	a.log.Info(sentence, attrs...)
}

const (
	// barEvery is how often a bar is redrawn at most.
	barEvery = 200 * time.Millisecond
	// logEvery is how often a progress record is written at most, so that
	// a million rows do not flood a log file.
	logEvery = 5 * time.Second
)

// progress shows how far a long task is: a bar on a terminal, a "progress"
// record every logEvery otherwise, and always the first and the last state
// of each task.
type progress struct {
	mu    sync.Mutex
	bar   io.Writer // the terminal, or nil for log records
	log   *slog.Logger
	now   func() time.Time
	key   string // the attribute naming the task: "stage", "task"
	bytes bool   // done and total count bytes

	task        string
	done, total int64
	start, last time.Time
	shown       bool // the current state is drawn or logged
	drawn       bool // a bar line is open
}

// newProgress makes the display of a command's progress; key names the
// task in log records, bytes says that the counts are bytes.
func (a *app) newProgress(key string, bytes bool) *progress {
	p := &progress{log: a.log, now: a.now, key: key, bytes: bytes}
	if a.terminal {
		p.bar = a.stderr
	}
	return p
}

// update reports that done of total are done in task. It may be called
// from several goroutines.
func (p *progress) update(task string, done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if task != p.task {
		p.closeTask()
		p.task, p.start, p.last = task, now, time.Time{}
	}
	p.done, p.total, p.shown = done, total, false
	every := logEvery
	if p.bar != nil {
		every = barEvery
	}
	if !p.last.IsZero() && now.Sub(p.last) < every && done < total {
		return
	}
	p.last = now
	p.show(now)
}

// finish shows the last state of the current task and ends the display.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeTask()
	p.task = ""
}

func (p *progress) closeTask() {
	if p.task == "" {
		return
	}
	if !p.shown {
		p.show(p.now())
	}
	if p.drawn {
		fmt.Fprintln(p.bar)
		p.drawn = false
	}
}

func (p *progress) show(now time.Time) {
	p.shown = true
	secs := now.Sub(p.start).Seconds()
	if p.bar == nil {
		attrs := []any{p.key, p.task, "done", p.done, "total", p.total, "elapsed_s", roundSeconds(secs)}
		if p.bytes {
			attrs = append(attrs, "unit", "bytes")
		}
		p.log.Info("progress", attrs...)
		return
	}
	const width = 30
	frac := 1.0
	if p.total > 0 {
		frac = min(1, float64(p.done)/float64(p.total))
	}
	filled := int(frac * width)
	bar := strings.Repeat("#", filled) + strings.Repeat(".", width-filled)
	if p.bytes {
		fmt.Fprintf(p.bar, "\r%s [%s] %5.1f%% %s/%s %s/s", p.task, bar, 100*frac,
			mib(p.done), mib(p.total), mib(int64(float64(p.done)/max(secs, 1e-3))))
	} else {
		fmt.Fprintf(p.bar, "\r%-14s [%s] %5.1f%% %d/%d", p.task, bar, 100*frac, p.done, p.total)
	}
	p.drawn = true
}

// byteProgress counts the bytes written through it into a progress.
type byteProgress struct {
	p       *progress
	task    string
	n, size int64
}

func (b *byteProgress) Write(buf []byte) (int, error) {
	b.n += int64(len(buf))
	b.p.update(b.task, b.n, b.size)
	return len(buf), nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// roundSeconds keeps a duration in seconds to milliseconds.
func roundSeconds(s float64) float64 { return float64(int64(s*1000+0.5)) / 1000 }
