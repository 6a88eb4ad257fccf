package bulk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/gzip"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/csvfile"
	"github.com/schedbridge/schedbridge/ingest/databody"
	"github.com/schedbridge/schedbridge/pipeline"
)

// Bulk files are what suppliers drop into the inbox bucket instead of calling
// the API: the same four kinds of data, validated with the API's rules and
// messages, but too large to hold in memory (a metered-data file may have a
// million days of 96 values). DecodeBulk reads them as a stream and hands the
// entries over in batches; docs/formats.md describes the formats. Trade sets
// come this way too, though the API takes them on the process side
// (PUT /v1/process/trades).

// BulkKind is the kind folder of an inbox file.
type BulkKind string

// The kinds of bulk files, one per data endpoint.
const (
	BulkMetered    BulkKind = "metered-data"
	BulkProfiles   BulkKind = "profiles"
	BulkMasterData BulkKind = "master-data"
	BulkForecasts  BulkKind = "forecasts"
	BulkTrades     BulkKind = "trades"
)

var bulkKinds = []BulkKind{BulkMetered, BulkProfiles, BulkMasterData, BulkForecasts, BulkTrades}

// ParseBulkKind accepts exactly one of the kind names.
func ParseBulkKind(s string) (BulkKind, error) {
	for _, k := range bulkKinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", pipeline.Errorf(pipeline.Invalid, "unknown file kind %q: want one of metered-data, profiles, master-data, forecasts, trades", s)
}

// BulkFormat is the encoding of a bulk file.
type BulkFormat string

// Formats of bulk files.
const (
	FormatJSON    BulkFormat = "json"
	FormatCSV     BulkFormat = "csv"
	FormatParquet BulkFormat = "parquet"
)

// acceptedExtensions lists, per kind, the file name endings DetectFormat accepts.
var acceptedExtensions = map[BulkKind]string{
	BulkMetered:    ".json, .json.gz, .csv, .csv.gz, .parquet",
	BulkProfiles:   ".json, .json.gz, .csv, .csv.gz",
	BulkMasterData: ".json, .json.gz, .csv, .csv.gz",
	BulkForecasts:  ".json, .json.gz, .csv, .csv.gz",
	BulkTrades:     ".json, .json.gz, .csv, .csv.gz",
}

// bulkAccepts tells whether a kind can be given in a format.
func bulkAccepts(kind BulkKind, f BulkFormat) bool {
	switch f {
	case FormatJSON, FormatCSV:
		return true
	case FormatParquet:
		return kind == BulkMetered
	}
	return false
}

// DetectFormat reads the format from the file name's extension: .json,
// .json.gz, .csv, .csv.gz or .parquet, in any case; gz reports gzip
// compression. An unknown extension, or a format the kind does not accept,
// is a pipeline.Invalid error that names what is accepted.
func DetectFormat(kind BulkKind, name string) (format BulkFormat, gz bool, err error) {
	if _, err := ParseBulkKind(string(kind)); err != nil {
		return "", false, err
	}
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, ".json.gz"):
		format, gz = FormatJSON, true
	case strings.HasSuffix(lower, ".json"):
		format = FormatJSON
	case strings.HasSuffix(lower, ".csv.gz"):
		format, gz = FormatCSV, true
	case strings.HasSuffix(lower, ".csv"):
		format = FormatCSV
	case strings.HasSuffix(lower, ".parquet"):
		format = FormatParquet
	default:
		return "", false, pipeline.Errorf(pipeline.Invalid,
			"file %q: unknown extension; accepted are .json, .json.gz, .csv and .csv.gz (all kinds), .parquet (metered-data); %s accepts %s",
			name, kind, acceptedExtensions[kind])
	}
	if !bulkAccepts(kind, format) {
		return "", false, pipeline.Errorf(pipeline.Invalid, "file %q: %s files cannot be %s; %s accepts %s",
			name, kind, strings.ToUpper(string(format)), kind, acceptedExtensions[kind])
	}
	return format, gz, nil
}

// BulkInput is one file to decode.
type BulkInput struct {
	Name string      // file name (for format detection and messages)
	Body io.Reader   // the (possibly gzip-compressed) content; the decoder decompresses when gz
	At   io.ReaderAt // required for Parquet (random access), with Size
	Size int64
}

// BulkOptions tune DecodeBulk; the zero value is usable.
type BulkOptions struct {
	Rules            ingest.Rules     // as for the API decoders
	BatchSize        int              // entries per emitted batch; 0 means 2000
	MaxProblems      int              // problems kept (all are counted); 0 means 10000
	MaxDocumentBytes int64            // master-data, forecast and trades files (JSON, CSV) are read whole up to this size; 0 means 64 MiB
	Alloc            memory.Allocator // Parquet buffers; nil: memory.DefaultAllocator
}

// Defaults and limits of bulk decoding.
const (
	defaultBatchSize        = 2000
	defaultMaxProblems      = 10000
	defaultMaxDocumentBytes = 64 << 20
	// maxEntryBytes bounds one JSON entry as csvfile bounds one CSV row.
	maxEntryBytes = csvfile.RowLimit
)

// Read buffer sizes; variables so that tests can make them tiny and so
// exercise the reads of more input in the middle of a value or row.
var (
	bulkBufferSize = csvfile.DefaultBufferSize // initial read buffer of a JSON or CSV file
	jsonWindow     = 64 << 10                  // bytes read ahead before a JSON value is parsed
)

// BulkBatch is what one emit call receives: exactly one field set according
// to the kind. The batch belongs to emit: the decoder does not reuse it.
type BulkBatch struct {
	Metered   []pipeline.MeteredEntry
	Profiles  []pipeline.ProfileEntry
	Locations []pipeline.Location // master-data: the whole document in one batch
	Forecast  *pipeline.Forecast  // forecasts: one forecast per file
	// Trades is the trade set of a trades file, one per file, without its
	// portfolio, which the inbox knows from the file's folder.
	Trades    *pipeline.TradeSet
	Canonical []byte // forecasts, trades: the canonical JSON (staged as the version body)
}

// BulkResult summarises a decoded file.
type BulkResult struct {
	Kind         BulkKind
	Format       BulkFormat
	Entries      int                  // entries (metered/profile days, locations, 1 for a forecast, trades)
	Values       int64                // quarter-hour values read
	InputHash    string               // equal to the API's InputHash for a body with the same content; "" when the file is invalid
	ValidateOnly bool                 // a JSON file with "validate_only": true
	Problems     []ingest.FileProblem // at most MaxProblems
	ProblemCount int                  // all problems found
}

// DecodeBulk decodes and validates a whole file. With emit == nil it only
// validates. When the file has any problem it returns the result AND a
// *ingest.FileError, and it calls emit for nothing after the first problem is known.
// I/O errors, emit's errors and ctx's error are returned wrapped (not
// FileError). The entries of a batch are emitted in file order; the input
// hash is only set for a valid file.
func DecodeBulk(ctx context.Context, kind BulkKind, in BulkInput, opt BulkOptions, emit func(BulkBatch) error) (BulkResult, error) {
	format, gz, err := DetectFormat(kind, in.Name)
	if err != nil {
		return BulkResult{Kind: kind}, err
	}
	if opt.BatchSize <= 0 {
		opt.BatchSize = defaultBatchSize
	}
	if opt.MaxProblems <= 0 {
		opt.MaxProblems = defaultMaxProblems
	}
	if opt.MaxDocumentBytes <= 0 {
		opt.MaxDocumentBytes = defaultMaxDocumentBytes
	}
	if opt.Alloc == nil {
		opt.Alloc = memory.DefaultAllocator
	}
	r := &bulkRun{
		ctx: ctx, kind: kind, format: format, gz: gz, name: in.Name, opt: opt, emit: emit,
		res:  BulkResult{Kind: kind, Format: format},
		days: databody.Intervals{},
	}
	// A hash abandoned before its sum (an error) still has its goroutine
	// stopped; an invalid file stops it in bulkRun.stop.
	defer func() { r.hash.stop() }()
	if kind == BulkMetered || kind == BulkProfiles {
		r.hash = newStreamHash("entries")
	}
	if err := ctx.Err(); err != nil {
		return r.res, err
	}
	if format == FormatParquet {
		err = r.parquetMetered(in)
	} else {
		err = r.decodeStream(in)
	}
	if err != nil {
		return r.res, err
	}
	return r.finish()
}

// decodeStream decodes the formats that are read front to back.
func (r *bulkRun) decodeStream(in BulkInput) error {
	if in.Body == nil {
		return fmt.Errorf("ingest: bulk file %q has no Body", in.Name)
	}
	r.src = &sourceReader{r: in.Body}
	var body io.Reader = r.src
	if r.gz {
		// klauspost's gzip decompresses about twice as fast as the standard
		// library's, and on its own goroutine it runs on another core than
		// the parsing.
		zr, err := gzip.NewReader(r.src)
		if err != nil {
			return r.readFailed(err)
		}
		defer zr.Close()
		ahead := newReadAhead(zr, 1<<20, 4)
		defer ahead.Close()
		body = ahead
	}
	switch {
	case r.format == FormatCSV && r.kind == BulkMasterData:
		return r.csvMasterData(body)
	case r.format == FormatCSV && r.kind == BulkForecasts:
		return r.csvForecast(body)
	case r.format == FormatCSV && r.kind == BulkTrades:
		return r.csvTrades(body)
	case r.format == FormatCSV:
		return r.csvEntries(body)
	case r.kind == BulkMetered || r.kind == BulkProfiles:
		return r.jsonEntries(body)
	default:
		return r.jsonDocument(body)
	}
}

// sourceReader remembers the errors of the file's own reader, which tells an
// I/O error from a gzip stream that is corrupt.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

// readFailed turns an error from reading the (decompressed) body into what
// DecodeBulk returns: a gzip error is a problem of the file, anything else an
// I/O error.
func (r *bulkRun) readFailed(err error) error {
	if r.src != nil && r.src.err != nil {
		return fmt.Errorf("read %s: %w", r.name, r.src.err)
	}
	if !r.gz {
		return fmt.Errorf("read %s: %w", r.name, err)
	}
	msg := err.Error()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "the compressed data ends early"
	}
	r.add(ingest.FileProblem{Type: ingest.ProblemGzip, Msg: "the file is not valid gzip data: " + msg})
	return nil
}

// readAhead reads from r on a goroutine, a few chunks ahead of its reader.
type readAhead struct {
	chunks chan chunk
	free   chan []byte
	done   chan struct{}
	cur    []byte // unread part of the chunk being read
	held   []byte // the chunk being read, returned to free when done
	err    error  // the error that ended the chunks
}

type chunk struct {
	b   []byte
	err error
}

func newReadAhead(r io.Reader, size, ahead int) *readAhead {
	ra := &readAhead{chunks: make(chan chunk, ahead), free: make(chan []byte, ahead+2), done: make(chan struct{})}
	for i := 0; i < ahead+2; i++ {
		ra.free <- make([]byte, size)
	}
	go func() {
		defer close(ra.chunks)
		for {
			var buf []byte
			select {
			case buf = <-ra.free:
			case <-ra.done:
				return
			}
			n := 0
			var err error
			for n < len(buf) && err == nil {
				var k int
				k, err = r.Read(buf[n:])
				n += k
			}
			select {
			case ra.chunks <- chunk{buf[:n], err}:
			case <-ra.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ra
}

func (ra *readAhead) Read(p []byte) (int, error) {
	for len(ra.cur) == 0 {
		if ra.err != nil {
			return 0, ra.err
		}
		if ra.held != nil {
			ra.free <- ra.held[:cap(ra.held)]
			ra.held = nil
		}
		c, ok := <-ra.chunks
		if !ok {
			return 0, io.EOF
		}
		ra.cur, ra.held, ra.err = c.b, c.b, c.err
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

// Close stops the goroutine (after the Read it may be blocked in).
func (ra *readAhead) Close() { close(ra.done) }

// bulkRun is the state of one DecodeBulk call.
type bulkRun struct {
	ctx    context.Context
	kind   BulkKind
	format BulkFormat
	gz     bool
	name   string
	opt    BulkOptions
	emit   func(BulkBatch) error
	src    *sourceReader

	res      BulkResult
	problems []ingest.FileProblem
	count    int
	// held are problems reported after the entries, to keep pydantic's
	// field order (validate_only comes after entries).
	held []ingest.FileProblem

	hash *streamHash // nil once a problem is known, or for whole documents
	days databody.Intervals
	c    ingest.Checker // validates single fields; emptied after each use
	tick int            // entries since ctx was last checked

	// The batch being filled; only when emit is set and no problem is known.
	metered  []pipeline.MeteredEntry
	profiles []pipeline.ProfileEntry
	backing  []float64 // values of the batch's entries (CSV, Parquet)
	vals     []float64 // scratch values of one CSV row or Parquet row
	text     []byte    // the canonical JSON of a CSV row's values

	// Duplicate detection: each key and where it first came (entry index,
	// CSV line or Parquet row).
	seen keySet
	// pairs interns valid (mga, profile) pairs of a profiles file.
	pairs     map[string]uint32
	pairNames [][2]string
	pairKey   []byte
}

// failed tells whether a problem is known.
func (r *bulkRun) failed() bool { return r.count > 0 || len(r.held) > 0 }

// add records a problem; from then on nothing is emitted or hashed.
func (r *bulkRun) add(p ingest.FileProblem) {
	r.count++
	if len(r.problems) < r.opt.MaxProblems {
		r.problems = append(r.problems, p)
	}
	r.stop()
}

// stop ends hashing and batching: the file is invalid.
func (r *bulkRun) stop() {
	r.hash.stop()
	r.hash = nil
	r.metered, r.profiles, r.backing = nil, nil, nil
}

// takeChecker moves the problems the field checker found into the file's,
// with where they are in the file.
func (r *bulkRun) takeChecker(line, row int, column string) {
	r.takeCheckerColumns(line, row, func([]string) string { return column })
}

// takeCheckerColumns is takeChecker for problems of several columns: column
// names the column of a problem's loc.
func (r *bulkRun) takeCheckerColumns(line, row int, column func(loc []string) string) {
	for _, p := range r.c.Problems {
		fp := ingest.FileProblemOf(p)
		fp.Line, fp.Row, fp.Column = line, row, column(p.Loc)
		r.add(fp)
	}
	r.c.Reset()
}

// origin is where an entry is in the file.
type origin struct {
	index int // 0-based entry index, the loc's
	line  int // CSV: the row's first line; JSON: the line the entry starts on
	row   int // Parquet: 1-based row
}

// ref is the number by which business messages name an entry: the entry
// index for JSON, as the API does, the line for CSV and the row for Parquet.
func (r *bulkRun) ref(o origin) int {
	switch r.format {
	case FormatCSV:
		return o.line
	case FormatParquet:
		return o.row
	}
	return o.index
}

func (r *bulkRun) label(ref int) string {
	switch r.format {
	case FormatCSV:
		return "line " + strconv.Itoa(ref)
	case FormatParquet:
		return "row " + strconv.Itoa(ref)
	}
	return "entries[" + strconv.Itoa(ref) + "]"
}

// business reports a broken business rule of the entry at o.
func (r *bulkRun) business(o origin, msg string) {
	r.add(ingest.FileProblem{Line: o.line, Row: o.row, Type: ingest.ProblemBusiness, Loc: []any{"body", "entries", o.index}, Msg: msg})
}

// meteredUnit sets dst to the unit a metered-data cell spells exactly and
// tells whether it did; any other text is left to the checker's
// ingest.MeteredUnits, for pydantic's message. It spares the per-row cell
// the checker's node and lookup.
func meteredUnit(s string, dst *pipeline.Unit) bool {
	switch s {
	case "MW":
		*dst = pipeline.MW
	case "MWH":
		*dst = pipeline.MWH
	case "KWH":
		*dst = pipeline.KWH
	default:
		return false
	}
	return true
}

// dayKey numbers a day compactly for duplicate keys (22 bits).
func dayKey(d pipeline.Day) uint64 {
	return uint64((d.Year*12+int(d.Month)-1)*31 + d.Dom - 1)
}

// maloKey is the number of a valid (11-digit) MaLo id.
func maloKey(s string) uint64 {
	var n uint64
	for i := 0; i < len(s); i++ {
		n = n*10 + uint64(s[i]-'0')
	}
	return n
}

// meteredEntry applies the business rules to a schema-valid metered entry,
// then hashes and batches it. Its Values may be scratch: batching copies
// them when they are not owned. text, when not nil, is the canonical JSON of
// the values, written already.
func (r *bulkRun) meteredEntry(e pipeline.MeteredEntry, o origin, owned bool, text []byte) error {
	if want := r.days.Of(e.Day); len(e.Values) != want {
		r.business(o, fmt.Sprintf("%s (%s, %s): %d intervals, expected %d", r.label(r.ref(o)), e.Malo, e.Day, len(e.Values), want))
	}
	if first, dup := r.seen.add(maloKey(e.Malo)<<22|dayKey(e.Day), int32(r.ref(o))); dup {
		r.business(o, fmt.Sprintf("%s (%s, %s): duplicate of %s", r.label(r.ref(o)), e.Malo, e.Day, r.label(int(first))))
	}
	if r.failed() {
		return nil
	}
	r.hash.metered(&e, text)
	if r.emit == nil {
		return nil
	}
	if !owned {
		e.Values = r.keep(e.Values)
	}
	r.metered = append(r.metered, e)
	if len(r.metered) >= r.opt.BatchSize {
		return r.flush()
	}
	return nil
}

// profileEntry is meteredEntry for load profiles; pair is the interned id of
// the entry's (mga, profile).
func (r *bulkRun) profileEntry(e pipeline.ProfileEntry, pair uint32, o origin, owned bool, text []byte) error {
	if want := r.days.Of(e.Day); len(e.ValuesKWh) != want {
		r.business(o, fmt.Sprintf("%s (%s/%s, %s): %d intervals, expected %d", r.label(r.ref(o)), e.MGA, e.Profile, e.Day, len(e.ValuesKWh), want))
	}
	if first, dup := r.seen.add(uint64(pair)<<22|dayKey(e.Day), int32(r.ref(o))); dup {
		r.business(o, fmt.Sprintf("%s (%s/%s, %s): duplicate of %s", r.label(r.ref(o)), e.MGA, e.Profile, e.Day, r.label(int(first))))
	}
	if r.failed() {
		return nil
	}
	r.hash.profile(&e, text)
	if r.emit == nil {
		return nil
	}
	if !owned {
		e.ValuesKWh = r.keep(e.ValuesKWh)
	}
	r.profiles = append(r.profiles, e)
	if len(r.profiles) >= r.opt.BatchSize {
		return r.flush()
	}
	return nil
}

// pair interns a valid (mga, profile) pair and returns its id and strings.
func (r *bulkRun) pair(mga, profile string) (uint32, string, string) {
	k := appendPairKey(r.pairKey[:0], mga, profile)
	r.pairKey = k
	if id, ok := r.pairs[string(k)]; ok {
		names := r.pairNames[id]
		return id, names[0], names[1]
	}
	if r.pairs == nil {
		r.pairs = make(map[string]uint32)
	}
	id := uint32(len(r.pairNames))
	r.pairs[string(k)] = id
	r.pairNames = append(r.pairNames, [2]string{mga, profile})
	return id, mga, profile
}

// appendPairKey appends the key by which pairs interns an (mga, profile)
// pair: the MGA's length, ':', then both, so that no two pairs share a key.
func appendPairKey[S string | []byte](k []byte, mga, profile S) []byte {
	k = strconv.AppendInt(k, int64(len(mga)), 10)
	k = append(k, ':')
	k = append(k, mga...)
	return append(k, profile...)
}

// keep copies values into the batch's storage.
func (r *bulkRun) keep(values []float64) []float64 {
	if cap(r.backing)-len(r.backing) < len(values) {
		r.backing = make([]float64, 0, max(r.opt.BatchSize*96, len(values)))
	}
	start := len(r.backing)
	r.backing = append(r.backing, values...)
	return r.backing[start:len(r.backing):len(r.backing)]
}

// flush emits the batch being filled, if any.
func (r *bulkRun) flush() error {
	if r.emit == nil || r.failed() || len(r.metered)+len(r.profiles) == 0 {
		return nil
	}
	b := BulkBatch{Metered: r.metered, Profiles: r.profiles}
	r.metered, r.profiles, r.backing = nil, nil, nil
	if err := r.ctx.Err(); err != nil {
		return err
	}
	if err := r.emit(b); err != nil {
		return fmt.Errorf("emit batch of %s: %w", r.name, err)
	}
	return nil
}

// counted is called once per entry; it checks ctx every BatchSize entries.
func (r *bulkRun) counted(values int) error {
	r.res.Entries++
	r.res.Values += int64(values)
	return r.pace()
}

// pace is called once per entry or row; it checks ctx every BatchSize
// calls, often enough to stop a large file soon after a cancel and rarely
// enough to cost nothing.
func (r *bulkRun) pace() error {
	if r.tick++; r.tick >= r.opt.BatchSize {
		r.tick = 0
		return r.ctx.Err()
	}
	return nil
}

// finish emits the last batch and builds the result.
func (r *bulkRun) finish() (BulkResult, error) {
	if err := r.flush(); err != nil {
		return r.res, err
	}
	held := r.held
	r.held = nil
	for _, p := range held {
		r.add(p)
	}
	r.res.Problems, r.res.ProblemCount = r.problems, r.count
	if r.failed() {
		r.res.InputHash = ""
		return r.res, &ingest.FileError{Problems: r.problems, Count: r.count}
	}
	if r.hash != nil {
		r.res.InputHash = r.hash.sum()
	}
	return r.res, nil
}

// streamHash computes the input hash of a submission item by item (entries
// of metered data or profiles, master-data locations): it writes exactly the
// bytes of databody.CanonicalMetered, CanonicalProfiles or
// canonicalLocations into SHA-256 without holding them.
//
// Full buffers are hashed on a goroutine of their own, started with the
// first one, so that SHA-256 (about an eighth of the CPU time of validating
// a metered-data CSV file, BenchmarkBulkCSVMetered) runs beside the
// decoding, on the other core, instead of after it in the same goroutine.
type streamHash struct {
	h   hash.Hash
	buf []byte
	n   int

	full   chan []byte   // buffers to hash, in order; nil until the first
	free   chan []byte   // hashed buffers for reuse
	hashed chan struct{} // closed when the goroutine has hashed all of full
}

// streamHashBuffers is how many buffers a streamHash has: the one being
// filled and those waiting or being hashed.
const streamHashBuffers = 4

const streamHashFlush = 32 << 10

// newStreamHash starts the hash of a submission whose only member is the
// list named list ("entries" or "locations").
func newStreamHash(list string) *streamHash {
	s := &streamHash{h: sha256.New(), buf: make([]byte, 0, streamHashFlush+4096)}
	s.buf = append(append(append(s.buf, `{"`...), list...), `":[`...)
	return s
}

func (s *streamHash) next() ingest.Object {
	if s.n > 0 {
		s.buf = append(s.buf, ',')
	}
	s.n++
	return ingest.Object{Buf: append(s.buf, '{')}
}

func (s *streamHash) done(o ingest.Object) {
	s.buf = append(o.Buf, '}')
	if len(s.buf) >= streamHashFlush {
		s.flush()
	}
}

// flush hands the buffer to the hashing goroutine and takes a free one.
func (s *streamHash) flush() {
	if s.full == nil {
		s.full = make(chan []byte, streamHashBuffers)
		s.free = make(chan []byte, streamHashBuffers)
		s.hashed = make(chan struct{})
		for range streamHashBuffers - 1 {
			s.free <- make([]byte, 0, streamHashFlush+4096)
		}
		go func(full <-chan []byte, free chan<- []byte, hashed chan<- struct{}) {
			defer close(hashed)
			for b := range full {
				s.h.Write(b)
				free <- b[:0] // never blocks: free holds every buffer there is
			}
		}(s.full, s.free, s.hashed)
	}
	s.full <- s.buf
	s.buf = <-s.free
}

// stop ends the hashing goroutine, if any, after it hashed what it was
// given; safe on nil and more than once.
func (s *streamHash) stop() {
	if s == nil || s.full == nil {
		return
	}
	close(s.full)
	<-s.hashed
	s.full = nil
}

// metered and profile hash one entry; a nil streamHash (no hash wanted, or
// the file is invalid) ignores it.
func (s *streamHash) metered(e *pipeline.MeteredEntry, text []byte) {
	if s == nil {
		return
	}
	o := s.next()
	if text == nil {
		databody.WriteMeteredEntry(&o, e)
	} else {
		// databody.WriteMeteredEntry with the values written already.
		o.Day("day", e.Day)
		o.Str("malo", e.Malo)
		o.Str("unit", string(e.Unit))
		o.Key("values")
		o.Buf = append(append(append(o.Buf, '['), text...), ']')
	}
	s.done(o)
}

func (s *streamHash) profile(e *pipeline.ProfileEntry, text []byte) {
	if s == nil {
		return
	}
	o := s.next()
	if text == nil {
		databody.WriteProfileEntry(&o, e)
	} else {
		// databody.WriteProfileEntry with the values written already.
		o.Day("day", e.Day)
		o.Str("mga", e.MGA)
		o.Str("profile", e.Profile)
		o.Key("values_kwh")
		o.Buf = append(append(append(o.Buf, '['), text...), ']')
	}
	s.done(o)
}

// location hashes one master-data location.
func (s *streamHash) location(l *pipeline.Location) {
	if s == nil {
		return
	}
	o := s.next()
	databody.WriteLocation(&o, l)
	s.done(o)
}

func (s *streamHash) sum() string {
	s.buf = append(s.buf, ']', '}')
	s.stop() // everything handed over is hashed; the rest follows
	s.h.Write(s.buf)
	s.buf = s.buf[:0]
	return hex.EncodeToString(s.h.Sum(nil))
}
