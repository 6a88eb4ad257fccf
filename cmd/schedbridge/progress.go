package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// What a command tells a person while it works takes two forms. On a
// terminal, a progress bar redrawn in place and plain sentences, with log
// records only from warnings up and as text, each written above the bar
// (the info records would repeat what the bars and sentences say); anywhere
// else (cron, systemd, a container's log) log records only, so that a log
// file in the JSON format stays one JSON object per line: a redrawn bar's
// carriage returns and a bare sentence would break every line-wise reader.
// serve is a service whatever its stderr: its records are as configured.

// note reports a sentence for a person: a plain line on a terminal, else an
// info record with the sentence as its message and attrs beside it.
func (a *app) note(sentence string, attrs ...any) {
	if a.terminal {
		fmt.Fprintln(a.tw(), sentence)
		return
	}
	a.log.Info(sentence, attrs...)
}

// warn reports something a person should know although the command goes
// on: a line starting "warning:" on a terminal, else a warning record.
func (a *app) warn(sentence string, attrs ...any) {
	if a.terminal {
		fmt.Fprintln(a.tw(), "warning: "+sentence)
		return
	}
	a.log.Warn(sentence, attrs...)
}

// tw is the terminal's writer, made on first use.
func (a *app) tw() *termWriter {
	if a.term == nil {
		a.term = &termWriter{w: a.stderr}
	}
	return a.term
}

// termWriter is stderr when it is a terminal. Bars, sentences and log
// records all go through it, so that a line written while a bar is drawn
// never lands behind the bar: the bar's line is cleared first, the line
// written, and the bar drawn again below it.
type termWriter struct {
	mu  sync.Mutex
	w   io.Writer
	bar string // the bar drawn on the last line, "" when none is open
}

// clearLine is the carriage return and the ANSI sequence "erase to the end
// of the line", which every terminal emulator in use understands.
const clearLine = "\r\x1b[K"

// Write writes whole lines above the bar that is open.
func (t *termWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bar == "" {
		return t.w.Write(b)
	}
	if _, err := io.WriteString(t.w, clearLine); err != nil {
		return 0, err
	}
	n, err := t.w.Write(b)
	if err == nil && bytes.HasSuffix(b, []byte("\n")) {
		_, err = io.WriteString(t.w, "\r"+t.bar)
	}
	return n, err
}

// draw redraws the bar in place.
func (t *termWriter) draw(bar string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	io.WriteString(t.w, "\r"+bar)
	t.bar = bar
}

// closeBar ends the bar's line, leaving its last state on the screen.
func (t *termWriter) closeBar() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bar != "" {
		io.WriteString(t.w, "\n")
		t.bar = ""
	}
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
	bar   *termWriter // the terminal, or nil for log records
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
		p.bar = a.tw()
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
		p.bar.closeBar()
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
		p.bar.draw(fmt.Sprintf("%s [%s] %5.1f%% %s/%s %s/s", p.task, bar, 100*frac,
			mib(p.done), mib(p.total), mib(int64(float64(p.done)/max(secs, 1e-3)))))
	} else {
		p.bar.draw(fmt.Sprintf("%-14s [%s] %5.1f%% %d/%d", p.task, bar, 100*frac, p.done, p.total))
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
