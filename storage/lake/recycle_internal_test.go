package lake

import (
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestRecycler: large buffers come back cleared for the next request of
// their size class, grow in place within it, small ones pass through, and
// after close every byte is back with the underlying allocator, also for
// buffers freed after it; concurrent use is safe (the race run).
func TestRecycler(t *testing.T) {
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer checked.AssertSize(t, 0)
	r := newRecycler(checked)

	a := r.Allocate(100_000) // class 2^17
	if len(a) != 100_000 || cap(a) != 1<<17 {
		t.Fatalf("len %d cap %d, want 100000 and %d", len(a), cap(a), 1<<17)
	}
	for i := range a {
		a[i] = 0xff
	}
	r.Free(a)
	b := r.Allocate(70_000) // the same class: the same buffer, cleared
	if base(b) != base(a) {
		t.Fatal("a freed buffer of the class was not reused")
	}
	for i, v := range b {
		if v != 0 {
			t.Fatalf("byte %d of a reused buffer is %#x, want 0", i, v)
		}
	}
	for i := range b {
		b[i] = 0xee
	}
	grown := r.Reallocate(120_000, b) // still within 2^17: in place
	if base(grown) != base(b) || len(grown) != 120_000 {
		t.Fatalf("growth within the class moved the buffer or got len %d", len(grown))
	}
	if grown[69_999] != 0xee || grown[70_000] != 0 || grown[119_999] != 0 {
		t.Fatalf("growth in place: kept byte %#x, new bytes %#x and %#x, want 0xee, 0 and 0",
			grown[69_999], grown[70_000], grown[119_999])
	}
	bigger := r.Reallocate(200_000, grown) // the next class: copied
	if len(bigger) != 200_000 || cap(bigger) != 1<<18 {
		t.Fatalf("len %d cap %d after growing past the class", len(bigger), cap(bigger))
	}

	small := r.Allocate(1000) // below the smallest class: the allocator's own
	if cap(small) != 1000 {
		t.Fatalf("small buffer of cap %d", cap(small))
	}
	small = r.Reallocate(2000, small)
	r.Free(small)

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 200 {
				buf := r.Allocate(64<<10 + i*512)
				buf[0] = 1
				r.Free(buf)
			}
		})
	}
	wg.Wait()

	late := r.Allocate(1 << 20)
	r.close()
	r.Free(bigger) // after close: straight back
	r.Free(late)
	if checked.CurrentAlloc() != 0 {
		t.Fatalf("%d bytes still allocated after close", checked.CurrentAlloc())
	}
}
