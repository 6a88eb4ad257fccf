package slp

import (
	"sync"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/calendar"
)

// maxEntries bounds a Table. A forecast run asks for a handful of profiles on a
// few days, so the bound is never reached within a run; it only stops a
// long-running process from accumulating every day it ever served. At 16 profiles
// x 3 day types x 365 days a year is about 17,500 entries of 800 bytes.
const maxEntries = 1 << 14

// Table caches Quarters per (profile, day, day type). The zero value is not
// usable; call NewTable. It is safe for concurrent use.
type Table struct {
	mu sync.RWMutex
	m  map[tableKey][]float64
}

type tableKey struct {
	name string
	day  pipeline.Day
	dt   calendar.DayType
}

// NewTable returns an empty cache.
func NewTable() *Table {
	return &Table{m: map[tableKey][]float64{}}
}

// Quarters is the package's Quarters, cached. The returned slice is shared by
// every caller asking for the same (profile, day, day type): callers must not
// modify it. Errors are not cached.
func (t *Table) Quarters(name string, day pipeline.Day, dt calendar.DayType) ([]float64, error) {
	c, ok := Canonical(name)
	if !ok {
		return Quarters(name, day, dt) // for its error
	}
	k := tableKey{c, day, dt}
	t.mu.RLock()
	v, ok := t.m[k]
	t.mu.RUnlock()
	if ok {
		return v, nil
	}
	// Computing outside the lock keeps readers unblocked; two goroutines that
	// miss together compute twice, and the first stored slice wins so that all
	// callers share one.
	v, err := quarters(c, day, dt)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.m[k]; ok {
		return old, nil
	}
	if len(t.m) >= maxEntries {
		// Dropping everything is crude but sufficient: slices already handed
		// out stay valid, and the next run refills the few entries it needs.
		clear(t.m)
	}
	t.m[k] = v
	return v, nil
}

// Len returns the number of cached entries.
func (t *Table) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m)
}
