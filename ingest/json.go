package ingest

import (
	"unicode/utf8"
)

// Kind is the JSON type of a node.
type Kind uint8

const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

// Node is a parsed JSON value. The validators need the JSON type of every
// value (pydantic's errors depend on it) and the value itself for the error's
// input, so the tree keeps both; numbers also keep their literal, because
// FastAPI echoes 1 and 1.0 differently.
//
// An array whose elements are all numbers is kept as nums alone, without a
// node per element: that is the shape of every values list, and it saves a
// node, a literal and a pointer per quarter-hour. Should such an array be
// needed element by element (to report a negative value), it is parsed again
// from off (see Checker.Elems).
type Node struct {
	Kind    Kind
	Bool    bool
	Offset  int     // byte offset of the value in the source
	Num     float64 // numbers; ±Inf when the literal overflows float64
	Str     string  // strings; the literal of a number
	Arr     []Node  // arrays parsed element by element
	Nums    []float64
	Members []Member // objects in document order, duplicate keys included
}

// Member is one member of a parsed object: its key and its value.
type Member struct {
	Key string
	Val Node
}

// Field returns the value of the last member with the key, or nil. The last
// one wins because Python's json module builds a dict the same way.
func (n *Node) Field(key string) *Node {
	for i := len(n.Members) - 1; i >= 0; i-- {
		if n.Members[i].Key == key {
			return &n.Members[i].Val
		}
	}
	return nil
}

// Present reports whether an object has the key with a non-null value, which
// is what pydantic's model validators see as "set" (`is not None`).
func (n *Node) Present(key string) bool {
	v := n.Field(key)
	return v != nil && v.Kind != KindNull
}

// The messages of Python's json.JSONDecodeError (CPython 3.13, Modules/_json.c),
// which FastAPI reports as the json_invalid problem's ctx.error. The last two
// are ours: Python fails on those inputs with other exceptions, which FastAPI
// turns into a 400 that this API does not have.
const (
	MsgExpectingValue   = "Expecting value"
	MsgExpectingName    = "Expecting property name enclosed in double quotes"
	MsgExpectingColon   = "Expecting ':' delimiter"
	MsgExpectingComma   = "Expecting ',' delimiter"
	MsgTrailingObject   = "Illegal trailing comma before end of object"
	MsgTrailingArray    = "Illegal trailing comma before end of array"
	MsgUnterminated     = "Unterminated string starting at"
	msgControlCharacter = "Invalid control character at"
	msgInvalidEscape    = `Invalid \escape`
	msgInvalidUnicode   = `Invalid \uXXXX escape`
	MsgExtraData        = "Extra data"
	msgTooDeep          = "maximum nesting depth exceeded"
	MsgInvalidUTF8      = "invalid UTF-8"
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

// SyntaxError is malformed JSON at a byte offset of the source.
type SyntaxError struct {
	Offset int
	Msg    string
}

// Parser is a recursive-descent JSON parser that follows CPython's scanner
// decision for decision, so that the first error it meets is the one Python
// reports, at the same place. Unlike Python it rejects NaN and Infinity, which
// are not JSON.
//
// It stays hand-written because no maintained library does its work faster.
// BenchmarkJSONPeers (ingest/databody/json_bench_test.go) runs it alternately with each peer
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
// ExactFloat), not in the tokenizer.
type Parser struct {
	Src     []byte
	Depth   int
	generic bool // true: no number-array shortcut, every element gets a node
	Err     *SyntaxError
	Keys    map[string]string // interned member names: each entry repeats them
	// Scratch stacks that collect the elements of the arrays and objects being
	// parsed, so that each gets one exactly sized allocation at its end.
	nodes   []Node
	members []Member
	nums    []float64
}

// Parse parses a whole document.
func Parse(src []byte) (Node, *SyntaxError) {
	p := Parser{Src: src, Keys: make(map[string]string)}
	v, i := p.Value(p.Space(0))
	if p.Err != nil {
		return Node{}, p.Err
	}
	if i = p.Space(i); i != len(src) {
		return Node{}, &SyntaxError{Offset: i, Msg: MsgExtraData}
	}
	return v, nil
}

func (p *Parser) fail(off int, msg string) (Node, int) {
	if p.Err == nil {
		p.Err = &SyntaxError{Offset: off, Msg: msg}
	}
	return Node{}, -1
}

// Space skips JSON whitespace, the same four characters Python skips.
func (p *Parser) Space(i int) int {
	for i < len(p.Src) {
		switch p.Src[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func (p *Parser) word(i int, w string) bool {
	return len(p.Src)-i >= len(w) && string(p.Src[i:i+len(w)]) == w
}

// Value parses the value at i and returns it with the offset after it.
func (p *Parser) Value(i int) (Node, int) {
	if i >= len(p.Src) {
		return p.fail(i, MsgExpectingValue)
	}
	switch p.Src[i] {
	case '"':
		s, j := p.string(i+1, false)
		return Node{Kind: KindString, Offset: i, Str: s}, j
	case '{':
		return p.object(i)
	case '[':
		return p.array(i)
	case 'n':
		if p.word(i, "null") {
			return Node{Kind: KindNull, Offset: i}, i + 4
		}
	case 't':
		if p.word(i, "true") {
			return Node{Kind: KindBool, Offset: i, Bool: true}, i + 4
		}
	case 'f':
		if p.word(i, "false") {
			return Node{Kind: KindBool, Offset: i}, i + 5
		}
	}
	j, f, ok := p.number(i)
	if !ok {
		return p.fail(i, MsgExpectingValue)
	}
	return Node{Kind: KindNumber, Offset: i, Num: f, Str: string(p.Src[i:j])}, j
}

func (p *Parser) enter(i int) bool {
	p.Depth++
	if p.Depth > maxDepth {
		p.fail(i, msgTooDeep)
		return false
	}
	return true
}

// object parses the object whose '{' is at start.
func (p *Parser) object(start int) (Node, int) {
	if !p.enter(start) {
		return Node{}, -1
	}
	defer func() { p.Depth-- }()
	s := p.Src
	i := p.Space(start + 1)
	if i < len(s) && s[i] == '}' {
		return Node{Kind: KindObject, Offset: start, Members: []Member{}}, i + 1
	}
	base := len(p.members)
	defer func() { p.members = p.members[:base] }()
	for {
		if i >= len(s) || s[i] != '"' {
			return p.fail(i, MsgExpectingName)
		}
		key, j := p.string(i+1, true)
		if p.Err != nil {
			return Node{}, -1
		}
		if i = p.Space(j); i >= len(s) || s[i] != ':' {
			return p.fail(i, MsgExpectingColon)
		}
		v, j := p.Value(p.Space(i + 1))
		if p.Err != nil {
			return Node{}, -1
		}
		p.members = append(p.members, Member{Key: key, Val: v})
		if i = p.Space(j); i < len(s) && s[i] == '}' {
			break
		}
		if i >= len(s) || s[i] != ',' {
			return p.fail(i, MsgExpectingComma)
		}
		comma := i
		if i = p.Space(i + 1); i < len(s) && s[i] == '}' {
			return p.fail(comma, MsgTrailingObject)
		}
	}
	obj := make([]Member, len(p.members)-base)
	copy(obj, p.members[base:])
	return Node{Kind: KindObject, Offset: start, Members: obj}, i + 1
}

// array parses the array whose '[' is at start.
func (p *Parser) array(start int) (Node, int) {
	if !p.enter(start) {
		return Node{}, -1
	}
	defer func() { p.Depth-- }()
	s := p.Src
	i := p.Space(start + 1)
	if !p.generic {
		if nums, j, ok := p.numbers(i); ok || p.Err != nil {
			return Node{Kind: KindArray, Offset: start, Nums: nums}, j
		}
	}
	if i < len(s) && s[i] == ']' {
		return Node{Kind: KindArray, Offset: start, Arr: []Node{}}, i + 1
	}
	base := len(p.nodes)
	defer func() { p.nodes = p.nodes[:base] }()
	for {
		v, j := p.Value(i)
		if p.Err != nil {
			return Node{}, -1
		}
		p.nodes = append(p.nodes, v)
		if i = p.Space(j); i < len(s) && s[i] == ']' {
			break
		}
		if i >= len(s) || s[i] != ',' {
			return p.fail(i, MsgExpectingComma)
		}
		comma := i
		if i = p.Space(i + 1); i < len(s) && s[i] == ']' {
			return p.fail(comma, MsgTrailingArray)
		}
	}
	arr := make([]Node, len(p.nodes)-base)
	copy(arr, p.nodes[base:])
	return Node{Kind: KindArray, Offset: start, Arr: arr}, i + 1
}

// numbers parses the rest of an array (i is after '[' and whitespace) if all
// its elements are numbers. It gives up (ok false, no error) at the first
// element that does not start like a number, and the caller then parses the
// array element by element; errors it meets are the errors the generic path
// would meet at the same place.
func (p *Parser) numbers(i int) ([]float64, int, bool) {
	s := p.Src
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
			p.fail(i, MsgExpectingValue)
			return nil, -1, false
		}
		p.nums = append(p.nums, f)
		if i = p.Space(j); i < len(s) && s[i] == ']' {
			break
		}
		if i >= len(s) || s[i] != ',' {
			p.fail(i, MsgExpectingComma)
			return nil, -1, false
		}
		comma := i
		if i = p.Space(i + 1); i < len(s) && s[i] == ']' {
			p.fail(comma, MsgTrailingArray)
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
func (p *Parser) number(start int) (end int, f float64, ok bool) {
	s := p.Src
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
	f, ok = ExactFloat(mant, exp-frac)
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
func (p *Parser) string(i int, intern bool) (string, int) {
	s := p.Src
	j := i
	for j < len(s) && s[j] != '"' && s[j] != '\\' && s[j] >= 0x20 {
		j++
	}
	if j < len(s) && s[j] == '"' {
		raw := s[i:j]
		if !intern || len(raw) > internKeyLengthUpTo {
			return string(raw), j + 1
		}
		if k, ok := p.Keys[string(raw)]; ok {
			return k, j + 1
		}
		k := string(raw)
		if p.Keys != nil && len(p.Keys) < internKeysUpTo {
			p.Keys[k] = k
		}
		return k, j + 1
	}
	return p.escaped(i)
}

// escaped is the slow path of string, for strings with escapes or errors. It
// mirrors CPython's scanstring_unicode, including the offsets it reports.
func (p *Parser) escaped(end int) (string, int) {
	s := p.Src
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
			p.fail(begin, MsgUnterminated)
			return "", -1
		}
		buf = append(buf, s[end:next]...)
		if s[next] == '"' {
			return string(buf), next + 1
		}
		if next++; next == len(s) {
			p.fail(begin, MsgUnterminated)
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
