package ingest

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Path is the loc of a value. Children are made with append, so a child may
// share its parent's backing array with its siblings: a path must not be kept
// beyond the call it is passed to (fail copies it).
type Path []string

// BodyPath is the loc of a request body, with room for a deep field.
func BodyPath() Path { return append(make(Path, 0, 12), "body") }

// At is the loc of a member of the value at p.
func (p Path) At(name string) Path { return append(p, name) }

// Index is the loc of an element of the list at p.
func (p Path) Index(i int) Path { return append(p, strconv.Itoa(i)) }

// Presence is how a model field treats absence and null.
type Presence uint8

const (
	// Required: absence is a missing problem, null is validated (and fails).
	Required Presence = iota
	// Optional: Optional[X] = None; absence and null both leave it unset.
	Optional
	// Defaulted: X = default; absence keeps the default, null is validated.
	Defaulted
)

// Checker validates a parsed body against a model and collects the problems
// in pydantic's order: fields in declaration order, objects in document order.
type Checker struct {
	Src      []byte
	Problems []Problem
	Full     bool
}

// Reset forgets the problems found, keeping their storage, so that one
// checker can validate field after field of a file.
func (c *Checker) Reset() {
	c.Problems = c.Problems[:0]
	c.Full = false
}

// Err returns the problems found as a *SchemaError, or nil.
func (c *Checker) Err() error {
	if len(c.Problems) == 0 {
		return nil
	}
	return &SchemaError{Problems: c.Problems}
}

// Fail records a problem unless the cap is reached (the input is not even
// converted then). ctx may be nil.
func (c *Checker) Fail(loc Path, typ, msg string, input *Node, ctx map[string]any) {
	if c.Full {
		return
	}
	if ctx == nil {
		ctx = map[string]any{}
	}
	c.Add(Problem{Type: typ, Loc: append([]string(nil), loc...), Msg: msg, Input: c.Input(input), Ctx: ctx})
}

// Input converts a node to the plain Go value FastAPI would echo: nil, bool,
// string, json.Number (spelled as Python prints it), []any, map[string]any.
func (c *Checker) Input(n *Node) any {
	switch n.Kind {
	case KindBool:
		return n.Bool
	case KindNumber:
		return pyNumber(n.Str)
	case KindString:
		return n.Str
	case KindArray:
		elems := c.Elems(n)
		out := make([]any, len(elems))
		for i := range elems {
			out[i] = c.Input(&elems[i])
		}
		return out
	case KindObject:
		out := make(map[string]any, len(n.Members))
		for i := range n.Members {
			out[n.Members[i].Key] = c.Input(&n.Members[i].Val)
		}
		return out
	}
	return nil
}

// Elems returns an array's elements as nodes. An all-number array was parsed
// into nums only; its nodes, with their literals, are made on first need by
// parsing it again, which cannot fail since it parsed before.
func (c *Checker) Elems(n *Node) []Node {
	if n.Arr == nil && n.Nums != nil {
		p := Parser{Src: c.Src, generic: true}
		v, _ := p.Value(n.Offset)
		n.Arr = v.Arr
	}
	return n.Arr
}

// Lookup returns the field's value for validation, or nil when there is
// nothing to validate; ok is false if its absence is itself a problem.
func (c *Checker) Lookup(obj *Node, loc Path, name string, pr Presence) (v *Node, ok bool) {
	v = obj.Field(name)
	switch {
	case v == nil && pr == Required:
		c.Fail(loc.At(name), "missing", "Field required", obj, nil)
		return nil, false
	case v == nil, v.Kind == KindNull && pr == Optional:
		return nil, true
	}
	return v, true
}

// Model checks that a nested model's input is an object.
func (c *Checker) Model(loc Path, v *Node, class string) bool {
	if v.Kind == KindObject {
		return true
	}
	c.Fail(loc, "model_type", "Input should be a valid dictionary or instance of "+class, v,
		map[string]any{"class_name": class})
	return false
}

// ValueError reports a failed model validator at the model's loc.
func (c *Checker) ValueError(loc Path, obj *Node, text string) {
	// FastAPI's jsonable_encoder turns the ValueError in ctx into {}.
	c.Fail(loc, "value_error", "Value error, "+text, obj, map[string]any{"error": map[string]any{}})
}

// TextRule constrains a string field.
type TextRule struct {
	Min, Max int    // length bounds in characters; 0: none
	digits   int    // > 0: exactly this many ASCII digits, reported as pattern
	pattern  string // the pydantic pattern that digits stands for
}

var (
	AnyText     = TextRule{}
	MaloRule    = TextRule{digits: 11, pattern: `^\d{11}$`}
	DSOMPRule   = TextRule{digits: 13, pattern: `^\d{13}$`}
	MGARule     = TextRule{Min: 1, Max: 64}
	ProfileRule = TextRule{Min: 1, Max: 32}
)

// Text validates a string field into dst.
func Text[S ~string](c *Checker, obj *Node, loc Path, name string, pr Presence, r TextRule, dst *S) bool {
	v, ok := c.Lookup(obj, loc, name, pr)
	if v == nil {
		return ok
	}
	s, ok := c.Text(loc.At(name), v, r)
	if ok {
		*dst = S(s)
	}
	return ok
}

// Text validates a string value at loc against r.
func (c *Checker) Text(loc Path, v *Node, r TextRule) (string, bool) {
	if v.Kind != KindString {
		c.Fail(loc, "string_type", "Input should be a valid string", v, nil)
		return "", false
	}
	s := v.Str
	if r.Min > 0 || r.Max > 0 {
		n := utf8.RuneCountInString(s) // pydantic counts characters
		if r.Min > 0 && n < r.Min {
			c.Fail(loc, "string_too_short", "String should have at least "+Plural(r.Min, "character"), v,
				map[string]any{"min_length": r.Min})
			return "", false
		}
		if r.Max > 0 && n > r.Max {
			c.Fail(loc, "string_too_long", "String should have at most "+Plural(r.Max, "character"), v,
				map[string]any{"max_length": r.Max})
			return "", false
		}
	}
	if r.digits > 0 && !IsDigits(s, r.digits) {
		c.Fail(loc, "string_pattern_mismatch", "String should match pattern '"+r.pattern+"'", v,
			map[string]any{"pattern": r.pattern})
		return "", false
	}
	return s, true
}

// Plural spells a count with its noun, adding an s for any count but one.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// IsDigits matches ^\d{n}$ for ASCII digits. Python's \d would also match
// other scripts' digits; an identifier of the German market is ASCII.
func IsDigits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Literal is a Literal[...] type: the allowed strings and pydantic's
// rendering of them.
type Literal struct {
	Options  []string
	Expected string
}

// NewLiteral is the Literal of the options, with pydantic's spelling of
// them in messages.
func NewLiteral(options ...string) Literal {
	quoted := make([]string, len(options))
	for i, o := range options {
		quoted[i] = "'" + o + "'"
	}
	expected := quoted[len(quoted)-1]
	if len(quoted) > 1 {
		expected = strings.Join(quoted[:len(quoted)-1], ", ") + " or " + expected
	}
	return Literal{Options: options, Expected: expected}
}

var (
	SeriesKinds   = NewLiteral(string(pipeline.Production), string(pipeline.Consumption))
	SliceKinds    = NewLiteral(string(pipeline.Consumption), string(pipeline.Production))
	ForecastUnits = NewLiteral(string(pipeline.MW), string(pipeline.MWH))
	MeteredUnits  = NewLiteral(string(pipeline.MW), string(pipeline.MWH), string(pipeline.KWH))
	MeteringTypes = NewLiteral(string(pipeline.SLP), string(pipeline.TLP), string(pipeline.RLM), string(pipeline.IMSys))
)

// Choice validates a Literal field into dst.
func Choice[S ~string](c *Checker, obj *Node, loc Path, name string, pr Presence, l Literal, dst *S) bool {
	v, ok := c.Lookup(obj, loc, name, pr)
	if v == nil {
		return ok
	}
	return ChoiceValue(c, loc.At(name), v, l, dst)
}

// ChoiceValue validates the value of a Literal field at loc into dst.
func ChoiceValue[S ~string](c *Checker, loc Path, v *Node, l Literal, dst *S) bool {
	if v.Kind == KindString {
		for _, o := range l.Options {
			if v.Str == o {
				*dst = S(o)
				return true
			}
		}
	}
	c.Fail(loc, "literal_error", "Input should be "+l.Expected, v, map[string]any{"expected": l.Expected})
	return false
}

// Flag validates a bool field into dst, which holds the default. Unlike
// pydantic's lax mode, strings such as "true" and the numbers 0 and 1 are not
// booleans here.
func (c *Checker) Flag(obj *Node, loc Path, name string, dst *bool) bool {
	v, ok := c.Lookup(obj, loc, name, Defaulted)
	if v == nil {
		return ok
	}
	switch v.Kind {
	case KindBool:
		*dst = v.Bool
		return true
	case KindString:
		c.Fail(loc.At(name), "bool_parsing", "Input should be a valid boolean, unable to interpret input", v, nil)
	default:
		c.Fail(loc.At(name), "bool_type", "Input should be a valid boolean", v, nil)
	}
	return false
}

// DateField validates a date field into dst; an unset optional date leaves
// dst zero.
func (c *Checker) DateField(obj *Node, loc Path, name string, pr Presence, dst *pipeline.Day) bool {
	v, ok := c.Lookup(obj, loc, name, pr)
	if v == nil {
		return ok
	}
	return c.DateValue(loc.At(name), v, dst)
}

// DateValue validates the value of a date field at loc into dst.
func (c *Checker) DateValue(loc Path, v *Node, dst *pipeline.Day) bool {
	if v.Kind != KindString {
		c.Fail(loc, "date_type", "Input should be a valid date", v, nil)
		return false
	}
	d, p := ParseDate(v.Str)
	if p != nil {
		p.Loc = append([]string(nil), loc...)
		p.Input = v.Str
		c.Add(*p)
		return false
	}
	*dst = d
	return true
}

// Add records a problem that was built elsewhere.
func (c *Checker) Add(p Problem) {
	if !c.Full {
		c.Problems = append(c.Problems, p)
		c.Full = len(c.Problems) >= MaxProblems
	}
}

// Error texts of speedate, the date parser behind pydantic.
const (
	DateTooShort      = "input is too short"
	dateYearChar      = "invalid character in year"
	dateSeparator     = "invalid date separator, expected `-`"
	dateMonthChar     = "invalid character in month"
	dateDayChar       = "invalid character in day"
	dateMonthRange    = "month value is outside expected range of 1-12"
	dateDayRange      = "day value is outside expected range"
	DateExtraAtTheEnd = "unexpected extra characters at the end of the input"
)

// ParseDate accepts exactly YYYY-MM-DD. It checks in speedate's order, byte by
// byte and then the ranges, so that the error names the first wrong thing. A
// valid date followed by more (a time, a zone) is a date_parsing problem: the
// contract wants a calendar day, not an instant. The returned problem lacks
// loc and input.
func ParseDate(s string) (pipeline.Day, *Problem) {
	failed := func(text string) (pipeline.Day, *Problem) {
		return pipeline.Day{}, &Problem{
			Type: "date_from_datetime_parsing", Msg: "Input should be a valid date or datetime, " + text,
			Ctx: map[string]any{"error": text},
		}
	}
	if len(s) < 10 {
		return failed(DateTooShort)
	}
	num := func(b string) (int, bool) {
		n := 0
		for i := 0; i < len(b); i++ {
			if b[i] < '0' || b[i] > '9' {
				return 0, false
			}
			n = n*10 + int(b[i]-'0')
		}
		return n, true
	}
	year, ok := num(s[0:4])
	if !ok {
		return failed(dateYearChar)
	}
	if s[4] != '-' {
		return failed(dateSeparator)
	}
	month, ok := num(s[5:7])
	if !ok {
		return failed(dateMonthChar)
	}
	if s[7] != '-' {
		return failed(dateSeparator)
	}
	day, ok := num(s[8:10])
	if !ok {
		return failed(dateDayChar)
	}
	var last int
	switch month {
	case 1, 3, 5, 7, 8, 10, 12:
		last = 31
	case 4, 6, 9, 11:
		last = 30
	case 2:
		last = 28
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			last = 29
		}
	default:
		return failed(dateMonthRange)
	}
	if day < 1 || day > last {
		return failed(dateDayRange)
	}
	if len(s) > 10 {
		return pipeline.Day{}, &Problem{
			Type: "date_parsing", Msg: "Input should be a valid date in the format YYYY-MM-DD, " + DateExtraAtTheEnd,
			Ctx: map[string]any{"error": DateExtraAtTheEnd},
		}
	}
	return pipeline.NewDay(year, time.Month(month), day), nil
}

// PathDay validates a day given as a path parameter the way body dates are
// validated, so that GET /v1/forecasts/{delivery_day} answers a bad day with
// the same 422 shape: a *SchemaError with loc ["path", name].
func PathDay(name, value string) (pipeline.Day, error) {
	d, p := ParseDate(value)
	if p != nil {
		p.Loc = []string{"path", name}
		p.Input = value
		return pipeline.Day{}, &SchemaError{Problems: []Problem{*p}}
	}
	return d, nil
}

// Quantity validates a number that must be finite and not negative. Unlike
// pydantic's lax mode, a numeric string is not a number here.
func (c *Checker) Quantity(loc Path, v *Node) (float64, bool) {
	switch {
	case v.Kind == KindString:
		c.Fail(loc, "float_parsing", "Input should be a valid number, unable to parse string as a number", v, nil)
	case v.Kind != KindNumber:
		c.Fail(loc, "float_type", "Input should be a valid number", v, nil)
	case math.IsInf(v.Num, 0):
		c.Fail(loc, "finite_number", "Input should be a finite number", v, nil)
	case v.Num < 0:
		c.Fail(loc, "greater_than_equal", "Input should be greater than or equal to 0", v, map[string]any{"ge": 0})
	default:
		return v.Num, true
	}
	return 0, false
}

// Amount validates an optional quantity field into dst.
func (c *Checker) Amount(obj *Node, loc Path, name string, dst **float64) bool {
	v, ok := c.Lookup(obj, loc, name, Optional)
	if v == nil {
		return ok
	}
	f, ok := c.Quantity(loc.At(name), v)
	if ok {
		*dst = &f
	}
	return ok
}

// ListField looks up a field that must be a list. It returns nil when the
// field is absent (ok tells whether that is allowed) or not a list (reported).
func (c *Checker) ListField(obj *Node, loc Path, name string, pr Presence) (*Node, Path, bool) {
	v, ok := c.Lookup(obj, loc, name, pr)
	if v == nil {
		return nil, nil, ok
	}
	l := loc.At(name)
	if v.Kind != KindArray {
		c.Fail(l, "list_type", "Input should be a valid list", v, nil)
		return nil, l, false
	}
	return v, l, true
}

// Quantities validates a required list of quantities into dst. The common case,
// an array of valid numbers, costs one comparison per value and no copy.
func (c *Checker) Quantities(obj *Node, loc Path, name string, dst *[]float64) bool {
	v, l, ok := c.ListField(obj, loc, name, Required)
	if v == nil {
		return ok
	}
	if v.Nums != nil {
		ok := true
		for i, f := range v.Nums {
			if f >= 0 && f <= math.MaxFloat64 {
				continue
			}
			ok = false
			if c.Full {
				break
			}
			c.Quantity(l.Index(i), &c.Elems(v)[i])
		}
		if ok {
			*dst = v.Nums
		}
		return ok
	}
	out := make([]float64, len(v.Arr))
	ok = true
	for i := range v.Arr {
		if c.Full {
			return false
		}
		f, good := c.Quantity(l.Index(i), &v.Arr[i])
		out[i], ok = f, ok && good
	}
	if ok {
		*dst = out
	}
	return ok
}

// List validates a list of at least one model into dst. Items are validated
// even after one fails, because pydantic reports all of them.
func List[T any](c *Checker, obj *Node, loc Path, name string, pr Presence, item func(*Checker, Path, *Node) (T, bool), dst *[]T) bool {
	v, l, ok := c.ListField(obj, loc, name, pr)
	if v == nil {
		return ok
	}
	elems := c.Elems(v)
	if len(elems) == 0 {
		c.Fail(l, "too_short", "List should have at least 1 item after validation, not 0", v,
			map[string]any{"field_type": "List", "min_length": 1, "actual_length": 0})
		return false
	}
	out := make([]T, len(elems))
	ok = true
	for i := range elems {
		if c.Full {
			return false
		}
		x, good := item(c, l.Index(i), &elems[i])
		out[i], ok = x, ok && good
	}
	if ok {
		*dst = out
	}
	return ok
}

// DecodeObject parses a body and checks that it is an object, with FastAPI's
// body-level problems otherwise. It returns the Checker for the fields.
func DecodeObject(body []byte) (*Checker, *Node, error) {
	if len(body) == 0 {
		return nil, nil, missingBody()
	}
	// Starlette hands the bytes to json.loads, which decodes them as UTF-8
	// with an optional BOM; positions are counted in characters after it.
	src := body
	if len(src) >= 3 && src[0] == 0xef && src[1] == 0xbb && src[2] == 0xbf {
		src = src[3:]
	}
	if !utf8.Valid(src) {
		return nil, nil, jsonInvalid(src, FirstInvalidUTF8(src), MsgInvalidUTF8)
	}
	root, serr := Parse(src)
	if serr != nil {
		return nil, nil, jsonInvalid(src, serr.Offset, serr.Msg)
	}
	c := &Checker{Src: src}
	switch root.Kind {
	case KindObject:
		return c, &root, nil
	case KindNull:
		// FastAPI treats a JSON null body like no body.
		return nil, nil, missingBody()
	}
	return nil, nil, &SchemaError{Problems: []Problem{{
		Type: "model_attributes_type", Loc: []string{"body"},
		Msg:   "Input should be a valid dictionary or object to extract fields from",
		Input: c.Input(&root), Ctx: map[string]any{},
	}}}
}

func missingBody() error {
	return &SchemaError{Problems: []Problem{{
		Type: "missing", Loc: []string{"body"}, Msg: "Field required", Input: nil, Ctx: map[string]any{},
	}}}
}

func jsonInvalid(src []byte, off int, msg string) error {
	return &SchemaError{Problems: []Problem{{
		Type: "json_invalid", Loc: []string{"body", strconv.Itoa(utf8.RuneCount(src[:off]))},
		Msg: "JSON decode error", Input: map[string]any{}, Ctx: map[string]any{"error": msg},
	}}}
}

// FirstInvalidUTF8 returns the byte offset of the first invalid UTF-8
// sequence in b, or len(b) when there is none.
func FirstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// BalancingGroupPattern is the pattern of a balancing group's EIC as the
// API's model declares it: an EIC (pipeline.ValidEIC) of type X.
const BalancingGroupPattern = `^[0-9]{2}X[0-9A-Z-]{12}[0-9A-Z]$`

// NotUnicode reports a CSV cell that is not UTF-8, with the type pydantic
// gives bytes that do not decode; the input shows the cell with its broken
// bytes replaced, since a problem must render as JSON.
func NotUnicode(c *Checker, loc Path, cell []byte) {
	c.Fail(loc, "string_unicode", "Input should be a valid string, unable to parse raw data as a unicode string",
		&Node{Kind: KindString, Str: strings.ToValidUTF8(string(cell), "\uFFFD")}, nil)
}
