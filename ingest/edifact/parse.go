package edifact

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// delims are the service characters of one interchange.
type delims struct {
	comp, elem, term, rel byte
	// hasRel is false when the UNA names no release character (a space in
	// its place) and for the UNOB defaults, which have none.
	hasRel bool
}

// defaultDelims apply when there is no UNA (syntax levels A and C).
var defaultDelims = delims{comp: ':', elem: '+', term: '\'', rel: '?', hasRel: true}

// unobDelims are the defaults of syntax level B without UNA: the information
// separators IS1 (component), IS3 (element) and IS4 (segment), no release
// character.
var unobDelims = delims{comp: 0x1F, elem: 0x1D, term: 0x1C}

// knownSyntax are the syntax identifiers of ISO 9735 (UNB S001/0001).
var knownSyntax = map[string]bool{
	"UNOA": true, "UNOB": true, "UNOC": true, "UNOD": true, "UNOE": true,
	"UNOF": true, "UNOG": true, "UNOH": true, "UNOI": true, "UNOJ": true,
	"UNOK": true, "UNOX": true, "UNOY": true, "UNOW": true,
}

// How the bytes of a value become a Go string.
const (
	csUTF8   = iota // valid UTF-8 (also a UNOC file that is really UTF-8)
	csLatin1        // UNOC (ISO 8859-1) bytes that are not valid UTF-8
	csRepair        // other syntaxes with invalid UTF-8: invalid bytes become U+FFFD
)

// segment is one segment as found in the data: its number (UNB = 1), its tag
// and its bytes without the terminator, the tag included.
type segment struct {
	n   int
	tag []byte
	raw []byte
}

type parser struct {
	data    []byte
	pos     int
	d       delims
	n       int // segments read so far
	charset int
	// intern shares the strings of short values that repeat in every
	// message (qualifiers, code lists, party ids, process ids), which saves
	// most allocations of a large interchange.
	intern map[string]string
	// refs and parties collect a message's RFF and NAD; at UNT they are
	// copied into slices of exact size, one allocation each.
	refs    []mako.Reference
	parties []mako.Party
	// txs collects the transactions of the current UTILMD message. Which of
	// them are kept is known only at UNT (RFF+Z13 comes after the series
	// segments), so they wait here; the slice is reused from message to
	// message and costs no allocation once it has grown to the most
	// transactions of one message.
	txs []transaction
	// series is a slab from which UTILMD messages take the SeriesInfo of
	// their kept transactions, so that a file of thousands of them does not
	// allocate once per message; unhs bounds the messages of the file, so
	// that a small file gets a small slab.
	series []mako.SeriesInfo
	unhs   int
}

// seriesSlab is how many SeriesInfo one allocation of the slab holds at
// most, unless a single message keeps more transactions than that.
const seriesSlab = 64

// transaction is one UTILMD transaction while its message is read.
type transaction struct {
	info mako.SeriesInfo
	// series is set once the transaction has its IDE+24 or a series segment
	// (DTM+158/159, CCI+Z20/Z19/15, CAV). A message-level RFF+Z13 before the
	// first IDE opens the implicit first transaction without setting it, so
	// that a message without series segments keeps no transaction.
	series bool
	// err is the first unreadable DTM+158/159 of the transaction. It fails
	// the interchange only if the transaction is kept, which RFF+Z13
	// decides, and that may come after the date.
	err error
}

func newParser(data []byte) *parser {
	p := &parser{data: data, d: defaultDelims}
	if len(data) > 8<<10 {
		// A small file repeats too little for the map to pay off.
		p.intern = make(map[string]string, 256)
	}
	return p
}

// msgState is the message between its UNH and its UNT.
type msgState struct {
	msg   mako.Message
	start int // segment number of the UNH
	bgm   bool
	texts []string
}

// Parse reads one EDIFACT interchange (optional UNA, UNB..UNZ) into its
// messages. It checks the envelope: UNT segment counts and references, the
// UNZ message count and reference. Any violation, and any data it cannot
// read, is a pipeline.Invalid error naming the segment number (UNB = 1) and
// tag. Parse never panics on malformed input.
func Parse(data []byte) (*mako.Interchange, error) {
	p := newParser(data)
	if err := p.serviceAdvice(); err != nil {
		return nil, err
	}
	seg, ok, err := p.next()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, pipeline.Errorf(pipeline.Invalid, "no UNB: the data holds no segment")
	}
	if string(seg.tag) != "UNB" {
		return nil, segErr(seg, "no UNB: an interchange starts with UNB")
	}
	ic := &mako.Interchange{}
	p.unhs = bytes.Count(data, []byte("UNH"))
	if n := p.unhs; n > 0 {
		// An upper bound (the text may contain "UNH" elsewhere) that saves
		// growing a slice of large structs; capped so that hostile input
		// cannot make it reserve much memory.
		ic.Messages = make([]mako.Message, 0, min(n, 4096))
	}
	if err := p.unb(seg, ic); err != nil {
		return nil, err
	}

	var cur *msgState
	var groups, groupMsgs int
	var groupRef string
	groupOpen := false
	last := seg
	for {
		seg, ok, err := p.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			if cur != nil {
				return nil, pipeline.Errorf(pipeline.Invalid, "missing UNZ: the data ends inside message %q (UNH in segment %d) after segment %d (%s)",
					cur.msg.Ref, cur.start, last.n, last.tag)
			}
			return nil, pipeline.Errorf(pipeline.Invalid, "missing UNZ: the data ends after segment %d (%s)", last.n, last.tag)
		}
		last = seg
		switch string(seg.tag) {
		case "UNH":
			if cur != nil {
				return nil, segErr(seg, "message %q (UNH in segment %d) is not closed by UNT", cur.msg.Ref, cur.start)
			}
			cur, err = p.unh(seg)
			if err != nil {
				return nil, err
			}
			if groupOpen {
				groupMsgs++
			}
		case "UNT":
			if cur == nil {
				return nil, segErr(seg, "UNT without UNH")
			}
			if err := p.unt(seg, cur); err != nil {
				return nil, err
			}
			ic.Messages = append(ic.Messages, cur.msg)
			cur = nil
		case "UNG":
			if cur != nil || groupOpen {
				return nil, segErr(seg, "functional group opened inside a message or group")
			}
			groupOpen, groupMsgs, groups = true, 0, groups+1
			groupRef = p.str(p.field(seg, 4, 0))
		case "UNE":
			if cur != nil || !groupOpen {
				return nil, segErr(seg, "UNE without UNG")
			}
			n, ok := atoi(p.field(seg, 0, 0))
			if !ok {
				return nil, segErr(seg, "message count %q is not a number", p.str(p.field(seg, 0, 0)))
			}
			if n != groupMsgs {
				return nil, segErr(seg, "message count %d, counted %d", n, groupMsgs)
			}
			if ref := p.str(p.field(seg, 1, 0)); ref != groupRef {
				return nil, segErr(seg, "group reference %q differs from UNG %q", ref, groupRef)
			}
			groupOpen = false
		case "UNZ":
			if cur != nil {
				return nil, segErr(seg, "message %q (UNH in segment %d) is not closed by UNT", cur.msg.Ref, cur.start)
			}
			if groupOpen {
				return nil, segErr(seg, "functional group %q is not closed by UNE", groupRef)
			}
			if err := p.unz(seg, ic, groups); err != nil {
				return nil, err
			}
			return ic, nil
		case "UNB":
			return nil, segErr(seg, "second UNB inside interchange %q", ic.Ref)
		default:
			if cur == nil {
				return nil, segErr(seg, "segment outside a message (no UNH before it)")
			}
			if err := p.body(seg, cur); err != nil {
				return nil, err
			}
		}
	}
}

// serviceAdvice skips a UTF-8 byte order mark and leading blanks and reads
// the UNA, if any. Without UNA the UNOB separators are recognised by the
// byte after "UNB".
func (p *parser) serviceAdvice() error {
	p.pos = 0
	if bytes.HasPrefix(p.data, []byte("\xEF\xBB\xBF")) {
		p.pos = 3
	}
	for p.pos < len(p.data) && isBlank(p.data[p.pos]) {
		p.pos++
	}
	rest := p.data[p.pos:]
	if !bytes.HasPrefix(rest, []byte("UNA")) {
		if len(rest) > 3 && bytes.HasPrefix(rest, []byte("UNB")) && rest[3] == unobDelims.elem {
			p.d = unobDelims
		}
		return nil
	}
	if len(rest) < 9 {
		return pipeline.Errorf(pipeline.Invalid, "UNA: service string advice truncated (%d of 9 characters)", len(rest))
	}
	// UNA is followed by exactly six characters: component separator, element
	// separator, decimal mark, release character, repetition separator (a
	// space in syntax version 3) and segment terminator.
	d := delims{comp: rest[3], elem: rest[4], rel: rest[6], term: rest[8], hasRel: rest[6] != ' '}
	for _, c := range []byte{d.comp, d.elem, d.term} {
		if isAlnum(c) {
			return pipeline.Errorf(pipeline.Invalid, "UNA: %q cannot be a separator", string(rune(c)))
		}
	}
	if d.comp == d.elem || d.comp == d.term || d.elem == d.term {
		return pipeline.Errorf(pipeline.Invalid, "UNA: component separator %q, element separator %q and segment terminator %q must differ",
			string(rune(d.comp)), string(rune(d.elem)), string(rune(d.term)))
	}
	if d.hasRel && (isAlnum(d.rel) || d.rel == d.comp || d.rel == d.elem || d.rel == d.term) {
		return pipeline.Errorf(pipeline.Invalid, "UNA: %q cannot be the release character", string(rune(d.rel)))
	}
	p.d = d
	p.pos += 9
	return nil
}

// next returns the next segment; ok is false at the end of the data. Blanks
// (CR, LF, space, tab) between segments are skipped.
func (p *parser) next() (seg segment, ok bool, err error) {
	data := p.data
	i := p.pos
	for i < len(data) && isBlank(data[i]) {
		i++
	}
	if i >= len(data) {
		p.pos = i
		return segment{}, false, nil
	}
	start := i
	for {
		j := bytes.IndexByte(data[i:], p.d.term)
		if j < 0 {
			p.pos = len(data)
			n := p.n + 1
			if p.d.hasRel && p.released(start, len(data)) {
				return segment{}, false, pipeline.Errorf(pipeline.Invalid, "segment %d%s: unterminated release character %q at the end of the data",
					n, tagNote(data[start:], p.d), string(rune(p.d.rel)))
			}
			return segment{}, false, pipeline.Errorf(pipeline.Invalid, "segment %d%s: truncated, no segment terminator %q before the end of the data",
				n, tagNote(data[start:], p.d), string(rune(p.d.term)))
		}
		k := i + j
		if p.d.hasRel && p.released(start, k) {
			i = k + 1
			continue
		}
		p.n++
		p.pos = k + 1
		seg = segment{n: p.n, raw: data[start:k]}
		t := 0
		for t < len(seg.raw) && seg.raw[t] != p.d.elem && seg.raw[t] != p.d.comp {
			t++
		}
		seg.tag = seg.raw[:t]
		if !validTag(seg.tag) {
			return segment{}, false, pipeline.Errorf(pipeline.Invalid, "segment %d: invalid segment tag %q", seg.n, printable(seg.tag))
		}
		return seg, true, nil
	}
}

// released reports whether the byte at k is preceded by an odd run of
// release characters (within the segment starting at start), i.e. escaped.
// A run is maximal, so the byte before it is no release character and the
// parity alone decides.
func (p *parser) released(start, k int) bool {
	c := 0
	for m := k - 1; m >= start && p.data[m] == p.d.rel; m-- {
		c++
	}
	return c%2 == 1
}

// field returns component c of element e (both counted from 0; element 0 is
// the first after the tag) as raw, still escaped bytes; nil when absent.
func (p *parser) field(seg segment, e, c int) []byte {
	b := seg.raw
	d := &p.d
	ei, ci, start := -1, 0, 0
	i := len(seg.tag)
	for i < len(b) {
		ch := b[i]
		switch {
		case d.hasRel && ch == d.rel:
			i += 2
			continue
		case ch == d.elem:
			if ei == e {
				if ci == c {
					return b[start:i]
				}
				return nil
			}
			ei, ci, start = ei+1, 0, i+1
		case ch == d.comp:
			if ei == e && ci == c {
				return b[start:i]
			}
			ci, start = ci+1, i+1
		}
		i++
	}
	if ei == e && ci == c {
		return b[start:min(i, len(b))]
	}
	return nil
}

// str unescapes a raw value and decodes it to UTF-8.
func (p *parser) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if p.d.hasRel && bytes.IndexByte(b, p.d.rel) >= 0 {
		out := make([]byte, 0, len(b))
		for i := 0; i < len(b); i++ {
			if b[i] == p.d.rel && i+1 < len(b) {
				i++
			}
			out = append(out, b[i])
		}
		b = out
	}
	switch p.charset {
	case csLatin1:
		return latin1(b)
	case csRepair:
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	if p.intern == nil || len(b) > 16 {
		return string(b)
	}
	if s, ok := p.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(p.intern) < 4096 {
		p.intern[s] = s
	}
	return s
}

// unb reads the interchange header.
func (p *parser) unb(seg segment, ic *mako.Interchange) error {
	syntax := string(p.field(seg, 0, 0))
	if !knownSyntax[syntax] {
		return segErr(seg, "unknown syntax identifier %q", printable([]byte(syntax)))
	}
	// UNOC is ISO 8859-1. Many senders declare UNOC and write UTF-8, so the
	// bytes decide: only data that is not valid UTF-8 is read as Latin-1.
	if !utf8.Valid(p.data) {
		if syntax == "UNOC" {
			p.charset = csLatin1
		} else {
			p.charset = csRepair
		}
	}
	ic.Sender = p.str(p.field(seg, 1, 0))
	ic.SenderQualifier = p.str(p.field(seg, 1, 1))
	ic.Receiver = p.str(p.field(seg, 2, 0))
	ic.ReceiverQualifier = p.str(p.field(seg, 2, 1))
	if ic.Sender == "" || ic.Receiver == "" {
		return segErr(seg, "sender and receiver are required")
	}
	at, err := parseUNBTime(p.str(p.field(seg, 3, 0)), p.str(p.field(seg, 3, 1)))
	if err != nil {
		return segErr(seg, "date and time: %v", err)
	}
	ic.PreparedAt = at
	ic.Ref = p.str(p.field(seg, 4, 0))
	if ic.Ref == "" {
		return segErr(seg, "interchange reference (0020) is missing")
	}
	ic.AppRef = p.str(p.field(seg, 6, 0))
	ic.Test = p.str(p.field(seg, 10, 0)) == "1"
	return nil
}

func (p *parser) unh(seg segment) (*msgState, error) {
	m := &msgState{start: seg.n}
	m.msg.Ref = p.str(p.field(seg, 0, 0))
	m.msg.Type = p.str(p.field(seg, 1, 0))
	if m.msg.Ref == "" || m.msg.Type == "" {
		return nil, segErr(seg, "message reference (0062) and type (0065) are required")
	}
	// Version is S009 from the version number on: "D:07B:UN:2.2".
	parts := make([]string, 0, 4)
	for c := 1; c <= 4; c++ {
		parts = append(parts, p.str(p.field(seg, 1, c)))
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	m.msg.Version = strings.Join(parts, ":")
	if m.msg.Type == "CONTRL" || m.msg.Type == "APERAK" {
		m.msg.Ack = &mako.Ack{}
	}
	return m, nil
}

func (p *parser) unt(seg segment, m *msgState) error {
	raw := p.field(seg, 0, 0)
	n, ok := atoi(raw)
	if !ok {
		return segErr(seg, "segment count %q is not a number", p.str(raw))
	}
	if counted := seg.n - m.start + 1; n != counted {
		return segErr(seg, "segment count %d, counted %d", n, counted)
	}
	if ref := p.str(p.field(seg, 1, 0)); ref != m.msg.Ref {
		return segErr(seg, "message reference %q differs from UNH %q", ref, m.msg.Ref)
	}
	m.msg.SegmentCount = n
	if len(p.refs) > 0 {
		m.msg.References = slices.Clone(p.refs)
		p.refs = p.refs[:0]
	}
	if len(p.parties) > 0 {
		m.msg.Parties = slices.Clone(p.parties)
		p.parties = p.parties[:0]
	}
	if m.msg.Ack != nil && len(m.texts) > 0 {
		m.msg.Ack.Text = strings.Join(m.texts, " ")
	}
	if len(p.txs) > 0 {
		err := p.keepSeries(&m.msg)
		p.txs = p.txs[:0]
		return err
	}
	return nil
}

// keepSeries moves the transactions of a UTILMD message that activate or
// deactivate a series (55062/55063) into msg.Series, taking their room from
// the slab, and returns the first unreadable date of a kept transaction.
// The other transactions, a Zuordnungsermaechtigung (55071) for one, carry
// the same segments but mean something else, so they are dropped together
// with their dates.
func (p *parser) keepSeries(msg *mako.Message) error {
	kept := 0
	for i := range p.txs {
		t := &p.txs[i]
		if !t.series || !seriesProcess(t.info.ProcessID, msg.ProcessID) {
			continue
		}
		if t.err != nil {
			return t.err
		}
		kept++
	}
	if kept == 0 {
		return nil
	}
	if len(p.series) < kept {
		p.series = make([]mako.SeriesInfo, max(kept, min(p.unhs, seriesSlab)))
	}
	// The full slice expression caps the message's share, so that an append
	// to it cannot write into the next message's.
	out := p.series[:kept:kept]
	p.series = p.series[kept:]
	j := 0
	for i := range p.txs {
		if t := &p.txs[i]; t.series && seriesProcess(t.info.ProcessID, msg.ProcessID) {
			out[j] = t.info
			j++
		}
	}
	msg.Series = out
	return nil
}

// seriesProcess reports whether a transaction is an activation (55062) or
// deactivation (55063) of a series: by its own RFF+Z13, else by the
// message's.
func seriesProcess(tx, msg string) bool {
	if tx == "" {
		tx = msg
	}
	return tx == "55062" || tx == "55063"
}

func (p *parser) unz(seg segment, ic *mako.Interchange, groups int) error {
	raw := p.field(seg, 0, 0)
	n, ok := atoi(raw)
	if !ok {
		return segErr(seg, "message count %q is not a number", p.str(raw))
	}
	// With functional groups UNZ counts the groups, otherwise the messages.
	counted, what := len(ic.Messages), "message"
	if groups > 0 {
		counted, what = groups, "group"
	}
	if n != counted {
		return segErr(seg, "%s count %d, counted %d", what, n, counted)
	}
	if ref := p.str(p.field(seg, 1, 0)); ref != ic.Ref {
		return segErr(seg, "interchange reference %q differs from UNB %q", ref, ic.Ref)
	}
	for i := p.pos; i < len(p.data); i++ {
		if c := p.data[i]; !isBlank(c) && c != 0 && c != 0x1A {
			return segErr(seg, "data after the end of the interchange")
		}
	}
	return nil
}

// body reads the segments between UNH and UNT that the domain keeps.
func (p *parser) body(seg segment, m *msgState) error {
	msg := &m.msg
	switch string(seg.tag) {
	case "BGM":
		if m.bgm {
			return nil
		}
		m.bgm = true
		msg.BGM = p.str(p.field(seg, 0, 0))
		msg.DocumentNo = p.str(p.field(seg, 1, 0))
		if msg.Type == "APERAK" {
			switch msg.BGM {
			case "312":
				msg.Ack.Verdict = mako.Accepted
			case "313":
				msg.Ack.Verdict = mako.Rejected
			}
		}
	case "DTM":
		switch q := p.field(seg, 0, 0); string(q) {
		case "137":
			if !msg.Date.IsZero() {
				return nil
			}
			t, err := parseDTM(p.str(p.field(seg, 0, 1)), p.str(p.field(seg, 0, 2)))
			if err != nil {
				return segErr(seg, "DTM+137: %v", err)
			}
			msg.Date = t
		case "158", "159":
			// Start and end of balancing of a UTILMD transaction.
			if msg.Type != "UTILMD" {
				return nil
			}
			tx := p.seriesTx()
			at := &tx.info.Start
			if q[2] == '9' {
				at = &tx.info.End
			}
			if !at.IsZero() {
				return nil
			}
			t, err := parseDTM(p.str(p.field(seg, 0, 1)), p.str(p.field(seg, 0, 2)))
			if err != nil {
				if tx.err == nil {
					tx.err = segErr(seg, "DTM+%s: %v", q, err)
				}
				return nil
			}
			*at = t
		}
	case "IDE":
		// Each IDE+24 starts a transaction (SG4) of a UTILMD message.
		if msg.Type == "UTILMD" && string(p.field(seg, 0, 0)) == "24" {
			p.txs = append(p.txs, transaction{series: true})
			p.txs[len(p.txs)-1].info.Transaction = p.unique(p.field(seg, 1, 0))
		}
	case "CCI":
		// CCI+<qualifier>++<code>. Z20 (balancing area), Z19 (balancing
		// group) and 15 (series family) are read off sample files, not the
		// UTILMD MIG: unverified.
		if msg.Type != "UTILMD" {
			return nil
		}
		var dst *string
		switch string(p.field(seg, 0, 0)) {
		case "Z20":
			dst = &p.seriesTx().info.Area
		case "Z19":
			dst = &p.seriesTx().info.Group
		case "15":
			dst = &p.seriesTx().info.Family
		default:
			return nil
		}
		if *dst == "" {
			*dst = p.str(p.field(seg, 2, 0))
		}
	case "CAV":
		// The series type (SLS, TLS, ...) as the first component of the
		// first element, as in the sample files: unverified.
		if msg.Type == "UTILMD" {
			if tx := p.seriesTx(); tx.info.Type == "" {
				tx.info.Type = p.str(p.field(seg, 0, 0))
			}
		}
	case "RFF":
		q, v := p.str(p.field(seg, 0, 0)), p.str(p.field(seg, 0, 1))
		if q == "" {
			return nil
		}
		p.refs = append(p.refs, mako.Reference{Qualifier: q, Value: v})
		if q == "Z13" {
			if msg.ProcessID == "" {
				msg.ProcessID = v
			}
			// In UTILMD the process id belongs to the transaction, and one
			// message may bundle transactions of different processes.
			if msg.Type == "UTILMD" {
				if tx := p.currentTx(); tx.info.ProcessID == "" {
					tx.info.ProcessID = v
				}
			}
		}
		if q == "ACE" && msg.Type == "APERAK" && msg.Ack.RefMessage == "" {
			msg.Ack.RefMessage = v
		}
	case "NAD":
		id := p.str(p.field(seg, 1, 0))
		if id == "" {
			// Name-only parties (customers, addresses) are no market partners.
			return nil
		}
		p.parties = append(p.parties, mako.Party{Qualifier: p.str(p.field(seg, 0, 0)), ID: id, CodeList: p.str(p.field(seg, 1, 2))})
	case "ERC":
		if msg.Type == "APERAK" {
			addCode(msg.Ack, p.str(p.field(seg, 0, 0)))
		}
	case "FTX":
		if msg.Type == "APERAK" {
			for c := 0; c < 5; c++ {
				if t := p.str(p.field(seg, 3, c)); t != "" {
					m.texts = append(m.texts, t)
				}
			}
		}
	case "UCI":
		if msg.Type != "CONTRL" {
			return nil
		}
		msg.Ack.RefInterchange = p.str(p.field(seg, 0, 0))
		// DE 0083: 7 = acknowledged, 4 = rejected, 8 = received. Some public
		// code bases swap 4 and 7; ISO 9735 and the BDEW CONTRL MIG do not.
		switch string(p.field(seg, 3, 0)) {
		case "7":
			if msg.Ack.Verdict != mako.Rejected {
				msg.Ack.Verdict = mako.Accepted
			}
		case "4":
			msg.Ack.Verdict = mako.Rejected
		case "8":
			if msg.Ack.Verdict != mako.Rejected {
				msg.Ack.Verdict = mako.Received
			}
		}
		addCode(msg.Ack, p.str(p.field(seg, 4, 0)))
	case "UCM":
		if msg.Type != "CONTRL" {
			return nil
		}
		if msg.Ack.RefMessage == "" {
			msg.Ack.RefMessage = p.str(p.field(seg, 0, 0))
		}
		if string(p.field(seg, 2, 0)) == "4" {
			msg.Ack.Verdict = mako.Rejected
		}
		addCode(msg.Ack, p.str(p.field(seg, 3, 0)))
	case "UCS":
		if msg.Type == "CONTRL" {
			addCode(msg.Ack, p.str(p.field(seg, 1, 0)))
		}
	case "UCD":
		if msg.Type == "CONTRL" {
			addCode(msg.Ack, p.str(p.field(seg, 0, 0)))
		}
	}
	return nil
}

// unique is str for a value that differs from message to message, such as
// a transaction id: interning it would only fill the table and crowd out
// the values that do repeat.
func (p *parser) unique(b []byte) string {
	intern := p.intern
	p.intern = nil
	s := p.str(b)
	p.intern = intern
	return s
}

// currentTx returns the transaction the segment belongs to: the one of the
// last IDE+24, or before the first IDE+24 the implicit first transaction,
// which it opens on first use.
func (p *parser) currentTx() *transaction {
	if len(p.txs) == 0 {
		p.txs = append(p.txs, transaction{})
	}
	return &p.txs[len(p.txs)-1]
}

// seriesTx is currentTx for a series segment, which makes the transaction
// one that can be kept.
func (p *parser) seriesTx() *transaction {
	tx := p.currentTx()
	tx.series = true
	return tx
}

func segErr(seg segment, format string, args ...any) error {
	return pipeline.Errorf(pipeline.Invalid, "segment %d (%s): "+format, append([]any{seg.n, string(seg.tag)}, args...)...)
}

// tagNote names the tag of a segment that could not be cut, when it has one.
func tagNote(rest []byte, d delims) string {
	if len(rest) >= 3 && validTag(rest[:3]) && (len(rest) == 3 || rest[3] == d.elem || rest[3] == d.comp) {
		return " (" + string(rest[:3]) + ")"
	}
	return ""
}

func isBlank(c byte) bool { return c == ' ' || c == '\r' || c == '\n' || c == '\t' }

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// validTag accepts the three upper-case letters or digits of a segment tag.
func validTag(t []byte) bool {
	if len(t) != 3 {
		return false
	}
	for _, c := range t {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// printable keeps error messages readable when the input is garbage.
func printable(b []byte) string {
	if len(b) > 20 {
		b = b[:20]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// atoi parses a non-negative decimal count of at most nine digits.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// latin1 decodes ISO 8859-1 bytes to UTF-8.
func latin1(b []byte) string {
	high := 0
	for _, c := range b {
		if c >= 0x80 {
			high++
		}
	}
	if high == 0 {
		return string(b)
	}
	out := make([]byte, 0, len(b)+high)
	for _, c := range b {
		if c < 0x80 {
			out = append(out, c)
		} else {
			out = utf8.AppendRune(out, rune(c))
		}
	}
	return string(out)
}

// addCode keeps the non-empty error codes of an acknowledgment in order.
func addCode(a *mako.Ack, code string) {
	if code != "" {
		a.Codes = append(a.Codes, code)
	}
}
