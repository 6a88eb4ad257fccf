package mako

import (
	"strings"
	"time"
	"unicode/utf8"
)

// ReconcileInput is what the reconciliation of mail replies reads: the
// replies of the window, the stored messages their references name, the
// registry and the overview rows for the partners' open streams.
type ReconcileInput struct {
	// Now and Tage describe the window the caller selected Replies for;
	// Reconcile does not filter by date itself, Tage becomes lookback_days.
	Now  time.Time
	Tage int
	// Replies are the received mails of the window, newest first; the
	// caller selects the window (the store's Mails(In, since)).
	Replies []Mail
	// Found is LookupReferences' answer for the Value of every CitedRef of
	// ExtractReferences over the replies.
	Found map[string][]StoredMessage
	// Partners is the registry by mp_id.
	Partners map[string]Partner
	// EmailToMPID is PartnerEmails' answer (lower-cased address -> mp_id).
	EmailToMPID map[string]string
	// Overview is BuildOverview's rows by mp_id, for the open streams.
	Overview map[string]OverviewRow
}

// excerptRunes is the length of a reply's text excerpt.
const excerptRunes = 400

// Reconcile matches each reply against our messages, in the order of
// in.Replies.
//
// Citations (zitiert): of ExtractReferences(subject, text), a keyword
// reference is always listed, found or not; a bare one only when found. A
// reference that names several messages is matched to the best of them: ours
// (direction out) before theirs, then the newest, then the highest id. The
// verdict of a found citation is, for our message, its Verdict or
// VerdictNoAnswer (offen) while unanswered; for their CONTRL or APERAK its
// own verdict; for another message of theirs Received. A reference not found
// has VerdictUnknown, BezugNone and empty richtung, edi_type, date and bezug.
//
// Bewertung, first rule that holds:
//   - ohne_referenz: nothing cited (zitiert is empty);
//   - ohne_bezug: references cited, none found;
//   - abgelehnt: a found citation's verdict is Rejected;
//   - bestaetigt: at least one found citation is Accepted and every other
//     found citation is Accepted too, except citations of their own
//     non-acknowledgment messages (verdict Received, e.g. their PARTIN),
//     which answer nothing of ours and so neither confirm nor hold open;
//   - offen: otherwise (found, but something unanswered or only received).
//
// Partner (mp_id, name): the registry partner of the sender address; else the
// first cited market-partner id (CitedMPIDs) in the registry; else the
// partner of the first found citation whose message's partner is in the
// registry; else none. A mapping to an mp_id outside the registry is passed
// over, since such a partner has no name and no open streams.
//
// Offen is the partner's open streams from in.Overview ([] when none or no
// partner); Text an excerpt of the new text (see excerpt); Date is RFC 3339
// in UTC.
func Reconcile(in ReconcileInput) Reconciliation {
	out := Reconciliation{LookbackDays: in.Tage, Antworten: make([]Reply, 0, len(in.Replies))}
	for _, m := range in.Replies {
		out.Antworten = append(out.Antworten, reconcileOne(in, m))
	}
	return out
}

func reconcileOne(in ReconcileInput, m Mail) Reply {
	r := Reply{
		Folder:  m.Folder,
		Date:    m.Date.UTC().Format(time.RFC3339),
		Sender:  m.From,
		Subject: m.Subject,
		Zitiert: []Citation{},
		Offen:   []string{},
	}
	// found holds the matched message of each found citation, in order.
	parts := splitMail(m.Text)
	sections := mailSections(m.Subject, parts)
	var found []*StoredMessage
	for _, ref := range extractReferences(sections) {
		best := bestMatch(in.Found[ref.Value])
		switch {
		case best != nil:
			r.Zitiert = append(r.Zitiert, citation(ref.Value, best))
			found = append(found, best)
		case ref.Keyword:
			r.Zitiert = append(r.Zitiert, Citation{Referenz: ref.Value, BezugTyp: BezugNone, Verdict: VerdictUnknown})
		}
	}
	r.Bewertung = assess(len(r.Zitiert), found)
	r.MPID = replyPartner(in, m.From, sections, found)
	if r.MPID != "" {
		r.Name = in.Partners[r.MPID].Name
		if row, ok := in.Overview[r.MPID]; ok {
			for _, st := range row.Open {
				r.Offen = append(r.Offen, string(st))
			}
		}
	}
	r.Text = excerpt(parts.New, excerptRunes)
	return r
}

// bestMatch picks the message a reference most likely means: ours first,
// since replies mostly answer what we sent, then the newest.
func bestMatch(msgs []StoredMessage) *StoredMessage {
	var best *StoredMessage
	for i := range msgs {
		m := &msgs[i]
		if best == nil || better(m, best) {
			best = m
		}
	}
	return best
}

func better(a, b *StoredMessage) bool {
	if (a.Direction == Out) != (b.Direction == Out) {
		return a.Direction == Out
	}
	if !a.At.Equal(b.At) {
		return a.At.After(b.At)
	}
	return a.ID > b.ID
}

func citation(ref string, m *StoredMessage) Citation {
	c := Citation{
		Referenz: ref,
		Gefunden: true,
		EDIType:  ediLabel(m.Type, m.ProcessID),
		Date:     m.At.UTC().Format(time.RFC3339),
		Bezug:    m.InterchangeRef + "/" + m.MessageRef,
		BezugTyp: bezugTyp(ref, m),
		Verdict:  citedVerdict(m),
	}
	if m.Type == "" {
		c.EDIType = ""
	}
	if m.Direction == Out {
		c.Richtung = "ausgehend"
	} else {
		c.Richtung = "eingehend"
	}
	return c
}

// bezugTyp says which reference of m equals ref: the interchange reference
// first, then the message reference, then the document number; the store
// may match without regard to case, so an exact match is tried first.
func bezugTyp(ref string, m *StoredMessage) string {
	for _, eq := range []func(a, b string) bool{
		func(a, b string) bool { return a == b },
		strings.EqualFold,
	} {
		switch {
		case m.InterchangeRef != "" && eq(ref, m.InterchangeRef):
			return BezugInterchange
		case m.MessageRef != "" && eq(ref, m.MessageRef):
			return BezugMessage
		case m.DocumentNo != "" && eq(ref, m.DocumentNo):
			return BezugDocument
		}
	}
	return BezugNone
}

func citedVerdict(m *StoredMessage) Verdict {
	switch {
	case m.Direction == Out:
		if m.Verdict == VerdictNone {
			return VerdictNoAnswer
		}
		return m.Verdict
	case isAck(m.Type):
		if m.Verdict == VerdictNone {
			return Received
		}
		return m.Verdict
	}
	return Received
}

func isAck(typ string) bool { return typ == "CONTRL" || typ == "APERAK" }

func assess(cited int, found []*StoredMessage) Bewertung {
	switch {
	case cited == 0:
		return BewertungOhneReferenz
	case len(found) == 0:
		return BewertungOhneBezug
	}
	accepted, open := 0, 0
	for _, m := range found {
		switch v := citedVerdict(m); {
		case v == Rejected:
			return BewertungAbgelehnt
		case v == Accepted:
			accepted++
		case m.Direction != Out && !isAck(m.Type):
			// Their own message (e.g. their PARTIN) answers nothing of
			// ours: neutral.
		default:
			open++
		}
	}
	if accepted > 0 && open == 0 {
		return BewertungBestaetigt
	}
	return BewertungOffen
}

func replyPartner(in ReconcileInput, from string, sections []string, found []*StoredMessage) string {
	if id, ok := in.EmailToMPID[strings.ToLower(strings.TrimSpace(from))]; ok {
		if _, known := in.Partners[id]; known {
			return id
		}
	}
	for _, id := range citedMPIDs(sections) {
		if _, known := in.Partners[id]; known {
			return id
		}
	}
	for _, f := range found {
		if _, known := in.Partners[f.PartnerMPID]; known && f.PartnerMPID != "" {
			return f.PartnerMPID
		}
	}
	return ""
}

// excerpt collapses white space and cuts text to at most n runes at a word
// boundary, marking the cut with "…" (which comes on top of the n runes). A
// first word longer than n is cut inside the word.
func excerpt(text string, n int) string {
	s := strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut := 0 // byte offset after n runes
	for i := range s {
		if n == 0 {
			cut = i
			break
		}
		n--
	}
	if s[cut] != ' ' {
		if sp := strings.LastIndexByte(s[:cut], ' '); sp > 0 {
			cut = sp
		}
	}
	return strings.TrimRight(s[:cut], " ") + "…"
}
