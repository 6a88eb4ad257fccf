package forecast

import (
	"math"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
)

// trimFrom is the number of history days from which the highest and the
// lowest value of each slot are left out of the mean.
const trimFrom = 5

// historian computes history forecasts. It caches the clock slots and the
// similar days per day and state, and keeps its scratch space between
// locations, so that a location costs no allocation.
type historian struct {
	weeks   int
	slots   map[pipeline.Day][]int8
	similar map[calendar.State]map[pipeline.Day]bool

	days    []float64 // usable days laid out by clock slot, slotsPerDay each
	used    []pipeline.Day
	profile [slotsPerDay]float64
}

func newHistorian(weeks int) *historian {
	return &historian{weeks: weeks, slots: map[pipeline.Day][]int8{}, similar: map[calendar.State]map[pipeline.Day]bool{}}
}

func (h *historian) slotsOf(day pipeline.Day) []int8 {
	s, ok := h.slots[day]
	if !ok {
		s = clockSlots(day)
		h.slots[day] = s
	}
	return s
}

func (h *historian) similarSet(day pipeline.Day, st calendar.State) map[pipeline.Day]bool {
	set, ok := h.similar[st]
	if !ok {
		set = map[pipeline.Day]bool{}
		for _, d := range SimilarDays(day, st, h.weeks) {
			set[d] = true
		}
		h.similar[st] = set
	}
	return set
}

// collect lays out the usable entries (see usable) by clock slot in h.days
// and returns their number. allowed decides which days may be used; an
// entry of a day already taken is ignored, so a duplicate cannot weigh twice.
func (h *historian) collect(malo string, entries []pipeline.MeteredEntry, allowed func(pipeline.Day) bool) int {
	h.days = h.days[:0]
	h.used = h.used[:0]
	for i := range entries {
		e := &entries[i]
		if (e.Malo != "" && malo != "" && e.Malo != malo) || !allowed(e.Day) || h.taken(e.Day) {
			continue
		}
		k := len(h.used)
		h.days = append(h.days, make([]float64, slotsPerDay)...)
		if !h.layOut(e, h.days[k*slotsPerDay:(k+1)*slotsPerDay]) {
			h.days = h.days[:k*slotsPerDay]
			continue
		}
		h.used = append(h.used, e.Day)
	}
	return len(h.used)
}

func (h *historian) taken(d pipeline.Day) bool {
	for _, u := range h.used {
		if u == d {
			return true
		}
	}
	return false
}

// layOut converts one metered day to MW by local clock slot into dst (96
// values, zeroed by the caller). It reports false when the entry is not
// usable: wrong length for its day, unknown unit or a value that is not
// finite.
func (h *historian) layOut(e *pipeline.MeteredEntry, dst []float64) bool {
	if e.Unit != pipeline.MW && e.Unit != pipeline.MWH && e.Unit != pipeline.KWH {
		return false
	}
	slots := h.slotsOf(e.Day)
	if len(e.Values) != len(slots) {
		return false
	}
	var cnt [slotsPerDay]uint8
	for q, v := range e.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
		s := slots[q]
		dst[s] += e.Unit.ToMW(v)
		cnt[s]++
	}
	if len(slots) == slotsPerDay {
		return true
	}
	// The repeated hour of a fall-back day: the mean of both occurrences.
	for s, c := range cnt {
		if c > 1 {
			dst[s] /= float64(c)
		}
	}
	// The skipped hour of a spring-forward day: the mean of the same
	// quarter-hour in the hour before and the hour after.
	for s, c := range cnt {
		if c != 0 {
			continue
		}
		var sum float64
		var k int
		if b := s - 4; b >= 0 && cnt[b] > 0 {
			sum += dst[b]
			k++
		}
		if a := s + 4; a < slotsPerDay && cnt[a] > 0 {
			sum += dst[a]
			k++
		}
		if k > 0 {
			dst[s] = sum / float64(k)
		}
	}
	return true
}

// estimate computes the per-slot estimate over the k collected days into
// h.profile: the trimmed mean when trimmed is set (and k >= trimFrom), the
// plain mean otherwise.
func (h *historian) estimate(k int, trimmed bool) {
	for s := range slotsPerDay {
		v := h.days[s]
		sum, lo, hi := v, v, v
		for d := 1; d < k; d++ {
			v = h.days[d*slotsPerDay+s]
			sum += v
			lo = min(lo, v)
			hi = max(hi, v)
		}
		if trimmed && k >= trimFrom {
			h.profile[s] = (sum - lo - hi) / float64(k-2)
		} else {
			h.profile[s] = sum / float64(k)
		}
	}
}

// spread writes h.profile to the quarter-hours of day into dst.
func (h *historian) spread(day pipeline.Day, dst []float64) {
	for q, s := range h.slotsOf(day) {
		dst[q] = h.profile[s]
	}
}
