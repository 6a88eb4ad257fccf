package pipeline

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// The Arrow schemas of the stages' records. They are also the schemas of the
// Parquet datasets in the lake, so analysts see the same columns that the
// stages compute with. Times are quarter-hour starts in UTC; qh_index is the
// quarter-hour's position in the local delivery day (0..91, 0..95 or 0..99),
// which is what people in the market count in. Units are in column names.
//
// String columns that repeat a few values many times (portfolio, control area,
// kind, source, metering type, even the market location within a batch) are
// dictionary-encoded, so that building a batch appends small integers and the
// Parquet writer can take the dictionary as it is.

// Dictionary type of the repeated string columns.
var dictString = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// TimestampUTC is the type of ts_utc columns: microseconds, adjusted to UTC.
// The lake's files are registered in Apache Iceberg tables as they are
// written, and the Iceberg spec maps its timestamptz type to Parquet INT64
// TIMESTAMP(MICROS, isAdjustedToUTC=true). iceberg-go v0.7.0's AddFiles takes
// a file's footer statistics as they are, so a millisecond column would get
// lower and upper bounds that Iceberg engines read as microseconds (1000
// times too small, in January 1970), and they would prune files wrongly.
// pqarrow writes this Arrow type as exactly that Parquet type (the zone "UTC"
// sets isAdjustedToUTC).
var TimestampUTC = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// Dataset names in the lake (lake/<dataset>/delivery_day=.../run=.../).
const (
	DatasetForecastMalo        = "forecast_malo"
	DatasetPositionControlArea = "position_control_area"
	DatasetOpenPosition        = "open_position"
	DatasetSchedule            = "schedule"
	DatasetKalkulation         = "kalkulation"
)

// StageOfDataset is the stage that publishes a lake dataset, or "" for a
// name that is not one of the datasets above.
func StageOfDataset(dataset string) Stage {
	switch dataset {
	case DatasetForecastMalo:
		return StageForecast
	case DatasetPositionControlArea:
		return StageAggregate
	case DatasetOpenPosition:
		return StageOpenPosition
	case DatasetSchedule:
		return StageSchedules
	case DatasetKalkulation:
		return StageKalkulation
	}
	return ""
}

// Forecast sources: where the series of a market location came from.
const (
	SourceDSOProfile  = "dso_profile"  // the DSO's rolled-out profile (POST /v1/profiles)
	SourceBDEWProfile = "bdew_profile" // computed from the embedded BDEW standard profiles
	SourceHistory     = "history"      // similar days of the location's metered history
	SourceSubmitted   = "submitted"    // a supplier's forecast from POST /v1/forecasts
)

// ForecastMaloSchema: one row per market location and quarter-hour.
var ForecastMaloSchema = arrow.NewSchema([]arrow.Field{
	{Name: "portfolio", Type: dictString},
	{Name: "delivery_day", Type: arrow.FixedWidthTypes.Date32},
	{Name: "malo", Type: dictString},
	{Name: "control_area", Type: dictString},
	{Name: "kind", Type: dictString},          // consumption | production
	{Name: "metering_type", Type: dictString}, // slp | tlp | rlm | imsys ("" for submitted)
	{Name: "source", Type: dictString},        // Source* above
	{Name: "qh_index", Type: arrow.PrimitiveTypes.Int16},
	{Name: "ts_utc", Type: TimestampUTC},
	{Name: "power_mw", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// Column positions of ForecastMaloSchema, for loops over a record's columns.
const (
	FMPortfolio = iota
	FMDay
	FMMalo
	FMControlArea
	FMKind
	FMMeteringType
	FMSource
	FMQH
	FMTS
	FMPowerMW
)

// PositionSchema: one row per portfolio, control area and quarter-hour.
// source is "submitted" when a supplier's forecast covered the area and
// "generated" when the generated forecasts were summed.
var PositionSchema = arrow.NewSchema([]arrow.Field{
	{Name: "portfolio", Type: dictString},
	{Name: "delivery_day", Type: arrow.FixedWidthTypes.Date32},
	{Name: "control_area", Type: dictString},
	{Name: "qh_index", Type: arrow.PrimitiveTypes.Int16},
	{Name: "ts_utc", Type: TimestampUTC},
	{Name: "consumption_mw", Type: arrow.PrimitiveTypes.Float64},
	{Name: "production_mw", Type: arrow.PrimitiveTypes.Float64},
	{Name: "net_mw", Type: arrow.PrimitiveTypes.Float64}, // consumption - production
	{Name: "source", Type: dictString},
}, nil)

// OpenPositionSchema: the net forecast minus what is procured, per portfolio,
// control area and quarter-hour. open_mw > 0 is still to buy, < 0 to sell.
var OpenPositionSchema = arrow.NewSchema([]arrow.Field{
	{Name: "portfolio", Type: dictString},
	{Name: "delivery_day", Type: arrow.FixedWidthTypes.Date32},
	{Name: "control_area", Type: dictString},
	{Name: "qh_index", Type: arrow.PrimitiveTypes.Int16},
	{Name: "ts_utc", Type: TimestampUTC},
	{Name: "net_mw", Type: arrow.PrimitiveTypes.Float64},
	{Name: "bought_mw", Type: arrow.PrimitiveTypes.Float64},
	{Name: "sold_mw", Type: arrow.PrimitiveTypes.Float64},
	{Name: "open_mw", Type: arrow.PrimitiveTypes.Float64}, // net - bought + sold
}, nil)

// ScheduleSchema: the time series of the submitted schedule messages, one row
// per series and quarter-hour.
var ScheduleSchema = arrow.NewSchema([]arrow.Field{
	{Name: "portfolio", Type: dictString},
	{Name: "delivery_day", Type: arrow.FixedWidthTypes.Date32},
	{Name: "control_area", Type: dictString},
	{Name: "file_name", Type: dictString},
	{Name: "message_version", Type: arrow.PrimitiveTypes.Int32},
	{Name: "series_id", Type: dictString},
	{Name: "business_type", Type: dictString},
	{Name: "in_party", Type: dictString},
	{Name: "out_party", Type: dictString},
	{Name: "qh_index", Type: arrow.PrimitiveTypes.Int16},
	{Name: "ts_utc", Type: TimestampUTC},
	{Name: "quantity_mw", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// KalkulationSchema: the period calculation per portfolio, control area and
// quarter-hour (pipeline/kalkulation). Energy in kWh, prices in EUR/MWh,
// money in EUR; a price or money column is null where a price it needs is
// missing, and ist_mw is null where the day's quantity basis is the
// schedule.
var KalkulationSchema = arrow.NewSchema([]arrow.Field{
	{Name: "portfolio", Type: dictString},
	{Name: "delivery_day", Type: arrow.FixedWidthTypes.Date32},
	{Name: "control_area", Type: dictString},
	{Name: "qh_index", Type: arrow.PrimitiveTypes.Int16},
	{Name: "ts_utc", Type: TimestampUTC},
	{Name: "basis", Type: dictString}, // ist | fahrplan
	{Name: "bought_mw", Type: arrow.PrimitiveTypes.Float64},
	{Name: "sold_mw", Type: arrow.PrimitiveTypes.Float64},
	{Name: "ist_mw", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "fahrplan_kauf_kwh", Type: arrow.PrimitiveTypes.Float64},
	{Name: "fahrplan_verkauf_kwh", Type: arrow.PrimitiveTypes.Float64},
	{Name: "kundenmenge_kwh", Type: arrow.PrimitiveTypes.Float64},
	{Name: "ausgleichsenergie_kwh", Type: arrow.PrimitiveTypes.Float64},
	{Name: "spot_eur_mwh", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "rebap_eur_mwh", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "fahrplan_kauf_eur", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "fahrplan_verkauf_eur", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "kundenmenge_spotwert_eur", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ausgleichsenergie_eur", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ausgleichsenergie_spotwert_eur", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ausgleichsenergie_mehrkosten_eur", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "gesamtkosten_eur", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "spot_fehlt", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "rebap_fehlt", Type: arrow.FixedWidthTypes.Boolean},
}, nil)

// Date32 is the Arrow date32 value of the day (days since 1970-01-01).
func (d Day) Date32() arrow.Date32 {
	return arrow.Date32(time.Date(d.Year, d.Month, d.Dom, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// QuarterStartsMicros returns the start of every quarter-hour of the day, in
// order, as microseconds since the Unix epoch (the unit of TimestampUTC, so
// the values go into ts_utc columns as they are); its length is Intervals().
func (d Day) QuarterStartsMicros() []int64 {
	n := d.Intervals()
	out := make([]int64, n)
	start := d.Start().UnixMicro()
	step := (15 * time.Minute).Microseconds()
	for i := range out {
		out[i] = start + int64(i)*step
	}
	return out
}
