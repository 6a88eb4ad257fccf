package lake

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Writer streams one run's snapshot of a dataset into the lake. Create it
// with Lake.Create, Write the batches as they are produced, then Commit; defer
// Abort so that a failure releases everything. A Writer is not safe for
// concurrent use.
type Writer struct {
	l       *Lake
	ctx     context.Context // of the part uploads
	dataset string
	day     pipeline.Day
	runID   int64
	job     string // "" for a writer of the whole run
	schema  *arrow.Schema
	enc     *encoding
	// mem allocates the encoding's buffers and the unified batches, and
	// recycles them from one row group to the next (see recycler).
	mem *recycler

	// pending holds the slices of the caller's batches that make up the
	// row group being gathered; they are retained until it is written.
	pending     []arrow.RecordBatch
	pendingRows int64

	cur *part // the part being streamed, nil between parts
	// encoding is the result of the row group being encoded in the
	// background, nil when none is.
	encoding chan error
	parts    []FileInfo // finished parts, at their temporary keys
	rows     int64      // rows in finished parts

	err   error // sticky: the writer failed and can only be aborted
	state writerState
}

type writerState int

const (
	writerOpen writerState = iota
	writerCommitted
	writerReleased
)

// part is one Parquet file being streamed into the bucket: the Parquet writer
// writes into a pipe whose other end is the body of a Put of unknown size.
type part struct {
	key  string
	fw   *file.Writer
	sink *sink
	rows int64
	done chan error // the Put's result
}

// sink counts the bytes that reach the pipe. It never fails a write: when
// the upload breaks it keeps the error and swallows the rest, and so does it
// after Abort, so that the Parquet writer stays consistent, can still be
// closed and frees its buffers (it leaks them when its sink fails). The
// Writer checks err after every row group.
type sink struct {
	pw      *io.PipeWriter
	n       int64
	err     error
	discard bool
	// tail, when set, keeps a copy of what is written: closePart sets it
	// for the Parquet writer's Close, which writes the footer.
	tail *bytes.Buffer
}

func (s *sink) Write(p []byte) (int, error) {
	if s.discard {
		return len(p), nil
	}
	if s.tail != nil {
		s.tail.Write(p)
	}
	n, err := s.pw.Write(p)
	s.n += int64(n)
	if err != nil {
		s.err, s.discard = err, true
	}
	return len(p), nil
}

// zstdLevel is the zstd level of the lake's files (see Create).
const zstdLevel = 1

var (
	errAborted   = errors.New("lake writer aborted")
	errPutReturn = errors.New("the bucket finished the upload before the end of the data")
)

// Create starts a snapshot of dataset for day, written by run runID, with
// record batches of the given schema. The uploads of the parts run under ctx.
// A run id that is not newer than the day's published run is a
// pipeline.Conflict: a published snapshot is never replaced by the same run
// or an older one.
func (l *Lake) Create(ctx context.Context, dataset string, day pipeline.Day, runID int64, schema *arrow.Schema, opts ...CreateOption) (*Writer, error) {
	if err := checkTarget(dataset, day); err != nil {
		return nil, err
	}
	var co createOptions
	for _, o := range opts {
		o(&co)
	}
	if co.job != "" && !jobName.MatchString(co.job) {
		return nil, pipeline.Errorf(pipeline.Invalid, "lake %s %s: job name %q: want letters, digits, '.', '_' and '-'", dataset, day, co.job)
	}
	if runID <= 0 {
		return nil, pipeline.Errorf(pipeline.Invalid, "lake %s %s: run id %d is not positive", dataset, day, runID)
	}
	if schema == nil || schema.NumFields() == 0 {
		return nil, pipeline.Errorf(pipeline.Invalid, "lake %s %s: no schema", dataset, day)
	}
	codec, err := l.codec()
	if err != nil {
		return nil, err
	}
	if err := l.checkNewer(ctx, dataset, day, runID); err != nil {
		return nil, err
	}
	mem := newRecycler(l.opts.Alloc)
	props := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(l.opts.RowGroupRows),
		parquet.WithAllocator(mem),
		parquet.WithCreatedBy("schedbridge lake (arrow-go pqarrow)"),
	}
	// Dictionary encoding only for strings. Measured values rarely repeat:
	// a dictionary for them would be built until it overflows the
	// dictionary page limit and then thrown away. Integers, dates and
	// timestamps (qh_index, delivery_day, ts_utc of forecast_malo) repeat a
	// short pattern that zstd compresses as well as a dictionary does, but
	// the dictionary encoder hashes every value: plain encoding cut the
	// writer's CPU time from about 234 to 154 ns per forecast_malo row at the
	// same file size (3.54 B/row).
	for _, f := range schema.Fields() {
		if f.Type.ID() != arrow.DICTIONARY && f.Type.ID() != arrow.STRING && f.Type.ID() != arrow.LARGE_STRING {
			props = append(props, parquet.WithDictionaryFor(f.Name, false))
		}
	}
	if l.opts.Compression == "zstd" {
		// zstd's fastest level (klauspost's SpeedFastest) saved another
		// 10-20% of the writer's CPU time over the default level, with
		// files 0.1% larger.
		props = append(props, parquet.WithCompressionLevel(zstdLevel))
	}
	// The stored Arrow schema makes pqarrow read dictionary columns back as
	// dictionaries and keeps the timestamps' zone.
	enc, err := newEncoding(schema, parquet.NewWriterProperties(props...),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
	if err != nil {
		return nil, err
	}
	return &Writer{l: l, ctx: ctx, dataset: dataset, day: day, runID: runID, job: co.job, schema: schema, enc: enc, mem: mem}, nil
}

// CreateOption tunes a Writer.
type CreateOption func(*createOptions)

type createOptions struct{ job string }

// WithJob makes the writer one job's share of a run whose files come from
// several jobs (one per portfolio, say): its parts go to the job's folder in
// the run's (run=<id>/job=<job>/part-N.parquet), so that the jobs' parts
// neither collide nor clear each other, and the run's commit publishes the
// parts of all its jobs together.
func WithJob(job string) CreateOption { return func(o *createOptions) { o.job = job } }

// jobName keeps job names to one plain key segment.
var jobName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// jobSegment is the key segment of a job's parts within its run's folder.
func jobSegment(job string) string {
	if job == "" {
		return ""
	}
	return "job=" + job + "/"
}

// checkNewer fails with Conflict when the day's published run is runID or a
// later one.
func (l *Lake) checkNewer(ctx context.Context, dataset string, day pipeline.Day, runID int64) error {
	s, err := l.Latest(ctx, dataset, day)
	switch {
	case pipeline.KindOf(err) == pipeline.NotFound:
		return nil
	case err != nil:
		return err
	case s.RunID >= runID:
		return pipeline.Errorf(pipeline.Conflict, "lake %s %s: run %d is already published, run %d cannot replace it", dataset, day, s.RunID, runID)
	}
	return nil
}

func (w *Writer) String() string {
	return fmt.Sprintf("lake %s %s run %d", w.dataset, w.day, w.runID)
}

// Write adds the rows of rec to the snapshot. It does not take ownership:
// the caller releases rec (Write retains what it still needs).
func (w *Writer) Write(rec arrow.RecordBatch) error {
	if err := w.usable(); err != nil {
		return err
	}
	if !rec.Schema().Equal(w.schema) {
		return pipeline.Errorf(pipeline.Invalid, "%s: record schema %s does not match the snapshot's %s", w, rec.Schema(), w.schema)
	}
	rgRows, partRows := w.l.opts.RowGroupRows, w.l.opts.PartRows
	for off, n := int64(0), rec.NumRows(); off < n; {
		room := rgRows - w.pendingRows
		if partRows > 0 {
			room = min(room, partRows-w.curRows()-w.pendingRows)
		}
		take := min(room, n-off)
		var s arrow.RecordBatch
		if off == 0 && take == n {
			rec.Retain()
			s = rec
		} else {
			s = rec.NewSlice(off, off+take)
		}
		w.pending = append(w.pending, s)
		w.pendingRows += take
		off += take
		if w.pendingRows == rgRows || (partRows > 0 && w.curRows()+w.pendingRows == partRows) {
			if err := w.flushGroup(); err != nil {
				return w.fail(err)
			}
		}
		if partRows > 0 && w.curRows() == partRows {
			if err := w.closePart(); err != nil {
				return w.fail(err)
			}
		}
	}
	return nil
}

func (w *Writer) usable() error {
	switch {
	case w.err != nil:
		return w.err
	case w.state == writerCommitted:
		return pipeline.Errorf(pipeline.Invalid, "%s: already committed", w)
	case w.state == writerReleased:
		return pipeline.Errorf(pipeline.Invalid, "%s: aborted", w)
	}
	return nil
}

// fail makes err sticky: after a failed upload the part is incomplete, so the
// writer can only be aborted.
func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = fmt.Errorf("%s: %w", w, err)
	}
	return w.err
}

func (w *Writer) curRows() int64 {
	if w.cur == nil {
		return 0
	}
	return w.cur.rows
}

// flushGroup hands the gathered batches to a goroutine that encodes them as
// one row group of the current part (its columns in parallel, see
// encoding.writeGroup) and streams it into the part, and returns while it
// does, so that the caller produces the next row group meanwhile. It first
// waits for the previous row group, so at most two row groups are in memory:
// the one being encoded and the one being gathered. A dictionary column is
// dictionary-encoded only while every batch of a row group brings the same
// dictionary; at the first different one the column chunk falls back to
// plain encoding (the tests check for plain pages). So the batches'
// dictionaries are merged first (see unifyDictionaries).
func (w *Writer) flushGroup() error {
	if w.pendingRows == 0 {
		return nil
	}
	if err := w.waitGroup(); err != nil {
		return err
	}
	if err := w.openPart(); err != nil {
		return err
	}
	// The goroutine owns the gathered slices from here on.
	pending := slices.Clone(w.pending)
	w.cur.rows += w.pendingRows
	w.pending = w.pending[:0]
	w.pendingRows = 0
	p, enc, mem, done := w.cur, w.enc, w.mem, make(chan error, 1)
	w.encoding = done
	go func() {
		batches, err := unifyDictionaries(mem, pending)
		releaseAll(pending)
		if err == nil {
			err = enc.writeGroup(p.fw, batches)
			releaseAll(batches)
		}
		if err == nil {
			err = p.uploadErr()
		}
		done <- err
	}()
	return nil
}

// waitGroup waits for the row group being encoded, if any, and returns its
// error.
func (w *Writer) waitGroup() error {
	if w.encoding == nil {
		return nil
	}
	err := <-w.encoding
	w.encoding = nil
	return err
}

// uploadErr reports a broken upload; the pipe carries the bucket's error.
func (p *part) uploadErr() error {
	if p.sink.err != nil {
		return fmt.Errorf("upload %s: %w", p.key, p.sink.err)
	}
	return nil
}

func (w *Writer) releasePending() {
	releaseAll(w.pending)
	w.pending = w.pending[:0]
	w.pendingRows = 0
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// openPart starts streaming the next part, if none is open.
func (w *Writer) openPart() error {
	if w.cur != nil {
		return nil
	}
	key := tmpRunPrefix(w.dataset, w.day, w.runID) + jobSegment(w.job) + partName(len(w.parts))
	pr, pw := io.Pipe()
	p := &part{key: key, sink: &sink{pw: pw}, done: make(chan error, 1)}
	b := w.l.b
	ctx := w.ctx
	go func() {
		err := b.Put(ctx, key, pr, -1)
		if err != nil {
			pr.CloseWithError(err)
		} else {
			pr.CloseWithError(errPutReturn)
		}
		p.done <- err
	}()
	fw, err := w.enc.newFile(p.sink)
	if err != nil {
		pw.CloseWithError(err)
		<-p.done
		return fmt.Errorf("parquet writer: %w", err)
	}
	p.fw = fw
	w.cur = p
	return nil
}

// closePart finishes the current part: the footer goes into the pipe, the
// pipe closes, and the Put completes the object at its temporary key.
func (w *Writer) closePart() error {
	p := w.cur
	if p == nil {
		return nil
	}
	if err := w.waitGroup(); err != nil {
		return err
	}
	// Every row group is flushed by now (encoding.writeGroup closes its
	// own), so Close writes the footer only (and the page indexes, were
	// they on): kept, it lets the catalog register the file without
	// reading it back.
	p.sink.tail = new(bytes.Buffer)
	if err := p.fw.Close(); err != nil {
		return fmt.Errorf("finish %s: %w", p.key, err)
	}
	footer := footerOf(p.sink.tail.Bytes())
	p.sink.tail = nil
	if err := p.uploadErr(); err != nil {
		return err
	}
	p.sink.pw.Close()
	err := <-p.done
	w.cur = nil
	if err != nil {
		return fmt.Errorf("upload %s: %w", p.key, err)
	}
	w.parts = append(w.parts, FileInfo{Key: p.key, Rows: p.rows, Bytes: p.sink.n, Footer: footer})
	w.rows += p.rows
	return nil
}

// Stage finishes the last part and moves the parts from their temporary keys
// to the run's folder (the job's, for a writer of one job of the run), and
// returns them as a publication that the catalog can commit. It publishes
// nothing: the run's commit point does, with the run's other results. A
// snapshot without rows still gets one (empty) part, so that its schema is
// readable. If the same or a newer run was published meanwhile, Stage fails
// with pipeline.Conflict and removes its parts.
func (w *Writer) Stage(ctx context.Context) (Publication, error) {
	if err := w.usable(); err != nil {
		return Publication{}, err
	}
	if err := w.flushGroup(); err != nil {
		return Publication{}, w.fail(err)
	}
	if w.cur == nil && len(w.parts) == 0 {
		if err := w.openPart(); err != nil {
			return Publication{}, w.fail(err)
		}
	}
	if err := w.closePart(); err != nil {
		return Publication{}, w.fail(err)
	}
	w.mem.close()
	if err := w.l.checkNewer(ctx, w.dataset, w.day, w.runID); err != nil {
		w.removeTmp(ctx)
		return Publication{}, w.fail(err)
	}
	cat, err := w.l.catalog()
	if err != nil {
		return Publication{}, w.fail(err)
	}
	// The commit knows the parts by their keys only; the table must exist
	// with the dataset's schema before it.
	if err := cat.Prepare(ctx, w.dataset, w.schema); err != nil {
		return Publication{}, w.fail(fmt.Errorf("prepare the table: %w", err))
	}
	// A crashed attempt of this run (or job) may have moved parts here
	// without publishing them; they must not linger beside this attempt's
	// files where a glob over the folder would find them.
	final := runPrefix(w.dataset, w.day, w.runID) + jobSegment(w.job)
	if _, err := w.l.deletePrefix(ctx, final); err != nil {
		return Publication{}, w.fail(fmt.Errorf("clear %s: %w", final, err))
	}
	files := make([]FileInfo, len(w.parts))
	for i, p := range w.parts {
		files[i] = FileInfo{Key: final + partName(i), Rows: p.Rows, Bytes: p.Bytes, Footer: p.Footer}
		if err := w.l.b.Move(ctx, p.Key, files[i].Key); err != nil {
			return Publication{}, w.fail(fmt.Errorf("move %s: %w", p.Key, err))
		}
	}
	w.state = writerCommitted
	return Publication{Dataset: w.dataset, Day: w.day, RunID: w.runID, Schema: w.schema, Files: files,
		WrittenAt: w.l.opts.Now().UTC()}, nil
}

// Commit stages the run's parts and publishes them in a catalog commit of
// their own, for writers whose run has no other results to commit with them
// (the import of old runs, tools and tests). A run that lost to a newer one
// leaves its moved files to Sweep, which removes what no snapshot references.
func (w *Writer) Commit(ctx context.Context) (Snapshot, error) {
	pub, err := w.Stage(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	cat, err := w.l.catalog()
	if err != nil {
		return Snapshot{}, err
	}
	if err := cat.Publish(ctx, pub); err != nil {
		return Snapshot{}, fmt.Errorf("publish: %w", err)
	}
	return pub.Snapshot(), nil
}

// removeTmp deletes the finished parts' temporary objects after a conflict;
// what it cannot delete, Sweep does later.
func (w *Writer) removeTmp(ctx context.Context) {
	for _, p := range w.parts {
		if err := w.l.b.Delete(ctx, p.Key); err != nil {
			slog.WarnContext(ctx, "lake: temporary part not removed", "key", p.Key, "err", err)
		}
	}
}

// Abort releases the writer's buffers and cancels the upload in progress. It
// leaves finished parts at their temporary keys, for Sweep, and never touches
// the published snapshot. It is a no-op after a successful Commit and safe to
// call more than once, so callers defer it right after Create.
func (w *Writer) Abort() {
	if w.state != writerOpen {
		return
	}
	w.state = writerReleased
	w.releasePending()
	// The row group being encoded writes into the part's sink; it must be
	// done before the sink is switched to discarding.
	_ = w.waitGroup()
	if p := w.cur; p != nil {
		w.cur = nil
		// Let the Parquet writer flush into nothing so that it frees its
		// buffers, then fail the upload so that no object appears.
		p.sink.discard = true
		_ = p.fw.Close()
		p.sink.pw.CloseWithError(errAborted)
		<-p.done
	}
	w.mem.close()
}

// footerOf returns the Parquet footer at the end of written: the file
// metadata, its 4-byte length and the magic "PAR1", or nil when written
// does not end with a whole plain footer (an encrypted one ends in "PARE").
func footerOf(written []byte) []byte {
	const trailer = 8
	if len(written) < trailer || string(written[len(written)-4:]) != "PAR1" {
		return nil
	}
	size := int64(binary.LittleEndian.Uint32(written[len(written)-trailer:]))
	if size+trailer > int64(len(written)) {
		return nil
	}
	return bytes.Clone(written[int64(len(written))-size-trailer:])
}
