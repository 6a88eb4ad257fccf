package fahrplan

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Defaults applied by Marshal to empty fields. The values are those of the
// German TPS reference file.
const (
	DefaultMessageType                = "A01"           // balance responsible schedule
	DefaultProcessType                = "A17"           // schedule day (day-ahead, intraday and ex post in one document)
	DefaultScheduleClassificationType = "A01"           // detail type
	DefaultSenderRole                 = "A08"           // balance responsible party
	DefaultReceiverRole               = "A04"           // system operator
	DefaultProduct                    = "8716867000016" // active power
	DefaultObjectAggregation          = "A01"           // area
	DefaultMeasurementUnit            = "MAW"           // megawatt
)

// Resolution is the only resolution written and read: German schedules are
// quarter-hourly.
const Resolution = "PT15M"

const (
	// maxIdentification is the ESS length limit of MessageIdentification and
	// SendersTimeSeriesIdentification.
	maxIdentification = 35
	maxVersion        = 999
	step              = 15 * time.Minute
	// Layouts of ESS date-times: instants with seconds, interval ends in minutes.
	layoutDateTime = "2006-01-02T15:04:05Z"
	layoutMinute   = "2006-01-02T15:04Z"
)

// Series is one ScheduleTimeSeries: the energy that OutParty delivers to
// InParty, from OutArea into InArea, in MW per quarter-hour.
type Series struct {
	ID                   string // SendersTimeSeriesIdentification, unique within the message
	Version              int    // SendersTimeSeriesVersion; 0 means the message version
	BusinessType         string // e.g. A01 production, A02 internal trade, A04 consumption, A06 external trade
	Product              string // default DefaultProduct
	ObjectAggregation    string // default DefaultObjectAggregation
	InArea, OutArea      string // control-area EICs (Y codes); equal for trades inside one control area
	InParty, OutParty    string // balancing-group EICs (X codes); InParty receives the energy
	CapacityContractType string // written only when set: German internal schedules carry none
	CapacityAgreementID  string // CapacityAgreementIdentification, written only when set
	MeasurementUnit      string // default DefaultMeasurementUnit
	Quantities           []float64
}

// Message is an ESS ScheduleMessage: the balancing group's schedule for one
// delivery day to one TSO.
type Message struct {
	MessageID                  string       // MessageIdentification; ESS keeps it across versions of one schedule
	Version                    int          // MessageVersion, 1..999
	MessageType                string       // default DefaultMessageType
	ProcessType                string       // default DefaultProcessType
	ScheduleClassificationType string       // default DefaultScheduleClassificationType
	Sender, Receiver           string       // the balancing group's EIC and the TSO's party EIC (X codes)
	SenderRole, ReceiverRole   string       // defaults DefaultSenderRole, DefaultReceiverRole
	Created                    time.Time    // MessageDateTime, written in UTC to the second
	Day                        pipeline.Day // the delivery day; positions count from its UTC start
	// Domain is the receiving TSO's control area (Y code). German ESS 2.3
	// schedules have no Domain element (see the reference TPS), so it is not
	// written; when set, Marshal checks that every series has it as InArea or
	// OutArea, because a TSO accepts only series that touch its control area.
	Domain string
	Series []Series
}

// FileName is the name under which the schedule is exchanged:
// YYYYMMDD_TPS_<Sender>_<Receiver>_<Version as 3 digits>.XML.
func (m Message) FileName() string {
	return FileName{Day: m.Day, Kind: "TPS", Sender: m.Sender, Receiver: m.Receiver, Version: m.Version}.String()
}

// WithDefaults returns m with the defaults filled in, which is what Marshal
// writes. The Series slice is copied; the quantity slices are shared.
func (m Message) WithDefaults() Message {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&m.MessageType, DefaultMessageType)
	def(&m.ProcessType, DefaultProcessType)
	def(&m.ScheduleClassificationType, DefaultScheduleClassificationType)
	def(&m.SenderRole, DefaultSenderRole)
	def(&m.ReceiverRole, DefaultReceiverRole)
	series := make([]Series, len(m.Series))
	for i, s := range m.Series {
		def(&s.Product, DefaultProduct)
		def(&s.ObjectAggregation, DefaultObjectAggregation)
		def(&s.MeasurementUnit, DefaultMeasurementUnit)
		if s.Version == 0 {
			s.Version = m.Version
		}
		series[i] = s
	}
	m.Series = series
	return m
}

// Marshal validates the message and writes it as an ESS 2.3 ScheduleMessage.
// Validation failures are pipeline.Invalid errors that name the field.
func Marshal(m Message) ([]byte, error) {
	m = m.WithDefaults()
	if err := validate(m); err != nil {
		return nil, fmt.Errorf("schedule %s v%d: %w", m.MessageID, m.Version, err)
	}
	return write(m), nil
}

// write renders a message that has its defaults filled in. It does not
// validate, so that tests can re-render the reference file, whose anonymised
// EICs have wrong check characters.
func write(m Message) []byte {
	start, end := m.Day.Start().UTC(), m.Day.End().UTC()
	interval := start.Format(layoutMinute) + "/" + end.Format(layoutMinute)

	var b bytes.Buffer
	b.Grow(512 + len(m.Series)*(600+m.Day.Intervals()*80))
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<!DOCTYPE ScheduleMessage SYSTEM "../schedulev2r3/dtd/schedule-xml.dtd">` + "\n")
	b.WriteString(`<ScheduleMessage DtdVersion="2" DtdRelease="3">` + "\n")
	w := func(indent, name, v string) { writeV(&b, indent, name, v, false) }
	wc := func(indent, name, v string) { writeV(&b, indent, name, v, true) }
	w("  ", "MessageIdentification", m.MessageID)
	w("  ", "MessageVersion", strconv.Itoa(m.Version))
	w("  ", "MessageType", m.MessageType)
	w("  ", "ProcessType", m.ProcessType)
	w("  ", "ScheduleClassificationType", m.ScheduleClassificationType)
	wc("  ", "SenderIdentification", m.Sender)
	w("  ", "SenderRole", m.SenderRole)
	wc("  ", "ReceiverIdentification", m.Receiver)
	w("  ", "ReceiverRole", m.ReceiverRole)
	w("  ", "MessageDateTime", m.Created.UTC().Format(layoutDateTime))
	w("  ", "ScheduleTimeInterval", interval)
	for _, s := range m.Series {
		b.WriteString("  <ScheduleTimeSeries>\n")
		w("    ", "SendersTimeSeriesIdentification", s.ID)
		w("    ", "SendersTimeSeriesVersion", strconv.Itoa(s.Version))
		w("    ", "BusinessType", s.BusinessType)
		w("    ", "Product", s.Product)
		w("    ", "ObjectAggregation", s.ObjectAggregation)
		wc("    ", "InArea", s.InArea)
		wc("    ", "OutArea", s.OutArea)
		wc("    ", "InParty", s.InParty)
		wc("    ", "OutParty", s.OutParty)
		if s.CapacityContractType != "" {
			w("    ", "CapacityContractType", s.CapacityContractType)
		}
		if s.CapacityAgreementID != "" {
			w("    ", "CapacityAgreementIdentification", s.CapacityAgreementID)
		}
		w("    ", "MeasurementUnit", s.MeasurementUnit)
		b.WriteString("    <Period>\n")
		w("      ", "TimeInterval", interval)
		w("      ", "Resolution", Resolution)
		for i, q := range s.Quantities {
			b.WriteString("      <Interval>\n")
			w("        ", "Pos", strconv.Itoa(i+1))
			w("        ", "Qty", FormatQuantity(q))
			b.WriteString("      </Interval>\n")
		}
		b.WriteString("    </Period>\n")
		b.WriteString("  </ScheduleTimeSeries>\n")
	}
	b.WriteString("</ScheduleMessage>\n")
	return b.Bytes()
}

// writeV writes <name v="value"/>, with codingScheme="A01" (EIC) when coded.
func writeV(b *bytes.Buffer, indent, name, value string, coded bool) {
	b.WriteString(indent)
	b.WriteByte('<')
	b.WriteString(name)
	b.WriteString(` v="`)
	if strings.ContainsAny(value, "&<>\"'\t\n\r") {
		// EscapeText also escapes quotes, so the result is safe inside an attribute.
		_ = xml.EscapeText(b, []byte(value))
	} else {
		b.WriteString(value)
	}
	if coded {
		b.WriteString(`" codingScheme="A01"/>` + "\n")
	} else {
		b.WriteString(`"/>` + "\n")
	}
}

// FormatQuantity formats MW with exactly three decimals, as the TSOs expect
// ("22.500", "0.000"). Negative zero is written as 0.000.
func FormatQuantity(q float64) string {
	if q == 0 {
		q = 0 // folds -0 into +0
	}
	return strconv.FormatFloat(q, 'f', 3, 64)
}

func validate(m Message) error {
	if err := validIdentification("MessageIdentification", m.MessageID); err != nil {
		return err
	}
	if m.Version < 1 || m.Version > maxVersion {
		return pipeline.Errorf(pipeline.Invalid, "MessageVersion %d: want 1..%d", m.Version, maxVersion)
	}
	for _, c := range []struct{ name, v string }{
		{"MessageType", m.MessageType},
		{"ProcessType", m.ProcessType},
		{"ScheduleClassificationType", m.ScheduleClassificationType},
		{"SenderRole", m.SenderRole},
		{"ReceiverRole", m.ReceiverRole},
	} {
		if err := validCode(c.name, c.v); err != nil {
			return err
		}
	}
	if err := eicField("SenderIdentification", m.Sender, pipeline.EICParty); err != nil {
		return err
	}
	if err := eicField("ReceiverIdentification", m.Receiver, pipeline.EICParty); err != nil {
		return err
	}
	if m.Domain != "" {
		if err := eicField("Domain", m.Domain, pipeline.EICArea); err != nil {
			return err
		}
	}
	if m.Created.IsZero() {
		return pipeline.Errorf(pipeline.Invalid, "MessageDateTime: missing")
	}
	if m.Day.IsZero() {
		return pipeline.Errorf(pipeline.Invalid, "delivery day: missing")
	}
	if d, err := pipeline.ParseDay(m.Day.String()); err != nil || d != m.Day {
		return pipeline.Errorf(pipeline.Invalid, "delivery day %s: not a calendar day", m.Day)
	}
	n := m.Day.Intervals()
	seen := make(map[string]bool, len(m.Series))
	for i, s := range m.Series {
		if err := validSeries(s, m, n); err != nil {
			return fmt.Errorf("series %d (%s): %w", i+1, s.ID, err)
		}
		if seen[s.ID] {
			return pipeline.Errorf(pipeline.Invalid, "series %d: SendersTimeSeriesIdentification %q used twice", i+1, s.ID)
		}
		seen[s.ID] = true
	}
	return nil
}

func validSeries(s Series, m Message, n int) error {
	if err := validIdentification("SendersTimeSeriesIdentification", s.ID); err != nil {
		return err
	}
	if s.Version < 1 || s.Version > m.Version {
		return pipeline.Errorf(pipeline.Invalid, "SendersTimeSeriesVersion %d: want 1..%d (the message version)", s.Version, m.Version)
	}
	if err := validCode("BusinessType", s.BusinessType); err != nil {
		return err
	}
	if err := validCode("ObjectAggregation", s.ObjectAggregation); err != nil {
		return err
	}
	if s.CapacityContractType != "" {
		if err := validCode("CapacityContractType", s.CapacityContractType); err != nil {
			return err
		}
	}
	if s.CapacityAgreementID != "" {
		if err := validIdentification("CapacityAgreementIdentification", s.CapacityAgreementID); err != nil {
			return err
		}
	}
	if len(s.Product) != 13 || !allDigits(s.Product) {
		return pipeline.Errorf(pipeline.Invalid, "Product %q: want a 13-digit product code", s.Product)
	}
	if !validUnit(s.MeasurementUnit) {
		return pipeline.Errorf(pipeline.Invalid, "MeasurementUnit %q: want a 3-character unit code such as MAW", s.MeasurementUnit)
	}
	for _, f := range []struct {
		name, v string
		typ     byte
	}{
		{"InArea", s.InArea, pipeline.EICArea},
		{"OutArea", s.OutArea, pipeline.EICArea},
		{"InParty", s.InParty, pipeline.EICParty},
		{"OutParty", s.OutParty, pipeline.EICParty},
	} {
		if err := eicField(f.name, f.v, f.typ); err != nil {
			return err
		}
	}
	if m.Domain != "" && s.InArea != m.Domain && s.OutArea != m.Domain {
		return pipeline.Errorf(pipeline.Invalid, "neither InArea %s nor OutArea %s is the control area %s", s.InArea, s.OutArea, m.Domain)
	}
	if len(s.Quantities) != n {
		return pipeline.Errorf(pipeline.Invalid, "%d quantities: delivery day %s has %d quarter-hours", len(s.Quantities), m.Day, n)
	}
	for i, q := range s.Quantities {
		switch {
		case math.IsNaN(q) || math.IsInf(q, 0):
			return pipeline.Errorf(pipeline.Invalid, "position %d: quantity %v is not a number", i+1, q)
		case q < 0:
			// ESS schedules carry direction in In/OutParty; signed values are
			// refused by the TSOs (reason A46).
			return pipeline.Errorf(pipeline.Invalid, "position %d: negative quantity %v", i+1, q)
		}
	}
	return nil
}

func eicField(name, v string, typ byte) error {
	if err := pipeline.ValidateEIC(v, typ); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// validIdentification accepts 1..35 printable ASCII characters without spaces,
// the ESS limit for identifications.
func validIdentification(name, v string) error {
	if v == "" || len(v) > maxIdentification {
		return pipeline.Errorf(pipeline.Invalid, "%s %q: want 1..%d characters", name, v, maxIdentification)
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] > '~' {
			return pipeline.Errorf(pipeline.Invalid, "%s %q: only printable ASCII without spaces", name, v)
		}
	}
	return nil
}

// validCode accepts ENTSO-E code list values such as A01: a capital letter and
// two digits.
func validCode(name, v string) error {
	if len(v) != 3 || v[0] < 'A' || v[0] > 'Z' || v[1] < '0' || v[1] > '9' || v[2] < '0' || v[2] > '9' {
		return pipeline.Errorf(pipeline.Invalid, "%s %q: want a code such as A01", name, v)
	}
	return nil
}

func validUnit(v string) bool {
	if len(v) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		c := v[i]
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// allDigits reports whether s consists of ASCII digits only.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
