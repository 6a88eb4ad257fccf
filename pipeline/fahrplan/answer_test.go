package fahrplan

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

func TestParseAnswerReference(t *testing.T) {
	utc := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		file string
		want Answer
	}{
		{"ess/20241018_PPS_FINGRID_10XDE-ENBW--HGJL_001_ACK_2024-10-16T10-46-50Z.xml", Answer{
			Kind: KindACK, Format: FormatESS, ID: "20241018-10XDE-ENBW--HGJL-A04-56614",
			MessageID: "20241018_TPS_WEISWELTWS-GDE-ENBW--", Version: 1,
			Sender: "10XDE-ENBW--HGJL", Receiver: "11XWEISWELTWS-G", Created: utc("2024-10-16T10:46:50Z"),
			Accepted: true, Reasons: []Reason{{Code: "A01", Text: "Message fully accepted"}},
		}},
		{"ess/20241018_PPS_FINGRID_10XDE-ENBW--TNGX_001_ACK_2024-10-16T10-46-50Z.xml", Answer{
			Kind: KindACK, Format: FormatESS, ID: "20241018-10XDE-ENBW--TNGX-A04-56614",
			MessageID: "20241018_TPS_GRUENWELTWS-GDE-ENBW--", Version: 1,
			Sender: "10XDE-ENBW--TNGX", Receiver: "11XGRUENWELTWS-G", Created: utc("2024-10-16T10:46:50Z"),
			Accepted: true, Reasons: []Reason{{Code: "A01", Text: "Message fully accepted"}},
		}},
		{"ess/20240125_PPS_FINGRID_0X1001A1001A264_002_ANO_2024-01-26T08-23-44Z.xml", Answer{
			Kind: KindANO, Format: FormatESS, ID: "1234QRP",
			// Neither anomaly names a document sent by the receiver, so the
			// report-level SendersMessage* of this ESS 4 report applies.
			MessageID: "SM2400020241016_A02", Version: 60,
			Sender: "0X1001A1001A264", Receiver: "10X000000000RTEM", Created: utc("2001-06-02T09:00:00Z"),
			Day: pipeline.NewDay(2001, 6, 3),
			Reasons: []Reason{
				{Code: "A27", SeriesID: "TS0001"}, {Code: "A29", SeriesID: "TS0001"},
				{Code: "A27", SeriesID: "TS0001"}, {Code: "A29", SeriesID: "TS0001"},
			},
			SeriesIDs: []string{"TS0001", "TS0001"},
		}},
		{"ess/20241105_TPS_10YDE-VE-------2_10XDE-VE-TRANSMK_001_ANO_2024-11-05T09-10-46Z.XML", Answer{
			// A German ESS 2.3 ANO with only its header: the schedule is
			// identified by file name and day.
			Kind: KindANO, Format: FormatESS, ID: "20241106-10XDE-VE-TRANSMK-42427",
			Sender: "10XDE-VE-TRANSMK", Receiver: "11XSWHETT-V----V", Created: utc("2024-11-05T08:10:46Z"),
			Day: pipeline.NewDay(2024, 11, 6),
		}},
		{"ess/20240126_TPS_FINGRID_0X1001A1001A264_002_CNF_2023-01-26T08-23-44Z.xml", Answer{
			Kind: KindCNF, Format: FormatESS, ID: "002", DocumentType: "A08",
			MessageID: "1234", Version: 2,
			Sender: "0X1001A1001A264", Receiver: "10X000000000RTEM", Created: utc("2001-06-02T09:00:00Z"),
			Day:      pipeline.NewDay(2001, 6, 3),
			Accepted: false, // A07: partially accepted, TS0001 imposed
			Reasons: []Reason{
				{Code: "A07"},
				{Code: "A20", SeriesID: "TS0002"},
				{Code: "A30", Text: "System Operator imposes minimum requirements for this agreement", SeriesID: "TS0001"},
			},
			SeriesIDs: []string{"TS0002", "TS0003", "TS0004", "TS0005", "TS0006", "TS0007", "TS0008", "TS0009", "TS0010"},
			Imposed:   []string{"TS0001"},
		}},
		{"ess/20241113_TPS_11XSWVIERNHEIMVR_10XDE-EON-NETZ-C_001_CNF_2024-11-13T09-00-00Z.xml", Answer{
			Kind: KindCNF, Format: FormatESS, ID: "20241113-10XDE-EON-NETZ-C-CF-47562", DocumentType: "A07",
			MessageID: "20241113_TPS_SWVIERNHEIMVRDE-EON-NE", Version: 1,
			Sender: "10XDE-EON-NETZ-C", Receiver: "11XSWVIERNHEIMVR", Created: utc("2024-11-13T09:00:54Z"),
			Day: pipeline.NewDay(2024, 11, 13), Accepted: true,
			Reasons:   []Reason{{Code: "A06"}},
			SeriesIDs: []string{"rr11XFC-PROD-----Es"},
		}},
		{"cim/20241016_PPS_11Y0-0000-2483-X_10XDE-VE-FRISMK_086_ACK_2024-10-16T10-48-22Z.xml", Answer{
			Kind: KindACK, Format: FormatCIM, ID: "20241016-10XDE-VE-FRISMK-57228",
			MessageID: "241016_Y0-0000-2483-_XDE-VE-TRA", Version: 86,
			Sender: "10XDE-VE-FRISMK", Receiver: "11Y0-0000-2483-X", Created: utc("2024-10-16T10:48:53Z"),
			Accepted: true, Reasons: []Reason{{Code: "A01", Text: "Message fully accepted"}},
		}},
		{"cim/20241104_TPS_11X0-0000-0706-U_10XDE-EON-NETZ-C_007_CNF_2024-11-03T14-18-21Z.xml", Answer{
			Kind: KindCNF, Format: FormatCIM, ID: "20241104-10XDE-EON-NETZ-C-60266", DocumentType: "A09",
			MessageID: "241104_X0-0000-0706-_XDE-EON-NE", Version: 7,
			Sender: "10XDE-EON-NETZ-C", Receiver: "11X0-0000-0706-U", Created: utc("2024-11-03T14:18:21Z"),
			Day: pipeline.NewDay(2024, 11, 4), Accepted: true,
			Reasons: []Reason{{Code: "A06", Text: "Schedule global position accepted"}},
		}},
		{"cim/20241016_PPS_10YEN-XIN------1_10XEN-XIN-NETZ-C_148_ANO_2024-10-15T22-00-11Z.xml", Answer{
			Kind: KindANO, Format: FormatCIM, ID: "20241016-10XEN-XIN-NETZ-C-TPS-55407",
			MessageID: "20X-LU005-ECCIN10YDE-EON------O1016", Version: 148,
			Sender: "10XEN-XIN-NETZ-C", Receiver: "11X0-1111-0706-U", Created: utc("2024-10-16T10:54:41Z"),
			Day:       pipeline.NewDay(2024, 10, 16),
			Reasons:   []Reason{{Code: "A09", Text: "Beim Vergleich mit der Gegenmeldung trat ein Fehler auf:", SeriesID: "rr11X0-1111-0706-Us"}},
			SeriesIDs: []string{"rr11X0-1111-0706-Us"},
		}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			got, err := ParseAnswer(readFile(t, filepath.Join("testdata/reference", tt.file)))
			if err != nil {
				t.Fatal(err)
			}
			assertAnswer(t, got, tt.want)
			// The file name carries the same version as the document.
			name, err := ParseFileName(filepath.Base(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if name.Answer != got.Kind {
				t.Errorf("file name says %s, document is %s", name.Answer, got.Kind)
			}
			if got.Version != 0 && got.Version != name.Version && got.Kind != KindANO {
				t.Errorf("file name version %d, document %d", name.Version, got.Version)
			}
		})
	}
}

func assertAnswer(t *testing.T, got, want Answer) {
	t.Helper()
	if !got.Created.Equal(want.Created) {
		t.Errorf("Created = %v, want %v", got.Created, want.Created)
	}
	got.Created, want.Created = time.Time{}, time.Time{}
	// nil and empty slices are the same answer.
	norm := func(a *Answer) {
		if len(a.Reasons) == 0 {
			a.Reasons = nil
		}
		if len(a.SeriesIDs) == 0 {
			a.SeriesIDs = nil
		}
		if len(a.Imposed) == 0 {
			a.Imposed = nil
		}
	}
	norm(&got)
	norm(&want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseAnswer:\n got %+v\nwant %+v", got, want)
	}
}

// Every reference file that is not an answer is refused with Invalid: the
// schedules (ESS 2.3, ESS 4, CIM) and the status requests (ESS, CIM).
func TestParseAnswerRefusesNonAnswers(t *testing.T) {
	files, err := filepath.Glob("testdata/reference/*/*")
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, f := range files {
		name, err := ParseFileName(filepath.Base(f))
		if err != nil {
			continue // LICENSE, README
		}
		_, err = ParseAnswer(readFile(t, f))
		if name.IsAnswer() {
			if err != nil {
				t.Errorf("%s: %v", f, err)
			}
			continue
		}
		refused++
		if err == nil || pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("%s: ParseAnswer = %v, want an invalid error", f, err)
		}
	}
	if refused != 7 {
		t.Fatalf("refused %d non-answers, want 7 (3 schedules, 4 status requests)", refused)
	}
}

func TestParseAnswerVariants(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want Answer
	}{
		{"ESS ACK rejecting the message", `<?xml version="1.0" encoding="UTF-8"?>
<AcknowledgementMessage DtdVersion="2" DtdRelease="3">
  <MessageIdentification v="ACK-1"/>
  <MessageDateTime v="2026-03-28T13:00:00Z"/>
  <SenderIdentification v="10XDE-EON-NETZ-C" codingScheme="A01"/>
  <SenderRole v="A04"/>
  <ReceiverIdentification v="11XSCHEDBRIDGEAE" codingScheme="A01"/>
  <ReceiverRole v="A08"/>
  <ReceivingMessageIdentification v="SB-20260329-TENNET"/>
  <ReceivingMessageVersion v="2"/>
  <Reason><ReasonCode v="A02"/><ReasonText v="Message fully rejected"/></Reason>
  <Reason><ReasonCode v="A57"/></Reason>
</AcknowledgementMessage>`, Answer{
			Kind: KindACK, Format: FormatESS, ID: "ACK-1", MessageID: "SB-20260329-TENNET", Version: 2,
			Sender: "10XDE-EON-NETZ-C", Receiver: ourBG, Created: time.Date(2026, 3, 28, 13, 0, 0, 0, time.UTC),
			Reasons: []Reason{{Code: "A02", Text: "Message fully rejected"}, {Code: "A57"}},
		}},
		{"ESS ACK with rejected time series", `<AcknowledgementMessage>
  <MessageIdentification v="ACK-2"/>
  <MessageDateTime v="2026-03-28T13:00:00Z"/>
  <SenderIdentification v="10XDE-EON-NETZ-C"/>
  <ReceiverIdentification v="11XSCHEDBRIDGEAE"/>
  <ReceivingMessageIdentification v="SB-20260329-TENNET"/>
  <ReceivingMessageVersion v="3"/>
  <TimeSeriesRejection>
    <SendersTimeSeriesIdentification v="SB-SALE-1"/>
    <SendersTimeSeriesVersion v="3"/>
    <Reason><ReasonCode v="A22"/></Reason>
    <TimeIntervalError><QuantityTimeInterval v="2026-03-28T23:00Z/2026-03-28T23:15Z"/><Reason><ReasonCode v="A42"/></Reason></TimeIntervalError>
  </TimeSeriesRejection>
  <Reason><ReasonCode v="A03"/></Reason>
</AcknowledgementMessage>`, Answer{
			Kind: KindACK, Format: FormatESS, ID: "ACK-2", MessageID: "SB-20260329-TENNET", Version: 3,
			Sender: "10XDE-EON-NETZ-C", Receiver: ourBG, Created: time.Date(2026, 3, 28, 13, 0, 0, 0, time.UTC),
			Reasons:   []Reason{{Code: "A03"}, {Code: "A22", SeriesID: "SB-SALE-1"}, {Code: "A42", SeriesID: "SB-SALE-1"}},
			SeriesIDs: []string{"SB-SALE-1"},
		}},
		{"ESS ANO naming our own document", `<AnomalyReport DtdVersion="2" DtdRelease="3">
  <MessageIdentification v="ANO-1"/>
  <MessageDateTime v="2026-03-28T15:00:00Z"/>
  <SenderIdentification v="10XDE-EON-NETZ-C"/>
  <ReceiverIdentification v="11XSCHEDBRIDGEAE"/>
  <ScheduleTimeInterval v="2026-03-28T23:00Z/2026-03-29T22:00Z"/>
  <TimeSeriesAnomaly>
    <DocumentSenderIdentification v="11XCOUNTERPART-R"/>
    <SendersDocumentIdentification v="THEIRS"/>
    <SendersDocumentVersion v="4"/>
    <SendersTimeSeriesIdentification v="CP-1"/>
    <Reason><ReasonCode v="A09"/></Reason>
  </TimeSeriesAnomaly>
  <TimeSeriesAnomaly>
    <DocumentSenderIdentification v="11XSCHEDBRIDGEAE"/>
    <SendersDocumentIdentification v="SB-20260329-TENNET"/>
    <SendersDocumentVersion v="2"/>
    <SendersTimeSeriesIdentification v="SB-PURCHASE-1"/>
    <Reason><ReasonCode v="A09"/><ReasonText v="counterpart differs"/></Reason>
  </TimeSeriesAnomaly>
</AnomalyReport>`, Answer{
			Kind: KindANO, Format: FormatESS, ID: "ANO-1", MessageID: "SB-20260329-TENNET", Version: 2,
			Sender: "10XDE-EON-NETZ-C", Receiver: ourBG, Created: time.Date(2026, 3, 28, 15, 0, 0, 0, time.UTC),
			Day:       pipeline.NewDay(2026, 3, 29),
			Reasons:   []Reason{{Code: "A09", SeriesID: "CP-1"}, {Code: "A09", Text: "counterpart differs", SeriesID: "SB-PURCHASE-1"}},
			SeriesIDs: []string{"CP-1", "SB-PURCHASE-1"},
		}},
		{"CIM ACK with rejected series", `<?xml version="1.0" encoding="UTF-8"?>
<Acknowledgement_MarketDocument xmlns="urn:iec62325.351:tc57wg16:451-1:acknowledgementdocument:7:0">
  <mRID>ACK-3</mRID>
  <createdDateTime>2026-10-24T12:00:00Z</createdDateTime>
  <sender_MarketParticipant.mRID codingScheme="A01">10XDE-VE-TRANSMK</sender_MarketParticipant.mRID>
  <receiver_MarketParticipant.mRID codingScheme="A01">11XSCHEDBRIDGEAE</receiver_MarketParticipant.mRID>
  <received_MarketDocument.mRID>SB-20261025-50HZ</received_MarketDocument.mRID>
  <received_MarketDocument.revisionNumber>5</received_MarketDocument.revisionNumber>
  <Reason><code>A03</code></Reason>
  <Rejected_TimeSeries><mRID>SB-SALE-1</mRID><version>5</version><Reason><code>A22</code><text>party invalid</text></Reason></Rejected_TimeSeries>
</Acknowledgement_MarketDocument>`, Answer{
			Kind: KindACK, Format: FormatCIM, ID: "ACK-3", MessageID: "SB-20261025-50HZ", Version: 5,
			Sender: "10XDE-VE-TRANSMK", Receiver: ourBG, Created: time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC),
			Reasons:   []Reason{{Code: "A03"}, {Code: "A22", Text: "party invalid", SeriesID: "SB-SALE-1"}},
			SeriesIDs: []string{"SB-SALE-1"},
		}},
		{"CIM CNF with imposed series", `<Confirmation_MarketDocument xmlns="urn:iec62325.351:tc57wg16:451-2:confirmationdocument:5:0">
  <mRID>CNF-1</mRID><type>A08</type><createdDateTime>2026-10-24T18:00:00Z</createdDateTime>
  <sender_MarketParticipant.mRID>10XDE-RWENET---W</sender_MarketParticipant.mRID>
  <receiver_MarketParticipant.mRID>11XSCHEDBRIDGEAE</receiver_MarketParticipant.mRID>
  <schedule_Period.timeInterval><start>2026-10-24T22:00Z</start><end>2026-10-25T23:00Z</end></schedule_Period.timeInterval>
  <confirmed_MarketDocument.mRID>SB-20261025-AMP</confirmed_MarketDocument.mRID>
  <confirmed_MarketDocument.revisionNumber>1</confirmed_MarketDocument.revisionNumber>
  <Reason><code>A06</code></Reason>
  <Imposed_TimeSeries><mRID>SB-SALE-1</mRID><Reason><code>A30</code></Reason></Imposed_TimeSeries>
  <Confirmed_TimeSeries><mRID>SB-PURCHASE-1</mRID></Confirmed_TimeSeries>
</Confirmation_MarketDocument>`, Answer{
			Kind: KindCNF, Format: FormatCIM, ID: "CNF-1", DocumentType: "A08", MessageID: "SB-20261025-AMP", Version: 1,
			Sender: "10XDE-RWENET---W", Receiver: ourBG, Created: time.Date(2026, 10, 24, 18, 0, 0, 0, time.UTC),
			Day:       pipeline.NewDay(2026, 10, 25),
			Reasons:   []Reason{{Code: "A06"}, {Code: "A30", SeriesID: "SB-SALE-1"}},
			SeriesIDs: []string{"SB-PURCHASE-1"},
			Imposed:   []string{"SB-SALE-1"},
			// A06 at message level, but a series was imposed: not as sent.
			Accepted: false,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAnswer([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			assertAnswer(t, got, tt.want)
		})
	}
}

func TestParseAnswerInvalid(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"empty", "", "no XML root"},
		{"text", "ACK", "no XML root"},
		{"unknown root", `<Hello/>`, "not an ACK, ANO or CNF"},
		{"schedule", `<ScheduleMessage DtdVersion="2" DtdRelease="3"/>`, "not an ACK, ANO or CNF"},
		{"truncated", `<AcknowledgementMessage><MessageIdentification v="x"/>`, "malformed"},
		{"bad time", `<AcknowledgementMessage><MessageDateTime v="yesterday"/></AcknowledgementMessage>`, "MessageDateTime"},
		{"bad version", `<AcknowledgementMessage><MessageDateTime v="2026-03-28T13:00:00Z"/><ReceivingMessageVersion v="two"/></AcknowledgementMessage>`, "version"},
		{"CNF interval not a day", `<ConfirmationReport><MessageDateTime v="2026-03-28T13:00:00Z"/><ScheduleTimeInterval v="2026-03-28T23:00Z/2026-03-29T23:00Z"/></ConfirmationReport>`, "not one delivery day"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseAnswer([]byte(tt.doc))
			if err == nil || pipeline.KindOf(err) != pipeline.Invalid || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseAnswer = %v, want an invalid error with %q", err, tt.want)
			}
		})
	}
}
