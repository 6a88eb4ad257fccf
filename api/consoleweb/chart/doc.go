// Package chart draws the line and bar charts of the operator console as SVG
// on the server, with nothing but the standard library.
//
// Why SVG from Go rather than a JavaScript charting library: the console has
// no build step and must work offline, so there is no CDN and no bundle to pin
// and update; the pages run under a strict Content-Security-Policy
// (default-src 'self'; style-src 'self'), which an SVG without inline styles
// or scripts satisfies as it is; a chart that is part of the server-rendered
// HTML shows at once, also without JavaScript, and prints; and an SVG carries
// its accessible name and description (role="img", <title>, <desc>) while
// the page adds a table alternative next to it. A live update can swap the
// whole fragment: a chart of three series with 100 points is about 22 KB
// (4.5 KB compressed) and takes about a quarter of a millisecond to draw
// (BenchmarkSVG).
//
// # Markup
//
// [Chart.SVG] returns one <svg> element that scales to its container through
// its viewBox (600 x 300 user units, preserveAspectRatio xMidYMid meet). Text
// is 18 user units high, so that it stays about 10 px high when the chart is
// shrunk to a 360 px phone screen; pages should therefore cap the chart's width
// on large screens (the shipped [CSS] caps it at 60rem). There is no style
// attribute and no <style> element: everything has a class, and presentation
// attributes give a usable black-and-white default that the page's stylesheet
// overrides. Each series is drawn with the classes "line" (or "bar") and its
// own [Series.Class]. Lines, bars and legend swatches are painted in
// currentColor, so the page's stylesheet gives a series its colour with the
// color property alone (.s-forecast { color: #1f6fb2; }), and the swatch,
// which carries the same classes, matches.
//
// Classes used (all under the root class "chart"): grid (horizontal grid
// lines), zero (the zero line), axis, x, y, tick, minor, unit, legend, swatch,
// line, bar, missing (the "fehlt" marks of missing bars), hover (the
// transparent per-column hover targets) and the series classes. [CSS] holds a stylesheet for all but the series classes.
//
// Every x position (column) has a transparent rectangle with a <title>, so
// that pointing at a column shows all values of that quarter-hour, for example
// "02:15 – Prognose: 123,456 MW; Position: 100,000 MW". Because the root has
// role="img", screen readers announce the chart by its title and description
// only; the page's table alternative carries the numbers.
//
// Numbers are formatted the German way, with a decimal comma and a dot for
// thousands ([FormatDecimal]). Missing values are math.NaN(): a line breaks
// there and the hover text says "fehlt".
//
// # Time axis
//
// [QuarterHourAxis] turns the UTC starts of a delivery day's quarter-hours into
// labels and ticks in local time. On the spring-forward day the axis goes from
// 01:45 straight to 03:00. On the fall-back day the repeated hour 02:00-02:45
// appears twice: the per-point labels carry the zone ("02:00 MESZ", then
// "02:00 MEZ") and the hour ticks read "02A" and "02B", after the German
// market's convention of calling the doubled hour A and B (A is the first,
// still in summer time). Ticks are labelled every three hours (00, 03, ...,
// 24) plus the doubled hour; the other full hours get unlabelled minor ticks.
// Labels that would overlap their neighbour move to a second row.
package chart
