package edifact

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// The message versions written (UNH S009 from DE 0052 on). They change with
// the BDEW format versions (April and October); PARTIN 1.0f and UTILMD S2.1
// are the versions public AHB/MIG extracts name for 2026 (not checked
// against the BDEW PDFs: verify before a format change).
const (
	PartinVersion = "D:20B:UN:1.0f"
	UtilmdVersion = "D:11A:UN:S2.1"
)

// Pruefidentifikatoren written.
const (
	ProcessPartinSupplier = "37000" // communication data of a supplier (LF)
	ProcessPartinBKV      = "37003" // communication data of a BKV
	ProcessZuordnung      = "55071" // activation of the Zuordnungsermaechtigung
)

// Envelope is what every interchange we write carries in UNB, UNH and BGM.
type Envelope struct {
	// Sender and Receiver are 13-digit BDEW market-partner ids; UNB code
	// qualifier 500, NAD code list 293.
	Sender, Receiver string
	// InterchangeRef is UNB/UNZ 0020, at most 14 letters, digits, '-' or '_'.
	InterchangeRef string
	// MessageRef is UNH/UNT 0062, at most 14 letters, digits, '-' or '_'.
	MessageRef string
	// DocumentNo is BGM 1004: letters, digits, '-' or '_', at most 35 for a
	// PARTIN and 32 for a Zuordnungsermaechtigung, which appends a three-digit
	// transaction number to it in IDE (an..35).
	DocumentNo string
	// At is the time of preparation: UNB date/time and DTM+137 (in UTC).
	At time.Time
	// Test sets UNB 0035 to 1 (test interchange).
	Test bool
}

// PartinDoc is our communication data (PARTIN).
type PartinDoc struct {
	Envelope
	// ProcessID is 37000 (supplier) or 37003 (BKV).
	ProcessID string
	// Company and address: the NAD of the company (NAD+SU for 37000, NAD+Z35
	// for 37003) and of the contact for data exchange (NAD+Z10).
	Company, Street, PostalCode, City, Country string
	// ContactName, Email and Phone are the contact person (CTA/COM after
	// NAD+MS); all optional.
	ContactName, Email, Phone string
	// EdifactEmail is the address (mail or AS4 endpoint) EDIFACT files are
	// to be sent to; it goes into COM ...:EM under NAD+Z10 ("Ansprechpartner
	// Uebertragungsweg / Datenaustausch").
	EdifactEmail string
	// ValidFrom is DTM+157, from when the data apply; zero means At.
	ValidFrom time.Time
}

// ZuordnungDoc is a Zuordnungsermaechtigung (UTILMD 55071): the BKV
// authorises the DSO to assign the supplier's market locations of the
// series types in the balancing area to the balancing group.
type ZuordnungDoc struct {
	Envelope
	BalancingGroup string   // EIC of type X (CCI+Z19)
	BalancingArea  string   // EIC of type Y (CCI+Z20)
	Supplier       string   // MP-ID of the supplier (NAD+VY)
	SeriesTypes    []string // SLS, TLS, LGS, ... (CCI+15++Z21 / CAV)
	// ValidFrom is the first day of the authorisation. Only its calendar day
	// in German time counts: DTM+158 (Bilanzierungsbeginn) is written as
	// 00:00 German time of that day, in UTC, as balancing periods start at
	// the German day boundary.
	ValidFrom time.Time
}

var (
	refPattern   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,14}$`)
	docPattern   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,35}$`)
	eicPattern   = regexp.MustCompile(`^[0-9A-Z-]{16}$`)
	zrtPattern   = regexp.MustCompile(`^[A-Z0-9]{3}$`)
	countryCode  = regexp.MustCompile(`^[A-Z]{2}$`)
	phonePattern = regexp.MustCompile(`^\+?[0-9 ()/-]{3,30}$`)
)

// WritePARTIN writes our communication data as a PARTIN interchange in UNOC
// (ISO 8859-1). Invalid input is a pipeline.Invalid error; the output is
// deterministic for equal input.
//
// Layout (PARTIN MIG, format version 2025/26, as far as public extracts
// show it): UNH, BGM+10, DTM+137, SG1 RFF+Z13 with DTM+157, SG2 NAD+MS with
// CTA/COM of the contact person, NAD+MR, UNS+D, SG4 NAD+SU (37000) or
// NAD+Z35 (37003) with name and address, SG4 NAD+Z10 with CTA/COM of the
// data exchange address, UNT.
func WritePARTIN(d PartinDoc) ([]byte, error) {
	var v validator
	v.envelope(d.Envelope, 35)
	partyQual := ""
	switch d.ProcessID {
	case ProcessPartinSupplier:
		partyQual = "SU"
	case ProcessPartinBKV:
		partyQual = "Z35"
	default:
		v.addf("process id %q: a PARTIN of ours is %s (supplier) or %s (BKV)", d.ProcessID, ProcessPartinSupplier, ProcessPartinBKV)
	}
	v.text("company", d.Company, 70, true)
	v.text("street", d.Street, 35, true)
	v.text("postal code", d.PostalCode, 17, true)
	v.text("city", d.City, 35, true)
	if !countryCode.MatchString(d.Country) {
		v.addf("country %q is no ISO 3166 alpha-2 code", d.Country)
	}
	v.text("contact name", d.ContactName, 35, false)
	v.email("email", d.Email, false)
	if d.Phone != "" && !phonePattern.MatchString(d.Phone) {
		v.addf("phone %q is no phone number", d.Phone)
	}
	v.email("EDIFACT address", d.EdifactEmail, true)
	if err := v.err("PARTIN"); err != nil {
		return nil, err
	}
	validFrom := d.ValidFrom
	if validFrom.IsZero() {
		validFrom = d.At
	}

	var w builder
	w.open(d.Envelope, "PARTIN", PartinVersion)
	w.seg("BGM", c("10"), c(d.DocumentNo))
	w.seg("DTM", c("137", dtm303(d.At), "303"))
	w.seg("RFF", c("Z13", d.ProcessID))
	w.seg("DTM", c("157", dtm303(validFrom), "303"))
	w.seg("NAD", c("MS"), c(d.Sender, "", "293"))
	if d.ContactName != "" || d.Email != "" || d.Phone != "" {
		w.seg("CTA", c("IC"), c("", d.ContactName))
		if d.Email != "" {
			w.seg("COM", c(d.Email, "EM"))
		}
		if d.Phone != "" {
			w.seg("COM", c(d.Phone, "TE"))
		}
	}
	w.seg("NAD", c("MR"), c(d.Receiver, "", "293"))
	w.seg("UNS", c("D"))
	address := func(qual, id string) {
		w.seg("NAD", c(qual), c(id), c(), c(d.Company, "", "", "", "", "Z02"), c(d.Street), c(d.City), c(), c(d.PostalCode), c(d.Country))
	}
	address(partyQual, d.Sender)
	address("Z10", "")
	w.seg("CTA", c("IC"), c("", "Datenaustausch"))
	w.seg("COM", c(d.EdifactEmail, "EM"))
	w.close(d.Envelope)
	return w.bytes()
}

// WriteZuordnung writes a Zuordnungsermaechtigung as a UTILMD interchange
// (Pruefidentifikator 55071, BKV to DSO) in UNOC. Invalid input is a
// pipeline.Invalid error; the output is deterministic for equal input.
//
// Layout (UTILMD MIG S2.1 / AHB MaBiS as public extracts show it): UNH, BGM+Z17
// (Zuordnungsermaechtigung), DTM+137, NAD+MS, NAD+MR, then per series type
// one transaction: IDE+24, DTM+158, RFF+Z13:55071, SEQ+Z22, CCI+Z20
// (balancing area), CCI+Z19 (balancing group), CCI+15++Z21 with CAV (series
// type), NAD+VY (supplier); UNT. One transaction per series type keeps every
// authorisation separately answerable; whether a DSO expects all series
// types in one SEQ+Z22 group instead is unverified.
func WriteZuordnung(d ZuordnungDoc) ([]byte, error) {
	var v validator
	v.envelope(d.Envelope, 32)
	v.eic("balancing group", d.BalancingGroup, 'X')
	v.eic("balancing area", d.BalancingArea, 'Y')
	if !mako.ValidMPID(d.Supplier) {
		v.addf("supplier %q is no 13-digit market-partner id", d.Supplier)
	}
	if len(d.SeriesTypes) == 0 {
		v.addf("no series type")
	}
	seen := map[string]bool{}
	for _, st := range d.SeriesTypes {
		if !zrtPattern.MatchString(st) {
			v.addf("series type %q is no three-character code like SLS", st)
		}
		if seen[st] {
			v.addf("series type %s twice", st)
		}
		seen[st] = true
	}
	if d.ValidFrom.IsZero() {
		v.addf("valid-from date missing")
	}
	if err := v.err("Zuordnungsermaechtigung"); err != nil {
		return nil, err
	}
	y, m, day := d.ValidFrom.In(pipeline.Berlin).Date()
	begin := time.Date(y, m, day, 0, 0, 0, 0, pipeline.Berlin)

	var w builder
	w.open(d.Envelope, "UTILMD", UtilmdVersion)
	w.seg("BGM", c("Z17"), c(d.DocumentNo))
	w.seg("DTM", c("137", dtm303(d.At), "303"))
	w.seg("NAD", c("MS"), c(d.Sender, "", "293"))
	w.seg("NAD", c("MR"), c(d.Receiver, "", "293"))
	for i, st := range d.SeriesTypes {
		w.seg("IDE", c("24"), c(fmt.Sprintf("%s%03d", d.DocumentNo, i+1)))
		w.seg("DTM", c("158", dtm303(begin), "303"))
		w.seg("RFF", c("Z13", ProcessZuordnung))
		w.seg("SEQ", c("Z22"))
		w.seg("CCI", c("Z20"), c(), c(d.BalancingArea))
		w.seg("CCI", c("Z19"), c(), c(d.BalancingGroup))
		w.seg("CCI", c("15"), c(), c("Z21"))
		w.seg("CAV", c(st))
		w.seg("NAD", c("VY"), c(d.Supplier, "", "293"))
	}
	w.close(d.Envelope)
	return w.bytes()
}

// FileName is the outbox name of an interchange we write:
// <TYPE>_<sender>_<receiver>_<yyyymmdd>_<interchange ref>.edi, e.g.
// PARTIN_9900000000003_9900000000010_20260813_SB000000000042.edi. The date
// is the German calendar day of At, the day the market communication files
// it under. The parts follow the BDEW naming habit (type, sender, receiver,
// date, reference); characters outside letters, digits, '-' and '_' are
// replaced by '-' so that an unvalidated envelope still gives a safe key.
func FileName(msgType string, e Envelope) string {
	return fmt.Sprintf("%s_%s_%s_%s_%s.edi", safeName(msgType), safeName(e.Sender), safeName(e.Receiver),
		e.At.In(pipeline.Berlin).Format("20060102"), safeName(e.InterchangeRef))
}

func safeName(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (isAlnum(byte(r)) || r == '-' || r == '_') {
			return r
		}
		return '-'
	}, s)
}

// dtm303 formats a time as DTM format 303 in UTC: CCYYMMDDHHMM+00 (the "+"
// is released when the segment is written).
func dtm303(t time.Time) string { return t.UTC().Format("200601021504") + "+00" }

// c builds the components of one element.
func c(parts ...string) []string { return parts }

// builder writes segments with the default service characters (the UNA it
// writes). Segments follow each other without line breaks, the strict form
// of ISO 9735 that every receiving converter accepts.
type builder struct {
	b     []byte
	count int // segments written since UNB
	unh   int // count at the UNH
}

func (w *builder) open(e Envelope, msgType, version string) {
	w.b = append(w.b, "UNA:+.? '"...)
	at := e.At.UTC()
	test := ""
	if e.Test {
		test = "1"
	}
	w.seg("UNB", c("UNOC", "3"), c(e.Sender, "500"), c(e.Receiver, "500"), c(at.Format("060102"), at.Format("1504")),
		c(e.InterchangeRef), c(), c(), c(), c(), c(), c(test))
	w.unh = w.count + 1
	w.seg("UNH", c(e.MessageRef), append(c(msgType), strings.Split(version, ":")...))
}

func (w *builder) close(e Envelope) {
	n := w.count + 1 - w.unh + 1
	w.seg("UNT", c(fmt.Sprint(n)), c(e.MessageRef))
	w.seg("UNZ", c("1"), c(e.InterchangeRef))
}

// seg appends a segment; trailing empty components and elements are left
// out, and every value is escaped with the release character.
func (w *builder) seg(tag string, elems ...[]string) {
	w.count++
	w.b = append(w.b, tag...)
	last := len(elems) - 1
	for last >= 0 && allEmpty(elems[last]) {
		last--
	}
	for _, el := range elems[:last+1] {
		w.b = append(w.b, '+')
		lc := len(el) - 1
		for lc >= 0 && el[lc] == "" {
			lc--
		}
		for j, comp := range el[:lc+1] {
			if j > 0 {
				w.b = append(w.b, ':')
			}
			for i := 0; i < len(comp); i++ {
				switch comp[i] {
				case '+', ':', '\'', '?':
					w.b = append(w.b, '?')
				}
				w.b = append(w.b, comp[i])
			}
		}
	}
	w.b = append(w.b, '\'')
}

// bytes encodes the UTF-8 text as ISO 8859-1, the UNOC repertoire. The
// validator has rejected every character outside it.
func (w *builder) bytes() ([]byte, error) {
	out := make([]byte, 0, len(w.b))
	for i := 0; i < len(w.b); {
		r, size := utf8.DecodeRune(w.b[i:])
		if r > 0xFF || r == utf8.RuneError && size == 1 {
			return nil, pipeline.Errorf(pipeline.Internal, "edifact: character %q outside UNOC", r)
		}
		out = append(out, byte(r))
		i += size
	}
	return out, nil
}

func allEmpty(el []string) bool {
	for _, s := range el {
		if s != "" {
			return false
		}
	}
	return true
}

// validator collects every problem of an input so that one error names all.
type validator struct{ problems []string }

func (v *validator) addf(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

func (v *validator) err(what string) error {
	if len(v.problems) == 0 {
		return nil
	}
	return pipeline.Errorf(pipeline.Invalid, "%s: %s", what, strings.Join(v.problems, "; "))
}

func (v *validator) envelope(e Envelope, maxDoc int) {
	if !mako.ValidMPID(e.Sender) {
		v.addf("sender %q is no 13-digit market-partner id", e.Sender)
	}
	if !mako.ValidMPID(e.Receiver) {
		v.addf("receiver %q is no 13-digit market-partner id", e.Receiver)
	}
	if !refPattern.MatchString(e.InterchangeRef) {
		v.addf("interchange reference %q: 1 to 14 letters, digits, '-' or '_'", e.InterchangeRef)
	}
	if !refPattern.MatchString(e.MessageRef) {
		v.addf("message reference %q: 1 to 14 letters, digits, '-' or '_'", e.MessageRef)
	}
	if !docPattern.MatchString(e.DocumentNo) || len(e.DocumentNo) > maxDoc {
		v.addf("document number %q: 1 to %d letters, digits, '-' or '_'", e.DocumentNo, maxDoc)
	}
	if e.At.IsZero() {
		v.addf("preparation time missing")
	} else if y := e.At.UTC().Year(); y < 2000 || y > 2069 {
		// UNB carries a two-digit year.
		v.addf("preparation time %s outside 2000-2069", e.At.UTC().Format(time.RFC3339))
	}
}

// text checks free text: ISO 8859-1 only (UNOC), no control characters, at
// most max characters.
func (v *validator) text(name, s string, max int, required bool) {
	if s == "" {
		if required {
			v.addf("%s missing", name)
		}
		return
	}
	if strings.TrimSpace(s) != s {
		v.addf("%s %q has leading or trailing blanks", name, s)
	}
	if !utf8.ValidString(s) {
		v.addf("%s is not valid UTF-8", name)
		return
	}
	n := 0
	for _, r := range s {
		n++
		if r < 0x20 || r >= 0x7F && r < 0xA0 {
			v.addf("%s %q contains a control character", name, s)
			return
		}
		if r > 0xFF {
			v.addf("%s %q: %q is outside the UNOC character set (ISO 8859-1)", name, s, r)
			return
		}
	}
	if n > max {
		v.addf("%s %q is longer than %d characters", name, s, max)
	}
}

func (v *validator) email(name, s string, required bool) {
	v.text(name, s, 254, required)
	if s == "" {
		return
	}
	at := strings.IndexByte(s, '@')
	if at < 1 || at != strings.LastIndexByte(s, '@') || at == len(s)-1 || strings.ContainsAny(s, " \t") {
		v.addf("%s %q is no mail address", name, s)
	}
}

func (v *validator) eic(name, s string, typ byte) {
	if !eicPattern.MatchString(s) || s[2] != typ {
		v.addf("%s %q is no EIC of type %c (16 characters 0-9, A-Z, '-', third %c)", name, s, typ, typ)
	}
}
