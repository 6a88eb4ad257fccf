package fahrplan

import (
	"fmt"
	"strings"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Answer formats.
const (
	FormatESS = "ESS"
	FormatCIM = "CIM"
)

// Reason codes (ENTSO-E code list, ReasonCodeType) that decide Accepted.
const (
	ReasonMessageAccepted  = "A01" // message fully accepted
	ReasonMessageRejected  = "A02" // message fully rejected
	ReasonSeriesErrors     = "A03" // message contains errors at the time series level
	ReasonScheduleAccepted = "A06" // schedule accepted
	ReasonSchedulePartial  = "A07" // schedule partially accepted
	ReasonScheduleRejected = "A08" // schedule rejected
)

// Reason is one reason of an answer. SeriesID names the time series it belongs
// to and is empty for a message-level reason.
type Reason struct {
	Code, Text string
	SeriesID   string
}

// Answer is a TSO's answer to a schedule: an acknowledgement (ACK), anomaly
// report (ANO) or confirmation report (CNF), in ESS or CIM.
type Answer struct {
	Kind   string // KindACK, KindANO or KindCNF
	Format string // FormatESS or FormatCIM
	ID     string // the answer's own MessageIdentification / mRID
	// MessageID and Version identify the schedule the answer refers to:
	// ReceivingMessage* (ESS ACK), ConfirmedMessage* (ESS CNF),
	// received_MarketDocument.* (CIM ACK), confirmed_MarketDocument.* (CIM CNF).
	// An anomaly report lists the documents of the mismatching series; the one
	// sent by the report's receiver wins, then the report-level
	// SendersMessage* (ESS 4), then the one document all anomalies share. An
	// ESS 2.3 anomaly report may carry only its header; then both are empty and
	// the schedule is found by the answer's file name (ParseFileName) and Day.
	MessageID string
	Version   int
	Sender    string
	Receiver  string
	Created   time.Time
	// Day is the delivery day of the answer's schedule interval; zero when the
	// answer has none (acknowledgements).
	Day pipeline.Day
	// DocumentType is the answer's MessageType / type when it has one (CNF: A07
	// intermediate, A08 final confirmation report in ESS).
	DocumentType string
	// Accepted: ACK: the message was fully accepted (reason A01); CNF: the
	// schedule was confirmed as sent (A06, no partial acceptance, rejection or
	// imposed series); ANO: always false.
	Accepted  bool
	Reasons   []Reason
	SeriesIDs []string // series the answer names: rejected (ACK), anomalous (ANO) or confirmed (CNF)
	Imposed   []string // CNF: series the TSO imposed instead of the sent ones
}

func (a Answer) messageCodes() map[string]bool {
	codes := make(map[string]bool)
	for _, r := range a.Reasons {
		if r.SeriesID == "" {
			codes[r.Code] = true
		}
	}
	return codes
}

// ParseAnswer reads a TSO answer. The root element decides the kind and
// format: AcknowledgementMessage, AnomalyReport and ConfirmationReport (ESS),
// Acknowledgement_MarketDocument, AnomalyReport_MarketDocument and
// Confirmation_MarketDocument (CIM). Anything else, including schedules and
// status requests, is pipeline.Invalid.
func ParseAnswer(data []byte) (Answer, error) {
	root, data, err := rootElement(data)
	if err != nil {
		return Answer{}, fmt.Errorf("parse answer: %w", err)
	}
	var a Answer
	switch root {
	case "AcknowledgementMessage", "AnomalyReport", "ConfirmationReport":
		var doc essAnswer
		if err := unmarshal(data, &doc); err != nil {
			return Answer{}, fmt.Errorf("parse answer %s: %w", root, err)
		}
		a, err = doc.answer(root)
	case "Acknowledgement_MarketDocument", "AnomalyReport_MarketDocument", "Confirmation_MarketDocument":
		var doc cimAnswer
		if err := unmarshal(data, &doc); err != nil {
			return Answer{}, fmt.Errorf("parse answer %s: %w", root, err)
		}
		a, err = doc.answer(root)
	default:
		return Answer{}, pipeline.Errorf(pipeline.Invalid, "parse answer: root element %s is not an ACK, ANO or CNF", root)
	}
	if err != nil {
		return Answer{}, fmt.Errorf("parse answer %s: %w", root, err)
	}
	codes := a.messageCodes()
	switch a.Kind {
	case KindACK:
		a.Accepted = codes[ReasonMessageAccepted] && !codes[ReasonMessageRejected] && !codes[ReasonSeriesErrors]
	case KindCNF:
		a.Accepted = codes[ReasonScheduleAccepted] && !codes[ReasonSchedulePartial] && !codes[ReasonScheduleRejected] && len(a.Imposed) == 0
	}
	return a, nil
}

// docRef is a schedule that an anomaly report refers to.
type docRef struct {
	sender, id, version string
}

// ownDocument returns the schedule among refs that the report's receiver (we)
// sent, when the report names the document senders.
func ownDocument(receiver string, refs []docRef) (string, string) {
	for _, r := range refs {
		if r.sender != "" && r.sender == receiver && r.id != "" {
			return r.id, r.version
		}
	}
	return "", ""
}

// commonDocument returns the one document all anomalies refer to, or nothing
// when they refer to several (ours and the counterpart's, say).
func commonDocument(refs []docRef) (string, string) {
	var id, version string
	for _, r := range refs {
		switch {
		case r.id == "":
		case id == "":
			id, version = r.id, r.version
		case r.id != id || r.version != version:
			return "", ""
		}
	}
	return id, version
}

type essReason struct {
	ReasonCode vAttr
	ReasonText vAttr
}

type essSeriesRef struct {
	SendersTimeSeriesIdentification vAttr
	ImposedTimeSeriesIdentification vAttr
	DocumentSenderIdentification    vAttr
	SendersDocumentIdentification   vAttr
	SendersDocumentVersion          vAttr
	Reasons                         []essReason `xml:"Reason"`
	TimeIntervalErrors              []struct {
		Reasons []essReason `xml:"Reason"`
	} `xml:"TimeIntervalError"`
}

// essAnswer covers the three ESS answer documents; each uses a subset.
type essAnswer struct {
	MessageIdentification          vAttr
	MessageType                    vAttr
	MessageDateTime                vAttr
	CreationDateTime               vAttr
	SenderIdentification           vAttr
	ReceiverIdentification         vAttr
	ScheduleTimeInterval           vAttr
	ReceivingMessageIdentification vAttr          // ACK
	ReceivingMessageVersion        vAttr          // ACK
	ConfirmedMessageIdentification vAttr          // CNF
	ConfirmedMessageVersion        vAttr          // CNF
	SendersMessageIdentification   vAttr          // ANO (ESS 4 variant)
	SendersMessageVersion          vAttr          // ANO (ESS 4 variant)
	Reasons                        []essReason    `xml:"Reason"`
	Rejections                     []essSeriesRef `xml:"TimeSeriesRejection"`
	Confirmations                  []essSeriesRef `xml:"TimeSeriesConfirmation"`
	Imposed                        []essSeriesRef `xml:"ImposedTimeSeries"`
	Anomalies                      []essSeriesRef `xml:"TimeSeriesAnomaly"`
}

func essReasons(seriesID string, rs []essReason) []Reason {
	out := make([]Reason, 0, len(rs))
	for _, r := range rs {
		out = append(out, Reason{Code: r.ReasonCode.String(), Text: r.ReasonText.String(), SeriesID: seriesID})
	}
	return out
}

func (doc essAnswer) answer(root string) (Answer, error) {
	a := Answer{
		Format:       FormatESS,
		ID:           doc.MessageIdentification.String(),
		Sender:       doc.SenderIdentification.String(),
		Receiver:     doc.ReceiverIdentification.String(),
		DocumentType: doc.MessageType.String(),
		Reasons:      essReasons("", doc.Reasons),
	}
	created := doc.MessageDateTime.String()
	if created == "" {
		created = doc.CreationDateTime.String()
	}
	var err error
	if a.Created, err = parseInstant("MessageDateTime", created); err != nil {
		return Answer{}, err
	}
	if iv := doc.ScheduleTimeInterval.String(); iv != "" {
		if a.Day, err = answerDay(iv); err != nil {
			return Answer{}, err
		}
	}
	addSeries := func(refs []essSeriesRef) {
		for _, r := range refs {
			id := r.SendersTimeSeriesIdentification.String()
			a.SeriesIDs = append(a.SeriesIDs, id)
			a.Reasons = append(a.Reasons, essReasons(id, r.Reasons)...)
			for _, tie := range r.TimeIntervalErrors {
				a.Reasons = append(a.Reasons, essReasons(id, tie.Reasons)...)
			}
		}
	}
	var version string
	switch root {
	case "AcknowledgementMessage":
		a.Kind = KindACK
		a.MessageID, version = doc.ReceivingMessageIdentification.String(), doc.ReceivingMessageVersion.String()
		addSeries(doc.Rejections)
	case "ConfirmationReport":
		a.Kind = KindCNF
		a.MessageID, version = doc.ConfirmedMessageIdentification.String(), doc.ConfirmedMessageVersion.String()
		addSeries(doc.Confirmations)
		for _, r := range doc.Imposed {
			id := r.ImposedTimeSeriesIdentification.String()
			a.Imposed = append(a.Imposed, id)
			a.Reasons = append(a.Reasons, essReasons(id, r.Reasons)...)
		}
	case "AnomalyReport":
		a.Kind = KindANO
		refs := make([]docRef, 0, len(doc.Anomalies))
		for _, r := range doc.Anomalies {
			refs = append(refs, docRef{r.DocumentSenderIdentification.String(), r.SendersDocumentIdentification.String(), r.SendersDocumentVersion.String()})
		}
		// Our own document first, then the report-level reference of the ESS
		// 4 variant, then the one document every anomaly shares.
		a.MessageID, version = ownDocument(a.Receiver, refs)
		if a.MessageID == "" {
			a.MessageID, version = doc.SendersMessageIdentification.String(), doc.SendersMessageVersion.String()
		}
		if a.MessageID == "" {
			a.MessageID, version = commonDocument(refs)
		}
		addSeries(doc.Anomalies)
	}
	if a.Version, err = parseVersion("referenced message version", version); err != nil {
		return Answer{}, err
	}
	return a, nil
}

func answerDay(interval string) (pipeline.Day, error) {
	start, end, err := parseInterval("ScheduleTimeInterval", interval)
	if err != nil {
		return pipeline.Day{}, err
	}
	return deliveryDay("ScheduleTimeInterval", start, end)
}

type cimReason struct {
	Code string `xml:"code"`
	Text string `xml:"text"`
}

type cimInterval struct {
	Start string `xml:"start"`
	End   string `xml:"end"`
}

type cimSeries struct {
	MRID    string      `xml:"mRID"`
	Reasons []cimReason `xml:"Reason"`
}

type cimAnomalyDocument struct {
	Sender     string      `xml:"marketParticipant.mRID"`
	MRID       string      `xml:"mRID"`
	Revision   string      `xml:"revisionNumber"`
	TimeSeries []cimSeries `xml:"TimeSeries"`
}

// cimAnswer covers the three CIM answer documents; each uses a subset.
type cimAnswer struct {
	MRID               string               `xml:"mRID"`
	Type               string               `xml:"type"`
	Created            string               `xml:"createdDateTime"`
	Sender             string               `xml:"sender_MarketParticipant.mRID"`
	Receiver           string               `xml:"receiver_MarketParticipant.mRID"`
	ReceivedMRID       string               `xml:"received_MarketDocument.mRID"`            // ACK
	ReceivedRevision   string               `xml:"received_MarketDocument.revisionNumber"`  // ACK
	ConfirmedMRID      string               `xml:"confirmed_MarketDocument.mRID"`           // CNF
	ConfirmedRevision  string               `xml:"confirmed_MarketDocument.revisionNumber"` // CNF
	SchedulePeriod     *cimInterval         `xml:"schedule_Period.timeInterval"`            // CNF
	ScheduleTimePeriod *cimInterval         `xml:"schedule_Time_Period.timeInterval"`       // ANO
	Reasons            []cimReason          `xml:"Reason"`
	Rejected           []cimSeries          `xml:"Rejected_TimeSeries"`  // ACK
	Confirmed          []cimSeries          `xml:"Confirmed_TimeSeries"` // CNF
	Imposed            []cimSeries          `xml:"Imposed_TimeSeries"`   // CNF
	Anomalies          []cimAnomalyDocument `xml:"Anomaly_MarketDocument"`
}

func cimReasons(seriesID string, rs []cimReason) []Reason {
	out := make([]Reason, 0, len(rs))
	for _, r := range rs {
		out = append(out, Reason{Code: strings.TrimSpace(r.Code), Text: strings.TrimSpace(r.Text), SeriesID: seriesID})
	}
	return out
}

func (doc cimAnswer) answer(root string) (Answer, error) {
	a := Answer{
		Format:       FormatCIM,
		ID:           strings.TrimSpace(doc.MRID),
		Sender:       strings.TrimSpace(doc.Sender),
		Receiver:     strings.TrimSpace(doc.Receiver),
		DocumentType: strings.TrimSpace(doc.Type),
		Reasons:      cimReasons("", doc.Reasons),
	}
	var err error
	if a.Created, err = parseInstant("createdDateTime", doc.Created); err != nil {
		return Answer{}, err
	}
	period := doc.SchedulePeriod
	if period == nil {
		period = doc.ScheduleTimePeriod
	}
	if period != nil {
		if a.Day, err = answerDay(strings.TrimSpace(period.Start) + "/" + strings.TrimSpace(period.End)); err != nil {
			return Answer{}, err
		}
	}
	addSeries := func(series []cimSeries) {
		for _, s := range series {
			id := strings.TrimSpace(s.MRID)
			a.SeriesIDs = append(a.SeriesIDs, id)
			a.Reasons = append(a.Reasons, cimReasons(id, s.Reasons)...)
		}
	}
	var version string
	switch root {
	case "Acknowledgement_MarketDocument":
		a.Kind = KindACK
		a.MessageID, version = strings.TrimSpace(doc.ReceivedMRID), doc.ReceivedRevision
		addSeries(doc.Rejected)
	case "Confirmation_MarketDocument":
		a.Kind = KindCNF
		a.MessageID, version = strings.TrimSpace(doc.ConfirmedMRID), doc.ConfirmedRevision
		addSeries(doc.Confirmed)
		for _, s := range doc.Imposed {
			id := strings.TrimSpace(s.MRID)
			a.Imposed = append(a.Imposed, id)
			a.Reasons = append(a.Reasons, cimReasons(id, s.Reasons)...)
		}
	case "AnomalyReport_MarketDocument":
		a.Kind = KindANO
		refs := make([]docRef, 0, len(doc.Anomalies))
		for _, d := range doc.Anomalies {
			refs = append(refs, docRef{strings.TrimSpace(d.Sender), strings.TrimSpace(d.MRID), strings.TrimSpace(d.Revision)})
			addSeries(d.TimeSeries)
		}
		a.MessageID, version = ownDocument(a.Receiver, refs)
		if a.MessageID == "" {
			a.MessageID, version = commonDocument(refs)
		}
	}
	if a.Version, err = parseVersion("referenced revision number", version); err != nil {
		return Answer{}, err
	}
	return a, nil
}
