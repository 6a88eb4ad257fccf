package prices

import (
	"errors"
	"testing"

	"github.com/schedbridge/schedbridge/ingest"
)

// The fuzz targets check that no input panics, that a failure is always a
// schema error with at most ingest.MaxProblems well-formed problems, and that a
// success satisfies checkSeries. The files of testdata are the seeds.

func FuzzParseSMARD(f *testing.F) {
	for _, name := range []string{"smard_2025-03-30_hourly.json", "smard_2026-10-25_qh.json"} {
		f.Add(readFile(f, name))
	}
	for _, s := range []string{
		`{"series": [[1743289200000, null], [1743292800000, 1.5], [1743303600000, -2]]}`,
		`{"series": [[1759276800000, 1], [1759277700000, 2], [1759276800000, 3]]}`,
		`{"series": [["x", 1], [1.5, true], [], {}]}`,
		`{"series": [[946684800000, 1], [4102444799999, 2]]}`,
		`{"meta_data": null, "series": null}`,
		"[", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSMARD(data)
		checkOutcome(t, s.Points == nil, err)
		if err == nil {
			checkSeries(t, s)
		}
	})
}

func FuzzParseReBAPCSV(f *testing.F) {
	for _, name := range []string{"rebap_2026-10-25_utc.csv", "rebap_cet_cest.csv", "rebap_latin1.csv"} {
		f.Add(readFile(f, name))
	}
	for _, s := range []string{
		"Datum;von;bis;reBAP\n01.07.2025;00:00;00:15;1\n01.07.2025;01:00;01:15;N.A.\n",
		"Datum;Zeitzone;von;reBAP unterdeckt;reBAP ueberdeckt\n30.03.2025;CET;02:00;1.234,5;-1\n30.03.2025;CEST;03:00;1;1\n30.03.2025;CET;02:00;1;1\n",
		"\xef\xbb\xbfDatum;von;reBAP\r\n\"01.07.2025\";\"00:00\";\"1\"\r\n",
		"Datum;von;reBAP \xfcberdeckt;reBAP unterdeckt\n01.07.2025;00:00;1;2\n",
		"Datum;von;reBAP\n01.01.2000;00:00;1\n31.12.2099;23:45;1\n",
		"Datum;von;reBAP\n\"01.07.2025;00:00;1\n",
		";;\n", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseReBAPCSV(data)
		checkOutcome(t, s.Points == nil, err)
		if err == nil {
			checkSeries(t, s)
			for _, p := range s.Points {
				if p.Minutes != 15 {
					t.Fatalf("reBAP point of %d minutes", p.Minutes)
				}
			}
		}
	})
}

func checkOutcome(t *testing.T, noPoints bool, err error) {
	t.Helper()
	if err == nil {
		if noPoints {
			t.Fatal("success without a Points slice")
		}
		return
	}
	var se *ingest.SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("error %T %v is not a schema error", err, err)
	}
	if n := len(se.Problems); n == 0 || n > ingest.MaxProblems {
		t.Fatalf("%d problems", n)
	}
	for _, p := range se.Problems {
		if p.Type == "" || p.Msg == "" || p.Ctx == nil || len(p.Loc) == 0 || p.Loc[0] != "body" {
			t.Fatalf("malformed problem %+v", p)
		}
	}
}
