package mako

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/schedbridge/schedbridge/pipeline"
)

// OverviewOptions are the parameters of an overview: the clock reading it is
// computed at, the window in days and the ordering within a control area
// (OrderStatus or OrderKontakt; anything else orders by status).
type OverviewOptions struct {
	Now     time.Time
	Tage    int
	Ordnung string
}

// controlAreas are the four German control areas in the order of the
// overview's groups.
var controlAreas = []string{"50Hertz", "Amprion", "TenneT", "TransnetBW"}

// UnknownControlArea names the last group of the overview: partners whose
// registry entry names no control area, or one other than 50Hertz, Amprion,
// TenneT and TransnetBW.
const UnknownControlArea = "unbekannt"

// BuildOverview derives the overview of the market communication: one row
// per partner of the registry (facts of mp_ids outside the registry are
// ignored), grouped by control area.
//
// Window: a message or contact counts when its time is at or after
// Now - Tage*24h; an older one is treated as absent.
//
// Stream states (newest message of the stream in the window):
//   - partin_out and zuordnungsermaechtigung_out: none -> fehlt; verdict
//     Rejected -> abgelehnt; Accepted -> bestaetigt; otherwise (no answer, or
//     only a CONTRL 8 receipt) unbeantwortet when Now is after
//     AnswerDeadline of the message, else gesendet. The
//     Zuordnungsermaechtigung has no business answer, so it stays gesendet
//     and is never unbeantwortet.
//   - ack_in: Accepted -> bestaetigt, Rejected -> abgelehnt, any other
//     verdict -> erhalten; none -> fehlt.
//   - partin_in: present -> erhalten; none -> fehlt.
//
// A stream is done (not listed in offen) when partin_out is bestaetigt;
// ack_in is bestaetigt or erhalten, or fehlt while partin_out is bestaetigt
// (the acceptance proves an answer came, e.g. from a service provider's id);
// partin_in is erhalten; zuordnungsermaechtigung_out is gesendet or
// bestaetigt.
//
// Status, first rule that holds:
//   - red: a stream is abgelehnt (our PARTIN or Zuordnungsermaechtigung was
//     rejected, or the DSO's newest acknowledgment is a rejection);
//   - green: every stream is done (offen is empty);
//   - grey: no stream message and no contact on either channel in the window;
//   - yellow: everything else (something was exchanged, something is open).
//
// Reasons (status_gruende) are German sentences: on a red row the rejections
// first, then one sentence per other open stream in row order; a green row
// gets one summary sentence, a grey row one sentence about the empty window.
//
// letzter_kontakt_at and letzter_kontakt are the newer of the EDIFACT and the
// mail contact in the window (EDIFACT on a tie), the text being the channel,
// a colon and Contact.What: "EDIFACT: PARTIN 37001 erhalten",
// "E-Mail: <What>". Both are nil without a contact in the window.
//
// Groups: 50Hertz, Amprion, TenneT and TransnetBW always, in that order (the
// registry spelling is matched ignoring case, spaces and a suffix such as
// "TenneT TSO"), then UnknownControlArea when a partner has no known control
// area. A row's control_area is its group's name. Counts has all four
// statuses, zeros included, per group and overall.
//
// Order within a group: OrderStatus puts red rows first, then orders by name;
// OrderKontakt puts the newest letzter_kontakt_at first and partners without
// contact last, then orders by name. Names compare case-insensitively with
// umlauts folded (ä as a, ß as ss); the mp_id breaks remaining ties.
func BuildOverview(partners []Partner, facts map[string]PartnerFacts, o OverviewOptions) Overview {
	since := o.Now.Add(-time.Duration(o.Tage) * 24 * time.Hour)
	ordnung := o.Ordnung
	if ordnung != OrderKontakt {
		ordnung = OrderStatus
	}
	byArea := make(map[string][]sortRow, len(controlAreas)+1)
	for _, p := range partners {
		row := buildRow(p, facts[p.MPID], o.Now, since, o.Tage)
		byArea[row.ControlArea] = append(byArea[row.ControlArea], sortRow{row: &row, name: nameKey(p.Name)})
	}
	ov := Overview{Tage: o.Tage, Ordnung: ordnung, Stand: o.Now, Counts: newCounts(), Groups: []OverviewGroup{}}
	areas := append(slices.Clone(controlAreas), UnknownControlArea)
	for _, area := range areas {
		rows, ok := byArea[area]
		if !ok && area == UnknownControlArea {
			continue
		}
		sortRows(rows, ordnung)
		g := OverviewGroup{ControlArea: area, Counts: newCounts(), Partners: make([]OverviewRow, 0, len(rows))}
		for _, r := range rows {
			g.Partners = append(g.Partners, *r.row)
			g.Counts[r.row.Status]++
			ov.Counts[r.row.Status]++
		}
		ov.Groups = append(ov.Groups, g)
	}
	return ov
}

func newCounts() map[Status]int {
	return map[Status]int{Red: 0, Yellow: 0, Green: 0, Grey: 0}
}

// sortRow carries the folded name so that sorting does not fold it again
// on every comparison; the row is a pointer so that sorting moves two words
// instead of the whole row.
type sortRow struct {
	row  *OverviewRow
	name string
}

func sortRows(rows []sortRow, ordnung string) {
	byName := func(a, b sortRow) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.row.MPID, b.row.MPID)
	}
	switch ordnung {
	case OrderKontakt:
		slices.SortFunc(rows, func(a, b sortRow) int {
			ta, tb := a.row.LetzterKontaktAt, b.row.LetzterKontaktAt
			switch {
			case ta == nil && tb != nil:
				return 1
			case ta != nil && tb == nil:
				return -1
			case ta != nil && tb != nil && !ta.Equal(*tb):
				return tb.Compare(*ta)
			}
			return byName(a, b)
		})
	default:
		slices.SortFunc(rows, func(a, b sortRow) int {
			if c := cmp.Compare(redRank(a.row.Status), redRank(b.row.Status)); c != 0 {
				return c
			}
			return byName(a, b)
		})
	}
}

func redRank(s Status) int {
	if s == Red {
		return 0
	}
	return 1
}

var umlauts = strings.NewReplacer("ä", "a", "ö", "o", "ü", "u", "ß", "ss", "é", "e", "è", "e", "á", "a", "à", "a", "ó", "o", "ç", "c")

// nameKey is the sort key of a partner name: lower case with umlauts folded,
// so that "Überlandwerk" sorts among the U and "Ärzteversorgung" among the A,
// as in German dictionaries (DIN 5007-1).
func nameKey(name string) string {
	return umlauts.Replace(strings.ToLower(strings.TrimSpace(name)))
}

// controlArea maps a registry spelling to one of controlAreas, or to
// UnknownControlArea.
func controlArea(s string) string {
	key := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, s)
	if key == "" {
		return UnknownControlArea
	}
	for _, a := range controlAreas {
		if strings.HasPrefix(key, strings.ToLower(a)) {
			return a
		}
	}
	return UnknownControlArea
}

func buildRow(p Partner, f PartnerFacts, now, since time.Time, tage int) OverviewRow {
	inWindow := func(t time.Time) bool { return !t.IsZero() && !t.Before(since) }
	latest := func(st Stream) *StoredMessage {
		m, ok := f.Latest[st]
		if !ok || !inWindow(m.At) {
			return nil
		}
		return &m
	}
	row := OverviewRow{
		MPID:         p.MPID,
		Name:         p.Name,
		ControlArea:  controlArea(p.ControlArea),
		PartinOut:    sendState(latest(PartinOut), now, true),
		AckIn:        ackState(latest(AckIn)),
		PartinIn:     receiveState(latest(PartinIn)),
		ZuordnungOut: sendState(latest(ZuordnungOut), now, false),
	}
	var c *Contact
	label := ""
	if f.Edi != nil && inWindow(f.Edi.At) {
		c, label = f.Edi, "EDIFACT"
	}
	if f.Mail != nil && inWindow(f.Mail.At) && (c == nil || f.Mail.At.After(c.At)) {
		c, label = f.Mail, "E-Mail"
	}
	if c != nil {
		at := c.At
		text := label
		if w := strings.TrimSpace(c.What); w != "" {
			text += ": " + w
		}
		row.LetzterKontaktAt, row.LetzterKontakt = &at, &text
	}
	row.Open = OpenStreams(row)
	row.Status, row.Reasons = status(row, tage)
	return row
}

// sendState is the state of one of our send streams; answered says whether
// the message type gets a business answer that can be overdue.
func sendState(m *StoredMessage, now time.Time, answered bool) StreamState {
	if m == nil {
		return StreamState{State: StateMissing}
	}
	s := cell(m)
	switch m.Verdict {
	case Rejected:
		s.State = StateRejected
	case Accepted:
		s.State = StateAccepted
	default:
		s.State = StateSent
		if answered && now.After(AnswerDeadline(m.At)) {
			s.State = StateOverdue
		}
	}
	return s
}

func ackState(m *StoredMessage) StreamState {
	if m == nil {
		return StreamState{State: StateMissing}
	}
	s := cell(m)
	switch m.Verdict {
	case Accepted:
		s.State = StateAccepted
	case Rejected:
		s.State = StateRejected
	default:
		s.State = StateReceived
	}
	return s
}

func receiveState(m *StoredMessage) StreamState {
	if m == nil {
		return StreamState{State: StateMissing}
	}
	s := cell(m)
	s.State = StateReceived
	return s
}

// cell fills the message facts of a stream cell; the pointers point at
// copies so that rows do not share memory with the facts.
func cell(m *StoredMessage) StreamState {
	at := m.At
	s := StreamState{At: &at, Type: m.Type, ProcessID: m.ProcessID, Ref: m.InterchangeRef}
	if !m.AnsweredAt.IsZero() {
		ans := m.AnsweredAt
		s.AnsweredAt = &ans
	}
	return s
}

// OpenStreams lists the streams of a row not in a done state, in row order
// (the done states are in BuildOverview's doc); never nil.
func OpenStreams(row OverviewRow) []Stream {
	open := []Stream{}
	for _, st := range Streams {
		if !streamDone(row, st) {
			open = append(open, st)
		}
	}
	return open
}

func streamDone(row OverviewRow, st Stream) bool {
	switch st {
	case PartinOut:
		return row.PartinOut.State == StateAccepted
	case AckIn:
		switch row.AckIn.State {
		case StateAccepted, StateReceived:
			return true
		case StateMissing:
			return row.PartinOut.State == StateAccepted
		}
	case PartinIn:
		return row.PartinIn.State == StateReceived
	case ZuordnungOut:
		return row.ZuordnungOut.State == StateSent || row.ZuordnungOut.State == StateAccepted
	}
	return false
}

func streamCell(row OverviewRow, st Stream) StreamState {
	switch st {
	case PartinOut:
		return row.PartinOut
	case AckIn:
		return row.AckIn
	case PartinIn:
		return row.PartinIn
	default:
		return row.ZuordnungOut
	}
}

func status(row OverviewRow, tage int) (Status, []string) {
	var rejected, others []string
	exchanged := row.LetzterKontaktAt != nil
	for _, st := range Streams {
		c := streamCell(row, st)
		if c.State != StateMissing {
			exchanged = true
		}
		if slices.Contains(row.Open, st) {
			if c.State == StateRejected {
				rejected = append(rejected, reason(st, c))
			} else {
				others = append(others, reason(st, c))
			}
		}
	}
	switch {
	case len(rejected) > 0:
		return Red, append(rejected, others...)
	case len(row.Open) == 0:
		ze := "gesendet"
		if row.ZuordnungOut.State == StateAccepted {
			ze = "bestätigt"
		}
		return Green, []string{"PARTIN an den Netzbetreiber bestätigt, PARTIN des Netzbetreibers erhalten, Zuordnungsermächtigung " + ze}
	case !exchanged:
		return Grey, []string{fmt.Sprintf("Keine Nachricht und kein Kontakt in den letzten %d Tagen", tage)}
	}
	return Yellow, others
}

// reason is the German sentence for an open stream.
func reason(st Stream, c StreamState) string {
	label := ediLabel(c.Type, c.ProcessID)
	switch st {
	case PartinOut:
		switch c.State {
		case StateMissing:
			return "Keine PARTIN an den Netzbetreiber gesendet"
		case StateRejected:
			return fmt.Sprintf("%s an den Netzbetreiber abgelehnt am %s", label, answerDay(c))
		case StateOverdue:
			return fmt.Sprintf("%s vom %s unbeantwortet, Antwortfrist %s verstrichen", label, berlinDay(*c.At), berlinMinute(AnswerDeadline(*c.At)))
		default:
			return fmt.Sprintf("%s vom %s gesendet, Antwort bis %s ausstehend", label, berlinDay(*c.At), berlinMinute(AnswerDeadline(*c.At)))
		}
	case AckIn:
		if c.State == StateRejected {
			return fmt.Sprintf("Letzte Quittung des Netzbetreibers ist eine Ablehnung (%s) vom %s", rejectionCode(c.Type), berlinDay(*c.At))
		}
		return "Keine Quittung (CONTRL/APERAK) des Netzbetreibers erhalten"
	case PartinIn:
		return "Keine PARTIN des Netzbetreibers erhalten"
	default:
		switch c.State {
		case StateMissing:
			return "Keine Zuordnungsermächtigung an den Netzbetreiber gesendet"
		case StateRejected:
			return fmt.Sprintf("Zuordnungsermächtigung (%s) abgelehnt am %s", label, answerDay(c))
		default:
			// Not reached with the rules above (a sent Zuordnungsermaechtigung
			// is done); kept so that a rule change yields a sentence.
			return fmt.Sprintf("Zuordnungsermächtigung (%s) vom %s %s", label, berlinDay(*c.At), c.State)
		}
	}
}

// rejectionCode names how an acknowledgment type says "rejected".
func rejectionCode(typ string) string {
	switch typ {
	case "CONTRL":
		return "CONTRL 4"
	case "APERAK":
		return "APERAK 313"
	case "":
		return "Quittung"
	}
	return typ
}

// ediLabel is "PARTIN 37000", or the bare type without a process id.
func ediLabel(typ, processID string) string {
	if typ == "" {
		typ = "Nachricht"
	}
	if processID == "" {
		return typ
	}
	return typ + " " + processID
}

// answerDay is the Berlin day of the answer that set a cell's state, or of
// the message when the answer time is unknown.
func answerDay(c StreamState) string {
	if c.AnsweredAt != nil {
		return berlinDay(*c.AnsweredAt)
	}
	return berlinDay(*c.At)
}

func berlinDay(t time.Time) string { return pipeline.DayOf(t).String() }

func berlinMinute(t time.Time) string { return t.In(pipeline.Berlin).Format("2006-01-02 15:04") }
