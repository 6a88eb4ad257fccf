package fahrplan

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// vAttr is an ESS element whose value sits in the v attribute.
type vAttr struct {
	V string `xml:"v,attr"`
}

func (a vAttr) String() string { return strings.TrimSpace(a.V) }

// utf8BOM is stripped before decoding: the reference TPS starts with one and
// encoding/xml rejects it.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// rootElement returns the local name of the document's root element. Element
// matching below ignores namespaces, so ESS 2.3 (no namespace, DTD) and ESS 4 or
// CIM documents (default namespace) decode with the same structs.
func rootElement(data []byte) (string, []byte, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return "", nil, pipeline.Errorf(pipeline.Invalid, "no XML root element")
		}
		if err != nil {
			return "", nil, pipeline.Errorf(pipeline.Invalid, "malformed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se.Name.Local, data, nil
		}
	}
}

func unmarshal(data []byte, v any) error {
	if err := xml.Unmarshal(data, v); err != nil {
		return pipeline.Errorf(pipeline.Invalid, "malformed XML: %v", err)
	}
	return nil
}

// parseInstant reads an ESS or CIM date-time in UTC, with or without seconds.
func parseInstant(name, s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{layoutDateTime, layoutMinute} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, pipeline.Errorf(pipeline.Invalid, "%s %q: want a UTC time such as 2024-10-25T10:00:19Z", name, s)
}

// parseInterval reads "start/end" in ESS notation.
func parseInterval(name, s string) (time.Time, time.Time, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return time.Time{}, time.Time{}, pipeline.Errorf(pipeline.Invalid, "%s %q: want start/end", name, s)
	}
	start, err := parseInstant(name, a)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	end, err := parseInstant(name, b)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if !end.After(start) {
		return time.Time{}, time.Time{}, pipeline.Errorf(pipeline.Invalid, "%s %q: end not after start", name, s)
	}
	return start, end, nil
}

// deliveryDay returns the Berlin day whose UTC interval is exactly [start, end).
func deliveryDay(name string, start, end time.Time) (pipeline.Day, error) {
	d := pipeline.DayOf(start)
	if !start.Equal(d.Start()) || !end.Equal(d.End()) {
		return pipeline.Day{}, pipeline.Errorf(pipeline.Invalid, "%s %s/%s: not one delivery day", name,
			start.Format(layoutMinute), end.Format(layoutMinute))
	}
	return d, nil
}

func parseVersion(name, s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, pipeline.Errorf(pipeline.Invalid, "%s %q: want a version number", name, s)
	}
	return v, nil
}

// essSchedule covers ScheduleMessage (ESS 2.x) and ScheduleDocument (ESS 4.x),
// which differ only in the name of the creation time and in optional elements.
type essSchedule struct {
	MessageIdentification      vAttr
	MessageVersion             vAttr
	MessageType                vAttr
	ProcessType                vAttr
	ScheduleClassificationType vAttr
	SenderIdentification       vAttr
	SenderRole                 vAttr
	ReceiverIdentification     vAttr
	ReceiverRole               vAttr
	MessageDateTime            vAttr
	CreationDateTime           vAttr
	ScheduleTimeInterval       vAttr
	Domain                     vAttr
	TimeSeries                 []essScheduleSeries `xml:"ScheduleTimeSeries"`
}

type essScheduleSeries struct {
	SendersTimeSeriesIdentification vAttr
	SendersTimeSeriesVersion        vAttr
	BusinessType                    vAttr
	Product                         vAttr
	ObjectAggregation               vAttr
	InArea                          vAttr
	OutArea                         vAttr
	InParty                         vAttr
	OutParty                        vAttr
	CapacityContractType            vAttr
	CapacityAgreementIdentification vAttr
	MeasurementUnit                 vAttr
	Periods                         []essPeriod `xml:"Period"`
}

type essPeriod struct {
	TimeInterval vAttr
	Resolution   vAttr
	Intervals    []struct {
		Pos vAttr
		Qty vAttr
	} `xml:"Interval"`
}

// ParseSchedule reads an ESS schedule (ScheduleMessage of ESS 2.x, also
// ScheduleDocument of ESS 4.x) back into a Message. It checks structure, not
// content: the day must be one whole delivery day and every quarter-hour of
// every series must be given exactly once at resolution PT15M, but identifiers
// are taken as they are. Domain comes from the Domain element or, as German
// ESS 2.3 schedules have none, from the one control area that every series
// touches (empty when that is ambiguous).
func ParseSchedule(data []byte) (Message, error) {
	root, data, err := rootElement(data)
	if err != nil {
		return Message{}, fmt.Errorf("parse schedule: %w", err)
	}
	if root != "ScheduleMessage" && root != "ScheduleDocument" {
		return Message{}, pipeline.Errorf(pipeline.Invalid, "parse schedule: root element %s is not an ESS schedule", root)
	}
	var doc essSchedule
	if err := unmarshal(data, &doc); err != nil {
		return Message{}, fmt.Errorf("parse schedule: %w", err)
	}
	m, err := doc.message()
	if err != nil {
		return Message{}, fmt.Errorf("parse schedule %s: %w", doc.MessageIdentification, err)
	}
	return m, nil
}

func (doc essSchedule) message() (Message, error) {
	m := Message{
		MessageID:                  doc.MessageIdentification.String(),
		MessageType:                doc.MessageType.String(),
		ProcessType:                doc.ProcessType.String(),
		ScheduleClassificationType: doc.ScheduleClassificationType.String(),
		Sender:                     doc.SenderIdentification.String(),
		SenderRole:                 doc.SenderRole.String(),
		Receiver:                   doc.ReceiverIdentification.String(),
		ReceiverRole:               doc.ReceiverRole.String(),
		Domain:                     doc.Domain.String(),
	}
	var err error
	if m.Version, err = parseVersion("MessageVersion", doc.MessageVersion.V); err != nil {
		return Message{}, err
	}
	created := doc.MessageDateTime.String()
	if created == "" {
		created = doc.CreationDateTime.String()
	}
	if m.Created, err = parseInstant("MessageDateTime", created); err != nil {
		return Message{}, err
	}
	start, end, err := parseInterval("ScheduleTimeInterval", doc.ScheduleTimeInterval.V)
	if err != nil {
		return Message{}, err
	}
	if m.Day, err = deliveryDay("ScheduleTimeInterval", start, end); err != nil {
		return Message{}, err
	}
	for i, ts := range doc.TimeSeries {
		s, err := ts.series(m.Day)
		if err != nil {
			return Message{}, fmt.Errorf("series %d (%s): %w", i+1, ts.SendersTimeSeriesIdentification, err)
		}
		m.Series = append(m.Series, s)
	}
	if m.Domain == "" {
		m.Domain = commonArea(m.Series)
	}
	return m, nil
}

func (ts essScheduleSeries) series(day pipeline.Day) (Series, error) {
	s := Series{
		ID:                   ts.SendersTimeSeriesIdentification.String(),
		BusinessType:         ts.BusinessType.String(),
		Product:              ts.Product.String(),
		ObjectAggregation:    ts.ObjectAggregation.String(),
		InArea:               ts.InArea.String(),
		OutArea:              ts.OutArea.String(),
		InParty:              ts.InParty.String(),
		OutParty:             ts.OutParty.String(),
		CapacityContractType: ts.CapacityContractType.String(),
		CapacityAgreementID:  ts.CapacityAgreementIdentification.String(),
		MeasurementUnit:      ts.MeasurementUnit.String(),
	}
	var err error
	if s.Version, err = parseVersion("SendersTimeSeriesVersion", ts.SendersTimeSeriesVersion.V); err != nil {
		return Series{}, err
	}
	n := day.Intervals()
	s.Quantities = make([]float64, n)
	seen := make([]bool, n)
	dayStart := day.Start()
	for _, p := range ts.Periods {
		if r := p.Resolution.String(); r != Resolution {
			return Series{}, pipeline.Errorf(pipeline.Invalid, "resolution %q: only %s is supported", r, Resolution)
		}
		start, end, err := parseInterval("TimeInterval", p.TimeInterval.V)
		if err != nil {
			return Series{}, err
		}
		if start.Before(dayStart) || end.After(day.End()) || start.Sub(dayStart)%step != 0 || end.Sub(start)%step != 0 {
			return Series{}, pipeline.Errorf(pipeline.Invalid, "period %s: not quarter-hours of %s", p.TimeInterval, day)
		}
		// Positions count from the period's start in UTC, so a period that
		// begins later in the day is offset into the day's quarter-hours.
		offset := int(start.Sub(dayStart) / step)
		length := int(end.Sub(start) / step)
		for _, iv := range p.Intervals {
			pos, err := strconv.Atoi(iv.Pos.String())
			if err != nil || pos < 1 || pos > length {
				return Series{}, pipeline.Errorf(pipeline.Invalid, "position %q: want 1..%d", iv.Pos, length)
			}
			q, err := strconv.ParseFloat(iv.Qty.String(), 64)
			if err != nil {
				return Series{}, pipeline.Errorf(pipeline.Invalid, "position %d: quantity %q is not a number", pos, iv.Qty)
			}
			k := offset + pos - 1
			if seen[k] {
				return Series{}, pipeline.Errorf(pipeline.Invalid, "position %d given twice", k+1)
			}
			seen[k] = true
			s.Quantities[k] = q
		}
	}
	for k, ok := range seen {
		if !ok {
			return Series{}, pipeline.Errorf(pipeline.Invalid, "position %d of %d missing", k+1, n)
		}
	}
	return s, nil
}

// commonArea returns the area that appears as InArea or OutArea of every
// series, or "" if there is no such area or more than one.
func commonArea(series []Series) string {
	if len(series) == 0 {
		return ""
	}
	var found string
	for _, cand := range []string{series[0].InArea, series[0].OutArea} {
		if cand == "" || cand == found {
			continue
		}
		all := true
		for _, s := range series[1:] {
			if s.InArea != cand && s.OutArea != cand {
				all = false
				break
			}
		}
		if all {
			if found != "" {
				return ""
			}
			found = cand
		}
	}
	return found
}
