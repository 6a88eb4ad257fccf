package inbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/ingest/inbox"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/fahrplan"
	"github.com/schedbridge/schedbridge/storage/sqldb"
)

// recordedAnswer is one RecordScheduleAnswer call.
type recordedAnswer struct {
	id       int64
	status   pipeline.ScheduleStatus
	kind     string
	at       time.Time
	key      string
	detail   string
	fileName string
}

// fakeAnswers is an in-memory answer store: the schedule messages "sent"
// and the answers recorded on them.
type fakeAnswers struct {
	db       *sqldb.DB
	mu       sync.Mutex
	sent     map[string]pipeline.ScheduleMessage // by message id and version
	recorded []recordedAnswer
}

func sentKey(messageID string, version int) string { return fmt.Sprintf("%s/%d", messageID, version) }

func newFakeAnswers(db *sqldb.DB, sent ...pipeline.ScheduleMessage) *fakeAnswers {
	f := &fakeAnswers{db: db, sent: map[string]pipeline.ScheduleMessage{}}
	for i, m := range sent {
		m.ID = int64(i + 1)
		f.sent[sentKey(m.MessageID, m.Version)] = m
	}
	return f
}

func (f *fakeAnswers) ScheduleByMessage(_ context.Context, messageID string, version int) (pipeline.ScheduleMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.sent[sentKey(messageID, version)]
	if !ok {
		return pipeline.ScheduleMessage{}, pipeline.Errorf(pipeline.NotFound, "no schedule message %s version %d", messageID, version)
	}
	return m, nil
}

func (f *fakeAnswers) ScheduleByFileName(_ context.Context, name string) (pipeline.ScheduleMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.sent {
		if strings.EqualFold(m.FileName, name) {
			return m, nil
		}
	}
	return pipeline.ScheduleMessage{}, pipeline.Errorf(pipeline.NotFound, "no schedule message in file %s", name)
}

func (f *fakeAnswers) RecordScheduleAnswer(_ context.Context, id int64, status pipeline.ScheduleStatus, kind string, at time.Time, key, detail string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.sent {
		if m.ID == id {
			f.recorded = append(f.recorded, recordedAnswer{id, status, kind, at, key, detail, m.FileName})
			return nil
		}
	}
	return pipeline.Errorf(pipeline.NotFound, "schedule message %d not found", id)
}

// MarkInboxStaged is the real database's: the claimed row's change is
// what the inbox's crash safety rests on.
func (f *fakeAnswers) MarkInboxStaged(ctx context.Context, id int64, owner, dest, status string, result []byte) error {
	return f.db.MarkInboxStaged(ctx, id, owner, dest, status, result)
}

func (f *fakeAnswers) answers() []recordedAnswer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.recorded)
}

// withAnswers configures a processor for TSO answers.
func withAnswers(store inbox.AnswerStore) func(*inbox.Config) {
	return func(c *inbox.Config) { c.ParseAnswer, c.Answers = fahrplan.ParseAnswer, store }
}

// answerFile reads a test answer file.
// The real TSO files are read from pipeline/fahrplan's copy of the
// reference fixtures, so that one copy serves both packages; testdata/ holds
// only the files made for these tests.
func answerFile(t *testing.T, name string) []byte {
	t.Helper()
	for _, dir := range []string{"testdata", "../../pipeline/fahrplan/testdata/reference/ess", "../../pipeline/fahrplan/testdata/reference/cim"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			return b
		}
		if !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	t.Fatalf("no test file %s", name)
	return nil
}

// The answer files of the tests (see testdata/README.md).
const (
	essACK        = "20241018_PPS_FINGRID_10XDE-ENBW--HGJL_001_ACK_2024-10-16T10-46-50Z.xml"
	essNegACK     = "20241018_TPS_11XWEISWELTWS-G_10XDE-ENBW--HGJL_002_ACK_2024-10-16T11-05-00Z.xml"
	cimACK        = "20241016_PPS_11Y0-0000-2483-X_10XDE-VE-FRISMK_086_ACK_2024-10-16T10-48-22Z.xml"
	essANO        = "20240125_PPS_FINGRID_0X1001A1001A264_002_ANO_2024-01-26T08-23-44Z.xml"
	essCNF        = "20240126_TPS_FINGRID_0X1001A1001A264_002_CNF_2023-01-26T08-23-44Z.xml"
	cimCNF        = "20241104_TPS_11X0-0000-0706-U_10XDE-EON-NETZ-C_007_CNF_2024-11-03T14-18-21Z.xml"
	essSchedule   = "20241022_TPS_11X0-1111-0762-I_10XDE-AOE-HTCC-C_001.xml"
	headerOnlyANO = "20261124_TPS_11XACME-ENERGIEZ_10XDE-EON-NETZ-C_002_ANO_2026-11-23T15-02-00Z.xml"
)

// sentFor is the schedule message each answer file answers, as the
// schedules stage would have recorded it.
func sentFor(messageID string, version int, portfolio string, day pipeline.Day, area pipeline.ControlArea) pipeline.ScheduleMessage {
	return pipeline.ScheduleMessage{PortfolioID: portfolio, Day: day, ControlArea: area, MessageID: messageID, Version: version,
		FileName: fmt.Sprintf("%s_v%d.XML", messageID, version), Status: pipeline.ScheduleSubmitted}
}

var answerDay = pipeline.NewDay(2026, 11, 24)

// TestTSOAnswers drops the reference answers of both formats and the three
// kinds for messages "sent" before: each is correlated with its message and
// version, recorded with the status it gives, filed under its delivery day
// and reported as a tso.answer event.
func TestTSOAnswers(t *testing.T) {
	for _, c := range combos[:2] { // both databases on the local store
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, c)
			ctx := context.Background()
			other := answerDay.AddDays(1)
			fake := newFakeAnswers(e.db,
				sentFor("20241018_TPS_WEISWELTWS-GDE-ENBW--", 1, "p1", answerDay, pipeline.TransnetBW),
				sentFor("20241018_TPS_WEISWELTWS-GDE-ENBW--", 2, "p1", answerDay, pipeline.TransnetBW),
				sentFor("241016_Y0-0000-2483-_XDE-VE-TRA", 86, "p1", answerDay, pipeline.FiftyHertz),
				sentFor("SM2400020241016_A02", 60, "p1", other, pipeline.Amprion),
				sentFor("1234", 2, "p1", other, pipeline.TenneT),
				sentFor("241104_X0-0000-0706-_XDE-EON-NE", 7, "p1", other, pipeline.TenneT),
			)
			p := e.processor(t, "A", withAnswers(fake))
			want := map[string]struct {
				status    pipeline.ScheduleStatus
				kind      string
				messageID string
				version   int
				day       pipeline.Day
				created   time.Time
				detail    string
			}{
				essACK:    {pipeline.ScheduleAcknowledged, "ACK", "20241018_TPS_WEISWELTWS-GDE-ENBW--", 1, answerDay, time.Date(2024, 10, 16, 10, 46, 50, 0, time.UTC), "A01 Message fully accepted"},
				essNegACK: {pipeline.ScheduleRejected, "ACK", "20241018_TPS_WEISWELTWS-GDE-ENBW--", 2, answerDay, time.Date(2024, 10, 16, 11, 5, 0, 0, time.UTC), "A02 Message fully rejected"},
				cimACK:    {pipeline.ScheduleAcknowledged, "ACK", "241016_Y0-0000-2483-_XDE-VE-TRA", 86, answerDay, time.Date(2024, 10, 16, 10, 48, 53, 0, time.UTC), "A01 Message fully accepted"},
				essANO:    {pipeline.ScheduleAnomaly, "ANO", "SM2400020241016_A02", 60, other, time.Date(2001, 6, 2, 9, 0, 0, 0, time.UTC), "A27 (series TS0001); A29 (series TS0001); A27 (series TS0001); A29 (series TS0001)"},
				essCNF: {pipeline.ScheduleConfirmed, "CNF", "1234", 2, other, time.Date(2001, 6, 2, 9, 0, 0, 0, time.UTC),
					"A07; A20 (series TS0002); A30 System Operator imposes minimum requirements for this agreement (series TS0001)"},
				cimCNF: {pipeline.ScheduleConfirmed, "CNF", "241104_X0-0000-0706-_XDE-EON-NE", 7, other, time.Date(2024, 11, 3, 14, 18, 21, 0, time.UTC), "A06 Schedule global position accepted"},
			}
			for name := range want {
				e.put(t, "inbox/tso/"+name, answerFile(t, name))
			}
			if sum := scan(t, p); sum.Processed != len(want) || sum.Rejected != 0 || sum.Failed != 0 {
				t.Fatalf("scan = %+v", sum)
			}
			if left := e.keys(t, "inbox/"); len(left) != 0 {
				t.Fatalf("inbox still has %v", left)
			}
			got := map[string]recordedAnswer{}
			for _, r := range fake.answers() {
				got[r.key] = r
			}
			if len(got) != len(want) {
				t.Fatalf("recorded %d answers: %+v", len(got), fake.answers())
			}
			for name, w := range want {
				dest := fmt.Sprintf("processed/tso/%s/%s", w.day, name)
				r, ok := got[dest]
				if !ok {
					t.Errorf("%s: no answer recorded with key %s: %+v", name, dest, got)
					continue
				}
				sent, err := fake.ScheduleByMessage(ctx, w.messageID, w.version)
				if err != nil {
					t.Fatal(err)
				}
				if r.status != w.status || r.kind != w.kind || !r.at.Equal(w.created) || r.detail != w.detail || r.id != sent.ID {
					t.Errorf("%s: recorded %+v, want %+v", name, r, w)
				}
				if got := e.get(t, dest); string(got) != string(answerFile(t, name)) {
					t.Errorf("%s: processed file differs from the dropped one", name)
				}
				var rc inbox.AnswerReceipt
				if err := json.Unmarshal(e.get(t, dest+".receipt.json"), &rc); err != nil {
					t.Fatal(err)
				}
				if rc.Status != w.status || rc.Answer != w.kind || rc.MessageID != w.messageID || rc.Version != w.version || rc.Portfolio != "p1" ||
					rc.DeliveryDay != w.day || rc.ScheduleID != sent.ID || rc.Dest != dest || len(rc.Reasons) == 0 {
					t.Errorf("%s: receipt %+v", name, rc)
				}
			}

			// One tso.answer event per file, about the message's portfolio
			// and delivery day; no other event.
			evs, err := e.db.Events(ctx, pipeline.EventQuery{Limit: 100})
			if err != nil || len(evs) != len(want) {
				t.Fatalf("events = %d, %v", len(evs), err)
			}
			for _, ev := range evs {
				w, ok := want[ev.Subject]
				var data struct {
					Kind      string                  `json:"kind"`
					MessageID string                  `json:"message_id"`
					Version   int                     `json:"version"`
					Status    pipeline.ScheduleStatus `json:"status"`
					Reasons   []inbox.AnswerReason    `json:"reasons"`
				}
				if err := json.Unmarshal(ev.Data, &data); err != nil {
					t.Fatal(err)
				}
				if !ok || ev.Kind != "tso.answer" || ev.PortfolioID != "p1" || data.Status != w.status || data.Kind != w.kind ||
					data.MessageID != w.messageID || data.Version != w.version || len(data.Reasons) == 0 {
					t.Errorf("event %+v %s", ev, ev.Data)
				}
				if ev.DeliveryDay == nil || *ev.DeliveryDay != w.day {
					t.Errorf("event %s: delivery day %s, want %s", ev.Subject, ev.DeliveryDay, w.day)
				}
			}
			files, err := e.db.InboxFiles(ctx, pipeline.InboxQuery{Limit: 100})
			if err != nil || len(files) != len(want) {
				t.Fatalf("inbox rows = %d, %v", len(files), err)
			}
			for _, f := range files {
				if f.State != pipeline.InboxProcessed || f.PortfolioID != "" || f.Kind != "tso-answer" {
					t.Errorf("inbox row %+v", f)
				}
			}

			// The same answer again is taken in again, filed beside the first.
			e.put(t, "inbox/tso/"+cimCNF, answerFile(t, cimCNF))
			if sum := scan(t, p); sum.Processed != 1 {
				t.Fatalf("re-drop scan = %+v", sum)
			}
			rs := fake.answers()
			last := rs[len(rs)-1]
			if len(rs) != len(want)+1 || last.status != pipeline.ScheduleConfirmed ||
				!strings.HasPrefix(last.key, "processed/tso/"+other.String()+"/20241104_TPS_11X0-0000-0706-U_10XDE-EON-NETZ-C_007_CNF_2024-11-03T14-18-21Z.") ||
				last.key == "processed/tso/"+other.String()+"/"+cimCNF {
				t.Errorf("re-drop recorded %+v", last)
			}
		})
	}
}

// TestTSOAnswersRejected: a file that answers no message sent, names none,
// is no answer or no XML at all is moved to rejected/tso/ with its reason,
// reported, and nothing is recorded.
func TestTSOAnswersRejected(t *testing.T) {
	e := newEnv(t, combos[0])
	ctx := context.Background()
	fake := newFakeAnswers(e.db, sentFor("1234", 1, "p1", answerDay, pipeline.TenneT)) // the CNF confirms version 2
	p := e.processor(t, "A", withAnswers(fake))
	files := map[string][]byte{
		essCNF:        answerFile(t, essCNF),
		headerOnlyANO: answerFile(t, headerOnlyANO),
		essSchedule:   answerFile(t, essSchedule),
		"garbage.xml": []byte("this is not XML"),
		"empty.xml":   {},
	}
	for name, body := range files {
		e.put(t, "inbox/tso/"+name, body)
	}
	if sum := scan(t, p); sum.Rejected != len(files) || sum.Processed != 0 {
		t.Fatalf("scan = %+v", sum)
	}
	for name, reason := range map[string]string{
		essCNF: `the CNF answers message "1234" version 2, which this service did not send`,
		headerOnlyANO: "the ANO names no message it answers; by its file name it answers the schedule file " +
			"20261124_TPS_11XACME-ENERGIEZ_10XDE-EON-NETZ-C_002.XML, which this service did not send",
		essSchedule:   "not a TSO answer (ACK, ANO or CNF in ESS or CIM XML): parse answer: root element ScheduleMessage is not an ACK, ANO or CNF",
		"garbage.xml": "not a TSO answer (ACK, ANO or CNF in ESS or CIM XML): ",
		"empty.xml":   "not a TSO answer (ACK, ANO or CNF in ESS or CIM XML): ",
	} {
		d := errorsDoc(t, e, "rejected/tso/"+name)
		if !strings.HasPrefix(d.Reason, reason) || d.Portfolio != "" || d.Kind != "tso-answer" || d.File != "inbox/tso/"+name {
			t.Errorf("%s: errors document %+v, want reason %q", name, d, reason)
		}
		if got := e.get(t, "rejected/tso/"+name); string(got) != string(files[name]) {
			t.Errorf("%s: rejected file differs from the dropped one", name)
		}
	}
	if rs := fake.answers(); len(rs) != 0 {
		t.Errorf("recorded %+v", rs)
	}
	evs, err := e.db.Events(ctx, pipeline.EventQuery{Limit: 100})
	if err != nil || len(evs) != len(files) {
		t.Fatalf("events = %d, %v", len(evs), err)
	}
	for _, ev := range evs {
		if ev.Kind != "inbox.rejected" || ev.PortfolioID != "" || !strings.HasPrefix(ev.Subject, "inbox/tso/") {
			t.Errorf("event %+v", ev)
		}
	}
	if left := e.keys(t, "inbox/"); len(left) != 0 {
		t.Fatalf("inbox still has %v", left)
	}
}

// TestTSOAnswersNotConfigured: a processor without the answer parts leaves
// answers in the inbox, unclaimed, for one that has them.
func TestTSOAnswersNotConfigured(t *testing.T) {
	e := newEnv(t, combos[0])
	e.put(t, "inbox/tso/"+cimACK, answerFile(t, cimACK))
	if sum := scan(t, e.processor(t, "A")); sum.Failed != 1 || sum.Processed+sum.Rejected != 0 {
		t.Fatalf("scan without answers = %+v", sum)
	}
	if left := e.keys(t, "inbox/"); len(left) != 1 {
		t.Fatalf("inbox has %v", left)
	}
	fake := newFakeAnswers(e.db, sentFor("241016_Y0-0000-2483-_XDE-VE-TRA", 86, "p1", answerDay, pipeline.FiftyHertz))
	if sum := scan(t, e.processor(t, "B", withAnswers(fake))); sum.Processed != 1 {
		t.Fatalf("scan with answers = %+v", sum)
	}
	if rs := fake.answers(); len(rs) != 1 || rs[0].status != pipeline.ScheduleAcknowledged {
		t.Errorf("recorded %+v", rs)
	}
}

// TestTSOAnswerCrashRecovery: an answer recorded and marked, whose move
// failed, is finished by the next processor from its row: moved once,
// reported once, and not recorded a second time.
func TestTSOAnswerCrashRecovery(t *testing.T) {
	e := newEnv(t, combos[0])
	ctx := context.Background()
	fake := newFakeAnswers(e.db, sentFor("241104_X0-0000-0706-_XDE-EON-NE", 7, "p1", answerDay, pipeline.TenneT))
	fb := &failingBucket{Bucket: e.bucket, failMoves: 1}
	pa, err := inbox.New(fb, store{e.db}, inbox.Config{Owner: "A", Lease: time.Minute, Now: e.clock.Now, SpoolDir: t.TempDir(),
		ParseAnswer: fahrplan.ParseAnswer, Answers: fake})
	if err != nil {
		t.Fatal(err)
	}
	e.put(t, "inbox/tso/"+cimCNF, answerFile(t, cimCNF))
	if sum := scan(t, pa); sum.Failed != 1 {
		t.Fatalf("scan with failing move = %+v", sum)
	}
	e.clock.Add(2 * time.Minute)
	if sum := scan(t, e.processor(t, "B", withAnswers(fake))); sum.Processed != 1 {
		t.Fatalf("recovery scan = %+v", sum)
	}
	if rs := fake.answers(); len(rs) != 1 {
		t.Errorf("recorded %d times: %+v", len(rs), rs)
	}
	dest := "processed/tso/" + answerDay.String() + "/" + cimCNF
	if keys := e.keys(t, "processed/"); !slices.Equal(keys, []string{dest, dest + ".receipt.json"}) {
		t.Errorf("processed/ = %v", keys)
	}
	evs, _ := e.db.Events(ctx, pipeline.EventQuery{Limit: 100})
	if len(evs) != 1 || evs[0].Kind != "tso.answer" || evs[0].Subject != cimCNF {
		t.Errorf("events = %+v", evs)
	}
}

// TestHeaderOnlyAnomalyByFileName: an ESS 2.3 anomaly report with only its
// header names no message; its file name ties it to the schedule file sent.
func TestHeaderOnlyAnomalyByFileName(t *testing.T) {
	e := newEnv(t, combos[0])
	sent := sentFor("SB20261124-TENNET-0a1b2c3d", 2, "p1", answerDay, pipeline.TenneT)
	sent.FileName = "20261124_TPS_11XACME-ENERGIEZ_10XDE-EON-NETZ-C_002.XML"
	fake := newFakeAnswers(e.db, sent)
	p := e.processor(t, "A", withAnswers(fake))
	e.put(t, "inbox/tso/"+headerOnlyANO, answerFile(t, headerOnlyANO))
	if sum := scan(t, p); sum.Processed != 1 || sum.Rejected != 0 {
		t.Fatalf("scan = %+v", sum)
	}
	rs := fake.answers()
	if len(rs) != 1 || rs[0].status != pipeline.ScheduleAnomaly || rs[0].kind != "ANO" || rs[0].id != 1 ||
		rs[0].key != "processed/tso/"+answerDay.String()+"/"+headerOnlyANO {
		t.Fatalf("recorded %+v", rs)
	}
}
