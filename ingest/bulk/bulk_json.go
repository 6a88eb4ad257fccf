package bulk

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/ingest"
	"github.com/schedbridge/schedbridge/ingest/databody"
	"github.com/schedbridge/schedbridge/ingest/tradeset"
)

// JSON bulk files have the API's body shape. Metered-data and profile files
// are streamed: the top level is scanned here, CPython's decisions copied from
// parser.object and parser.array, and each element of "entries" is parsed on
// its own by the API's parser and validated by the API's model, so that a
// file of a million entries never is in memory at once. Master-data and
// forecast files are small by nature and are decoded whole by the API's
// decoders.

// jsonStream is a window on a JSON document being read front to back. It
// keeps the count of lines and characters of the bytes it has passed, for
// the positions of Python's JSONDecodeError.
type jsonStream struct {
	src      io.Reader
	buf      []byte
	pos, end int   // buf[pos:end] is unread
	hold     int   // >= 0: buf[hold:] is kept too (a position to report)
	eof      bool  // src is exhausted
	err      error // a read error other than EOF
	started  bool  // the BOM check is done
	total    int64 // bytes read

	acc       int   // buf[:acc] is accounted in line, chars and lineStart
	line      int   // 1-based line of buf[acc]
	chars     int64 // characters before buf[acc]
	lineStart int64 // characters before the line of buf[acc]
}

func newJSONStream(src io.Reader) *jsonStream {
	return &jsonStream{src: src, buf: make([]byte, bulkBufferSize), hold: -1, line: 1}
}

// fill reads more input, keeping buf[pos:end] (and buf[hold:]); it grows the
// buffer when the kept part fills it. It returns false when nothing more
// can be read. Indices into buf change: pos and hold are adjusted.
func (s *jsonStream) fill() bool {
	if s.eof || s.err != nil {
		return false
	}
	keep := s.pos
	if s.hold >= 0 && s.hold < keep {
		keep = s.hold
	}
	if keep > 0 {
		s.account(keep)
		s.end = copy(s.buf, s.buf[keep:s.end])
		s.pos -= keep
		s.acc -= keep
		if s.hold >= 0 {
			s.hold -= keep
		}
	}
	if s.end == len(s.buf) {
		grown := make([]byte, 2*len(s.buf))
		copy(grown, s.buf[:s.end])
		s.buf = grown
	}
	for {
		n, err := s.src.Read(s.buf[s.end:])
		s.end += n
		s.total += int64(n)
		if err == io.EOF {
			s.eof = true
		} else if err != nil {
			s.err = err
		}
		if !s.started && (s.end >= 3 || s.eof || s.err != nil) {
			s.started = true
			// json.loads of bytes drops a UTF-8 BOM; positions count after it.
			if s.end >= 3 && s.buf[0] == 0xef && s.buf[1] == 0xbb && s.buf[2] == 0xbf {
				s.pos, s.acc = 3, 3
			}
		}
		if n > 0 || s.eof || s.err != nil {
			return n > 0
		}
	}
}

// account counts the lines and characters of buf[acc:to]. Positions passed
// are always at a character boundary.
func (s *jsonStream) account(to int) {
	if to <= s.acc {
		return
	}
	b := s.buf[s.acc:to]
	if n := bytes.Count(b, []byte{'\n'}); n > 0 {
		s.line += n
		last := bytes.LastIndexByte(b, '\n')
		s.lineStart = s.chars + int64(utf8.RuneCount(b[:last+1]))
	}
	s.chars += int64(utf8.RuneCount(b))
	s.acc = to
}

// position returns Python's line, column and character of buf[i], which must
// not be before an earlier position asked for.
func (s *jsonStream) position(i int) (line, col int, char int64) {
	s.account(i)
	return s.line, int(s.chars-s.lineStart) + 1, s.chars
}

// peek skips whitespace and returns the byte at pos, or -1 at the end.
func (s *jsonStream) peek() int {
	for {
		for s.pos < s.end {
			switch c := s.buf[s.pos]; c {
			case ' ', '\t', '\n', '\r':
				s.pos++
			default:
				return int(c)
			}
		}
		if !s.fill() {
			return -1
		}
	}
}

// peekAfter is peek that keeps the position at, which it returns adjusted.
func (s *jsonStream) peekAfter(at int) (int, int) {
	s.hold = at
	c := s.peek()
	at, s.hold = s.hold, -1
	return c, at
}

// errTooLarge is a value longer than the limit it was read with.
var errTooLarge = errors.New("value too large")

// value parses the JSON value at pos with p, reading until the whole value
// is in the window, and returns it with its length. Offsets in the node are
// relative to pos, p.src is the window. A syntax error is returned with its
// offset relative to pos; a value longer than limit gives errTooLarge.
//
// depth is the nesting depth of the value in the document, which counts
// towards the parser's limit as it does in the API.
func (s *jsonStream) value(p *ingest.Parser, depth, limit int) (ingest.Node, int, *ingest.SyntaxError, error) {
	want := jsonWindow
	for {
		for s.end-s.pos < want && s.fill() {
		}
		if s.err != nil {
			return ingest.Node{}, 0, nil, s.err
		}
		win := s.buf[s.pos:s.end]
		p.Src, p.Err, p.Depth = win, nil, depth
		v, j := p.Value(0)
		if p.Err == nil && (j < len(win) || s.eof) {
			return v, j, nil, nil
		}
		// A failure near the end of the window, or an unterminated string,
		// may only be the window's end: read on. Anything else is the error
		// the whole document has at that place.
		truncated := p.Err == nil || p.Err.Msg == ingest.MsgUnterminated || p.Err.Offset >= len(win)-16
		if s.eof || !truncated {
			// The API checks UTF-8 before it parses: an invalid byte before
			// or at the error is the error.
			if bad := ingest.FirstInvalidUTF8(win[:min(len(win), p.Err.Offset+utf8.UTFMax)]); bad <= p.Err.Offset {
				return ingest.Node{}, 0, &ingest.SyntaxError{Offset: bad, Msg: ingest.MsgInvalidUTF8}, nil
			}
			return ingest.Node{}, 0, p.Err, nil
		}
		if len(win) >= limit {
			return ingest.Node{}, 0, nil, errTooLarge
		}
		want = min(2*len(win), limit)
	}
}

// jsonInvalid reports malformed JSON at buf[i]. Like the API it is the only
// problem of the file: the problems found before it are dropped.
func (r *bulkRun) jsonInvalid(s *jsonStream, i int, msg string) {
	if i < s.end && s.buf[i] >= utf8.RuneSelf && (utf8.FullRune(s.buf[i:s.end]) || s.eof) {
		if c, size := utf8.DecodeRune(s.buf[i:s.end]); c == utf8.RuneError && size <= 1 {
			msg = ingest.MsgInvalidUTF8 // the API checks UTF-8 first
		}
	}
	line, col, char := s.position(i)
	r.problems, r.count = nil, 0
	r.held = nil
	r.add(jsonInvalidProblem(line, col, char, msg))
}

func jsonInvalidProblem(line, col int, char int64, msg string) ingest.FileProblem {
	return ingest.FileProblem{
		Line: line, Type: "json_invalid", Loc: []any{"body", char},
		Msg:   fmt.Sprintf("JSON decode error: %s: line %d column %d (char %d)", msg, line, col, char),
		Input: map[string]any{}, Ctx: map[string]any{"error": msg},
	}
}

// streamFailed turns a failed read of the stream into DecodeBulk's result.
func (r *bulkRun) streamFailed(s *jsonStream) error {
	if s.err != nil {
		return r.readFailed(s.err)
	}
	return nil
}

// jsonEntries decodes a metered-data or profile file: {"entries": [...],
// "validate_only": bool}, with members in any order; unknown members are
// ignored, as by the API.
func (r *bulkRun) jsonEntries(src io.Reader) error {
	s := newJSONStream(src)
	c := s.peek()
	if c != '{' {
		if s.err != nil {
			return r.readFailed(s.err)
		}
		// Not an object (or empty): the API's answer, from the whole body.
		return r.jsonWhole(s)
	}
	s.pos++
	p := &ingest.Parser{Keys: make(map[string]string)}
	entriesSeen := false
	if c = s.peek(); c == '}' {
		s.pos++
	} else {
		for {
			if c != '"' {
				r.jsonInvalid(s, s.pos, ingest.MsgExpectingName)
				return r.streamFailed(s)
			}
			kn, n, serr, err := s.value(p, 1, maxEntryBytes)
			if err != nil {
				return r.valueFailed(s, err, "a member name")
			}
			if serr != nil {
				r.jsonInvalid(s, s.pos+serr.Offset, serr.Msg)
				return nil
			}
			if !utf8.Valid(p.Src[:n]) {
				r.jsonInvalid(s, s.pos+ingest.FirstInvalidUTF8(p.Src[:n]), ingest.MsgInvalidUTF8)
				return nil
			}
			key := kn.Str
			s.pos += n
			if c = s.peek(); c != ':' {
				r.jsonInvalid(s, s.pos, ingest.MsgExpectingColon)
				return r.streamFailed(s)
			}
			s.pos++
			c = s.peek()
			var done bool
			if key == "entries" && c == '[' && !entriesSeen {
				done, err = r.jsonList(s, p)
			} else {
				done, err = r.jsonMember(s, p, key, entriesSeen)
			}
			if err != nil || !done {
				return err
			}
			entriesSeen = entriesSeen || key == "entries"
			if c = s.peek(); c == '}' {
				s.pos++
				break
			}
			if c != ',' {
				r.jsonInvalid(s, s.pos, ingest.MsgExpectingComma)
				return r.streamFailed(s)
			}
			s.pos++
			var comma int
			if c, comma = s.peekAfter(s.pos - 1); c == '}' {
				r.jsonInvalid(s, comma, ingest.MsgTrailingObject)
				return nil
			}
		}
	}
	if c = s.peek(); c != -1 {
		r.jsonInvalid(s, s.pos, ingest.MsgExtraData)
		return nil
	}
	if s.err != nil {
		return r.readFailed(s.err)
	}
	if !entriesSeen {
		r.add(ingest.FileProblem{Type: "missing", Loc: []any{"body", "entries"}, Msg: "Field required"})
	}
	return nil
}

// valueFailed handles an error of jsonStream.value.
func (r *bulkRun) valueFailed(s *jsonStream, err error, what string) error {
	if errors.Is(err, errTooLarge) {
		line, _, _ := s.position(s.pos)
		r.add(ingest.FileProblem{Line: line, Type: ingest.ProblemFileTooLarge,
			Msg: fmt.Sprintf("%s starting on line %d is larger than the limit", what, line)})
		return nil
	}
	return r.readFailed(err)
}

// readValue reads the next value of the stream and reports its syntax and
// encoding problems; ok is false when the file ended with a problem (err is
// then a read error, if any). The value is named for messages as the member
// key, or key[index] for an element; the name is only built on failure, as
// this runs once per entry.
func (r *bulkRun) readValue(s *jsonStream, p *ingest.Parser, depth, limit int, key string, index int) (ingest.Node, int, bool, error) {
	v, n, serr, err := s.value(p, depth, limit)
	if err != nil {
		what := fmt.Sprintf("the member %q", key)
		if index >= 0 {
			what = fmt.Sprintf("%s[%d]", key, index)
		}
		return v, n, false, r.valueFailed(s, err, what)
	}
	if serr != nil {
		r.jsonInvalid(s, s.pos+serr.Offset, serr.Msg)
		return v, n, false, nil
	}
	if !utf8.Valid(p.Src[:n]) {
		r.jsonInvalid(s, s.pos+ingest.FirstInvalidUTF8(p.Src[:n]), ingest.MsgInvalidUTF8)
		return v, n, false, nil
	}
	return v, n, true, nil
}

// jsonMember reads a top-level member other than the streamed entries list.
// done is false when the file ended with a problem.
func (r *bulkRun) jsonMember(s *jsonStream, p *ingest.Parser, key string, entriesSeen bool) (done bool, err error) {
	v, n, ok, err := r.readValue(s, p, 1, int(min(r.opt.MaxDocumentBytes, 1<<30)), key, -1)
	if !ok {
		return false, err
	}
	switch key {
	case "entries":
		line, _, _ := s.position(s.pos)
		if entriesSeen {
			r.add(ingest.FileProblem{Line: line, Type: "value_error", Loc: []any{"body", "entries"},
				Msg: `Value error, the file has more than one "entries" member; a bulk file must have exactly one`})
			break
		}
		// Not a list: the API's problem for it.
		r.c.Src = p.Src
		obj := ingest.Node{Kind: ingest.KindObject, Members: []ingest.Member{{Key: "entries", Val: v}}}
		r.c.ListField(&obj, ingest.BodyPath(), "entries", ingest.Required)
		r.takeChecker(line, 0, "")
	case "validate_only":
		line, _, _ := s.position(s.pos)
		r.c.Src = p.Src
		obj := ingest.Node{Kind: ingest.KindObject, Members: []ingest.Member{{Key: "validate_only", Val: v}}}
		vo := false
		r.held = r.held[:0]
		if r.c.Flag(&obj, ingest.BodyPath(), "validate_only", &vo) && vo {
			// Nothing of the file is to be staged: from here on its
			// entries are only validated and hashed, and the batch being
			// filled is dropped, so that a caller that stages as it
			// reads (the inbox) writes nothing it would roll back. Once
			// asked for, validation only stays, whatever a repeated
			// member says after it.
			r.res.ValidateOnly = true
			r.emit = nil
			r.metered, r.profiles, r.backing = nil, nil, nil
		}
		for _, pr := range r.c.Problems {
			fp := ingest.FileProblemOf(pr)
			fp.Line = line
			r.held = append(r.held, fp)
			r.stop()
		}
		r.c.Problems, r.c.Full = r.c.Problems[:0], false
	}
	s.pos += n
	return true, nil
}

// jsonList streams the elements of "entries"; pos is at its '['.
func (r *bulkRun) jsonList(s *jsonStream, p *ingest.Parser) (done bool, err error) {
	listLine, _, _ := s.position(s.pos)
	s.pos++
	c := s.peek()
	if c == ']' {
		s.pos++
		r.add(ingest.FileProblem{Line: listLine, Type: "too_short", Loc: []any{"body", "entries"},
			Msg: "List should have at least 1 item after validation, not 0", Input: []any{},
			Ctx: map[string]any{"field_type": "List", "min_length": 1, "actual_length": 0}})
		return true, nil
	}
	loc := ingest.BodyPath().At("entries")
	for i := 0; ; i++ {
		if c == -1 {
			r.jsonInvalid(s, s.pos, ingest.MsgExpectingValue)
			return false, r.streamFailed(s)
		}
		v, n, ok, err := r.readValue(s, p, 2, maxEntryBytes, "entries", i)
		if !ok {
			return false, err
		}
		if err := r.jsonEntry(s, p, loc.Index(i), i, &v); err != nil {
			return false, err
		}
		s.pos += n
		if c = s.peek(); c == ']' {
			s.pos++
			return true, nil
		}
		if c != ',' {
			r.jsonInvalid(s, s.pos, ingest.MsgExpectingComma)
			return false, r.streamFailed(s)
		}
		s.pos++
		var comma int
		if c, comma = s.peekAfter(s.pos - 1); c == ']' {
			r.jsonInvalid(s, comma, ingest.MsgTrailingArray)
			return false, nil
		}
	}
}

// jsonEntry validates one element of entries, parsed at pos.
func (r *bulkRun) jsonEntry(s *jsonStream, p *ingest.Parser, loc ingest.Path, i int, v *ingest.Node) error {
	r.c.Src = p.Src
	line, _, _ := s.position(s.pos)
	o := origin{index: i, line: line}
	var values int
	var err error
	switch r.kind {
	case BulkMetered:
		e, ok := databody.MeteredModel(&r.c, loc, v)
		values = len(e.Values)
		r.takeChecker(line, 0, "")
		if ok {
			err = r.meteredEntry(e, o, true, r.valuesText(p.Src, v.Field("values")))
		}
	case BulkProfiles:
		e, ok := databody.ProfileModel(&r.c, loc, v)
		values = len(e.ValuesKWh)
		r.takeChecker(line, 0, "")
		if ok {
			var id uint32
			id, e.MGA, e.Profile = r.pair(e.MGA, e.Profile)
			err = r.profileEntry(e, id, o, true, r.valuesText(p.Src, v.Field("values_kwh")))
		}
	}
	if err != nil {
		return err
	}
	return r.counted(values)
}

// jsonWhole decodes a metered-data or profile file whose top level is not an
// object: it is read whole and given to the API's decoder, whose answer
// (missing body, not an object, malformed JSON) is the file's. pos is at the
// first character that is not whitespace.
func (r *bulkRun) jsonWhole(s *jsonStream) error {
	line, col, char := s.position(s.pos)
	body, err := r.readRest(s)
	if err != nil || body == nil {
		return err
	}
	switch {
	case s.total == 0:
		r.add(ingest.FileProblem{Type: "missing", Loc: []any{"body"}, Msg: "Field required"})
	case len(body) == 0:
		r.add(jsonInvalidProblem(line, col, char, ingest.MsgExpectingValue))
	default:
		if _, _, err = ingest.DecodeObject(body); err != nil {
			r.apiError(err, body, docPos{line: line, col: col, char: char})
		}
	}
	return nil
}

// readRest reads the rest of the stream, at most MaxDocumentBytes; it
// reports a larger rest as a problem and returns nil then.
func (r *bulkRun) readRest(s *jsonStream) ([]byte, error) {
	limit := r.opt.MaxDocumentBytes
	for !s.eof && s.err == nil && int64(s.end-s.pos) <= limit {
		s.fill()
	}
	if s.err != nil {
		return nil, r.readFailed(s.err)
	}
	if int64(s.end-s.pos) > limit {
		r.tooLarge()
		return nil, nil
	}
	return s.buf[s.pos:s.end], nil
}

// tooLarge reports a document over MaxDocumentBytes.
func (r *bulkRun) tooLarge() {
	r.add(ingest.FileProblem{Type: ingest.ProblemFileTooLarge,
		Msg: fmt.Sprintf("file too large: a %s %s document is read whole and may have at most %d bytes (after decompression)",
			r.kind, strings.ToUpper(string(r.format)), r.opt.MaxDocumentBytes)})
}

// jsonDocument decodes a master-data, forecast or trades file with the API's
// decoder.
func (r *bulkRun) jsonDocument(src io.Reader) error {
	body, err := io.ReadAll(io.LimitReader(src, r.opt.MaxDocumentBytes+1))
	if err != nil {
		return r.readFailed(err)
	}
	if int64(len(body)) > r.opt.MaxDocumentBytes {
		r.tooLarge()
		return nil
	}
	switch r.kind {
	case BulkMasterData:
		sub, err := databody.DecodeMasterData(body, r.opt.Rules)
		if err != nil {
			r.apiError(err, body, docPos{line: 1, col: 1})
			return nil
		}
		r.res.Entries, r.res.ValidateOnly, r.res.InputHash = len(sub.Locations), sub.ValidateOnly, sub.InputHash
		return r.emitWhole(BulkBatch{Locations: sub.Locations})
	case BulkForecasts:
		sub, err := databody.DecodeForecast(body, r.opt.Rules)
		if err != nil {
			r.apiError(err, body, docPos{line: 1, col: 1})
			return nil
		}
		r.res.Entries, r.res.ValidateOnly, r.res.InputHash = 1, sub.ValidateOnly, sub.InputHash
		for _, s := range sub.Forecast.Series {
			r.res.Values += int64(len(s.Values))
		}
		return r.emitWhole(BulkBatch{Forecast: &sub.Forecast, Canonical: sub.Canonical})
	case BulkTrades:
		sub, err := tradeset.DecodeDocument(body, nil, r.opt.Rules)
		if err != nil {
			r.apiError(err, body, docPos{line: 1, col: 1})
			return nil
		}
		r.res.Entries, r.res.ValidateOnly, r.res.InputHash = len(sub.Set.Trades), sub.ValidateOnly, sub.InputHash
		for _, t := range sub.Set.Trades {
			r.res.Values += int64(len(t.Values))
		}
		return r.emitWhole(BulkBatch{Trades: &sub.Set, Canonical: sub.Canonical})
	}
	return nil
}

// emitWhole hands over the one batch of a document that is validated whole
// (master data, a forecast), when emit is set.
func (r *bulkRun) emitWhole(b BulkBatch) error {
	if r.emit == nil {
		return nil
	}
	if err := r.emit(b); err != nil {
		return fmt.Errorf("emit batch of %s: %w", r.name, err)
	}
	return nil
}

// docPos is where a document read whole starts in the file.
type docPos struct {
	line, col int
	char      int64
}

// businessLoc finds the entity a business message names ("locations[3]",
// "series[0]", "locations[2].slices[1]", "malo_mapping['…']").
var (
	businessLoc = regexp.MustCompile(`^(\w+)\[(\d+)\](?:\.(\w+)\[(\d+)\])?`)
	businessKey = regexp.MustCompile(`^(\w+)\['([^']*)'\]`)
)

// apiError converts an error of an API decoder on body, which starts in the
// file at at, into problems.
func (r *bulkRun) apiError(err error, body []byte, at docPos) {
	var se *ingest.SchemaError
	var be *ingest.BusinessError
	switch {
	case errors.As(err, &se):
		src := body
		if len(src) >= 3 && src[0] == 0xef && src[1] == 0xbb && src[2] == 0xbf {
			src = src[3:]
		}
		for _, p := range se.Problems {
			fp := ingest.FileProblemOf(p)
			if p.Type == "json_invalid" && len(p.Loc) == 2 {
				char, _ := strconv.Atoi(p.Loc[1])
				msg, _ := p.Ctx["error"].(string)
				line, col := charPosition(src, char)
				if line == 1 {
					col += at.col - 1
				}
				fp = jsonInvalidProblem(line+at.line-1, col, int64(char)+at.char, msg)
			}
			r.add(fp)
		}
	case errors.As(err, &be):
		for _, m := range be.Messages {
			fp := ingest.FileProblem{Type: ingest.ProblemBusiness, Msg: m}
			if g := businessKey.FindStringSubmatch(m); g != nil {
				fp.Loc = []any{"body", g[1], g[2]}
			} else if g := businessLoc.FindStringSubmatch(m); g != nil {
				fp.Loc = []any{"body", g[1]}
				n, _ := strconv.Atoi(g[2])
				fp.Loc = append(fp.Loc, n)
				if g[3] != "" {
					n, _ := strconv.Atoi(g[4])
					fp.Loc = append(fp.Loc, g[3], n)
				}
			}
			r.add(fp)
		}
		// The API keeps the first 1000 messages but counts them all.
		r.count += be.Total - len(be.Messages)
	default:
		r.add(ingest.FileProblem{Type: "value_error", Msg: err.Error()})
	}
}

// charPosition returns Python's 1-based line and column of the char-th
// character of src.
func charPosition(src []byte, char int) (line, col int) {
	line, col = 1, 1
	for i, n := 0, 0; i < len(src) && n < char; n++ {
		c, size := utf8.DecodeRune(src[i:])
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return line, col
}

// valuesText writes the canonical JSON of a valid list of values for the
// hash, copying the literals that are spelled canonically already (see
// csvfile.ParseFloat). It returns nil when nothing is hashed any more, or for a
// list that was not parsed as numbers only.
func (r *bulkRun) valuesText(src []byte, list *ingest.Node) []byte {
	if r.failed() || list == nil || list.Nums == nil {
		return nil
	}
	r.text = appendCanonicalNumbers(r.text[:0], src[list.Offset+1:], list.Nums)
	return r.text
}

// appendCanonicalNumbers appends the canonical JSON of nums, the numbers of
// the valid JSON array whose content (after '[') is src.
func appendCanonicalNumbers(dst, src []byte, nums []float64) []byte {
	i := 0
	for j, f := range nums {
		for src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r' {
			i++
		}
		start := i
		canon := src[i] != '-'
		if !canon {
			i++
		}
		for i < len(src) && src[i]-'0' <= 9 {
			i++
		}
		digits := i - start
		if i < len(src) && src[i] == '.' {
			i++
			frac := i
			for i < len(src) && src[i]-'0' <= 9 {
				i++
			}
			digits += i - frac
			if i-frac > 6 || src[i-1] == '0' {
				canon = false
			}
		}
		if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
			canon = false
			for i++; i < len(src) && (src[i] == '+' || src[i] == '-' || src[i]-'0' <= 9); i++ {
			}
		}
		if j > 0 {
			dst = append(dst, ',')
		}
		if canon && digits <= 15 {
			dst = append(dst, src[start:i]...)
		} else {
			dst = ingest.AppendJSONFloat(dst, f)
		}
		for src[i] != ',' && src[i] != ']' {
			i++
		}
		i++
	}
	return dst
}
