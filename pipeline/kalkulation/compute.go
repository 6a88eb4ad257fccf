package kalkulation

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/price"
)

// kWhPerMW is the energy of one MW held for a quarter-hour: 1 MW x 0.25 h =
// 0.25 MWh = 250 kWh.
const kWhPerMW = 250

// zeroKWh is the deviation below which a quarter-hour counts as balanced.
// Ist minus schedule of two equal float inputs can leave a residue in the
// last bits; without this threshold such a quarter-hour would need a reBAP
// and be flagged when none is published.
const zeroKWh = 1e-9

// NewPrices indexes quarter-hour price points (see price.QuarterHours) by
// the Unix second of their start. spot points fill Spot; rebap points fill
// ReBAP (Price) and ReBAPLong (PriceLong). Hourly points must be expanded
// by the caller first: an unexpanded hourly point prices only its first
// quarter-hour, and Compute flags the other three as missing.
func NewPrices(spot, rebap []price.Point) Prices {
	p := Prices{
		Spot:      make(map[int64]float64, len(spot)),
		ReBAP:     make(map[int64]float64, len(rebap)),
		ReBAPLong: make(map[int64]float64, len(rebap)),
	}
	for _, pt := range spot {
		p.Spot[pt.Start.Unix()] = pt.Price
	}
	for _, pt := range rebap {
		k := pt.Start.Unix()
		p.ReBAP[k] = pt.Price
		p.ReBAPLong[k] = pt.PriceLong
	}
	return p
}

// Compute calculates the days von..bis (inclusive) from the materialized
// rows (any order; rows outside the period are ignored) and the prices. It
// returns the result and the computed quarter-hours (one per row in the
// period, sorted by day, portfolio, control area, qh) for the Parquet
// dataset. The rows are not modified.
//
// Every day of the period appears in Result.Tage, a day without rows with
// zeros and Mengenbasis keine. A period with bis before von has no days and
// is not vollständig; the caller validates the period.
//
// Rounding: the figures of a day are the quarter-hours' values summed at
// full precision (compensated summation) and then rounded half away from
// zero, kWh to 3 decimals, EUR to 2, ct/kWh to 4. The Summe is computed from
// the unrounded day sums and rounded once, so it can differ by a cent (or a
// thousandth of a kWh) from the sum of the rounded days; that is intended,
// the Summe is the more exact figure.
func Compute(von, bis pipeline.Day, rows []Row, p Prices) (Result, []Quarter) {
	// Sort positions, not rows: moving rows of over 100 bytes made the sort
	// most of the benchmark's time, and the input stays untouched.
	idx := make([]int, 0, len(rows))
	for i := range rows {
		if d := rows[i].Day; d.Compare(von) >= 0 && d.Compare(bis) <= 0 {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(i, j int) int {
		a, b := &rows[i], &rows[j]
		if c := a.Day.Compare(b.Day); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Portfolio, b.Portfolio); c != 0 {
			return c
		}
		if c := cmp.Compare(a.ControlArea, b.ControlArea); c != 0 {
			return c
		}
		if c := cmp.Compare(a.QH, b.QH); c != 0 {
			return c
		}
		// Duplicate keys, which the stage does not produce, keep their input
		// order, so that the output is deterministic.
		return cmp.Compare(i, j)
	})

	qs := make([]Quarter, len(idx))
	// One backing array for the nine optional values of every quarter-hour
	// instead of one allocation per pointer: a month of four areas is 12k
	// quarter-hours and would otherwise cost 100k small allocations.
	slab := make([]float64, len(idx)*slotsPerQuarter)
	for n, i := range idx {
		computeQuarter(&qs[n], &rows[i], p, slab[n*slotsPerQuarter:(n+1)*slotsPerQuarter:(n+1)*slotsPerQuarter])
	}

	res := Result{Von: von, Bis: bis, Tage: []DayFigures{}, Hinweise: []string{}}
	var period sums
	i := 0
	for d := von; d.Compare(bis) <= 0; d = d.AddDays(1) {
		var day sums
		j := i
		for j < len(qs) && qs[j].Day == d {
			day.addQuarter(&qs[j])
			j++
		}
		res.Tage = append(res.Tage, DayFigures{Tag: d, Figures: day.figures()})
		res.Hinweise = append(res.Hinweise, day.hinweise(d, qs[i:j])...)
		period.addDay(&day)
		i = j
	}
	res.Summe = period.figures()
	res.Vollstaendig = len(res.Tage) > 0
	for _, t := range res.Tage {
		if t.Mengenbasis != BasisIst || t.FehlendeSpotpreise > 0 || t.FehlendeReBAP > 0 {
			res.Vollstaendig = false
		}
	}
	return res, qs
}

// slotsPerQuarter is the number of optional values of a Quarter.
const slotsPerQuarter = 9

// computeQuarter fills q from the row and the prices; the optional values
// point into slot.
func computeQuarter(q *Quarter, r *Row, p Prices, slot []float64) {
	q.Row = *r
	kauf := r.BoughtMW * kWhPerMW
	verkauf := r.SoldMW * kWhPerMW
	fahrplan := kauf - verkauf
	kunde := fahrplan
	if r.Basis == BasisIst {
		kunde = r.IstMW * kWhPerMW
	}
	ausgleich := kunde - fahrplan
	if math.Abs(ausgleich) <= zeroKWh {
		ausgleich = 0
	}
	q.FahrplanKaufKWh, q.FahrplanVerkaufKWh = kauf, verkauf
	q.KundenmengeKWh, q.AusgleichKWh = kunde, ausgleich

	ts := r.TS.Unix()
	set := func(i int, v float64) *float64 {
		slot[i] = v
		return &slot[i]
	}

	spot, haveSpot := p.Spot[ts]
	if haveSpot {
		q.SpotEURMWh = set(0, spot)
	}
	// The reBAP that applies: short when the group bought balancing energy,
	// long when it sold; a balanced quarter-hour reports the short price.
	rebaps := p.ReBAP
	if ausgleich < 0 {
		rebaps = p.ReBAPLong
	}
	rebap, haveReBAP := rebaps[ts]
	if haveReBAP {
		q.ReBAPEURMWh = set(1, rebap)
	}

	// A price that is not needed multiplies a zero quantity; it stands as
	// zero so that a quarter-hour without energy never blocks a figure.
	if !haveSpot {
		if kauf != 0 || verkauf != 0 || kunde != 0 {
			q.SpotFehlt = true
		} else {
			spot = 0
		}
	}
	if !haveReBAP {
		if ausgleich != 0 {
			q.ReBAPFehlt = true
		} else {
			rebap = 0
		}
	}

	if !q.SpotFehlt {
		q.FahrplanKaufEUR = set(2, kauf*spot/1000)
		q.FahrplanVerkaufEUR = set(3, verkauf*spot/1000)
		q.KundenmengeSpotEUR = set(4, kunde*spot/1000)
		q.AusgleichSpotEUR = set(5, ausgleich*spot/1000)
	}
	if !q.ReBAPFehlt {
		q.AusgleichEUR = set(6, ausgleich*rebap/1000)
	}
	if !q.SpotFehlt && !q.ReBAPFehlt {
		q.AusgleichMehrkosten = set(7, *q.AusgleichEUR-*q.AusgleichSpotEUR)
		q.GesamtkostenEUR = set(8, *q.FahrplanKaufEUR-*q.FahrplanVerkaufEUR+*q.AusgleichEUR)
	}
}

// total is a sum that may be unknown: compensated (Neumaier) so that a sum
// of thousands of quarter-hours keeps full precision, and missing once any
// summand was missing.
type total struct {
	sum, comp float64
	missing   bool
}

func (t *total) add(v float64) {
	s := t.sum + v
	if math.Abs(t.sum) >= math.Abs(v) {
		t.comp += (t.sum - s) + v
	} else {
		t.comp += (v - s) + t.sum
	}
	t.sum = s
}

func (t *total) addOpt(v *float64) {
	if v == nil {
		t.missing = true
		return
	}
	t.add(*v)
}

func (t *total) addTotal(o total) {
	t.missing = t.missing || o.missing
	t.add(o.value())
}

func (t total) value() float64 { return t.sum + t.comp }

// money is the rounded sum, nil when missing.
func (t total) money() *float64 {
	if t.missing {
		return nil
	}
	v := round(t.value(), 2)
	return &v
}

// sums accumulates the figures of a day or of the period.
type sums struct {
	kauf, verkauf, kunde, ausgleich                          total // kWh
	kaufEUR, verkaufEUR, kundeEUR, ausgleichEUR, spotwertEUR total
	mehrkosten, gesamt                                       total
	quarters, ist, fahrplan, spotFehlt, rebapFehlt           int
}

func (s *sums) addQuarter(q *Quarter) {
	s.kauf.add(q.FahrplanKaufKWh)
	s.verkauf.add(q.FahrplanVerkaufKWh)
	s.kunde.add(q.KundenmengeKWh)
	s.ausgleich.add(q.AusgleichKWh)
	s.kaufEUR.addOpt(q.FahrplanKaufEUR)
	s.verkaufEUR.addOpt(q.FahrplanVerkaufEUR)
	s.kundeEUR.addOpt(q.KundenmengeSpotEUR)
	s.ausgleichEUR.addOpt(q.AusgleichEUR)
	s.spotwertEUR.addOpt(q.AusgleichSpotEUR)
	s.mehrkosten.addOpt(q.AusgleichMehrkosten)
	s.gesamt.addOpt(q.GesamtkostenEUR)
	s.quarters++
	// Anything but ist is computed on the schedule (see computeQuarter), so
	// it counts as fahrplan here too.
	if q.Basis == BasisIst {
		s.ist++
	} else {
		s.fahrplan++
	}
	if q.SpotFehlt {
		s.spotFehlt++
	}
	if q.ReBAPFehlt {
		s.rebapFehlt++
	}
}

func (s *sums) addDay(d *sums) {
	for _, f := range []struct{ to, from *total }{
		{&s.kauf, &d.kauf}, {&s.verkauf, &d.verkauf}, {&s.kunde, &d.kunde}, {&s.ausgleich, &d.ausgleich},
		{&s.kaufEUR, &d.kaufEUR}, {&s.verkaufEUR, &d.verkaufEUR}, {&s.kundeEUR, &d.kundeEUR},
		{&s.ausgleichEUR, &d.ausgleichEUR}, {&s.spotwertEUR, &d.spotwertEUR},
		{&s.mehrkosten, &d.mehrkosten}, {&s.gesamt, &d.gesamt},
	} {
		f.to.addTotal(*f.from)
	}
	s.quarters += d.quarters
	s.ist += d.ist
	s.fahrplan += d.fahrplan
	s.spotFehlt += d.spotFehlt
	s.rebapFehlt += d.rebapFehlt
}

func (s *sums) basis() Basis {
	switch {
	case s.ist > 0 && s.fahrplan > 0:
		return BasisGemischt
	case s.ist > 0:
		return BasisIst
	case s.fahrplan > 0:
		return BasisFahrplan
	}
	return BasisKeine
}

func (s *sums) figures() Figures {
	f := Figures{
		FahrplanKaufKWh:    round(s.kauf.value(), 3),
		FahrplanVerkaufKWh: round(s.verkauf.value(), 3),
		FahrplanSaldoKWh:   round(s.kauf.value()-s.verkauf.value(), 3),
		FahrplanKaufEUR:    s.kaufEUR.money(),
		FahrplanVerkaufEUR: s.verkaufEUR.money(),

		KundenmengeKWh:         round(s.kunde.value(), 3),
		KundenmengeSpotwertEUR: s.kundeEUR.money(),

		AusgleichsenergieKWh:           round(s.ausgleich.value(), 3),
		AusgleichsenergieEUR:           s.ausgleichEUR.money(),
		AusgleichsenergieSpotwertEUR:   s.spotwertEUR.money(),
		AusgleichsenergieMehrkostenEUR: s.mehrkosten.money(),
		GesamtkostenEUR:                s.gesamt.money(),

		Mengenbasis:        s.basis(),
		Viertelstunden:     s.quarters,
		FehlendeSpotpreise: s.spotFehlt,
		FehlendeReBAP:      s.rebapFehlt,
	}
	kosten := total{missing: s.kaufEUR.missing || s.verkaufEUR.missing}
	kosten.add(s.kaufEUR.value())
	kosten.add(-s.verkaufEUR.value())
	f.FahrplanKostenEUR = kosten.money()
	// The surcharge relates the imbalance cost beyond the spot value to the
	// customers' quantity; without quantity there is nothing to relate to.
	if k := s.kunde.value(); !s.mehrkosten.missing && math.Abs(k) > zeroKWh {
		v := round(s.mehrkosten.value()/k*100, 4)
		f.AufschlagCtKWh = &v
	}
	return f
}

// hinweise says in words what is missing on day d, at most one line per
// kind: the quantity basis, then spot prices, then reBAP.
func (s *sums) hinweise(d pipeline.Day, qs []Quarter) []string {
	var out []string
	switch s.basis() {
	case BasisKeine:
		out = append(out, fmt.Sprintf("%s: nicht berechnet (Kalkulation nicht gelaufen)", d))
	case BasisFahrplan:
		out = append(out, fmt.Sprintf("%s: Ist fehlt, Kundenmenge = Fahrplan", d))
	case BasisGemischt:
		out = append(out, fmt.Sprintf("%s: Ist unvollständig, Kundenmenge = Fahrplan in %s (%s)",
			d, viertelstunden(s.fahrplan), fahrplanScopes(qs)))
	}
	if s.spotFehlt > 0 {
		out = append(out, fmt.Sprintf("%s: %s ohne Spotpreis, Geldbeträge nicht berechnet", d, viertelstunden(s.spotFehlt)))
	}
	if s.rebapFehlt > 0 {
		out = append(out, fmt.Sprintf("%s: %s ohne reBAP, Ausgleichsenergie nicht bewertet", d, viertelstunden(s.rebapFehlt)))
	}
	return out
}

// fahrplanScopes names the portfolio/area pairs of the day computed on the
// schedule, in the quarters' order ("p1/TenneT, p2/Amprion").
func fahrplanScopes(qs []Quarter) string {
	out := ""
	var last Row
	for i := range qs {
		q := &qs[i]
		if q.Basis == BasisIst || (out != "" && q.Portfolio == last.Portfolio && q.ControlArea == last.ControlArea) {
			continue
		}
		if out != "" {
			out += ", "
		}
		out += q.Portfolio + "/" + string(q.ControlArea)
		last = q.Row
	}
	return out
}

func viertelstunden(n int) string {
	if n == 1 {
		return "1 Viertelstunde"
	}
	return fmt.Sprintf("%d Viertelstunden", n)
}

var pow10 = [...]float64{1, 10, 100, 1000, 10000}

// halfTolerance is how far below an exact half (in units of the last kept
// decimal) a scaled value may lie and still round up. A sum of float
// products that is exactly x.xx5 in decimal may arrive as x.xx4999999999...;
// comparing the float with the half would round it down. Decimal inputs (MW
// with up to 6 decimals, prices with 2) give quarter-hour money in steps of
// 1e-8 EUR, 1e-6 of a cent, so a true value other than the half is never
// that close to it; the float noise of a day's or a month's sums is orders
// of magnitude smaller. For sums beyond 1e7 EUR, where float64 itself
// resolves no finer than that, the tolerance grows to a few units in the
// last place of the scaled value.
const halfTolerance = 1e-7

// round rounds x to d decimals, half away from zero, taking values within
// the tolerance of a half as the half. The result is the float nearest to
// the decimal, so it prints as the decimal.
func round(x float64, d int) float64 {
	p := pow10[d]
	s := x * p
	r := math.Trunc(s)
	tol := max(halfTolerance, math.Abs(s)*1e-15)
	if math.Abs(s-r) >= 0.5-tol {
		r += math.Copysign(1, s)
	}
	if r == 0 {
		return 0 // no -0 in the JSON
	}
	return r / p
}
