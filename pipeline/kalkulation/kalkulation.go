// Package kalkulation computes what a period cost the balancing group: the
// submitted schedule (Fahrplan) bought and sold at the day-ahead spot price,
// the deviation of the customers' quantity from it (Ausgleichsenergie) at
// reBAP, and the surcharge per customer kWh that covers the imbalance cost
// beyond the spot value of the deviation. Every figure is computed per
// quarter-hour and then summed; the formulas and signs are in the README.
//
// The package does no I/O: the materialized quantities and the prices are
// handed in.
package kalkulation

import (
	"time"

	"github.com/schedbridge/schedbridge/pipeline"
)

// Basis says which quantity stands for the customers' consumption.
type Basis string

// Bases. A portfolio's day in a control area is Ist when metered data of
// every market location active there that day arrived, else Fahrplan (the
// submitted schedule stands in until the Ist arrives). A day over several
// portfolios or areas is Gemischt when both occur, and Keine when the
// kalkulation stage has not run for it.
const (
	BasisIst      Basis = "ist"
	BasisFahrplan Basis = "fahrplan"
	BasisGemischt Basis = "gemischt"
	BasisKeine    Basis = "keine"
)

// Row is one quarter-hour of a portfolio in a control area as the
// kalkulation stage materializes it: the submitted schedule and the
// customers' metered quantity.
type Row struct {
	Portfolio   string               `json:"portfolio"`
	ControlArea pipeline.ControlArea `json:"control_area"`
	Day         pipeline.Day         `json:"delivery_day"`
	QH          int                  `json:"qh_index"`
	TS          time.Time            `json:"ts_utc"` // UTC start of the quarter-hour
	// BoughtMW and SoldMW are the schedule's energy into and out of the
	// portfolio's balancing group (average MW), summed over its series.
	BoughtMW float64 `json:"bought_mw"`
	SoldMW   float64 `json:"sold_mw"`
	// IstMW is the metered consumption minus metered production (average
	// MW); meaningful only when Basis is BasisIst.
	IstMW float64 `json:"ist_mw"`
	Basis Basis   `json:"basis"`
}

// Prices are the quarter-hour prices (EUR/MWh) by the Unix second of the
// quarter-hour's UTC start. ReBAPLong is the price when the balancing group
// is long (reBAP ueberdeckt).
type Prices struct {
	Spot      map[int64]float64
	ReBAP     map[int64]float64
	ReBAPLong map[int64]float64
}

// Quarter is one computed quarter-hour, as written to the kalkulation
// Parquet dataset. Energy is in kWh, money in EUR (positive = we pay, except
// FahrplanVerkaufEUR, which is revenue). A money value is nil when a price
// it needs is missing.
type Quarter struct {
	Row
	SpotEURMWh  *float64 `json:"spot_eur_mwh"`
	ReBAPEURMWh *float64 `json:"rebap_eur_mwh"` // the reBAP that applies (short or long)

	FahrplanKaufKWh    float64 `json:"fahrplan_kauf_kwh"`
	FahrplanVerkaufKWh float64 `json:"fahrplan_verkauf_kwh"`
	KundenmengeKWh     float64 `json:"kundenmenge_kwh"`
	AusgleichKWh       float64 `json:"ausgleichsenergie_kwh"`

	FahrplanKaufEUR     *float64 `json:"fahrplan_kauf_eur"`
	FahrplanVerkaufEUR  *float64 `json:"fahrplan_verkauf_eur"`
	KundenmengeSpotEUR  *float64 `json:"kundenmenge_spotwert_eur"`
	AusgleichEUR        *float64 `json:"ausgleichsenergie_eur"`
	AusgleichSpotEUR    *float64 `json:"ausgleichsenergie_spotwert_eur"`
	AusgleichMehrkosten *float64 `json:"ausgleichsenergie_mehrkosten_eur"`
	GesamtkostenEUR     *float64 `json:"gesamtkosten_eur"`

	SpotFehlt  bool `json:"spot_fehlt"`  // a spot price was needed and is missing
	ReBAPFehlt bool `json:"rebap_fehlt"` // a reBAP was needed (deviation not zero) and is missing
}

// Figures are the sums of a day or of the period. Energy in kWh (3
// decimals), money in EUR rounded to the cent, the surcharge in ct/kWh (4
// decimals). A money figure is nil when a price it needs is missing in any
// of its quarter-hours; the counts say how many were missing.
type Figures struct {
	FahrplanKaufKWh    float64  `json:"fahrplan_kauf_kwh"`
	FahrplanVerkaufKWh float64  `json:"fahrplan_verkauf_kwh"`
	FahrplanSaldoKWh   float64  `json:"fahrplan_saldo_kwh"`
	FahrplanKaufEUR    *float64 `json:"fahrplan_kauf_eur"`
	FahrplanVerkaufEUR *float64 `json:"fahrplan_verkauf_eur"`
	FahrplanKostenEUR  *float64 `json:"fahrplan_kosten_eur"`

	KundenmengeKWh         float64  `json:"kundenmenge_kwh"`
	KundenmengeSpotwertEUR *float64 `json:"kundenmenge_spotwert_eur"`

	AusgleichsenergieKWh           float64  `json:"ausgleichsenergie_kwh"`
	AusgleichsenergieEUR           *float64 `json:"ausgleichsenergie_eur"`
	AusgleichsenergieSpotwertEUR   *float64 `json:"ausgleichsenergie_spotwert_eur"`
	AusgleichsenergieMehrkostenEUR *float64 `json:"ausgleichsenergie_mehrkosten_eur"`

	GesamtkostenEUR *float64 `json:"gesamtkosten_eur"`
	AufschlagCtKWh  *float64 `json:"aufschlag_ct_kwh"` // nil also when the customers' quantity is zero

	Mengenbasis        Basis `json:"mengenbasis"`
	Viertelstunden     int   `json:"viertelstunden"` // quarter-hours with rows (over portfolios and areas)
	FehlendeSpotpreise int   `json:"fehlende_spotpreise"`
	FehlendeReBAP      int   `json:"fehlende_rebap"`
}

// DayFigures are the figures of one delivery day.
type DayFigures struct {
	Tag pipeline.Day `json:"tag"`
	Figures
}

// Result is the calculation of a period.
type Result struct {
	Von   pipeline.Day `json:"von"`
	Bis   pipeline.Day `json:"bis"`
	Tage  []DayFigures `json:"tage"`
	Summe Figures      `json:"summe"`
	// Vollstaendig is true when every day was computed on the Ist with all
	// prices it needs; Hinweise say in words what is missing, at most one
	// line per day and kind.
	Vollstaendig bool     `json:"vollstaendig"`
	Hinweise     []string `json:"hinweise"`
}
