package lake

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// recycler is the allocator of one Writer's Parquet encoding. Every row group
// of a part makes the same column writers again, and each grows the same
// large buffers (a dictionary column's buffered indices double up to 4 MB per
// row group of a million rows, the pages and their compressed copies); with
// the Go allocator each of them was a new large object that the runtime
// zeroed and the collector then had to find dead again. The recycler keeps
// buffers of 64 KiB and more, by power-of-two size class, when the encoder
// frees them, and hands them to the next row group's writers, cleared as the
// Go allocator's would be. Smaller buffers go straight to the underlying
// allocator. It holds at most maxIdleBytes idle, and close gives them back.
// It is safe for concurrent use: the columns are encoded on several
// goroutines. The forecast generator's recycler (pipeline/forecast) is a
// different one on purpose: its batches ask for the same few exact sizes and
// the generator writes every byte of them, so it neither rounds nor clears;
// the Parquet encoder and Arrow's builders ask for sizes that vary with the
// data, and a builder relies on cleared memory (it sets a validity bitmap's
// bits one by one and never clears them).
type recycler struct {
	alloc memory.Allocator

	mu     sync.Mutex
	idle   [64][][]byte         // by size class (log2 of the capacity)
	bytes  int                  // idle bytes
	ours   map[uintptr]struct{} // the buffers handed out from a class
	closed bool
}

const (
	minRecycledShift = 16 // 64 KiB
	maxIdleBytes     = 64 << 20
)

func newRecycler(alloc memory.Allocator) *recycler {
	return &recycler{alloc: alloc, ours: map[uintptr]struct{}{}}
}

func base(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// class is the size class of a buffer of size bytes, or -1 below the
// smallest one.
func class(size int) int {
	if size < 1<<minRecycledShift {
		return -1
	}
	return bits.Len(uint(size - 1))
}

func (r *recycler) Allocate(size int) []byte {
	c := class(size)
	if c < 0 {
		return r.alloc.Allocate(size)
	}
	r.mu.Lock()
	if n := len(r.idle[c]); n > 0 {
		b := r.idle[c][n-1]
		r.idle[c][n-1] = nil
		r.idle[c] = r.idle[c][:n-1]
		r.bytes -= cap(b)
		r.mu.Unlock()
		b = b[:size]
		clear(b)
		return b
	}
	r.mu.Unlock()
	b := r.alloc.Allocate(1 << c)
	r.mu.Lock()
	r.ours[base(b)] = struct{}{}
	r.mu.Unlock()
	return b[:size]
}

func (r *recycler) Reallocate(size int, b []byte) []byte {
	if r.owns(b) {
		if cap(b) >= size {
			// The bytes it grows into are cleared, as those of a new
			// buffer from the Go allocator would be.
			out := b[:size]
			if size > len(b) {
				clear(out[len(b):])
			}
			return out
		}
	} else if class(size) < 0 {
		// Small buffers stay with the underlying allocator.
		return r.alloc.Reallocate(size, b)
	}
	out := r.Allocate(size)
	copy(out, b)
	r.Free(b)
	return out
}

// owns reports whether b was handed out from a size class. Its capacity is
// checked too, so that a buffer the collector reused the address of (one
// that was never freed) is not taken for one of ours.
func (r *recycler) owns(b []byte) bool {
	if c := cap(b); c < 1<<minRecycledShift || c&(c-1) != 0 {
		return false
	}
	r.mu.Lock()
	_, ok := r.ours[base(b)]
	r.mu.Unlock()
	return ok
}

func (r *recycler) Free(b []byte) {
	if !r.owns(b) {
		r.alloc.Free(b)
		return
	}
	b = b[:cap(b)]
	r.mu.Lock()
	if !r.closed && r.bytes+cap(b) <= maxIdleBytes {
		c := class(cap(b))
		r.idle[c] = append(r.idle[c], b)
		r.bytes += cap(b)
		r.mu.Unlock()
		return
	}
	delete(r.ours, base(b))
	r.mu.Unlock()
	r.alloc.Free(b)
}

// close gives the idle buffers back to the underlying allocator and makes
// later frees go there too.
func (r *recycler) close() {
	r.mu.Lock()
	var free [][]byte
	for c := range r.idle {
		free = append(free, r.idle[c]...)
		r.idle[c] = nil
	}
	for _, b := range free {
		delete(r.ours, base(b))
	}
	r.bytes, r.closed = 0, true
	r.mu.Unlock()
	for _, b := range free {
		r.alloc.Free(b)
	}
}
