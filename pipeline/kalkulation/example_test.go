package kalkulation_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/ingest/prices"
	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/kalkulation"
	"github.com/schedbridge/schedbridge/pipeline/price"
)

// The hand-computed example of testdata/beispiel: three days around the
// spring switch, arithmetic in RECHNUNG.md.

var (
	beispielVon = pipeline.NewDay(2025, time.March, 29)
	beispielBis = pipeline.NewDay(2025, time.March, 31)
)

func TestBeispiel(t *testing.T) {
	rows := readMengen(t)
	spot, rebap := readFile(t, "spot_smard.json"), readFile(t, "rebap.csv")
	res, qs := kalkulation.Compute(beispielVon, beispielBis, rows, parsePrices(t, spot, rebap))
	compareJSON(t, res, "expected.json")
	checkQuarters(t, qs, len(rows))
}

// TestBeispielFehlend takes out the reBAP of 2025-03-30 01:00 UTC (the
// first quarter-hour after the switch) and the spot of 2025-03-31 06:00 UTC.
func TestBeispielFehlend(t *testing.T) {
	rows := readMengen(t)
	spot := replaceOnce(t, readFile(t, "spot_smard.json"),
		fmt.Sprintf("[%d,110.45]", time.Date(2025, 3, 31, 6, 0, 0, 0, time.UTC).UnixMilli()),
		fmt.Sprintf("[%d,null]", time.Date(2025, 3, 31, 6, 0, 0, 0, time.UTC).UnixMilli()))
	rebap := replaceOnce(t, readFile(t, "rebap.csv"),
		"30.03.2025;UTC;01:00;01:15;reBAP;Qualitaetsgesichert;EUR/MWh;200,00;200,00\n", "")
	res, qs := kalkulation.Compute(beispielVon, beispielBis, rows, parsePrices(t, spot, rebap))
	compareJSON(t, res, "expected_fehlend.json")
	checkQuarters(t, qs, len(rows))

	// Quarter by quarter: exactly the quarter-hours that need the missing
	// price are flagged; TenneT is balanced at 01:00 and needs no reBAP.
	gap := time.Date(2025, 3, 30, 1, 0, 0, 0, time.UTC)
	spotGap := time.Date(2025, 3, 31, 6, 0, 0, 0, time.UTC)
	for _, q := range qs {
		inSpotGap := !q.TS.Before(spotGap) && q.TS.Before(spotGap.Add(time.Hour))
		wantReBAP := q.TS.Equal(gap) && q.ControlArea == pipeline.Amprion
		if q.SpotFehlt != inSpotGap || q.ReBAPFehlt != wantReBAP {
			t.Errorf("%s %s %s: spot_fehlt %v rebap_fehlt %v, want %v %v",
				q.Day, q.ControlArea, q.TS.Format(time.RFC3339), q.SpotFehlt, q.ReBAPFehlt, inSpotGap, wantReBAP)
		}
		if q.TS.Equal(gap) && q.ControlArea == pipeline.TenneT && (q.ReBAPEURMWh != nil || q.AusgleichEUR == nil || *q.AusgleichEUR != 0) {
			t.Errorf("TenneT at the reBAP gap: rebap %v, ausgleich EUR %v; want nil and 0", q.ReBAPEURMWh, q.AusgleichEUR)
		}
		if inSpotGap && (q.SpotEURMWh != nil || q.FahrplanKaufEUR != nil || q.GesamtkostenEUR != nil || q.AusgleichEUR == nil) {
			t.Errorf("%s %s in the spot gap: spot %v kauf %v gesamt %v ausgleich %v; want nil nil nil set",
				q.ControlArea, q.TS.Format(time.RFC3339), q.SpotEURMWh, q.FahrplanKaufEUR, q.GesamtkostenEUR, q.AusgleichEUR)
		}
	}
}

// checkQuarters asserts the per-quarter identity Gesamt = K*s/1000 +
// A*(r-s)/1000, the order of the quarters and that every row came back.
func checkQuarters(t *testing.T, qs []kalkulation.Quarter, rows int) {
	t.Helper()
	if len(qs) != rows {
		t.Fatalf("%d quarters, want one per row (%d)", len(qs), rows)
	}
	sorted := sort.SliceIsSorted(qs, func(i, j int) bool {
		a, b := qs[i], qs[j]
		if c := a.Day.Compare(b.Day); c != 0 {
			return c < 0
		}
		if a.Portfolio != b.Portfolio {
			return a.Portfolio < b.Portfolio
		}
		if a.ControlArea != b.ControlArea {
			return a.ControlArea < b.ControlArea
		}
		return a.QH < b.QH
	})
	if !sorted {
		t.Error("quarters are not sorted by day, portfolio, control area, qh")
	}
	for _, q := range qs {
		if q.GesamtkostenEUR == nil {
			continue
		}
		// A price that is not needed may be absent; its quantity is zero.
		var s, r float64
		if q.SpotEURMWh != nil {
			s = *q.SpotEURMWh
		}
		if q.ReBAPEURMWh != nil {
			r = *q.ReBAPEURMWh
		} else if q.AusgleichKWh != 0 {
			t.Errorf("%s %s qh %d: Gesamtkosten without the reBAP it needs", q.Day, q.ControlArea, q.QH)
		}
		want := q.KundenmengeKWh*s/1000 + q.AusgleichKWh*(r-s)/1000
		if math.Abs(*q.GesamtkostenEUR-want) > 1e-9 {
			t.Errorf("%s %s qh %d: Gesamtkosten %v, K*s + A*(r-s) = %v", q.Day, q.ControlArea, q.QH, *q.GesamtkostenEUR, want)
		}
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "beispiel", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func replaceOnce(t *testing.T, data []byte, old, repl string) []byte {
	t.Helper()
	if n := bytes.Count(data, []byte(old)); n != 1 {
		t.Fatalf("%q occurs %d times in the test file, want once", old, n)
	}
	return bytes.Replace(data, []byte(old), []byte(repl), 1)
}

// parsePrices reads the files with the production parsers and expands the
// hourly spot prices to quarter-hours, as the kalkulation stage does.
func parsePrices(t *testing.T, spot, rebap []byte) kalkulation.Prices {
	t.Helper()
	s, err := prices.ParseSMARD(spot)
	if err != nil {
		t.Fatalf("spot: %v", err)
	}
	r, err := prices.ParseReBAPCSV(rebap)
	if err != nil {
		t.Fatalf("rebap: %v", err)
	}
	return kalkulation.NewPrices(price.QuarterHours(s.Points), price.QuarterHours(r.Points))
}

// readMengen reads mengen.csv (portfolio;control_area;day;qh;bought_mw;
// sold_mw;ist_mw;basis), a format of this test only.
func readMengen(t *testing.T) []kalkulation.Row {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(readFile(t, "mengen.csv"))), "\n")
	if lines[0] != "portfolio;control_area;day;qh;bought_mw;sold_mw;ist_mw;basis" {
		t.Fatalf("mengen.csv header %q", lines[0])
	}
	rows := make([]kalkulation.Row, 0, len(lines)-1)
	for n, line := range lines[1:] {
		f := strings.Split(line, ";")
		if len(f) != 8 {
			t.Fatalf("mengen.csv line %d: %d fields", n+2, len(f))
		}
		area, ok := pipeline.ParseControlArea(f[1])
		day, err := pipeline.ParseDay(f[2])
		qh, err2 := strconv.Atoi(f[3])
		if !ok || err != nil || err2 != nil || qh < 0 || qh >= day.Intervals() {
			t.Fatalf("mengen.csv line %d: %q", n+2, line)
		}
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("mengen.csv line %d: %v", n+2, err)
			}
			return v
		}
		rows = append(rows, kalkulation.Row{
			Portfolio: f[0], ControlArea: area, Day: day, QH: qh,
			TS:       time.UnixMicro(day.QuarterStartsMicros()[qh]).UTC(),
			BoughtMW: num(f[4]), SoldMW: num(f[5]), IstMW: num(f[6]), Basis: kalkulation.Basis(f[7]),
		})
	}
	return rows
}

// compareJSON compares the JSON of got with the expected file field by
// field, numbers exactly (both sides decode the decimal to the same float).
func compareJSON(t *testing.T, got any, name string) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(readFile(t, name), &w); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	diff(t, name, w, g)
	if t.Failed() {
		t.Logf("got:\n%s", b)
	}
}

func diff(t *testing.T, path string, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			t.Errorf("%s: got %v, want an object", path, got)
			return
		}
		for k := range w {
			if _, ok := g[k]; !ok {
				t.Errorf("%s.%s: missing", path, k)
			}
		}
		for k, gv := range g {
			wv, ok := w[k]
			if !ok {
				t.Errorf("%s.%s: unexpected field (%v)", path, k, gv)
				continue
			}
			diff(t, path+"."+k, wv, gv)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			t.Errorf("%s: got %v, want %v", path, got, want)
			return
		}
		for i := range w {
			diff(t, fmt.Sprintf("%s[%d]", path, i), w[i], g[i])
		}
	default:
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: got %v, want %v", path, got, want)
		}
	}
}

// A short quarter-hour: the customers took 0.2 MW more than scheduled, so
// the balancing group bought 50 kWh of balancing energy at reBAP.
func ExampleCompute() {
	day := pipeline.NewDay(2025, time.March, 31)
	ts := time.UnixMicro(day.QuarterStartsMicros()[0]).UTC()
	rows := []kalkulation.Row{{
		Portfolio: "p1", ControlArea: pipeline.Amprion, Day: day, QH: 0, TS: ts,
		BoughtMW: 2, IstMW: 2.2, Basis: kalkulation.BasisIst,
	}}
	p := kalkulation.NewPrices(
		[]price.Point{{Start: ts, Minutes: 15, Price: 80, PriceLong: 80}},
		[]price.Point{{Start: ts, Minutes: 15, Price: 120, PriceLong: 100}},
	)
	res, _ := kalkulation.Compute(day, day, rows, p)
	s := res.Summe
	fmt.Printf("Kundenmenge %.0f kWh, Ausgleich %.0f kWh\n", s.KundenmengeKWh, s.AusgleichsenergieKWh)
	fmt.Printf("Fahrplan %.2f EUR + Ausgleich %.2f EUR = %.2f EUR\n", *s.FahrplanKostenEUR, *s.AusgleichsenergieEUR, *s.GesamtkostenEUR)
	fmt.Printf("Mehrkosten %.2f EUR, Aufschlag %.4f ct/kWh\n", *s.AusgleichsenergieMehrkostenEUR, *s.AufschlagCtKWh)
	// Output:
	// Kundenmenge 550 kWh, Ausgleich 50 kWh
	// Fahrplan 40.00 EUR + Ausgleich 6.00 EUR = 46.00 EUR
	// Mehrkosten 2.00 EUR, Aufschlag 0.3636 ct/kWh
}
