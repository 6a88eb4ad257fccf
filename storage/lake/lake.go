// Package lake keeps Parquet snapshots of the pipeline's datasets in the
// object store, laid out in hive partitions:
//
//	lake/<dataset>/delivery_day=YYYY-MM-DD/run=<run id>/part-00000.parquet
//
// and publishes them through a table catalog (Catalog; storage/catalog keeps
// them as Apache Iceberg tables), which is the one source of truth for which
// run of a day is current. A run's parts are streamed into temporary keys
// under lake/_tmp/ while the run produces its record batches, moved to their
// final keys by Writer.Stage, and only then published by the catalog's
// commit, which replaces the day's files in the dataset's table: in a commit
// of its own (Writer.Commit), or at the run's one commit point together with
// its other results (storage/commit). A process that dies anywhere before
// that commit leaves the previous run current, and readers
// only ever follow the catalog, never a listing. Sweep expires the catalog's
// old snapshots and removes the files that no remaining snapshot references.
//
// Files are written with arrow-go's Parquet writer and pqarrow's column
// encoding (zstd by default, row groups of about a million rows, the Arrow
// schema stored in the file so that dictionary columns read back as
// dictionaries, timestamps adjusted to UTC). A row group's columns are
// encoded in parallel while the caller gathers the next one, so memory stays
// bounded by two row groups whatever the size of the dataset.
package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Bucket is the part of the object store that the lake needs
// (storage/objstore implements it). Get's reader is used for random access
// when it implements io.ReaderAt, as the directory store's files and the S3
// store's objects do; otherwise Read spools the object to a local file.
type Bucket interface {
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	Stat(ctx context.Context, key string) (pipeline.ObjectInfo, error)
	List(ctx context.Context, prefix, startAfter string, limit int) ([]pipeline.ObjectInfo, error)
	Move(ctx context.Context, src, dst string) error
	Delete(ctx context.Context, key string) error
}

// Options tune a Lake. Zero values take the defaults noted.
type Options struct {
	// Compression of the column chunks: "zstd" (default) or "snappy".
	Compression string
	// RowGroupRows is the number of rows per row group (default 1<<20).
	// Batches are sliced and gathered so that every row group but a part's
	// last has exactly this many rows, whatever batch sizes callers write.
	RowGroupRows int64
	// PartRows starts a new part file after this many rows (default 0: one
	// part per snapshot).
	PartRows int64
	// Alloc allocates the Arrow and Parquet buffers of writers and readers
	// (default memory.DefaultAllocator).
	Alloc memory.Allocator
	// Now is the clock of Snapshot.WrittenAt and of Sweep (default time.Now).
	Now func() time.Time
	// SpoolDir holds temporary copies of objects that Read cannot access at
	// random offsets (default os.TempDir()); each copy is removed after the
	// file is read.
	SpoolDir string
	// Catalog publishes runs and names the current one (required:
	// storage/catalog).
	Catalog Catalog
}

// Catalog is the table catalog that the lake publishes its runs in
// (storage/catalog implements it with Apache Iceberg tables). It alone says
// which run of a dataset's day is current.
type Catalog interface {
	// Publish makes the publication's files the day's partition of the
	// dataset's table in one commit. It fails with pipeline.Conflict when
	// the day already has this run or a later one.
	Publish(ctx context.Context, p Publication) error
	// Prepare creates the dataset's table with the schema when it does not
	// exist yet; a later commit of the run's files finds it.
	Prepare(ctx context.Context, dataset string, schema *arrow.Schema) error
	// Current returns the day's current snapshot, or a pipeline.NotFound
	// error when none was published.
	Current(ctx context.Context, dataset string, day pipeline.Day) (Snapshot, error)
	// Expire expires the catalog's snapshots older than olderThan, keeping
	// each table's current one, without deleting any file, and returns what
	// the tables still reference (Retained): the sweep deletes the rest.
	Expire(ctx context.Context, olderThan time.Duration) (Retained, error)
}

// Publication is a run's files, moved to their final keys and ready to be
// published.
type Publication struct {
	Dataset string
	Day     pipeline.Day
	RunID   int64
	Schema  *arrow.Schema // for the table's creation by the first publication
	Files   []FileInfo
	// WrittenAt is the lake's clock at the commit; Current returns it as
	// the snapshot's WrittenAt.
	WrittenAt time.Time
}

// Snapshot is the publication as the snapshot it becomes once committed.
func (p Publication) Snapshot() Snapshot {
	// The footers were the commit's; a snapshot lists its files as the
	// catalog does.
	s := Snapshot{Dataset: p.Dataset, Day: p.Day, RunID: p.RunID, Files: make([]FileInfo, len(p.Files)), WrittenAt: p.WrittenAt}
	for i, f := range p.Files {
		s.Files[i] = FileInfo{Key: f.Key, Rows: f.Rows, Bytes: f.Bytes}
		s.Rows += f.Rows
	}
	return s
}

// DefaultRowGroupRows is the row-group size when Options.RowGroupRows is 0:
// about a million rows, which measured smaller and faster than small groups
// for the 96-million-row forecast dataset.
const DefaultRowGroupRows = 1 << 20

// Lake reads and writes dataset snapshots in a bucket. It is safe for
// concurrent use; each Writer belongs to one goroutine.
type Lake struct {
	b    Bucket
	opts Options
}

// New returns a Lake on b. Invalid options (an unknown compression) are
// reported by Create, so that wiring code needs no error path.
func New(b Bucket, o Options) *Lake {
	if o.Compression == "" {
		o.Compression = "zstd"
	}
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = DefaultRowGroupRows
	}
	if o.PartRows < 0 {
		o.PartRows = 0
	}
	if o.Alloc == nil {
		o.Alloc = memory.DefaultAllocator
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SpoolDir == "" {
		o.SpoolDir = os.TempDir()
	}
	return &Lake{b: b, opts: o}
}

// FileInfo is one Parquet file of a snapshot.
type FileInfo struct {
	Key   string `json:"key"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
	// Footer is the Parquet footer at the file's end (the file metadata,
	// its length and "PAR1") as the Writer wrote it, so that the catalog
	// registers a new file from its row counts and column statistics
	// without reading them back from the bucket; nil where unknown (the
	// catalog then reads the footer). It is not part of the JSON form.
	Footer []byte `json:"-"`
}

// Snapshot is one complete, published run of a dataset for a delivery day.
// It is also the content of the _latest pointers that the lake wrote before
// it had a catalog (ImportPointers).
type Snapshot struct {
	Dataset   string       `json:"dataset"`
	Day       pipeline.Day `json:"delivery_day"`
	RunID     int64        `json:"run_id"`
	Files     []FileInfo   `json:"files"`
	Rows      int64        `json:"rows"`
	WrittenAt time.Time    `json:"written_at"`
}

// Key layout. Everything lives under one root so that Sweep can list it.
const (
	root       = "lake/"
	tmpRoot    = root + "_tmp/"
	pointerSeg = "_latest"
)

// datasetName keeps dataset names to one plain key segment that cannot clash
// with the temporary area (_tmp) or need quoting in SQL.
var datasetName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

func dayPrefix(dataset string, day pipeline.Day) string {
	return root + dataset + "/delivery_day=" + day.String() + "/"
}

func runPrefix(dataset string, day pipeline.Day, runID int64) string {
	return dayPrefix(dataset, day) + "run=" + strconv.FormatInt(runID, 10) + "/"
}

func tmpRunPrefix(dataset string, day pipeline.Day, runID int64) string {
	return tmpRoot + dataset + "/" + day.String() + "/run=" + strconv.FormatInt(runID, 10) + "/"
}

func partName(i int) string { return fmt.Sprintf("part-%05d.parquet", i) }

func checkTarget(dataset string, day pipeline.Day) error {
	if !datasetName.MatchString(dataset) {
		return pipeline.Errorf(pipeline.Invalid, "lake dataset %q: want a lower-case name of letters, digits and _", dataset)
	}
	if day.IsZero() {
		return pipeline.Errorf(pipeline.Invalid, "lake dataset %s: no delivery day", dataset)
	}
	return nil
}

// catalog returns the lake's catalog, or an error that says it is missing.
func (l *Lake) catalog() (Catalog, error) {
	if l.opts.Catalog == nil {
		return nil, errors.New("lake: no catalog configured (Options.Catalog)")
	}
	return l.opts.Catalog, nil
}

func (l *Lake) codec() (compress.Compression, error) {
	switch l.opts.Compression {
	case "zstd":
		return compress.Codecs.Zstd, nil
	case "snappy":
		return compress.Codecs.Snappy, nil
	}
	return 0, pipeline.Errorf(pipeline.Invalid, "lake compression %q: want zstd or snappy", l.opts.Compression)
}

// maxPointerBytes bounds what ImportPointers reads of a pointer: a
// snapshot of thousands of parts is a few hundred kilobytes.
const maxPointerBytes = 4 << 20

// Latest returns the day's current snapshot of the dataset as the catalog
// has it, or a pipeline.NotFound error when none was published.
func (l *Lake) Latest(ctx context.Context, dataset string, day pipeline.Day) (Snapshot, error) {
	if err := checkTarget(dataset, day); err != nil {
		return Snapshot{}, err
	}
	cat, err := l.catalog()
	if err != nil {
		return Snapshot{}, err
	}
	return cat.Current(ctx, dataset, day)
}

// readPointer reads a _latest pointer that the lake wrote before it had a
// catalog.
func (l *Lake) readPointer(ctx context.Context, key string) (Snapshot, error) {
	rc, err := l.b.Get(ctx, key)
	if err != nil {
		return Snapshot{}, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxPointerBytes+1))
	if err != nil {
		return Snapshot{}, err
	}
	var s Snapshot
	if len(b) > maxPointerBytes {
		return Snapshot{}, fmt.Errorf("pointer %s is longer than %d bytes", key, maxPointerBytes)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return Snapshot{}, fmt.Errorf("corrupt pointer %s: %w", key, err)
	}
	if s.RunID <= 0 || len(s.Files) == 0 {
		return Snapshot{}, fmt.Errorf("corrupt pointer %s: run %d with %d files", key, s.RunID, len(s.Files))
	}
	return s, nil
}

// WriteAll writes recs as one snapshot and publishes it: the convenience for
// small datasets that are computed in one go.
func WriteAll(ctx context.Context, l *Lake, dataset string, day pipeline.Day, runID int64, schema *arrow.Schema, recs ...arrow.RecordBatch) (Snapshot, error) {
	w, err := l.Create(ctx, dataset, day, runID, schema)
	if err != nil {
		return Snapshot{}, err
	}
	defer w.Abort()
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			return Snapshot{}, err
		}
	}
	return w.Commit(ctx)
}
