package bulk

import (
	"fmt"
	"slices"
	"testing"
)

// TestKeySet: every repeated key is found with the place of its first
// entry, whether the keys came in order, out of order from the start, or
// out of order after a run in order (when the set moves to its map).
func TestKeySet(t *testing.T) {
	for _, c := range []struct {
		name string
		keys []uint64
		want []string // "ref:first" for each repeated key, in order
	}{
		{"ascending", []uint64{1, 2, 5, 9}, nil},
		{"ascending, then a repeat of the last", []uint64{1, 2, 5, 5}, []string{"3:2"}},
		{"ascending, then a repeat of the first", []uint64{1, 2, 5, 1}, []string{"3:0"}},
		{"descending", []uint64{9, 5, 2, 1}, nil},
		{"by day, then by location", []uint64{10, 20, 30, 11, 21, 31, 20, 12}, []string{"6:1"}},
		{"repeats after the move", []uint64{3, 4, 1, 1, 4, 3, 2}, []string{"3:2", "4:1", "5:0"}},
		{"a repeat found in order is not recorded", []uint64{1, 1, 0, 1}, []string{"1:0", "3:0"}},
		{"over several blocks, then a repeat from the second", append(ascending(3*keyBlock+5), 2*(keyBlock+7)),
			[]string{fmt.Sprintf("%d:%d", 3*keyBlock+5, keyBlock+7)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s keySet
			var got []string
			for i, k := range c.keys {
				if first, dup := s.add(k, int32(i)); dup {
					got = append(got, fmt.Sprintf("%d:%d", i, first))
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("repeats = %v, want %v", got, c.want)
			}
		})
	}
}

// ascending returns the keys 0, 2, 4, ... of n entries, so that key 2i is
// entry i's.
func ascending(n int) []uint64 {
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = uint64(2 * i)
	}
	return keys
}

// BenchmarkKeySet checks a million keys in the order of the inbox
// benchmark's file (ten days of each MaLo) for repeats, against the map
// alone that the decoder used before.
func BenchmarkKeySet(b *testing.B) {
	keys := make([]uint64, 1_000_000)
	for i := range keys {
		keys[i] = maloKey(fmt.Sprintf("%011d", 10000000000+i/10))<<22 | uint64(i%10)
	}
	b.Run("keySet", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var s keySet
			for i, k := range keys {
				if _, dup := s.add(k, int32(i)); dup {
					b.Fatal("repeat")
				}
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			seen := make(map[uint64]int32)
			for i, k := range keys {
				if _, dup := seen[k]; dup {
					b.Fatal("repeat")
				}
				seen[k] = int32(i)
			}
		}
	})
}
