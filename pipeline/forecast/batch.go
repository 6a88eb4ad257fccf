package forecast

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Indices into the fixed dictionaries of the string columns. The dictionaries
// are built once per Generator and shared by all its batches, so a row only
// stores these small integers.
const (
	srcDSO int32 = iota
	srcBDEW
	srcHistory
	srcSubmitted
)

var sourceNames = []string{pipeline.SourceDSOProfile, pipeline.SourceBDEWProfile, pipeline.SourceHistory, pipeline.SourceSubmitted}

var kindNames = []string{string(pipeline.Consumption), string(pipeline.Production)}

// meterNone is the metering type of submitted series, which have none.
const meterNone int32 = 4

var meterNames = []string{string(pipeline.SLP), string(pipeline.TLP), string(pipeline.RLM), string(pipeline.IMSys), ""}

func areaIndex(a pipeline.ControlArea) int32 {
	for i, x := range pipeline.ControlAreas {
		if x == a {
			return int32(i)
		}
	}
	return -1
}

func kindIndex(k pipeline.Kind) int32 {
	switch k {
	case pipeline.Consumption:
		return 0
	case pipeline.Production:
		return 1
	}
	return -1
}

func meterIndex(m pipeline.MeteringType) int32 {
	for i, x := range meterNames[:meterNone] {
		if string(m) == x {
			return int32(i)
		}
	}
	return -1
}

// dicts are the dictionaries shared by the batches of one Generator.
type dicts struct {
	portfolio, area, kind, meter, source arrow.Array
}

func newDicts(alloc memory.Allocator, portfolio string) *dicts {
	areas := make([]string, len(pipeline.ControlAreas))
	for i, a := range pipeline.ControlAreas {
		areas[i] = string(a)
	}
	return &dicts{
		portfolio: stringArray(alloc, []string{portfolio}),
		area:      stringArray(alloc, areas),
		kind:      stringArray(alloc, kindNames),
		meter:     stringArray(alloc, meterNames),
		source:    stringArray(alloc, sourceNames),
	}
}

func (d *dicts) release() {
	for _, a := range []arrow.Array{d.portfolio, d.area, d.kind, d.meter, d.source} {
		a.Release()
	}
}

func stringArray(alloc memory.Allocator, vals []string) arrow.Array {
	b := array.NewStringBuilder(alloc)
	defer b.Release()
	n := 0
	for _, v := range vals {
		n += len(v)
	}
	b.Reserve(len(vals))
	b.ReserveData(n)
	for _, v := range vals {
		b.Append(v)
	}
	return b.NewArray()
}

// batch collects the rows of up to max locations in Arrow buffers. The
// columns that differ per location are written as locations arrive; the
// columns that repeat a pattern (portfolio, day, qh_index, ts_utc) are
// read-only slices of buffers filled once. Buffers grow by doubling up to the
// batch size, and every record gets buffers of its own (new, or recycled from
// a record that was released), so a record handed out is never written again.
type batch struct {
	alloc memory.Allocator // the malo dictionaries
	rec   *recycler        // the rows' buffers
	n     int              // rows per location
	max   int              // locations per batch
	cap   int              // locations the buffers hold
	locs  int

	// consts holds the columns that are the same in every batch (portfolio,
	// delivery_day, qh_index, ts_utc) for constRows rows; each record gets
	// read-only slices of them instead of filling its own: building the
	// records took 0.38 s of CPU per run at 200,000 locations, now 0.05 s.
	consts    [4]*memory.Buffer
	constRows int
	// patterns[v] is n copies of the small index v: a location's area, kind,
	// metering type and source are copied from it (a memmove) rather than
	// stored value by value.
	patterns [][]int32

	malos []string
	index map[string]int32

	bufs                         [6]*memory.Buffer // malo, area, kind, meter, source, power
	malo, area, kind, meter, src []int32
	power                        []float64
}

// maxPattern bounds the small indices that have a pattern: above every
// index of the fixed dictionaries.
const maxPattern = 8

func newBatch(alloc memory.Allocator, n, max int) *batch {
	b := &batch{alloc: alloc, rec: newRecycler(alloc), n: n, max: max, cap: min(max, 64), index: map[string]int32{},
		patterns: make([][]int32, maxPattern)}
	for v := range b.patterns {
		b.patterns[v] = make([]int32, n)
		fill(b.patterns[v], int32(v))
	}
	return b
}

// rowBytes are the widths of the per-location columns, in bufs order.
var rowBytes = [6]int{4, 4, 4, 4, 4, 8}

func (b *batch) views() {
	b.malo = arrow.Int32Traits.CastFromBytes(b.bufs[0].Bytes())
	b.area = arrow.Int32Traits.CastFromBytes(b.bufs[1].Bytes())
	b.kind = arrow.Int32Traits.CastFromBytes(b.bufs[2].Bytes())
	b.meter = arrow.Int32Traits.CastFromBytes(b.bufs[3].Bytes())
	b.src = arrow.Int32Traits.CastFromBytes(b.bufs[4].Bytes())
	b.power = arrow.Float64Traits.CastFromBytes(b.bufs[5].Bytes())
}

// ensure makes room for one more location.
func (b *batch) ensure() {
	if b.bufs[0] == nil {
		for i := range b.bufs {
			b.bufs[i] = memory.NewResizableBuffer(b.rec)
			b.bufs[i].Resize(b.cap * b.n * rowBytes[i])
		}
		b.views()
		return
	}
	if b.locs < b.cap {
		return
	}
	b.cap = min(2*b.cap, b.max)
	for i, buf := range b.bufs {
		buf.Resize(b.cap * b.n * rowBytes[i])
	}
	b.views()
}

// add appends one location's rows and returns its power_mw values for the
// caller to fill.
func (b *batch) add(malo string, area, kind, meter, src int32) []float64 {
	b.ensure()
	mi, ok := b.index[malo]
	if !ok {
		mi = int32(len(b.malos))
		b.index[malo] = mi
		b.malos = append(b.malos, malo)
	}
	lo, hi := b.locs*b.n, (b.locs+1)*b.n
	fill(b.malo[lo:hi], mi)
	b.fillSmall(b.area[lo:hi], area)
	b.fillSmall(b.kind[lo:hi], kind)
	b.fillSmall(b.meter[lo:hi], meter)
	b.fillSmall(b.src[lo:hi], src)
	b.locs++
	return b.power[lo:hi]
}

// fillSmall fills dst (one location's rows) with v, from its pattern when v
// has one.
func (b *batch) fillSmall(dst []int32, v int32) {
	if v >= 0 && int(v) < len(b.patterns) {
		copy(dst, b.patterns[v])
		return
	}
	fill(dst, v)
}

func fill[T any](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}

// repeat fills dst with copies of pattern, doubling the copied run so that
// the work is a few large copies.
func repeat[T any](dst, pattern []T) {
	if len(dst) == 0 {
		return
	}
	k := copy(dst, pattern)
	for k < len(dst) {
		k += copy(dst[k:], dst[:k])
	}
}

// record builds the batch's record and resets the batch. The caller owns the
// record.
func (b *batch) record(d *dicts, date arrow.Date32, qh []int16, ts []int64) arrow.RecordBatch {
	rows := b.locs * b.n
	for i, buf := range b.bufs {
		buf.ResizeNoShrink(rows * rowBytes[i])
	}
	if rows > b.constRows {
		b.buildConsts(rows, date, qh, ts)
	}
	portfolio := memory.SliceBuffer(b.consts[0], 0, rows*4)
	day := memory.SliceBuffer(b.consts[1], 0, rows*4)
	qhBuf := memory.SliceBuffer(b.consts[2], 0, rows*2)
	tsBuf := memory.SliceBuffer(b.consts[3], 0, rows*8)
	malos := stringArray(b.alloc, b.malos)

	s := pipeline.ForecastMaloSchema
	cols := make([]arrow.Array, s.NumFields())
	cols[pipeline.FMPortfolio] = dictArray(s, pipeline.FMPortfolio, portfolio, rows, d.portfolio)
	cols[pipeline.FMDay] = plainArray(s, pipeline.FMDay, day, rows)
	cols[pipeline.FMMalo] = dictArray(s, pipeline.FMMalo, b.bufs[0], rows, malos)
	cols[pipeline.FMControlArea] = dictArray(s, pipeline.FMControlArea, b.bufs[1], rows, d.area)
	cols[pipeline.FMKind] = dictArray(s, pipeline.FMKind, b.bufs[2], rows, d.kind)
	cols[pipeline.FMMeteringType] = dictArray(s, pipeline.FMMeteringType, b.bufs[3], rows, d.meter)
	cols[pipeline.FMSource] = dictArray(s, pipeline.FMSource, b.bufs[4], rows, d.source)
	cols[pipeline.FMQH] = plainArray(s, pipeline.FMQH, qhBuf, rows)
	cols[pipeline.FMTS] = plainArray(s, pipeline.FMTS, tsBuf, rows)
	cols[pipeline.FMPowerMW] = plainArray(s, pipeline.FMPowerMW, b.bufs[5], rows)
	rec := array.NewRecordBatch(s, cols, int64(rows))

	// The arrays hold their buffers now; drop the batch's references.
	for _, c := range cols {
		c.Release()
	}
	malos.Release()
	for _, buf := range []*memory.Buffer{portfolio, day, qhBuf, tsBuf} {
		buf.Release()
	}
	b.reset()
	return rec
}

// buildConsts makes the shared constant columns for rows rows. Records
// already built keep the old buffers alive through their slices.
func (b *batch) buildConsts(rows int, date arrow.Date32, qh []int16, ts []int64) {
	b.releaseConsts()
	b.consts = [4]*memory.Buffer{newBuffer(b.alloc, rows*4), newBuffer(b.alloc, rows*4), newBuffer(b.alloc, rows*2), newBuffer(b.alloc, rows*8)}
	fill(arrow.Int32Traits.CastFromBytes(b.consts[0].Bytes()), 0)
	fill(arrow.Date32Traits.CastFromBytes(b.consts[1].Bytes()), date)
	repeat(arrow.Int16Traits.CastFromBytes(b.consts[2].Bytes()), qh)
	repeat(arrow.Int64Traits.CastFromBytes(b.consts[3].Bytes()), ts)
	b.constRows = rows
}

func (b *batch) releaseConsts() {
	for i, buf := range b.consts {
		if buf != nil {
			buf.Release()
			b.consts[i] = nil
		}
	}
	b.constRows = 0
}

// release drops everything the batch holds; records still in use keep their
// buffers, which go back to the underlying allocator when they are released.
func (b *batch) release() {
	b.reset()
	b.releaseConsts()
	b.rec.close()
}

// reset drops the buffers (a record may still hold them) and starts an empty
// batch whose first buffers are as large as the last ones grew.
func (b *batch) reset() {
	for i, buf := range b.bufs {
		if buf != nil {
			buf.Release()
			b.bufs[i] = nil
		}
	}
	b.locs = 0
	b.malos = b.malos[:0]
	clear(b.index)
}

func newBuffer(alloc memory.Allocator, size int) *memory.Buffer {
	buf := memory.NewResizableBuffer(alloc)
	buf.Resize(size)
	return buf
}

func dictArray(s *arrow.Schema, col int, indices *memory.Buffer, rows int, dict arrow.Array) arrow.Array {
	data := array.NewDataWithDictionary(s.Field(col).Type, rows, []*memory.Buffer{nil, indices}, 0, 0, dict.Data().(*array.Data))
	defer data.Release()
	return array.NewDictionaryData(data)
}

func plainArray(s *arrow.Schema, col int, buf *memory.Buffer, rows int) arrow.Array {
	data := array.NewData(s.Field(col).Type, rows, []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer data.Release()
	return array.MakeFromData(data)
}
