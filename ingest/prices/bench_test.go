package prices

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// yearOfReBAP is a netztransparenz export of one year in UTC: 35,040 rows.
func yearOfReBAP() []byte {
	var b strings.Builder
	b.WriteString("Datum;Zeitzone;von;bis;Datenkategorie;Datentyp;Einheit;reBAP unterdeckt;reBAP ueberdeckt\r\n")
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 35040 {
		t := start.Add(time.Duration(i) * 15 * time.Minute)
		cents := (i*7919)%250000 - 20000 // -200,00 to 2.299,99 EUR/MWh
		sign, c := "", cents
		if c < 0 {
			sign, c = "-", -c
		}
		v := fmt.Sprintf("%s%d,%02d", sign, c/100, c%100)
		if c >= 100000 {
			v = fmt.Sprintf("%s%d.%03d,%02d", sign, c/100000, c/100%1000, c%100)
		}
		fmt.Fprintf(&b, "%s;UTC;%s;%s;reBAP;Qualitaetsgesichert;EUR/MWh;%s;%s\r\n",
			t.Format("02.01.2006"), t.Format("15:04"), t.Add(15*time.Minute).Format("15:04"), v, v)
	}
	return []byte(b.String())
}

func TestYearOfReBAP(t *testing.T) {
	s, err := ParseReBAPCSV(yearOfReBAP())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Points) != 35040 || len(s.Missing) != 0 || s.Points[35039].Start != time.Date(2025, 12, 31, 23, 45, 0, 0, time.UTC) {
		t.Fatalf("%d points, %d missing", len(s.Points), len(s.Missing))
	}
	// Row 2 is -200,00 + 2 × 79,19 = -41,62; row 16 is the first of 1.000 EUR/MWh or more.
	if p := s.Points[2]; p.Price != -41.62 || p.PriceLong != -41.62 {
		t.Errorf("row 2: %+v", p)
	}
	if p := s.Points[16]; p.Price != 1067.04 {
		t.Errorf("row 16: %+v", p)
	}
}

func BenchmarkParseReBAPCSV(b *testing.B) {
	data := yearOfReBAP()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseReBAPCSV(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseSMARD(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"meta_data":{"version":1},"series":[`)
	start := time.Date(2025, 10, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i := range 35040 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "[%d,%d.%02d]", start+int64(i)*900000, i%300-50, i%100)
	}
	sb.WriteString("]}")
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseSMARD(data); err != nil {
			b.Fatal(err)
		}
	}
}
