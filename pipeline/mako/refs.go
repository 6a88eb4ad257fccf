package mako

import (
	"regexp"
	"strings"
	"unicode"
)

// CitedRef is a reference a mail cites. Keyword is true when a keyword such
// as "Referenz" or "Datenaustauschreferenz" introduced it; a bare token that
// merely looks like a reference has Keyword false, and the caller keeps it
// only when it names a stored message.
type CitedRef struct {
	Value   string
	Keyword bool
}

// maxRefs caps the references taken from one mail, so that a long quoted
// thread cannot turn one reply into hundreds of lookups.
const maxRefs = 50

// ExtractReferences lists the references a German or English reply cites,
// each once, in the order first seen: the subject, then the new text of the
// body, then the quoted part (lines starting with ">", and everything after
// an Outlook "-----Ursprüngliche Nachricht-----" or "Von:/Gesendet:" header
// or an "Am ... schrieb ...:" line), then the signature (after a "-- " line).
//
// A keyword (case-insensitive: Referenz, Ref., Ref:, Nachrichtenreferenz,
// Datenaustauschreferenz, Übertragungsdatei, Uebertragungsdatei,
// Dokumentennummer, Belegnummer, Vorgangsnummer, Nachricht, Interchange, UNB,
// UNH, BGM, "Ihre Nachricht", "Message reference", and compounds such as
// "UNB-Referenz" or "Referenz-Nr.") makes the next reference-like token a
// keyword reference. Up to four filler words may stand between them ("mit
// der", "Nr.", "ist", "DE 0020"), and a list ("Referenzen 4711, 4712 und
// 4713") makes every member one. A keyword reference has 2 to 35 characters
// of [A-Za-z0-9_-./] with at least one digit.
//
// Any other token is a bare reference when it has 3 to 35 such characters
// with at least one digit and is not a date (2026-11-20, 20.11.2026, 20.11.),
// a time (10.30, 10h30), a 13-digit market-partner id starting with 99 or 98,
// part of an e-mail address or URL, or a pure number of fewer than 6 digits
// (which would catch process ids, years and postcodes).
//
// A value seen bare first and with a keyword later keeps its first position
// and becomes a keyword reference. Beyond 50 references the bare ones are
// dropped first, from the end.
func ExtractReferences(subject, body string) []CitedRef {
	return extractReferences(mailSections(subject, splitMail(body)))
}

func extractReferences(sections []string) []CitedRef {
	c := refCollector{index: map[string]int{}}
	for _, sec := range sections {
		c.scan(sec)
	}
	return c.result()
}

// CitedMPIDs lists the 13-digit electricity market-partner ids (prefix 99)
// a mail cites, each once, in the order of ExtractReferences' sections.
func CitedMPIDs(subject, body string) []string {
	return citedMPIDs(mailSections(subject, splitMail(body)))
}

func citedMPIDs(sections []string) []string {
	var ids []string
	seen := map[string]bool{}
	for _, sec := range sections {
		for i := 0; i < len(sec); {
			if !isASCIIDigit(sec[i]) {
				i++
				continue
			}
			j := i
			for j < len(sec) && isASCIIDigit(sec[j]) {
				j++
			}
			if id := sec[i:j]; len(id) == 13 && strings.HasPrefix(id, "99") && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
			i = j
		}
	}
	return ids
}

func isASCIIDigit(b byte) bool { return b >= '0' && b <= '9' }

// mailParts is a body split into the sender's new text, its signature and
// the quoted earlier mails.
type mailParts struct {
	New, Signature, Quoted string
}

// mailSections orders the parts of a mail by how much a reference in them
// counts.
func mailSections(subject string, p mailParts) []string {
	return []string{subject, p.New, p.Quoted, p.Signature}
}

// splitMail separates the new text of a reply from the quoted mails and the
// signature. Outlook quotes without ">" prefixes, below a header; that header
// and everything after it counts as quoted.
func splitMail(body string) mailParts {
	lines := strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n")
	var newText, sig, quoted []string
	inSig, inQuote := false, false
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		switch {
		case inQuote:
			quoted = append(quoted, line)
		case strings.HasPrefix(trimmed, ">"):
			quoted = append(quoted, line)
		case isQuoteHeader(trimmed, lines[i+1:]):
			inQuote = true
			quoted = append(quoted, line)
		case inSig:
			sig = append(sig, line)
		case strings.TrimRight(line, " \t") == "--":
			inSig = true
		default:
			newText = append(newText, line)
		}
	}
	return mailParts{
		New:       strings.Join(newText, "\n"),
		Signature: strings.Join(sig, "\n"),
		Quoted:    strings.Join(quoted, "\n"),
	}
}

var (
	// outlookSeparator matches "-----Ursprüngliche Nachricht-----",
	// "-----Original Message-----" and forwarding separators.
	outlookSeparator = regexp.MustCompile(`(?i)^-{2,}\s*(ursprüngliche nachricht|urspruengliche nachricht|original message|weitergeleitete nachricht|forwarded message)\s*-{2,}$`)
	// attribution matches "Am 20.11.2026 um 10:15 schrieb X <x@y>:" and
	// "On Fri, Nov 20, 2026 at 10:15 AM X wrote:".
	attribution = regexp.MustCompile(`(?i)^(am\s.*\sschrieb\s.*|on\s.*\swrote):$`)
)

// isQuoteHeader reports whether line starts a quoted mail: a separator, an
// attribution line, or an Outlook header "Von:" followed by "Gesendet:".
func isQuoteHeader(line string, rest []string) bool {
	if line == "" {
		return false
	}
	// The first byte decides which pattern can match; most lines are
	// ruled out without a regular expression.
	switch line[0] {
	case '-':
		return outlookSeparator.MatchString(line)
	case 'A', 'a', 'O', 'o':
		return line[len(line)-1] == ':' && attribution.MatchString(line)
	case 'V', 'v', 'F', 'f':
	default:
		return false
	}
	lower := strings.ToLower(line)
	if !strings.HasPrefix(lower, "von:") && !strings.HasPrefix(lower, "from:") {
		return false
	}
	for _, next := range rest {
		n := strings.ToLower(strings.TrimSpace(next))
		if n == "" {
			continue
		}
		for _, h := range []string{"gesendet:", "sent:", "datum:", "date:", "an:", "to:"} {
			if strings.HasPrefix(n, h) {
				return true
			}
		}
		return false
	}
	return false
}

type refCollector struct {
	refs  []CitedRef
	index map[string]int
}

func (c *refCollector) add(v string, keyword bool) {
	if i, ok := c.index[v]; ok {
		if keyword {
			c.refs[i].Keyword = true
		}
		return
	}
	c.index[v] = len(c.refs)
	c.refs = append(c.refs, CitedRef{Value: v, Keyword: keyword})
}

// result applies the cap of maxRefs, dropping bare references from the end
// first so that a keyword reference deep in a quote still counts.
func (c *refCollector) result() []CitedRef {
	if len(c.refs) <= maxRefs {
		return c.refs
	}
	keywords := 0
	for _, r := range c.refs {
		if r.Keyword {
			keywords++
		}
	}
	bareBudget := max(maxRefs-keywords, 0)
	out := make([]CitedRef, 0, maxRefs)
	for _, r := range c.refs {
		if len(out) == maxRefs {
			break
		}
		if !r.Keyword {
			if bareBudget == 0 {
				continue
			}
			bareBudget--
		}
		out = append(out, r)
	}
	return out
}

// token is a piece of a word; stop marks a word that can be neither keyword
// nor value (an e-mail address or URL) and breaks a keyword's reach.
type token struct {
	text string
	stop bool
}

// tokens splits text into words at white space and words into tokens at
// characters that cannot be part of a reference or keyword (letters, digits
// and _-./ can).
func tokens(text string) []token {
	var out []token
	for _, w := range strings.Fields(text) {
		lw := strings.ToLower(w)
		if strings.Contains(w, "@") || strings.Contains(w, "://") || strings.HasPrefix(lw, "www.") {
			out = append(out, token{stop: true})
			continue
		}
		if len(w) >= 16 && strings.ContainsRune(w, ':') && isoDateTime.MatchString(strings.Trim(w, ",;()[]<>\"'")) {
			// Split at its colons, a timestamp would leave pieces such as
			// "00Z" that look like references.
			continue
		}
		for _, piece := range strings.FieldsFunc(w, func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_-./", r)
		}) {
			out = append(out, token{text: piece})
		}
	}
	return out
}

// maxFillers is how many filler words may stand between a keyword and its
// value.
const maxFillers = 4

func (c *refCollector) scan(text string) {
	pending := false // a keyword was seen and waits for its value
	listing := false // a keyword value was taken; more may follow as a list
	fillers := 0
	for _, t := range tokens(text) {
		if t.stop {
			pending, listing = false, false
			continue
		}
		if isKeyword(t.text) {
			pending, listing, fillers = true, false, 0
			continue
		}
		v := strings.Trim(t.text, "._-/")
		if pending {
			lower := strings.ToLower(v)
			switch {
			case !listing && fillerWords[lower] && fillers < maxFillers:
				// Before the value test: "0020" in "UNB (DE 0020)" is a
				// data element number, not the reference.
				fillers++
				continue
			case validRef(v, true):
				c.add(v, true)
				listing, fillers = true, 0
				continue
			case listing && listConnectors[lower]:
				continue
			}
			pending, listing = false, false
		}
		if validRef(v, false) {
			c.add(v, false)
		}
	}
}

// keywordParts are the words (lower case, dots trimmed) that introduce a
// reference, alone or as part of a hyphenated compound.
var keywordParts = map[string]bool{
	"referenz": true, "referenzen": true, "referenznummer": true, "referenznr": true,
	"ref": true, "refnr": true, "reference": true, "references": true,
	"nachrichtenreferenz": true, "datenaustauschreferenz": true,
	"übertragungsdatei": true, "uebertragungsdatei": true,
	"dokumentennummer": true, "dokumentnummer": true, "belegnummer": true, "vorgangsnummer": true,
	"nachricht": true, "nachrichten": true, "nachrichtennummer": true,
	"interchange": true, "unb": true, "unh": true, "bgm": true,
}

// fillerWords may stand between a keyword and its value. The data element
// numbers let "UNB (DE 0020): 4711" reach 4711.
var fillerWords = map[string]bool{
	"nr": true, "no": true, "nummer": true, "number": true, "id": true,
	"mit": true, "der": true, "die": true, "das": true, "den": true, "dem": true, "des": true,
	"unsere": true, "unserer": true, "unseren": true, "ihre": true, "ihrer": true, "ihren": true,
	"your": true, "our": true, "the": true, "of": true, "with": true,
	"ist": true, "is": true, "lautet": true, "lautend": true, "vom": true, "von": true,
	"control": true, "datei": true, "file": true, "bzgl": true, "bezüglich": true,
	"de": true, "0020": true, "0062": true, "1004": true,
}

// listConnectors join the members of a list of references.
var listConnectors = map[string]bool{"und": true, "and": true, "sowie": true, "bzw": true, "oder": true, "or": true}

// isKeyword reports whether a token introduces a reference: a keyword, or a
// compound (joined by - or /) with a keyword part and no digit, such as
// "UNB-Referenz", "Referenz-Nr." or "Datenaustausch-Referenz".
func isKeyword(tok string) bool {
	if len(tok) < 3 || strings.IndexFunc(tok, unicode.IsDigit) >= 0 {
		return false
	}
	lower := strings.ToLower(tok)
	for _, part := range strings.FieldsFunc(lower, func(r rune) bool { return r == '-' || r == '/' }) {
		part = strings.Trim(part, ".")
		if keywordParts[part] || strings.HasSuffix(part, "referenz") || strings.HasSuffix(part, "referenzen") {
			return true
		}
	}
	return false
}

var (
	// dateLike matches 2026-11-20 (also with a time after T), 20.11.2026,
	// 20.11.26, 20.11 (the trailing dot is trimmed before), 20/11/2026 and
	// 2026/11/20; times written 10.30 are caught by the same pattern.
	dateLike    = regexp.MustCompile(`^(\d{4}-\d{1,2}-\d{1,2}(T.*)?|\d{1,2}\.\d{1,2}(\.\d{2}|\.\d{4})?|\d{1,2}/\d{1,2}/(\d{2}|\d{4})|\d{4}/\d{1,2}/\d{1,2})$`)
	isoDateTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?\.?$`)
	timeLike    = regexp.MustCompile(`(?i)^\d{1,2}[:.h]\d{2}([:.]\d{2})?(h|uhr)?$`)
)

// validRef reports whether v can be a reference, with the looser length
// and number rules of a keyword reference when keyword is set.
func validRef(v string, keyword bool) bool {
	minLen := 3
	if keyword {
		minLen = 2
	}
	if len(v) < minLen || len(v) > 35 {
		return false
	}
	digits := 0
	for i := 0; i < len(v); i++ {
		switch b := v[i]; {
		case isASCIIDigit(b):
			digits++
		case b >= 'A' && b <= 'Z', b >= 'a' && b <= 'z', b == '_', b == '.', b == '/', b == '-':
		default:
			return false
		}
	}
	if digits == 0 || dateLike.MatchString(v) || timeLike.MatchString(v) {
		return false
	}
	if digits == len(v) {
		if len(v) == 13 && (strings.HasPrefix(v, "99") || strings.HasPrefix(v, "98")) {
			return false
		}
		if !keyword && len(v) < 6 {
			return false
		}
	}
	return true
}
