package sqldb

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/pipeline"
)

// sliceDecoder decodes the stored master data of market locations (the JSON
// of []pipeline.Slice that locationItems writes) for CurrentLocations.
// encoding/json spent four fifths of the time of streaming a portfolio's
// locations from SQLite on reflection, on a time.Parse per day and on an
// allocation per string, pointer and slice. This decoder reads the one shape
// that is stored directly: it interns the few distinct strings (control
// areas, MGAs, profiles, DSO ids), parses days by hand, and takes the slices
// and their pointed-to values from blocks shared by a batch.
//
// It gives exactly what encoding/json gives: whatever it does not handle
// itself (escaped or invalid strings, unknown or differently cased keys,
// null where no pointer is, malformed input) it hands to encoding/json, whose
// result or error is then the answer. The differential test and fuzz target
// in slices_decode_test.go hold the two to that.
type sliceDecoder struct {
	strs    map[string]string
	scratch []pipeline.Slice
	slices  []pipeline.Slice
	floats  []float64
	days    []pipeline.Day
	block   int
}

// maxInterned bounds the intern table: master data has a few hundred
// distinct strings, and unusual data must not grow the table without end.
const maxInterned = 1 << 14

func newSliceDecoder() *sliceDecoder {
	return &sliceDecoder{strs: make(map[string]string, 256)}
}

// startBatch sizes the shared blocks for a batch of n locations. Blocks are
// never reused across batches: the caller's fn owns each batch.
func (d *sliceDecoder) startBatch(n int) {
	d.block = 2 * max(n, 1)
	d.slices, d.floats, d.days = nil, nil, nil
}

var errSlow = errors.New("not on the fast path")

// decode returns the slices encoded in b.
func (d *sliceDecoder) decode(b []byte) ([]pipeline.Slice, error) {
	out, err := d.fast(b)
	if err == nil {
		return out, nil
	}
	var slow []pipeline.Slice
	if err := json.Unmarshal(b, &slow); err != nil {
		return nil, err
	}
	return slow, nil
}

func (d *sliceDecoder) fast(b []byte) ([]pipeline.Slice, error) {
	p := parser{b: b}
	d.scratch = d.scratch[:0]
	if !p.consume('[') {
		return nil, errSlow
	}
	if !p.consume(']') {
		for {
			s, err := d.object(&p)
			if err != nil {
				return nil, err
			}
			d.scratch = append(d.scratch, s)
			if p.consume(',') {
				continue
			}
			if p.consume(']') {
				break
			}
			return nil, errSlow
		}
	}
	p.ws()
	if p.i != len(p.b) {
		return nil, errSlow
	}
	n := len(d.scratch)
	if cap(d.slices)-len(d.slices) < n || d.slices == nil {
		d.slices = make([]pipeline.Slice, 0, max(d.block, n))
	}
	start := len(d.slices)
	d.slices = append(d.slices, d.scratch...)
	return d.slices[start : start+n : start+n], nil
}

// object decodes one slice; p is before its '{'.
func (d *sliceDecoder) object(p *parser) (pipeline.Slice, error) {
	var s pipeline.Slice
	if !p.consume('{') {
		return s, errSlow
	}
	if p.consume('}') {
		return s, nil
	}
	for {
		key, ok := p.str()
		if !ok || !p.consume(':') {
			return s, errSlow
		}
		p.ws()
		var ok2 bool
		switch string(key) {
		case "active":
			s.Active, ok2 = p.boolean()
		case "annual_consumption_kwh":
			if p.null() {
				s.AnnualConsumptionKWh, ok2 = nil, true
				break
			}
			var v float64
			if v, ok2 = p.number(); ok2 {
				s.AnnualConsumptionKWh = d.float(v)
			}
		case "control_area":
			var v string
			v, ok2 = d.str(p)
			s.ControlArea = pipeline.ControlArea(v)
		case "dso_mp_id":
			s.DSOMPID, ok2 = d.str(p)
		case "kind":
			var v string
			v, ok2 = d.str(p)
			s.Kind = pipeline.Kind(v)
		case "metering_type":
			var v string
			v, ok2 = d.str(p)
			s.MeteringType = pipeline.MeteringType(v)
		case "mga":
			s.MGA, ok2 = d.str(p)
		case "profile":
			s.Profile, ok2 = d.str(p)
		case "valid_from":
			s.ValidFrom, ok2 = p.day()
		case "valid_to":
			if p.null() {
				s.ValidTo, ok2 = nil, true
				break
			}
			var v pipeline.Day
			if v, ok2 = p.day(); ok2 {
				s.ValidTo = d.day(v)
			}
		}
		if !ok2 {
			return s, errSlow
		}
		if p.consume(',') {
			continue
		}
		if p.consume('}') {
			return s, nil
		}
		return s, errSlow
	}
}

func (d *sliceDecoder) str(p *parser) (string, bool) {
	b, ok := p.str()
	if !ok {
		return "", false
	}
	if s, ok := d.strs[string(b)]; ok {
		return s, true
	}
	s := string(b)
	if len(d.strs) < maxInterned {
		d.strs[s] = s
	}
	return s, true
}

func (d *sliceDecoder) float(v float64) *float64 {
	if len(d.floats) == cap(d.floats) {
		d.floats = make([]float64, 0, d.block)
	}
	d.floats = append(d.floats, v)
	return &d.floats[len(d.floats)-1]
}

func (d *sliceDecoder) day(v pipeline.Day) *pipeline.Day {
	if len(d.days) == cap(d.days) {
		d.days = make([]pipeline.Day, 0, d.block)
	}
	d.days = append(d.days, v)
	return &d.days[len(d.days)-1]
}

// parser reads JSON tokens; every method skips leading whitespace and
// reports false, consuming nothing useful, on anything it does not handle.
type parser struct {
	b []byte
	i int
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) consume(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) literal(lit string) bool {
	if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
		p.i += len(lit)
		return true
	}
	return false
}

func (p *parser) null() bool { p.ws(); return p.literal("null") }

func (p *parser) boolean() (bool, bool) {
	p.ws()
	switch {
	case p.literal("true"):
		return true, true
	case p.literal("false"):
		return false, true
	}
	return false, false
}

// str returns the bytes of a string without escapes or control characters
// that is valid UTF-8: the strings encoding/json would copy unchanged.
func (p *parser) str() ([]byte, bool) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	ascii := true
	for j := start; j < len(p.b); j++ {
		c := p.b[j]
		switch {
		case c == '"':
			s := p.b[start:j]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			p.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// number parses a JSON number; strconv.ParseFloat, which encoding/json uses
// as well, accepts more than JSON does, so the grammar is checked first.
func (p *parser) number() (float64, bool) {
	p.ws()
	b, i := p.b, p.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return 0, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return 0, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	v, err := strconv.ParseFloat(string(b[start:i]), 64)
	if err != nil {
		return 0, false
	}
	p.i = i
	return v, true
}

// day parses a "YYYY-MM-DD" string as pipeline.ParseDay does.
func (p *parser) day() (pipeline.Day, bool) {
	s, ok := p.str()
	if !ok || len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return pipeline.Day{}, false
	}
	num := func(b []byte) (int, bool) {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	y, ok1 := num(s[0:4])
	m, ok2 := num(s[5:7])
	dom, ok3 := num(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || dom < 1 || dom > daysIn(time.Month(m), y) {
		return pipeline.Day{}, false
	}
	return pipeline.NewDay(y, time.Month(m), dom), true
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
