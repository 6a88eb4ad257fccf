package fahrplan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

func TestParseFileNameReference(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name string
		want FileName
	}{
		{"20241022_TPS_11X0-1111-0762-I_10XDE-AOE-HTCC-C_001.xml",
			FileName{Day: pipeline.NewDay(2024, 10, 22), Kind: "TPS", Sender: "11X0-1111-0762-I", Receiver: "10XDE-AOE-HTCC-C", Version: 1}},
		{"20241022_SRQ_11X0-1111-0762-I_10XDE-AOE-HTCC-C.xml",
			FileName{Day: pipeline.NewDay(2024, 10, 22), Kind: "SRQ", Sender: "11X0-1111-0762-I", Receiver: "10XDE-AOE-HTCC-C"}},
		{"20241114_SRQ_11XSWSE-DBA-VZRL_10XDE-RWENET---W_CRQ.xml",
			FileName{Day: pipeline.NewDay(2024, 11, 14), Kind: "SRQ", Sender: "11XSWSE-DBA-VZRL", Receiver: "10XDE-RWENET---W", Answer: "CRQ"}},
		{"20240125_PPS_FINGRID_0X1001A1001A264_002.xml",
			FileName{Day: pipeline.NewDay(2024, 1, 25), Kind: "PPS", Sender: "FINGRID", Receiver: "0X1001A1001A264", Version: 2}},
		{"20240125_PPS_FINGRID_0X1001A1001A264_002_ANO_2024-01-26T08-23-44Z.xml",
			FileName{Day: pipeline.NewDay(2024, 1, 25), Kind: "PPS", Sender: "FINGRID", Receiver: "0X1001A1001A264", Version: 2, Answer: KindANO, AnswerTime: at("2024-01-26T08:23:44Z")}},
		{"20240126_TPS_FINGRID_0X1001A1001A264_002_CNF_2023-01-26T08-23-44Z.xml",
			FileName{Day: pipeline.NewDay(2024, 1, 26), Kind: "TPS", Sender: "FINGRID", Receiver: "0X1001A1001A264", Version: 2, Answer: KindCNF, AnswerTime: at("2023-01-26T08:23:44Z")}},
		{"20241018_PPS_FINGRID_10XDE-ENBW--HGJL_001_ACK_2024-10-16T10-46-50Z.xml",
			FileName{Day: pipeline.NewDay(2024, 10, 18), Kind: "PPS", Sender: "FINGRID", Receiver: "10XDE-ENBW--HGJL", Version: 1, Answer: KindACK, AnswerTime: at("2024-10-16T10:46:50Z")}},
		{"20241105_TPS_10YDE-VE-------2_10XDE-VE-TRANSMK_001_ANO_2024-11-05T09-10-46Z.XML",
			FileName{Day: pipeline.NewDay(2024, 11, 5), Kind: "TPS", Sender: "10YDE-VE-------2", Receiver: "10XDE-VE-TRANSMK", Version: 1, Answer: KindANO, AnswerTime: at("2024-11-05T09:10:46Z")}},
		{"20241008_TPS_10XEN-VE-FRISMK_11X0-1111-0619-M_002.xml",
			FileName{Day: pipeline.NewDay(2024, 10, 8), Kind: "TPS", Sender: "10XEN-VE-FRISMK", Receiver: "11X0-1111-0619-M", Version: 2}},
		{"20241016_PPS_11Y0-0000-2483-X_10XDE-VE-FRISMK_086_ACK_2024-10-16T10-48-22Z.xml",
			FileName{Day: pipeline.NewDay(2024, 10, 16), Kind: "PPS", Sender: "11Y0-0000-2483-X", Receiver: "10XDE-VE-FRISMK", Version: 86, Answer: KindACK, AnswerTime: at("2024-10-16T10:48:22Z")}},
		{"20241104_TPS_11X0-0000-0706-U_10XDE-EON-NETZ-C_007_CNF_2024-11-03T14-18-21Z.xml",
			FileName{Day: pipeline.NewDay(2024, 11, 4), Kind: "TPS", Sender: "11X0-0000-0706-U", Receiver: "10XDE-EON-NETZ-C", Version: 7, Answer: KindCNF, AnswerTime: at("2024-11-03T14:18:21Z")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFileName(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if !got.AnswerTime.Equal(tt.want.AnswerTime) {
				t.Errorf("AnswerTime = %v, want %v", got.AnswerTime, tt.want.AnswerTime)
			}
			got.AnswerTime, tt.want.AnswerTime = time.Time{}, time.Time{}
			if got != tt.want {
				t.Errorf("ParseFileName = %+v, want %+v", got, tt.want)
			}
			if got.IsAnswer() != (tt.want.Answer == KindACK || tt.want.Answer == KindANO || tt.want.Answer == KindCNF) {
				t.Errorf("IsAnswer = %v", got.IsAnswer())
			}
		})
	}
}

// Every fixture's name parses, and formatting it gives the name back (with the
// upper-case extension the exchange uses).
func TestFileNameRoundTripOnAllReferenceFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/reference/*/*")
	if err != nil || len(files) < 15 {
		t.Fatalf("reference files: %v, %d", err, len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		got, err := ParseFileName(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want := strings.TrimSuffix(strings.TrimSuffix(name, ".xml"), ".XML") + ".XML"
		if got.String() != want {
			t.Errorf("String() = %s, want %s", got.String(), want)
		}
	}
}

func TestParseFileNameInvalid(t *testing.T) {
	for _, name := range []string{
		"",
		"20241022_TPS_A_B_001",                    // no extension
		"20241022_TPS_A_B_001.txt",                // wrong extension
		"20241022_TPS_A.xml",                      // no receiver
		"2024102_TPS_A_B_001.xml",                 // 7-digit date
		"20241322_TPS_A_B_001.xml",                // month 13
		"20241022_tps_A_B_001.xml",                // lower-case kind
		"20241022_TPSX_A_B_001.xml",               // 4-letter kind
		"20241022_TPS__B_001.xml",                 // empty sender
		"20241022_TPS_A_B_000.xml",                // version 0
		"20241022_TPS_A_B_001_ACK.xml",            // answer without time
		"20241022_TPS_A_B_001_ACK_2024-10-16.xml", // truncated time
		"20241022_TPS_A_B_001_NAK_2024-10-16T10-46-50Z.xml",
		"20241022_TPS_A_B_001_ACK_2024-10-16T10-46-50Z_X.xml",
		"20241022_TPS_A_B_001_CRQ_2024-10-16T10-46-50Z.xml",
		"dir/20241022_TPS_A_B_001.xml",
	} {
		if _, err := ParseFileName(name); err == nil || pipeline.KindOf(err) != pipeline.Invalid {
			t.Errorf("ParseFileName(%q) = %v, want an invalid error", name, err)
		}
	}
}

func TestMessageFileName(t *testing.T) {
	m := Message{Day: pipeline.NewDay(2026, 3, 29), Sender: "11XSCHEDBRIDGEAE", Receiver: "10XDE-EON-NETZ-C", Version: 7}
	want := "20260329_TPS_11XSCHEDBRIDGEAE_10XDE-EON-NETZ-C_007.XML"
	if got := m.FileName(); got != want {
		t.Fatalf("FileName() = %s, want %s", got, want)
	}
	f, err := ParseFileName(want)
	if err != nil {
		t.Fatal(err)
	}
	if f.Day != m.Day || f.Sender != m.Sender || f.Receiver != m.Receiver || f.Version != m.Version || f.Kind != "TPS" || f.Answer != "" {
		t.Fatalf("ParseFileName(FileName()) = %+v", f)
	}
	// The reference TPS is named after its own header.
	data, err := os.ReadFile("testdata/reference/ess/20241022_TPS_11X0-1111-0762-I_10XDE-AOE-HTCC-C_001.xml")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ParseSchedule(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := ref.FileName(); got != "20241022_TPS_11X0-1111-0762-I_10XDE-AOE-HTCC-C_001.XML" {
		t.Fatalf("reference FileName() = %s", got)
	}
}
