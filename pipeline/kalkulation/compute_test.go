package kalkulation

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/price"
)

var day1 = pipeline.NewDay(2025, time.January, 15)

// row returns quarter-hour qh of day in the area, with its real UTC start.
func row(day pipeline.Day, area pipeline.ControlArea, qh int, bought, sold, ist float64, basis Basis) Row {
	return Row{
		Portfolio: "p1", ControlArea: area, Day: day, QH: qh,
		TS:       time.UnixMicro(day.QuarterStartsMicros()[qh]).UTC(),
		BoughtMW: bought, SoldMW: sold, IstMW: ist, Basis: basis,
	}
}

// pricesAt returns the prices of the quarter-hour of r; a nil price is
// absent.
func pricesAt(r Row, spot, short, long *float64) Prices {
	p := Prices{Spot: map[int64]float64{}, ReBAP: map[int64]float64{}, ReBAPLong: map[int64]float64{}}
	k := r.TS.Unix()
	if spot != nil {
		p.Spot[k] = *spot
	}
	if short != nil {
		p.ReBAP[k] = *short
	}
	if long != nil {
		p.ReBAPLong[k] = *long
	}
	return p
}

func f(v float64) *float64 { return &v }

func TestQuarterFormulas(t *testing.T) {
	// Expected values per quarter-hour; nil pointers mean "nil". kWh are
	// MW x 250, money kWh x price / 1000.
	type want struct {
		kauf, verkauf, kunde, ausgleich                          float64
		spotPrice, rebapPrice                                    *float64
		kaufEUR, verkaufEUR, kundeEUR, ausglEUR, ausglSpot, mehr *float64
		gesamt                                                   *float64
		spotFehlt, rebapFehlt                                    bool
	}
	cases := []struct {
		name              string
		bought, sold, ist float64
		basis             Basis
		spot, short, long *float64
		want              want
	}{
		{
			name: "short, positive reBAP", bought: 2, ist: 2.2, basis: BasisIst,
			spot: f(80), short: f(120), long: f(100),
			// A = 550 - 500 = +50; AusgleichEUR = 50*120/1000 = 6; spot value 4.
			want: want{kauf: 500, kunde: 550, ausgleich: 50, spotPrice: f(80), rebapPrice: f(120),
				kaufEUR: f(40), verkaufEUR: f(0), kundeEUR: f(44), ausglEUR: f(6), ausglSpot: f(4), mehr: f(2), gesamt: f(46)},
		},
		{
			name: "long uses the long reBAP", bought: 2, ist: 1.8, basis: BasisIst,
			spot: f(80), short: f(120), long: f(100),
			// A = -50: we sold 50 kWh to the TSO at 100 -> -5; spot value -4.
			want: want{kauf: 500, kunde: 450, ausgleich: -50, spotPrice: f(80), rebapPrice: f(100),
				kaufEUR: f(40), verkaufEUR: f(0), kundeEUR: f(36), ausglEUR: f(-5), ausglSpot: f(-4), mehr: f(-1), gesamt: f(35)},
		},
		{
			name: "short at a negative reBAP is paid", bought: 2, ist: 2.2, basis: BasisIst,
			spot: f(80), short: f(-60), long: f(-60),
			want: want{kauf: 500, kunde: 550, ausgleich: 50, spotPrice: f(80), rebapPrice: f(-60),
				kaufEUR: f(40), verkaufEUR: f(0), kundeEUR: f(44), ausglEUR: f(-3), ausglSpot: f(4), mehr: f(-7), gesamt: f(37)},
		},
		{
			name: "long at a negative reBAP pays", bought: 2, ist: 1.8, basis: BasisIst,
			spot: f(80), short: f(-40), long: f(-60),
			want: want{kauf: 500, kunde: 450, ausgleich: -50, spotPrice: f(80), rebapPrice: f(-60),
				kaufEUR: f(40), verkaufEUR: f(0), kundeEUR: f(36), ausglEUR: f(3), ausglSpot: f(-4), mehr: f(7), gesamt: f(43)},
		},
		{
			name: "sold at a negative spot costs", bought: 3, sold: 2, ist: 1, basis: BasisIst,
			spot: f(-10), short: f(50), long: f(50),
			// F = 750 - 500 = 250 = K, A = 0; Verkauf EUR = 500*-10/1000 = -5.
			want: want{kauf: 750, verkauf: 500, kunde: 250, ausgleich: 0, spotPrice: f(-10), rebapPrice: f(50),
				kaufEUR: f(-7.5), verkaufEUR: f(-5), kundeEUR: f(-2.5), ausglEUR: f(0), ausglSpot: f(0), mehr: f(0), gesamt: f(-2.5)},
		},
		{
			name: "balanced reports the short reBAP", bought: 2, ist: 2, basis: BasisIst,
			spot: f(80), short: f(120), long: f(100),
			want: want{kauf: 500, kunde: 500, spotPrice: f(80), rebapPrice: f(120),
				kaufEUR: f(40), verkaufEUR: f(0), kundeEUR: f(40), ausglEUR: f(0), ausglSpot: f(0), mehr: f(0), gesamt: f(40)},
		},
		{
			name: "fahrplan basis ignores the Ist", bought: 2, ist: 7, basis: BasisFahrplan,
			spot: f(80),
			// K = F, A = 0: no reBAP needed, none reported.
			want: want{kauf: 500, kunde: 500, spotPrice: f(80),
				kaufEUR: f(40), verkaufEUR: f(0), kundeEUR: f(40), ausglEUR: f(0), ausglSpot: f(0), mehr: f(0), gesamt: f(40)},
		},
		{
			name: "unknown basis counts as fahrplan", bought: 2, ist: 7, basis: "",
			spot: f(80),
			want: want{kauf: 500, kunde: 500, spotPrice: f(80),
				kaufEUR: f(40), verkaufEUR: f(0), kundeEUR: f(40), ausglEUR: f(0), ausglSpot: f(0), mehr: f(0), gesamt: f(40)},
		},
		{
			name: "float residue of equal Ist and schedule is balanced", bought: 0.1 + 0.2, ist: 0.3, basis: BasisIst,
			spot: f(80),
			want: want{kauf: (0.1 + 0.2) * 250, kunde: 75, spotPrice: f(80),
				kaufEUR: f((0.1 + 0.2) * 250 * 80 / 1000), verkaufEUR: f(0), kundeEUR: f(6), ausglEUR: f(0), ausglSpot: f(0), mehr: f(0), gesamt: f((0.1 + 0.2) * 250 * 80 / 1000)},
		},
		{
			name: "missing needed spot", bought: 2, ist: 2.2, basis: BasisIst,
			short: f(120), long: f(100),
			// The reBAP side needs no spot: AusgleichEUR stays.
			want: want{kauf: 500, kunde: 550, ausgleich: 50, rebapPrice: f(120), ausglEUR: f(6), spotFehlt: true},
		},
		{
			name: "missing spot needed for Kundenmenge only", ist: 1, basis: BasisIst,
			short: f(120), long: f(100),
			want: want{kunde: 250, ausgleich: 250, rebapPrice: f(120), ausglEUR: f(30), spotFehlt: true},
		},
		{
			name: "missing spot not needed", basis: BasisIst, short: f(120),
			want: want{rebapPrice: f(120), kaufEUR: f(0), verkaufEUR: f(0), kundeEUR: f(0), ausglEUR: f(0), ausglSpot: f(0), mehr: f(0), gesamt: f(0)},
		},
		{
			name: "missing needed short reBAP", bought: 2, ist: 2.2, basis: BasisIst,
			spot: f(80), long: f(100),
			want: want{kauf: 500, kunde: 550, ausgleich: 50, spotPrice: f(80),
				kaufEUR: f(40), verkaufEUR: f(0), kundeEUR: f(44), ausglSpot: f(4), rebapFehlt: true},
		},
		{
			name: "missing needed long reBAP", bought: 2, ist: 1.8, basis: BasisIst,
			spot: f(80), short: f(120),
			want: want{kauf: 500, kunde: 450, ausgleich: -50, spotPrice: f(80),
				kaufEUR: f(40), verkaufEUR: f(0), kundeEUR: f(36), ausglSpot: f(-4), rebapFehlt: true},
		},
		{
			name: "missing reBAP not needed", bought: 2, ist: 2, basis: BasisIst, spot: f(80),
			want: want{kauf: 500, kunde: 500, spotPrice: f(80),
				kaufEUR: f(40), verkaufEUR: f(0), kundeEUR: f(40), ausglEUR: f(0), ausglSpot: f(0), mehr: f(0), gesamt: f(40)},
		},
		{
			name: "both missing", bought: 2, ist: 1.8, basis: BasisIst,
			want: want{kauf: 500, kunde: 450, ausgleich: -50, spotFehlt: true, rebapFehlt: true},
		},
	}
	eq := func(a, b *float64) bool {
		return a == nil && b == nil || a != nil && b != nil && math.Abs(*a-*b) < 1e-9
	}
	show := func(p *float64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := row(day1, pipeline.Amprion, 40, tc.bought, tc.sold, tc.ist, tc.basis)
			_, qs := Compute(day1, day1, []Row{r}, pricesAt(r, tc.spot, tc.short, tc.long))
			if len(qs) != 1 {
				t.Fatalf("%d quarters", len(qs))
			}
			q, w := qs[0], tc.want
			if q.Row != r {
				t.Errorf("row %+v, want %+v", q.Row, r)
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"kauf kWh", q.FahrplanKaufKWh, w.kauf}, {"verkauf kWh", q.FahrplanVerkaufKWh, w.verkauf},
				{"kunde kWh", q.KundenmengeKWh, w.kunde}, {"ausgleich kWh", q.AusgleichKWh, w.ausgleich}} {
				if math.Abs(c.got-c.want) > 1e-9 {
					t.Errorf("%s %v, want %v", c.name, c.got, c.want)
				}
			}
			for _, c := range []struct {
				name      string
				got, want *float64
			}{{"spot", q.SpotEURMWh, w.spotPrice}, {"rebap", q.ReBAPEURMWh, w.rebapPrice},
				{"kauf EUR", q.FahrplanKaufEUR, w.kaufEUR}, {"verkauf EUR", q.FahrplanVerkaufEUR, w.verkaufEUR},
				{"kunde EUR", q.KundenmengeSpotEUR, w.kundeEUR}, {"ausgleich EUR", q.AusgleichEUR, w.ausglEUR},
				{"ausgleich spot EUR", q.AusgleichSpotEUR, w.ausglSpot}, {"mehrkosten", q.AusgleichMehrkosten, w.mehr},
				{"gesamt", q.GesamtkostenEUR, w.gesamt}} {
				if !eq(c.got, c.want) {
					t.Errorf("%s %v, want %v", c.name, show(c.got), show(c.want))
				}
			}
			if q.SpotFehlt != w.spotFehlt || q.ReBAPFehlt != w.rebapFehlt {
				t.Errorf("spot_fehlt %v rebap_fehlt %v, want %v %v", q.SpotFehlt, q.ReBAPFehlt, w.spotFehlt, w.rebapFehlt)
			}
		})
	}
}

// randomCase builds four areas x days of random rows and full prices, with
// negative prices and both signs of deviation.
func randomCase(rng *rand.Rand, von pipeline.Day, days int) ([]Row, Prices) {
	var rows []Row
	p := Prices{Spot: map[int64]float64{}, ReBAP: map[int64]float64{}, ReBAPLong: map[int64]float64{}}
	price := func() float64 { return math.Round((rng.Float64()*400-100)*100) / 100 }
	mw := func() float64 { return math.Round(rng.Float64()*10000) / 1000 }
	for d := von; d.Compare(von.AddDays(days-1)) <= 0; d = d.AddDays(1) {
		for qh, us := range d.QuarterStartsMicros() {
			k := time.UnixMicro(us).Unix()
			p.Spot[k], p.ReBAP[k], p.ReBAPLong[k] = price(), price(), price()
			for _, a := range pipeline.ControlAreas {
				basis := BasisIst
				if rng.IntN(5) == 0 {
					basis = BasisFahrplan
				}
				rows = append(rows, row(d, a, qh, mw(), mw()/3, mw(), basis))
			}
		}
	}
	return rows, p
}

func TestIdentityGesamtkosten(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	von := pipeline.NewDay(2025, time.October, 24) // includes the fall-back day
	rows, p := randomCase(rng, von, 4)
	res, qs := Compute(von, von.AddDays(3), rows, p)
	if len(qs) != len(rows) || len(qs) != 4*(96+96+100+96) {
		t.Fatalf("%d quarters from %d rows", len(qs), len(rows))
	}
	var kSpot, mehr float64
	for _, q := range qs {
		s, r := *q.SpotEURMWh, *q.ReBAPEURMWh
		want := q.KundenmengeKWh*s/1000 + q.AusgleichKWh*(r-s)/1000
		if math.Abs(*q.GesamtkostenEUR-want) > 1e-9 {
			t.Fatalf("%s qh %d: Gesamtkosten %v, K*s/1000 + A*(r-s)/1000 = %v", q.ControlArea, q.QH, *q.GesamtkostenEUR, want)
		}
		if fk := *q.FahrplanKaufEUR - *q.FahrplanVerkaufEUR; math.Abs(fk+*q.AusgleichSpotEUR-*q.KundenmengeSpotEUR) > 1e-9 {
			t.Fatalf("Fahrplan spot value + Ausgleich spot value != Kundenmenge spot value")
		}
		kSpot += *q.KundenmengeSpotEUR
		mehr += *q.AusgleichMehrkosten
	}
	// The identity holds for the period up to the rounding of its parts.
	s := res.Summe
	if math.Abs(*s.GesamtkostenEUR-(kSpot+mehr)) > 0.005+1e-9 {
		t.Errorf("Summe Gesamtkosten %v, Kundenmenge spot + Mehrkosten %v", *s.GesamtkostenEUR, kSpot+mehr)
	}
	if math.Abs(*s.GesamtkostenEUR-(*s.FahrplanKostenEUR+*s.AusgleichsenergieEUR)) > 0.0151 {
		t.Errorf("Summe Gesamtkosten %v != Fahrplan %v + Ausgleich %v", *s.GesamtkostenEUR, *s.FahrplanKostenEUR, *s.AusgleichsenergieEUR)
	}
	if res.Vollstaendig != (s.Mengenbasis == BasisIst) {
		t.Errorf("vollstaendig %v with Mengenbasis %s", res.Vollstaendig, s.Mengenbasis)
	}
}

func TestMengenbasisAndHinweise(t *testing.T) {
	ist := func(d pipeline.Day, a pipeline.ControlArea) []Row {
		var rs []Row
		for qh := range d.Intervals() {
			rs = append(rs, row(d, a, qh, 1, 0, 1, BasisIst))
		}
		return rs
	}
	fahrplan := func(d pipeline.Day, a pipeline.ControlArea) []Row {
		rs := ist(d, a)
		for i := range rs {
			rs[i].Basis = BasisFahrplan
		}
		return rs
	}
	d := []pipeline.Day{day1, day1.AddDays(1), day1.AddDays(2), day1.AddDays(3)}
	rows := slices.Concat(
		ist(d[0], pipeline.Amprion), ist(d[0], pipeline.TenneT), // ist
		fahrplan(d[1], pipeline.Amprion),                                                                  // fahrplan
		ist(d[2], pipeline.Amprion), fahrplan(d[2], pipeline.TenneT), fahrplan(d[2], pipeline.FiftyHertz), // gemischt
		// d[3]: no rows
	)
	p := Prices{Spot: map[int64]float64{}, ReBAP: map[int64]float64{}, ReBAPLong: map[int64]float64{}}
	for _, r := range rows {
		p.Spot[r.TS.Unix()] = 50
	}
	res, _ := Compute(d[0], d[3], rows, p)
	want := []Basis{BasisIst, BasisFahrplan, BasisGemischt, BasisKeine}
	for i, tag := range res.Tage {
		if tag.Tag != d[i] || tag.Mengenbasis != want[i] {
			t.Errorf("day %d: %s %s, want %s %s", i, tag.Tag, tag.Mengenbasis, d[i], want[i])
		}
	}
	if len(res.Tage) != 4 {
		t.Fatalf("%d days, want 4", len(res.Tage))
	}
	if res.Summe.Mengenbasis != BasisGemischt || res.Vollstaendig {
		t.Errorf("Summe %s vollstaendig %v, want gemischt false", res.Summe.Mengenbasis, res.Vollstaendig)
	}
	empty := res.Tage[3].Figures
	if empty.Viertelstunden != 0 || empty.KundenmengeKWh != 0 || empty.GesamtkostenEUR == nil || *empty.GesamtkostenEUR != 0 || empty.AufschlagCtKWh != nil {
		t.Errorf("day without rows: %+v", empty)
	}
	wantHinweise := []string{
		"2025-01-16: Ist fehlt, Kundenmenge = Fahrplan",
		"2025-01-17: Ist unvollständig, Kundenmenge = Fahrplan in 192 Viertelstunden (p1/50Hertz, p1/TenneT)",
		"2025-01-18: nicht berechnet (Kalkulation nicht gelaufen)",
	}
	if !reflect.DeepEqual(res.Hinweise, wantHinweise) {
		t.Errorf("Hinweise\n%q\nwant\n%q", res.Hinweise, wantHinweise)
	}

	// One day, all ist, all prices: vollständig, Hinweise empty but not nil.
	res, _ = Compute(d[0], d[0], rows, p)
	if !res.Vollstaendig || res.Hinweise == nil || len(res.Hinweise) != 0 || res.Summe.Mengenbasis != BasisIst {
		t.Errorf("ist day: vollstaendig %v hinweise %#v basis %s", res.Vollstaendig, res.Hinweise, res.Summe.Mengenbasis)
	}
	// No rows at all: keine, not vollständig.
	res, _ = Compute(d[3], d[3], rows, p)
	if res.Vollstaendig || res.Summe.Mengenbasis != BasisKeine || len(res.Tage) != 1 {
		t.Errorf("empty period: vollstaendig %v basis %s days %d", res.Vollstaendig, res.Summe.Mengenbasis, len(res.Tage))
	}
	// bis before von: no days.
	res, qs := Compute(d[1], d[0], rows, p)
	if res.Tage == nil || len(res.Tage) != 0 || len(qs) != 0 || res.Vollstaendig || res.Hinweise == nil {
		t.Errorf("reversed period: %+v, %d quarters", res, len(qs))
	}
}

func TestMissingPricesPerDayAndSumme(t *testing.T) {
	d0, d1 := day1, day1.AddDays(1)
	rows := []Row{
		row(d0, pipeline.Amprion, 0, 1, 0, 1.2, BasisIst),
		row(d0, pipeline.Amprion, 1, 1, 0, 1.2, BasisIst),
		row(d1, pipeline.Amprion, 0, 1, 0, 1.2, BasisIst),
		row(d1, pipeline.Amprion, 1, 1, 0, 1.2, BasisIst),
	}
	p := Prices{Spot: map[int64]float64{}, ReBAP: map[int64]float64{}, ReBAPLong: map[int64]float64{}}
	for _, r := range rows {
		p.Spot[r.TS.Unix()], p.ReBAP[r.TS.Unix()], p.ReBAPLong[r.TS.Unix()] = 100, 200, 150
	}
	delete(p.Spot, rows[1].TS.Unix())  // day 0: one quarter without spot
	delete(p.ReBAP, rows[3].TS.Unix()) // day 1: one quarter without (short) reBAP
	res, _ := Compute(d0, d1, rows, p)
	t0, t1, s := res.Tage[0], res.Tage[1], res.Summe

	if t0.FehlendeSpotpreise != 1 || t0.FehlendeReBAP != 0 || t1.FehlendeSpotpreise != 0 || t1.FehlendeReBAP != 1 ||
		s.FehlendeSpotpreise != 1 || s.FehlendeReBAP != 1 {
		t.Errorf("counts: %+v / %+v / %+v", t0.Figures, t1.Figures, s)
	}
	// Day 0: spot-based money nil, the reBAP side known: 2 x 50 kWh x 200.
	for name, v := range map[string]*float64{"kauf": t0.FahrplanKaufEUR, "verkauf": t0.FahrplanVerkaufEUR,
		"kosten": t0.FahrplanKostenEUR, "kunde": t0.KundenmengeSpotwertEUR, "spot": t0.AusgleichsenergieSpotwertEUR,
		"mehr": t0.AusgleichsenergieMehrkostenEUR, "gesamt": t0.GesamtkostenEUR, "aufschlag": t0.AufschlagCtKWh} {
		if v != nil {
			t.Errorf("day 0 %s = %v, want nil", name, *v)
		}
	}
	if t0.AusgleichsenergieEUR == nil || *t0.AusgleichsenergieEUR != 20 {
		t.Errorf("day 0 Ausgleich EUR %v, want 20", t0.AusgleichsenergieEUR)
	}
	// Day 1: reBAP side nil, spot side known.
	if t1.AusgleichsenergieEUR != nil || t1.AusgleichsenergieMehrkostenEUR != nil || t1.GesamtkostenEUR != nil || t1.AufschlagCtKWh != nil {
		t.Errorf("day 1 reBAP-based figures not nil: %+v", t1.Figures)
	}
	if t1.FahrplanKostenEUR == nil || *t1.FahrplanKostenEUR != 50 || *t1.KundenmengeSpotwertEUR != 60 || *t1.AusgleichsenergieSpotwertEUR != 10 {
		t.Errorf("day 1 spot figures: %+v", t1.Figures)
	}
	// Summe: nil wherever a day is nil, so every money figure here.
	for name, v := range map[string]*float64{"kauf": s.FahrplanKaufEUR, "kunde": s.KundenmengeSpotwertEUR,
		"ausgleich": s.AusgleichsenergieEUR, "spot": s.AusgleichsenergieSpotwertEUR, "gesamt": s.GesamtkostenEUR, "aufschlag": s.AufschlagCtKWh} {
		if v != nil {
			t.Errorf("Summe %s = %v, want nil", name, *v)
		}
	}
	if s.KundenmengeKWh != 1200 || s.AusgleichsenergieKWh != 200 || s.Viertelstunden != 4 {
		t.Errorf("Summe energy %+v", s)
	}
	if res.Vollstaendig {
		t.Error("vollstaendig with missing prices")
	}
	wantHinweise := []string{
		"2025-01-15: 1 Viertelstunde ohne Spotpreis, Geldbeträge nicht berechnet",
		"2025-01-16: 1 Viertelstunde ohne reBAP, Ausgleichsenergie nicht bewertet",
	}
	if !reflect.DeepEqual(res.Hinweise, wantHinweise) {
		t.Errorf("Hinweise %q, want %q", res.Hinweise, wantHinweise)
	}
}

func TestRowsOutsideIgnoredInputUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	von := day1.AddDays(-1)
	rows, p := randomCase(rng, von, 4) // day1-1 .. day1+2
	rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	before := slices.Clone(rows)

	res, qs := Compute(day1, day1.AddDays(1), rows, p)
	if !reflect.DeepEqual(rows, before) {
		t.Fatal("Compute modified its input")
	}
	if len(qs) != 2*4*96 || len(res.Tage) != 2 || res.Summe.Viertelstunden != 2*4*96 {
		t.Fatalf("%d quarters, %d days, %d in Summe; want 768, 2, 768", len(qs), len(res.Tage), res.Summe.Viertelstunden)
	}
	for _, q := range qs {
		if q.Day != day1 && q.Day != day1.AddDays(1) {
			t.Fatalf("quarter of %s outside the period", q.Day)
		}
	}
	if !slices.IsSortedFunc(qs, func(a, b Quarter) int {
		if c := a.Day.Compare(b.Day); c != 0 {
			return c
		}
		if c := strings.Compare(string(a.ControlArea), string(b.ControlArea)); c != 0 {
			return c
		}
		return a.QH - b.QH
	}) {
		t.Error("quarters not sorted")
	}

	// The same rows without the outside days give the same result.
	var inside []Row
	for _, r := range rows {
		if r.Day == day1 || r.Day == day1.AddDays(1) {
			inside = append(inside, r)
		}
	}
	res2, qs2 := Compute(day1, day1.AddDays(1), inside, p)
	if !reflect.DeepEqual(res, res2) || !reflect.DeepEqual(qs, qs2) {
		t.Error("rows outside the period changed the result")
	}
}

func TestAufschlagNilWithoutCustomerQuantity(t *testing.T) {
	// Bought and sold the same: F = 0, K = 0 on the schedule basis.
	r := row(day1, pipeline.TenneT, 0, 1, 1, 0, BasisFahrplan)
	res, _ := Compute(day1, day1, []Row{r}, pricesAt(r, f(90), f(100), f(100)))
	if res.Tage[0].AufschlagCtKWh != nil || res.Summe.AufschlagCtKWh != nil {
		t.Errorf("Aufschlag %v / %v with zero Kundenmenge, want nil", res.Tage[0].AufschlagCtKWh, res.Summe.AufschlagCtKWh)
	}
	if g := res.Summe.GesamtkostenEUR; g == nil || *g != 0 {
		t.Errorf("Gesamtkosten %v, want 0", g)
	}
}

// TestSummeFromUnroundedDays: two days of 0.004 EUR each round to 0.00; the
// Summe is 0.008 -> 0.01, not the 0.00 of the rounded days.
func TestSummeFromUnroundedDays(t *testing.T) {
	d0, d1 := day1, day1.AddDays(1)
	// 0.001 MW x 250 = 0.25 kWh at 16 EUR/MWh = 0.004 EUR.
	rows := []Row{row(d0, pipeline.Amprion, 0, 0.001, 0, 0, BasisFahrplan), row(d1, pipeline.Amprion, 0, 0.001, 0, 0, BasisFahrplan)}
	p := NewPrices([]price.Point{
		{Start: rows[0].TS, Minutes: 15, Price: 16, PriceLong: 16},
		{Start: rows[1].TS, Minutes: 15, Price: 16, PriceLong: 16},
	}, nil)
	res, _ := Compute(d0, d1, rows, p)
	if *res.Tage[0].FahrplanKaufEUR != 0 || *res.Tage[1].FahrplanKaufEUR != 0 || *res.Summe.FahrplanKaufEUR != 0.01 {
		t.Errorf("days %v %v Summe %v, want 0 0 0.01", *res.Tage[0].FahrplanKaufEUR, *res.Tage[1].FahrplanKaufEUR, *res.Summe.FahrplanKaufEUR)
	}
	if res.Summe.FahrplanKaufKWh != 0.5 {
		t.Errorf("Summe kWh %v, want 0.5", res.Summe.FahrplanKaufKWh)
	}
}

func TestNewPrices(t *testing.T) {
	ts := time.Date(2025, 3, 30, 0, 45, 0, 0, time.UTC)
	hourly := []price.Point{{Start: ts.Add(-45 * time.Minute), Minutes: 60, Price: 70, PriceLong: 70}}
	rebap := []price.Point{{Start: ts, Minutes: 15, Price: 120, PriceLong: -5}}
	p := NewPrices(price.QuarterHours(hourly), rebap)
	if len(p.Spot) != 4 || p.Spot[ts.Unix()] != 70 {
		t.Errorf("spot %v", p.Spot)
	}
	if len(p.ReBAP) != 1 || p.ReBAP[ts.Unix()] != 120 || p.ReBAPLong[ts.Unix()] != -5 {
		t.Errorf("rebap %v long %v", p.ReBAP, p.ReBAPLong)
	}
	// A zone other than UTC indexes the same instant.
	if _, ok := NewPrices([]price.Point{{Start: ts.In(pipeline.Berlin), Price: 1}}, nil).Spot[ts.Unix()]; !ok {
		t.Error("a Berlin time is not indexed by its Unix second")
	}
}

func TestRound(t *testing.T) {
	cases := []struct {
		x    float64
		d    int
		want float64
	}{
		{0.125, 2, 0.13},
		{-0.125, 2, -0.13},
		{1.005, 2, 1.01}, // 1.00499999999999989... as a float
		{2.675, 2, 2.68}, // 2.67499999999999982...
		{-2.675, 2, -2.68},
		{1.0049, 2, 1},
		{163.355, 2, 163.36},
		{0.1 + 0.2, 2, 0.3},
		{159.35499999999999, 2, 159.36}, // float noise of an exact half
		{41540.075, 2, 41540.08},
		{12.3444999, 3, 12.344},
		{0.00005, 4, 0.0001},
		{-0.00004, 4, 0},
		{-0.004, 2, 0},
		{1234567.0049, 2, 1234567},
		{12345678.005, 2, 12345678.01}, // 12345678.00499999895...: beyond 1e-7, within the ulps
		{0.018718531, 4, 0.0187},
	}
	for _, c := range cases {
		got := round(c.x, c.d)
		if got != c.want || math.Signbit(got) != math.Signbit(c.want) {
			t.Errorf("round(%v, %d) = %v, want %v", c.x, c.d, got, c.want)
		}
	}
}

func TestNeumaierSum(t *testing.T) {
	// 0.1 added 10,000 times drifts in plain float; the compensated sum
	// does not.
	var s total
	var plain float64
	for range 10000 {
		s.add(0.1)
		plain += 0.1
	}
	if s.value() != 1000 {
		t.Errorf("compensated sum %v, want 1000 (plain %v)", s.value(), plain)
	}
}
