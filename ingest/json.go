package ingest

import (
	"unicode/utf8"
)

// kind is the JSON type of a node.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// node is a parsed JSON value. The validators need the JSON type of every
// value (pydantic's errors depend on it) and the value itself for the error's
// input, so the tree keeps both; numbers also keep their literal, because
// FastAPI echoes 1 and 1.0 differently.
//
// An array whose elements are all numbers is kept as nums alone, without a
// node per element: that is the shape of every values list, and it saves a
// node, a literal and a pointer per quarter-hour. Should such an array be
// needed element by element (to report a negative value), it is parsed again
// from off (see checker.elems).
type node struct {
	kind kind
	b    bool
	off  int     // byte offset of the value in the source
	num  float64 // numbers; ±Inf when the literal overflows float64
	str  string  // strings; the literal of a number
	arr  []node  // arrays parsed element by element
	nums []float64
	obj  []member // objects in document order, duplicate keys included
}

type member struct {
	key string
	val node
}

// field returns the value of the last member with the key, or nil. The last
// one wins because Python's json module builds a dict the same way.
func (n *node) field(key string) *node {
	for i := len(n.obj) - 1; i >= 0; i-- {
		if n.obj[i].key == key {
			return &n.obj[i].val
		}
	}
	return nil
}

// present reports whether an object has the key with a non-null value, which
// is what pydantic's model validators see as "set" (`is not None`).
func (n *node) present(key string) bool {
	v := n.field(key)
	return v != nil && v.kind != kindNull
}

// The messages of Python's json.JSONDecodeError (CPython 3.13, Modules/_json.c),
// which FastAPI reports as the json_invalid problem's ctx.error. The last two
// are ours: Python fails on those inputs with other exceptions, which FastAPI
// turns into a 400 that this API does not have.
const (
	msgExpectingValue   = "Expecting value"
	msgExpectingName    = "Expecting property name enclosed in double quotes"
	msgExpectingColon   = "Expecting ':' delimiter"
	msgExpectingComma   = "Expecting ',' delimiter"
	msgTrailingObject   = "Illegal trailing comma before end of object"
	msgTrailingArray    = "Illegal trailing comma before end of array"
	msgUnterminated     = "Unterminated string starting at"
	msgControlCharacter = "Invalid control character at"
	msgInvalidEscape    = `Invalid \escape`
	msgInvalidUnicode   = `Invalid \uXXXX escape`
	msgExtraData        = "Extra data"
	msgTooDeep          = "maximum nesting depth exceeded"
	msgInvalidUTF8      = "invalid UTF-8"
)

const (
	// maxDepth bounds the nesting of arrays and objects so that a hostile
	// body cannot make the recursive parser use unbounded stack; Python
	// stops at about the same depth with a RecursionError.
	maxDepth = 512
	// Member names are interned while there are few distinct ones, which is
	// the case of every body of the four models.
	internKeysUpTo      = 256
	internKeyLengthUpTo = 64
)

// UTF-16 surrogates, which \u escapes may spell in pairs.
const (
	highSurrogates = 0xd800
	lowSurrogates  = 0xdc00
	surrogatesEnd  = 0xe000
	supplementary  = 0x10000
)

// syntaxError is malformed JSON at a byte offset of the source.
type syntaxError struct {
	off int
	msg string
}

// parser is a recursive-descent JSON parser that follows CPython's scanner
// decision for decision, so that the first error it meets is the one Python
// reports, at the same place. Unlike Python it rejects NaN and Infinity, which
// are not JSON.
//
// It stays hand-written because no maintained library does its work faster.
// BenchmarkJSONPeers (json_bench_test.go) runs it alternately with each peer
// on the same bodies (2026-11-26, shared 2-core AMD EPYC; peer time / ours):
// the tokenizer of go-json-experiment/json building the same tree takes
// 2.3-3.4x as long on the 10k-entry metered body (1.2-1.3x with 17-digit
// numbers, 1.05-2.0x on a 96-value forecast), encoding/json 4-10x into typed
// structs and 4.6-6.5x into any, fastjson's tree walked into structs
// 2.3-3.0x. goccy/go-json and sonic decoding into typed structs are at
// parity on the metered body (0.93-1.10x) and faster with 17-digit numbers
// (0.48-0.90x) and on the small forecast (0.46-0.80x), but they keep neither
// each value's JSON type nor its offset, which the pydantic-style errors
// need; adopting one would mean a second decoder for the success path with
// its own rules for case-insensitive names, nulls and invalid UTF-8. Where
// they win, the time is in number conversion (strconv for numbers beyond
// exactFloat), not in the tokenizer.
type parser struct {
	src     []byte
	depth   int
	generic bool // true: no number-array shortcut, every element gets a node
	err     *syntaxError
	keys    map[string]string // interned member names: each entry repeats them
	// Scratch stacks that collect the elements of the arrays and objects being
	// parsed, so that each gets one exactly sized allocation at its end.
	nodes   []node
	members []member
	nums    []float64
}

// parse parses a whole document.
func parse(src []byte) (node, *syntaxError) {
	p := parser{src: src, keys: make(map[string]string)}
	v, i := p.value(p.space(0))
	if p.err != nil {
		return node{}, p.err
	}
	if i = p.space(i); i != len(src) {
		return node{}, &syntaxError{off: i, msg: msgExtraData}
	}
	return v, nil
}

func (p *parser) fail(off int, msg string) (node, int) {
	if p.err == nil {
		p.err = &syntaxError{off: off, msg: msg}
	}
	return node{}, -1
}

// space skips JSON whitespace, the same four characters Python skips.
func (p *parser) space(i int) int {
	for i < len(p.src) {
		switch p.src[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func (p *parser) word(i int, w string) bool {
	return len(p.src)-i >= len(w) && string(p.src[i:i+len(w)]) == w
}

// value parses the value at i and returns it with the offset after it.
func (p *parser) value(i int) (node, int) {
	if i >= len(p.src) {
		return p.fail(i, msgExpectingValue)
	}
	switch p.src[i] {
	case '"':
		s, j := p.string(i+1, false)
		return node{kind: kindString, off: i, str: s}, j
	case '{':
		return p.object(i)
	case '[':
		return p.array(i)
	case 'n':
		if p.word(i, "null") {
			return node{kind: kindNull, off: i}, i + 4
		}
	case 't':
		if p.word(i, "true") {
			return node{kind: kindBool, off: i, b: true}, i + 4
		}
	case 'f':
		if p.word(i, "false") {
			return node{kind: kindBool, off: i}, i + 5
		}
	}
	j, f, ok := p.number(i)
	if !ok {
		return p.fail(i, msgExpectingValue)
	}
	return node{kind: kindNumber, off: i, num: f, str: string(p.src[i:j])}, j
}

func (p *parser) enter(i int) bool {
	p.depth++
	if p.depth > maxDepth {
		p.fail(i, msgTooDeep)
		return false
	}
	return true
}

// object parses the object whose '{' is at start.
func (p *parser) object(start int) (node, int) {
	if !p.enter(start) {
		return node{}, -1
	}
	defer func() { p.depth-- }()
	s := p.src
	i := p.space(start + 1)
	if i < len(s) && s[i] == '}' {
		return node{kind: kindObject, off: start, obj: []member{}}, i + 1
	}
	base := len(p.members)
	defer func() { p.members = p.members[:base] }()
	for {
		if i >= len(s) || s[i] != '"' {
			return p.fail(i, msgExpectingName)
		}
		key, j := p.string(i+1, true)
		if p.err != nil {
			return node{}, -1
		}
		if i = p.space(j); i >= len(s) || s[i] != ':' {
			return p.fail(i, msgExpectingColon)
		}
		v, j := p.value(p.space(i + 1))
		if p.err != nil {
			return node{}, -1
		}
		p.members = append(p.members, member{key: key, val: v})
		if i = p.space(j); i < len(s) && s[i] == '}' {
			break
		}
		if i >= len(s) || s[i] != ',' {
			return p.fail(i, msgExpectingComma)
		}
		comma := i
		if i = p.space(i + 1); i < len(s) && s[i] == '}' {
			return p.fail(comma, msgTrailingObject)
		}
	}
	obj := make([]member, len(p.members)-base)
	copy(obj, p.members[base:])
	return node{kind: kindObject, off: start, obj: obj}, i + 1
}

// array parses the array whose '[' is at start.
func (p *parser) array(start int) (node, int) {
	if !p.enter(start) {
		return node{}, -1
	}
	defer func() { p.depth-- }()
	s := p.src
	i := p.space(start + 1)
	if !p.generic {
		if nums, j, ok := p.numbers(i); ok || p.err != nil {
			return node{kind: kindArray, off: start, nums: nums}, j
		}
	}
	if i < len(s) && s[i] == ']' {
		return node{kind: kindArray, off: start, arr: []node{}}, i + 1
	}
	base := len(p.nodes)
	defer func() { p.nodes = p.nodes[:base] }()
	for {
		v, j := p.value(i)
		if p.err != nil {
			return node{}, -1
		}
		p.nodes = append(p.nodes, v)
		if i = p.space(j); i < len(s) && s[i] == ']' {
			break
		}
		if i >= len(s) || s[i] != ',' {
			return p.fail(i, msgExpectingComma)
		}
		comma := i
		if i = p.space(i + 1); i < len(s) && s[i] == ']' {
			return p.fail(comma, msgTrailingArray)
		}
	}
	arr := make([]node, len(p.nodes)-base)
	copy(arr, p.nodes[base:])
	return node{kind: kindArray, off: start, arr: arr}, i + 1
}

// numbers parses the rest of an array (i is after '[' and whitespace) if all
// its elements are numbers. It gives up (ok false, no error) at the first
// element that does not start like a number, and the caller then parses the
// array element by element; errors it meets are the errors the generic path
// would meet at the same place.
func (p *parser) numbers(i int) ([]float64, int, bool) {
	s := p.src
	if i < len(s) && s[i] == ']' {
		return []float64{}, i + 1, true
	}
	base := len(p.nums)
	defer func() { p.nums = p.nums[:base] }()
	for {
		if i >= len(s) || (s[i] != '-' && (s[i] < '0' || s[i] > '9')) {
			return nil, 0, false
		}
		j, f, ok := p.number(i)
		if !ok {
			p.fail(i, msgExpectingValue)
			return nil, -1, false
		}
		p.nums = append(p.nums, f)
		if i = p.space(j); i < len(s) && s[i] == ']' {
			break
		}
		if i >= len(s) || s[i] != ',' {
			p.fail(i, msgExpectingComma)
			return nil, -1, false
		}
		comma := i
		if i = p.space(i + 1); i < len(s) && s[i] == ']' {
			p.fail(comma, msgTrailingArray)
			return nil, -1, false
		}
	}
	nums := make([]float64, len(p.nums)-base)
	copy(nums, p.nums[base:])
	return nums, i + 1, true
}

// number matches a number at start the way CPython's _match_number_unicode
// does (a '.' or an exponent without digits after it is not part of the
// number) and converts it. ok is false if there is no number at start.
func (p *parser) number(start int) (end int, f float64, ok bool) {
	s := p.src
	last := len(s) - 1
	i := start
	neg := s[i] == '-'
	if neg {
		if i++; i > last {
			return 0, 0, false
		}
	}
	// mant collects up to 19 significant digits; beyond that the value is
	// left to strconv.
	var mant uint64
	digits, frac := 0, 0
	exact := true
	switch {
	case s[i] >= '1' && s[i] <= '9':
		for ; i <= last && s[i] >= '0' && s[i] <= '9'; i++ {
			if digits < 19 {
				mant = mant*10 + uint64(s[i]-'0')
				digits++
			} else {
				exact = false
			}
		}
	case s[i] == '0':
		i++
	default:
		return 0, 0, false
	}
	if i < last && s[i] == '.' && s[i+1] >= '0' && s[i+1] <= '9' {
		for i++; i <= last && s[i] >= '0' && s[i] <= '9'; i++ {
			switch {
			case mant == 0 && s[i] == '0':
				frac++ // a leading zero only moves the decimal point
			case digits < 19:
				mant = mant*10 + uint64(s[i]-'0')
				digits++
				frac++
			default:
				exact = false
			}
		}
	}
	exp := 0
	if i < last && (s[i] == 'e' || s[i] == 'E') {
		mark := i
		i++
		eneg := false
		if i < last && (s[i] == '-' || s[i] == '+') {
			eneg = s[i] == '-'
			i++
		}
		first := i
		for ; i <= last && s[i] >= '0' && s[i] <= '9'; i++ {
			if exp < 100000 {
				exp = exp*10 + int(s[i]-'0')
			}
		}
		if i == first {
			i, exp = mark, 0 // "1e" or "1e+": the number ends before the e
		} else if eneg {
			exp = -exp
		}
	}
	f, ok = exactFloat(mant, exp-frac)
	if !exact || !ok {
		f = parseFloatSlow(s[start:i])
	} else if neg {
		f = -f
	}
	if f == 0 {
		f = 0 // -0 is 0: the hash must not tell them apart
	}
	return i, f, true
}

// string decodes the string whose content starts at i (after the quote) and
// returns it with the offset after the closing quote. Member names are interned
// because every entry of a large body repeats them.
func (p *parser) string(i int, intern bool) (string, int) {
	s := p.src
	j := i
	for j < len(s) && s[j] != '"' && s[j] != '\\' && s[j] >= 0x20 {
		j++
	}
	if j < len(s) && s[j] == '"' {
		raw := s[i:j]
		if !intern || len(raw) > internKeyLengthUpTo {
			return string(raw), j + 1
		}
		if k, ok := p.keys[string(raw)]; ok {
			return k, j + 1
		}
		k := string(raw)
		if p.keys != nil && len(p.keys) < internKeysUpTo {
			p.keys[k] = k
		}
		return k, j + 1
	}
	return p.escaped(i)
}

// escaped is the slow path of string, for strings with escapes or errors. It
// mirrors CPython's scanstring_unicode, including the offsets it reports.
func (p *parser) escaped(end int) (string, int) {
	s := p.src
	begin := end - 1
	buf := make([]byte, 0, 32)
	for {
		next := end
		for next < len(s) && s[next] != '"' && s[next] != '\\' {
			if s[next] <= 0x1f {
				p.fail(next, msgControlCharacter)
				return "", -1
			}
			next++
		}
		if next == len(s) {
			p.fail(begin, msgUnterminated)
			return "", -1
		}
		buf = append(buf, s[end:next]...)
		if s[next] == '"' {
			return string(buf), next + 1
		}
		if next++; next == len(s) {
			p.fail(begin, msgUnterminated)
			return "", -1
		}
		c := s[next]
		if c != 'u' {
			end = next + 1
			switch c {
			case '"', '\\', '/':
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			default:
				p.fail(end-2, msgInvalidEscape)
				return "", -1
			}
			buf = append(buf, c)
			continue
		}
		next++
		end = next + 4
		if end >= len(s) {
			p.fail(next-1, msgInvalidUnicode)
			return "", -1
		}
		r, ok := hex4(s[next:end])
		if !ok {
			p.fail(end-5, msgInvalidUnicode)
			return "", -1
		}
		if r >= highSurrogates && r < lowSurrogates && end+6 < len(s) && s[end] == '\\' && s[end+1] == 'u' {
			r2, ok := hex4(s[end+2 : end+6])
			if !ok {
				p.fail(end+1, msgInvalidUnicode)
				return "", -1
			}
			if r2 >= lowSurrogates && r2 < surrogatesEnd {
				r = supplementary + (r-highSurrogates)<<10 + (r2 - lowSurrogates)
				end += 6
			}
		}
		// A lone surrogate, which Python would keep, becomes U+FFFD: a Go
		// string cannot hold it.
		buf = utf8.AppendRune(buf, r)
	}
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
