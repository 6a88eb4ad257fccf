package ingest

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/pipeline"
)

// path is the loc of a value. Children are made with append, so a child may
// share its parent's backing array with its siblings: a path must not be kept
// beyond the call it is passed to (fail copies it).
type path []string

func bodyPath() path { return append(make(path, 0, 12), "body") }

func (p path) at(name string) path { return append(p, name) }

func (p path) index(i int) path { return append(p, strconv.Itoa(i)) }

// presence is how a model field treats absence and null.
type presence uint8

const (
	// required: absence is a missing problem, null is validated (and fails).
	required presence = iota
	// optional: Optional[X] = None; absence and null both leave it unset.
	optional
	// defaulted: X = default; absence keeps the default, null is validated.
	defaulted
)

// checker validates a parsed body against a model and collects the problems
// in pydantic's order: fields in declaration order, objects in document order.
type checker struct {
	src      []byte
	problems []Problem
	full     bool
}

func (c *checker) err() error {
	if len(c.problems) == 0 {
		return nil
	}
	return &SchemaError{Problems: c.problems}
}

// fail records a problem unless the cap is reached (the input is not even
// converted then). ctx may be nil.
func (c *checker) fail(loc path, typ, msg string, input *node, ctx map[string]any) {
	if c.full {
		return
	}
	if ctx == nil {
		ctx = map[string]any{}
	}
	c.add(Problem{Type: typ, Loc: append([]string(nil), loc...), Msg: msg, Input: c.input(input), Ctx: ctx})
}

// input converts a node to the plain Go value FastAPI would echo: nil, bool,
// string, json.Number (spelled as Python prints it), []any, map[string]any.
func (c *checker) input(n *node) any {
	switch n.kind {
	case kindBool:
		return n.b
	case kindNumber:
		return pyNumber(n.str)
	case kindString:
		return n.str
	case kindArray:
		elems := c.elems(n)
		out := make([]any, len(elems))
		for i := range elems {
			out[i] = c.input(&elems[i])
		}
		return out
	case kindObject:
		out := make(map[string]any, len(n.obj))
		for i := range n.obj {
			out[n.obj[i].key] = c.input(&n.obj[i].val)
		}
		return out
	}
	return nil
}

// elems returns an array's elements as nodes. An all-number array was parsed
// into nums only; its nodes, with their literals, are made on first need by
// parsing it again, which cannot fail since it parsed before.
func (c *checker) elems(n *node) []node {
	if n.arr == nil && n.nums != nil {
		p := parser{src: c.src, generic: true}
		v, _ := p.value(n.off)
		n.arr = v.arr
	}
	return n.arr
}

// lookup returns the field's value for validation, or nil when there is
// nothing to validate; ok is false if its absence is itself a problem.
func (c *checker) lookup(obj *node, loc path, name string, pr presence) (v *node, ok bool) {
	v = obj.field(name)
	switch {
	case v == nil && pr == required:
		c.fail(loc.at(name), "missing", "Field required", obj, nil)
		return nil, false
	case v == nil, v.kind == kindNull && pr == optional:
		return nil, true
	}
	return v, true
}

// model checks that a nested model's input is an object.
func (c *checker) model(loc path, v *node, class string) bool {
	if v.kind == kindObject {
		return true
	}
	c.fail(loc, "model_type", "Input should be a valid dictionary or instance of "+class, v,
		map[string]any{"class_name": class})
	return false
}

// valueError reports a failed model validator at the model's loc.
func (c *checker) valueError(loc path, obj *node, text string) {
	// FastAPI's jsonable_encoder turns the ValueError in ctx into {}.
	c.fail(loc, "value_error", "Value error, "+text, obj, map[string]any{"error": map[string]any{}})
}

// textRule constrains a string field.
type textRule struct {
	min, max int    // length bounds in characters; 0: none
	digits   int    // > 0: exactly this many ASCII digits, reported as pattern
	pattern  string // the pydantic pattern that digits stands for
}

var (
	anyText     = textRule{}
	maloRule    = textRule{digits: 11, pattern: `^\d{11}$`}
	dsoMPRule   = textRule{digits: 13, pattern: `^\d{13}$`}
	mgaRule     = textRule{min: 1, max: 64}
	profileRule = textRule{min: 1, max: 32}
)

// text validates a string field into dst.
func text[S ~string](c *checker, obj *node, loc path, name string, pr presence, r textRule, dst *S) bool {
	v, ok := c.lookup(obj, loc, name, pr)
	if v == nil {
		return ok
	}
	s, ok := c.text(loc.at(name), v, r)
	if ok {
		*dst = S(s)
	}
	return ok
}

func (c *checker) text(loc path, v *node, r textRule) (string, bool) {
	if v.kind != kindString {
		c.fail(loc, "string_type", "Input should be a valid string", v, nil)
		return "", false
	}
	s := v.str
	if r.min > 0 || r.max > 0 {
		n := utf8.RuneCountInString(s) // pydantic counts characters
		if r.min > 0 && n < r.min {
			c.fail(loc, "string_too_short", "String should have at least "+plural(r.min, "character"), v,
				map[string]any{"min_length": r.min})
			return "", false
		}
		if r.max > 0 && n > r.max {
			c.fail(loc, "string_too_long", "String should have at most "+plural(r.max, "character"), v,
				map[string]any{"max_length": r.max})
			return "", false
		}
	}
	if r.digits > 0 && !isDigits(s, r.digits) {
		c.fail(loc, "string_pattern_mismatch", "String should match pattern '"+r.pattern+"'", v,
			map[string]any{"pattern": r.pattern})
		return "", false
	}
	return s, true
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// isDigits matches ^\d{n}$ for ASCII digits. Python's \d would also match
// other scripts' digits; an identifier of the German market is ASCII.
func isDigits(s string, n int) bool {
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

// literal is a Literal[...] type: the allowed strings and pydantic's
// rendering of them.
type literal struct {
	options  []string
	expected string
}

func newLiteral(options ...string) literal {
	quoted := make([]string, len(options))
	for i, o := range options {
		quoted[i] = "'" + o + "'"
	}
	expected := quoted[len(quoted)-1]
	if len(quoted) > 1 {
		expected = strings.Join(quoted[:len(quoted)-1], ", ") + " or " + expected
	}
	return literal{options: options, expected: expected}
}

var (
	seriesKinds   = newLiteral(string(pipeline.Production), string(pipeline.Consumption))
	sliceKinds    = newLiteral(string(pipeline.Consumption), string(pipeline.Production))
	forecastUnits = newLiteral(string(pipeline.MW), string(pipeline.MWH))
	meteredUnits  = newLiteral(string(pipeline.MW), string(pipeline.MWH), string(pipeline.KWH))
	meteringTypes = newLiteral(string(pipeline.SLP), string(pipeline.TLP), string(pipeline.RLM), string(pipeline.IMSys))
)

// choice validates a Literal field into dst.
func choice[S ~string](c *checker, obj *node, loc path, name string, pr presence, l literal, dst *S) bool {
	v, ok := c.lookup(obj, loc, name, pr)
	if v == nil {
		return ok
	}
	return choiceValue(c, loc.at(name), v, l, dst)
}

// choiceValue validates the value of a Literal field at loc into dst.
func choiceValue[S ~string](c *checker, loc path, v *node, l literal, dst *S) bool {
	if v.kind == kindString {
		for _, o := range l.options {
			if v.str == o {
				*dst = S(o)
				return true
			}
		}
	}
	c.fail(loc, "literal_error", "Input should be "+l.expected, v, map[string]any{"expected": l.expected})
	return false
}

// flag validates a bool field into dst, which holds the default. Unlike
// pydantic's lax mode, strings such as "true" and the numbers 0 and 1 are not
// booleans here.
func (c *checker) flag(obj *node, loc path, name string, dst *bool) bool {
	v, ok := c.lookup(obj, loc, name, defaulted)
	if v == nil {
		return ok
	}
	switch v.kind {
	case kindBool:
		*dst = v.b
		return true
	case kindString:
		c.fail(loc.at(name), "bool_parsing", "Input should be a valid boolean, unable to interpret input", v, nil)
	default:
		c.fail(loc.at(name), "bool_type", "Input should be a valid boolean", v, nil)
	}
	return false
}

// dateField validates a date field into dst; an unset optional date leaves
// dst zero.
func (c *checker) dateField(obj *node, loc path, name string, pr presence, dst *pipeline.Day) bool {
	v, ok := c.lookup(obj, loc, name, pr)
	if v == nil {
		return ok
	}
	return c.dateValue(loc.at(name), v, dst)
}

// dateValue validates the value of a date field at loc into dst.
func (c *checker) dateValue(loc path, v *node, dst *pipeline.Day) bool {
	if v.kind != kindString {
		c.fail(loc, "date_type", "Input should be a valid date", v, nil)
		return false
	}
	d, p := parseDate(v.str)
	if p != nil {
		p.Loc = append([]string(nil), loc...)
		p.Input = v.str
		c.add(*p)
		return false
	}
	*dst = d
	return true
}

// add records a problem that was built elsewhere.
func (c *checker) add(p Problem) {
	if !c.full {
		c.problems = append(c.problems, p)
		c.full = len(c.problems) >= MaxProblems
	}
}

// Error texts of speedate, the date parser behind pydantic.
const (
	dateTooShort      = "input is too short"
	dateYearChar      = "invalid character in year"
	dateSeparator     = "invalid date separator, expected `-`"
	dateMonthChar     = "invalid character in month"
	dateDayChar       = "invalid character in day"
	dateMonthRange    = "month value is outside expected range of 1-12"
	dateDayRange      = "day value is outside expected range"
	dateExtraAtTheEnd = "unexpected extra characters at the end of the input"
)

// parseDate accepts exactly YYYY-MM-DD. It checks in speedate's order, byte by
// byte and then the ranges, so that the error names the first wrong thing. A
// valid date followed by more (a time, a zone) is a date_parsing problem: the
// contract wants a calendar day, not an instant. The returned problem lacks
// loc and input.
func parseDate(s string) (pipeline.Day, *Problem) {
	failed := func(text string) (pipeline.Day, *Problem) {
		return pipeline.Day{}, &Problem{
			Type: "date_from_datetime_parsing", Msg: "Input should be a valid date or datetime, " + text,
			Ctx: map[string]any{"error": text},
		}
	}
	if len(s) < 10 {
		return failed(dateTooShort)
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
			Type: "date_parsing", Msg: "Input should be a valid date in the format YYYY-MM-DD, " + dateExtraAtTheEnd,
			Ctx: map[string]any{"error": dateExtraAtTheEnd},
		}
	}
	return pipeline.NewDay(year, time.Month(month), day), nil
}

// PathDay validates a day given as a path parameter the way body dates are
// validated, so that GET /v1/forecasts/{delivery_day} answers a bad day with
// the same 422 shape: a *SchemaError with loc ["path", name].
func PathDay(name, value string) (pipeline.Day, error) {
	d, p := parseDate(value)
	if p != nil {
		p.Loc = []string{"path", name}
		p.Input = value
		return pipeline.Day{}, &SchemaError{Problems: []Problem{*p}}
	}
	return d, nil
}

// quantity validates a number that must be finite and not negative. Unlike
// pydantic's lax mode, a numeric string is not a number here.
func (c *checker) quantity(loc path, v *node) (float64, bool) {
	switch {
	case v.kind == kindString:
		c.fail(loc, "float_parsing", "Input should be a valid number, unable to parse string as a number", v, nil)
	case v.kind != kindNumber:
		c.fail(loc, "float_type", "Input should be a valid number", v, nil)
	case math.IsInf(v.num, 0):
		c.fail(loc, "finite_number", "Input should be a finite number", v, nil)
	case v.num < 0:
		c.fail(loc, "greater_than_equal", "Input should be greater than or equal to 0", v, map[string]any{"ge": 0})
	default:
		return v.num, true
	}
	return 0, false
}

// amount validates an optional quantity field into dst.
func (c *checker) amount(obj *node, loc path, name string, dst **float64) bool {
	v, ok := c.lookup(obj, loc, name, optional)
	if v == nil {
		return ok
	}
	f, ok := c.quantity(loc.at(name), v)
	if ok {
		*dst = &f
	}
	return ok
}

// listField looks up a field that must be a list. It returns nil when the
// field is absent (ok tells whether that is allowed) or not a list (reported).
func (c *checker) listField(obj *node, loc path, name string, pr presence) (*node, path, bool) {
	v, ok := c.lookup(obj, loc, name, pr)
	if v == nil {
		return nil, nil, ok
	}
	l := loc.at(name)
	if v.kind != kindArray {
		c.fail(l, "list_type", "Input should be a valid list", v, nil)
		return nil, l, false
	}
	return v, l, true
}

// quantities validates a required list of quantities into dst. The common case,
// an array of valid numbers, costs one comparison per value and no copy.
func (c *checker) quantities(obj *node, loc path, name string, dst *[]float64) bool {
	v, l, ok := c.listField(obj, loc, name, required)
	if v == nil {
		return ok
	}
	if v.nums != nil {
		ok := true
		for i, f := range v.nums {
			if f >= 0 && f <= math.MaxFloat64 {
				continue
			}
			ok = false
			if c.full {
				break
			}
			c.quantity(l.index(i), &c.elems(v)[i])
		}
		if ok {
			*dst = v.nums
		}
		return ok
	}
	out := make([]float64, len(v.arr))
	ok = true
	for i := range v.arr {
		if c.full {
			return false
		}
		f, good := c.quantity(l.index(i), &v.arr[i])
		out[i], ok = f, ok && good
	}
	if ok {
		*dst = out
	}
	return ok
}

// list validates a list of at least one model into dst. Items are validated
// even after one fails, because pydantic reports all of them.
func list[T any](c *checker, obj *node, loc path, name string, pr presence, item func(*checker, path, *node) (T, bool), dst *[]T) bool {
	v, l, ok := c.listField(obj, loc, name, pr)
	if v == nil {
		return ok
	}
	elems := c.elems(v)
	if len(elems) == 0 {
		c.fail(l, "too_short", "List should have at least 1 item after validation, not 0", v,
			map[string]any{"field_type": "List", "min_length": 1, "actual_length": 0})
		return false
	}
	out := make([]T, len(elems))
	ok = true
	for i := range elems {
		if c.full {
			return false
		}
		x, good := item(c, l.index(i), &elems[i])
		out[i], ok = x, ok && good
	}
	if ok {
		*dst = out
	}
	return ok
}

// decodeObject parses a body and checks that it is an object, with FastAPI's
// body-level problems otherwise. It returns the checker for the fields.
func decodeObject(body []byte) (*checker, *node, error) {
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
		return nil, nil, jsonInvalid(src, firstInvalidUTF8(src), msgInvalidUTF8)
	}
	root, serr := parse(src)
	if serr != nil {
		return nil, nil, jsonInvalid(src, serr.off, serr.msg)
	}
	c := &checker{src: src}
	switch root.kind {
	case kindObject:
		return c, &root, nil
	case kindNull:
		// FastAPI treats a JSON null body like no body.
		return nil, nil, missingBody()
	}
	return nil, nil, &SchemaError{Problems: []Problem{{
		Type: "model_attributes_type", Loc: []string{"body"},
		Msg:   "Input should be a valid dictionary or object to extract fields from",
		Input: c.input(&root), Ctx: map[string]any{},
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

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// balancingGroupPattern is the pattern of a balancing group's EIC as the
// API's model declares it: an EIC (pipeline.ValidEIC) of type X.
const balancingGroupPattern = `^[0-9]{2}X[0-9A-Z-]{12}[0-9A-Z]$`

// notUnicode reports a CSV cell that is not UTF-8, with the type pydantic
// gives bytes that do not decode; the input shows the cell with its broken
// bytes replaced, since a problem must render as JSON.
func notUnicode(c *checker, loc path, cell []byte) {
	c.fail(loc, "string_unicode", "Input should be a valid string, unable to parse raw data as a unicode string",
		&node{kind: kindString, str: strings.ToValidUTF8(string(cell), "\uFFFD")}, nil)
}
