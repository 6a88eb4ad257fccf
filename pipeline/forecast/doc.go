// Package forecast is the first step of the day-ahead chain: it generates a
// quarter-hour forecast for every market location (MaLo) of a portfolio that
// is active on the delivery day, as ForecastMaloSchema record batches.
//
// # Methods
//
// Standard and temperature-dependent load profiles (metering types slp and
// tlp). The forecast is the location's profile for the day scaled to its
// annual consumption. When the location's DSO rolled out a profile of that
// name for the location's MGA and day (POST /v1/profiles), that profile is
// used (source "dso_profile"); its values are kWh per quarter-hour for an
// annual consumption of 1,000,000 kWh, so
//
//	power_mw = values_kwh[q] x annual_consumption_kwh / 1e6 x 4 / 1000
//
// Otherwise the BDEW standard profile of that name is computed from the
// embedded tables (package slp) for the SLP day type of the day in the state
// whose holidays the DSO applies (Config.StateOf), with the same formula
// (source "bdew_profile"). A location without annual consumption, or whose
// profile neither the DSO sent nor BDEW defines (a temperature-dependent
// profile without a DSO profile, for instance), is skipped and counted in
// Stats; it is never taken as zero, because a silent zero would understate
// the position.
//
// Interval-metered locations (rlm and imsys) are forecast from similar days
// of their metered history. The similar days of a delivery day are the days
// of the same day class within the HistoryWeeks weeks before it (see
// SimilarDays): Monday to Friday each form their own class, Saturday one,
// and Sunday together with public holidays one. Holidays are those of the
// DSO's state and count as Sundays; 24 and 31 December count as Saturdays
// unless they fall on a Sunday, as in the SLP rules. Each usable history day
// is converted to MW and laid out by local clock time (00:00 .. 23:45, 96
// slots), and the forecast of a slot is the trimmed mean of the history
// days: with five or more days the highest and the lowest value of the slot
// are left out, with fewer it is the plain mean. The trimmed mean is used
// because a single untypical day in the window (an outage with zeros, a
// bridge day, a meter fault) moves the plain mean by 1/k of its deviation,
// but moves the trimmed mean hardly at all, while on ordinary days the two
// differ little (the backtest reports both).
//
// Days of another length are aligned by local clock time, not by position:
// on a 92-quarter-hour day (spring forward) the missing hour 02:00-03:00 is
// filled with the mean of the same quarter-hour in the hour before and the
// hour after; on a 100-quarter-hour day (fall back) the two occurrences of
// 02:00-03:00 are averaged. When the delivery day itself is a DST day, its
// 92 values skip the 02:00 hour and its 100 values carry the 02:00 hour
// twice. A history day is usable when it is one of the similar days, has as
// many values as quarter-hours, a known unit and only finite values. With
// fewer than MinHistoryDays usable days the location falls back to its
// profile as above (its own profile name, else FallbackProfile, DSO before
// BDEW) scaled to its annual consumption, with that profile's source, and
// is counted in Stats.Fallbacks; if that is impossible too, it is skipped
// and counted. Rows of the history method have source "history".
//
// Series of a supplier's submitted forecast that are tagged with a market
// location are written too, with source "submitted" and an empty metering
// type, so that the lake shows them per location; the aggregate stage takes
// submitted series from the forecast itself and not from these rows.
//
// # Records
//
// Every row carries portfolio, delivery_day, malo, control_area, kind,
// metering_type, source, qh_index, ts_utc (the quarter-hour's UTC start) and
// power_mw. A batch holds the rows of up to Config.BatchLocations locations.
// The string columns are dictionary arrays built directly from index
// buffers: control area, kind, metering type and source use fixed
// dictionaries shared by all batches, malo a dictionary of the batch's
// locations, so that a row costs a few integer stores and one multiply.
// The columns that are the same in every batch (portfolio, delivery_day,
// qh_index, ts_utc) are read-only slices of buffers filled once per
// Generator, and the per-location buffers of a record are reused for a later
// batch once the consumer has released the record (nothing is written into
// a record that is still held). An emit function may therefore keep a
// record, retained, for as long as it needs; the Generator's memory is
// about one batch plus the records its consumer holds.
package forecast
