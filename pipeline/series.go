package pipeline

// Unit is the unit of the values of a series.
type Unit string

// Units. MW is the average power of a quarter-hour; MWH and KWH are the energy
// delivered in it, so 1 MWH per quarter-hour is 4 MW.
const (
	MW  Unit = "MW"
	MWH Unit = "MWH"
	KWH Unit = "KWH"
)

// ToMW converts a quarter-hour value in unit u to average MW.
func (u Unit) ToMW(v float64) float64 {
	switch u {
	case MWH:
		return v * 4
	case KWH:
		return v * 4 / 1000
	default:
		return v
	}
}

// Kind tells whether a series consumes or produces. Both are sent as positive
// numbers; the pipeline nets them.
type Kind string

// Kinds of series.
const (
	Consumption Kind = "consumption"
	Production  Kind = "production"
)

// MeteringType is how a market location is metered, which decides how its
// forecast is built: SLP/TLP from load profiles, RLM/iMSys from metered history.
type MeteringType string

// Metering types.
const (
	SLP   MeteringType = "slp"
	TLP   MeteringType = "tlp"
	RLM   MeteringType = "rlm"
	IMSys MeteringType = "imsys"
)

// Series is one quarter-hour series of a forecast, tagged either with a control
// area or with a market location that malo_mapping places in a control area.
type Series struct {
	ControlArea ControlArea `json:"control_area,omitempty"`
	Malo        string      `json:"malo,omitempty"`
	Kind        Kind        `json:"kind"`
	Unit        Unit        `json:"unit"`
	Values      []float64   `json:"values"`
}

// Forecast is a portfolio forecast for one delivery day. Its field order is
// alphabetical so that its JSON encoding is canonical (see ingest).
type Forecast struct {
	DeliveryDay Day                    `json:"delivery_day"`
	MaloMapping map[string]ControlArea `json:"malo_mapping"`
	Series      []Series               `json:"series"`
}

// Slice is one window of a market location's master data. ValidTo is
// exclusive; nil means open-ended (only on the last slice).
type Slice struct {
	Active               bool         `json:"active"`
	AnnualConsumptionKWh *float64     `json:"annual_consumption_kwh,omitempty"`
	ControlArea          ControlArea  `json:"control_area,omitempty"`
	DSOMPID              string       `json:"dso_mp_id,omitempty"`
	Kind                 Kind         `json:"kind"`
	MeteringType         MeteringType `json:"metering_type,omitempty"`
	MGA                  string       `json:"mga,omitempty"`
	Profile              string       `json:"profile,omitempty"`
	ValidFrom            Day          `json:"valid_from"`
	ValidTo              *Day         `json:"valid_to,omitempty"`
}

// Location is a market location (MaLo) with its whole master-data history.
type Location struct {
	Malo   string  `json:"malo"`
	Slices []Slice `json:"slices"`
}

// MeteredEntry is a day of quarter-hour metered values of one market location.
type MeteredEntry struct {
	Day    Day       `json:"day"`
	Malo   string    `json:"malo"`
	Unit   Unit      `json:"unit"`
	Values []float64 `json:"values"`
}

// ProfileEntry is a DSO's rolled-out load profile for one MGA, profile and day,
// in kWh per quarter-hour.
type ProfileEntry struct {
	Day       Day       `json:"day"`
	MGA       string    `json:"mga"`
	Profile   string    `json:"profile"`
	ValuesKWh []float64 `json:"values_kwh"`
}
