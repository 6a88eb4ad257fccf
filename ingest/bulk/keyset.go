package bulk

// keySet finds the entries of a file that repeat the key of an earlier one
// (a MaLo or a profile, and a day, as one number), and where that earlier
// one is.
//
// Files are mostly written in the order of their keys. As long as each key
// is greater than the one before, no key can repeat, and the keys are only
// kept in order; the first key out of order moves them into a map,
// which checks every key after it. A map from the start took 0.64 s of the
// one pass over the inbox benchmark's file of 1,000,000 rows, most of it in
// cache misses (docs/benchmarks.md, issue 20). BenchmarkKeySet, a million
// keys in that order: 15-18 ms and 16 MB against the map's 157-172 ms and
// 75 MB allocated as it grew.
type keySet struct {
	// The keys so far, ascending, until one is not. They are kept in blocks
	// of a fixed size, which a growing slice would copy over and over (0.42
	// s for a million keys).
	inOrder [][]keyRef
	last    uint64           // the greatest key in inOrder
	byKey   map[uint64]int32 // key -> where it first came, once out of order
}

const keyBlock = 1 << 14

type keyRef struct {
	key uint64
	ref int32
}

// add records that the entry at ref has key k. When an earlier entry had
// the same key, it records nothing and returns that entry's ref.
func (s *keySet) add(k uint64, ref int32) (first int32, repeated bool) {
	if s.byKey == nil {
		n := len(s.inOrder)
		if n == 0 || s.last < k {
			if n == 0 || len(s.inOrder[n-1]) == keyBlock {
				s.inOrder = append(s.inOrder, make([]keyRef, 0, keyBlock))
				n++
			}
			s.inOrder[n-1] = append(s.inOrder[n-1], keyRef{k, ref})
			s.last = k
			return 0, false
		}
		s.byKey = make(map[uint64]int32, (n-1)*keyBlock+len(s.inOrder[n-1]))
		for _, block := range s.inOrder {
			for _, e := range block {
				s.byKey[e.key] = e.ref
			}
		}
		s.inOrder = nil
	}
	if first, ok := s.byKey[k]; ok {
		return first, true
	}
	s.byKey[k] = ref
	return 0, false
}
