package chart

import (
	_ "embed"
	"fmt"
	"html"
	"html/template"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// CSS is a stylesheet for the chart's own classes (grid, axes, legend, hover
// targets). Pages serve it as part of their own stylesheet; the colours of the
// series classes are the page's choice.
//
//go:embed chart.css
var CSS string

// Series is one line (or, for the first series of a bar chart, the bars).
type Series struct {
	// Name is shown in the legend and the hover texts, e.g. "Prognose".
	Name string
	// Class is the CSS class that gives the series its colour, e.g. "s-forecast".
	Class string
	// Values holds one value per x position; math.NaN() marks a missing value,
	// where the line breaks.
	Values []float64
}

// Tick is a mark on the x axis at the left edge of the column Index, which is
// where a quarter-hour starts (Index may equal Chart.Points, the right edge of
// the plot), or in its middle when Chart.CenterTicks is set. A tick with an
// empty Label is a minor, unlabelled tick.
type Tick struct {
	Index int
	Label string
}

// WholeNumbers as Chart.Decimals shows the hover values without decimals.
const WholeNumbers = -1

// Chart describes one chart; SVG draws it.
type Chart struct {
	// ID prefixes the ids of the <title> and <desc> elements; it must be
	// unique on the page, e.g. "lage-tennet". Letters, digits, - and _.
	ID string
	// Title is the accessible name (<title>), in German. Required.
	Title string
	// Desc is the longer description (<desc>): what is shown and the unit.
	Desc string
	// Unit is the unit of the y axis, e.g. "MW" or "€".
	Unit string
	// Points is the number of x positions; every series has this many values.
	Points int
	// XLabels holds one label per point for the hover texts, e.g. "02:15".
	// It may be empty; the hover texts then number the points from 1.
	XLabels []string
	// Ticks are the marks on the x axis.
	Ticks []Tick
	// Series are drawn in order, the later ones on top.
	Series []Series
	// Bars draws the first series as bars from the zero line (the per-day
	// Kalkulation chart); the others stay lines. A missing value gets the
	// word "fehlt" in its column instead of a bar, so that a day without
	// prices does not pass for a day without cost.
	Bars bool
	// CenterTicks puts the ticks in the middle of their column, for axes of
	// categories such as days, rather than at its left edge.
	CenterTicks bool
	// Decimals is the number of digits after the decimal comma in the hover
	// texts, at most 6; the zero value shows 3 (kWh precision for MW), and
	// WholeNumbers shows none.
	Decimals int
	// HideLegend leaves the legend out, for pages that show it in HTML.
	HideLegend bool
}

// The geometry, in user units of the viewBox.
const (
	width     = 600.0
	height    = 300.0
	fontSize  = 18.0
	charWidth = 0.6 * fontSize // a generous estimate of one character's advance
	rowHeight = fontSize + 4
	padRight  = 14.0 // room for the last tick label, half of which may stick out
	padTop    = 8.0
	tickLen   = 6.0
	minorLen  = 3.0
	swatchLen = 24.0
	maxPoints = 10000
	maxValue  = 1e15
	yTarget   = 5 // about this many intervals on the y axis
)

var idPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// validate reports the first inconsistency of c.
func (c Chart) validate() error {
	switch {
	case !idPattern.MatchString(c.ID):
		return fmt.Errorf("chart: ID %q must start with a letter and hold only letters, digits, - and _; it prefixes element ids that must be unique on the page", c.ID)
	case strings.TrimSpace(c.Title) == "":
		return fmt.Errorf("chart %s: Title is empty; it is the chart's accessible name", c.ID)
	case c.Points < 1:
		return fmt.Errorf("chart %s: Points is %d, want at least 1", c.ID, c.Points)
	case c.Points > maxPoints:
		return fmt.Errorf("chart %s: Points is %d, want at most %d", c.ID, c.Points, maxPoints)
	case len(c.XLabels) != 0 && len(c.XLabels) != c.Points:
		return fmt.Errorf("chart %s: %d XLabels for %d points; give one per point or none", c.ID, len(c.XLabels), c.Points)
	case len(c.Series) == 0:
		return fmt.Errorf("chart %s: no series", c.ID)
	case c.Decimals < WholeNumbers || c.Decimals > 6:
		return fmt.Errorf("chart %s: Decimals is %d, want 1 to 6, 0 for the default 3 or WholeNumbers", c.ID, c.Decimals)
	}
	for i, s := range c.Series {
		if len(s.Values) != c.Points {
			return fmt.Errorf("chart %s: series %d (%q) has %d values for %d points", c.ID, i, s.Name, len(s.Values), c.Points)
		}
		if strings.TrimSpace(s.Name) == "" {
			return fmt.Errorf("chart %s: series %d has no name", c.ID, i)
		}
		for j, v := range s.Values {
			if math.IsInf(v, 0) {
				return fmt.Errorf("chart %s: series %q value %d is infinite; use NaN for a missing value", c.ID, s.Name, j)
			}
			// Far beyond any MW or euro figure; it keeps the axis arithmetic finite.
			if math.Abs(v) > maxValue {
				return fmt.Errorf("chart %s: series %q value %d is %g, outside ±%g", c.ID, s.Name, j, v, maxValue)
			}
		}
	}
	last := c.Points
	if c.CenterTicks {
		last = c.Points - 1
	}
	for _, t := range c.Ticks {
		if t.Index < 0 || t.Index > last {
			return fmt.Errorf("chart %s: tick %q at index %d is outside 0..%d", c.ID, t.Label, t.Index, last)
		}
	}
	return nil
}

// layout holds the computed geometry of one chart.
type layout struct {
	left, top, right, bottom float64 // the plot area
	col                      float64 // width of one column
	lo, hi, step             float64 // the y range and its tick step
	yDecimals                int
	yTicks                   []float64
	legendRows               [][]legendItem
	xLabels                  []placedLabel
}

type legendItem struct {
	x      float64
	series int
}

type placedLabel struct {
	x   float64
	row int
	tk  Tick
}

// x is the middle of column i.
func (l *layout) x(i int) float64 { return l.left + (float64(i)+0.5)*l.col }

// tickX is where a tick at index i sits.
func (c Chart) tickX(l *layout, i int) float64 {
	if c.CenterTicks {
		return l.x(i)
	}
	return l.left + float64(i)*l.col
}

func (l *layout) y(v float64) float64 {
	return l.top + (l.hi-v)/(l.hi-l.lo)*(l.bottom-l.top)
}

// SVG renders the chart as an <svg> element to embed in HTML. It fails on
// inconsistent input (series of the wrong length, no points, ticks outside the
// plot, a missing ID or title) and then renders nothing.
func (c Chart) SVG() (template.HTML, error) {
	if err := c.validate(); err != nil {
		return "", err
	}
	l := c.layout()
	var b strings.Builder
	b.Grow(4096 + c.Points*(60+40*len(c.Series)))
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	id := c.ID

	w(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 %s %s" preserveAspectRatio="xMidYMid meet" role="img" aria-labelledby="%s-title"`, num(width), num(height), id)
	if c.Desc != "" {
		w(` aria-describedby="%s-desc"`, id)
	}
	w(` font-family="sans-serif" font-size="%s">`, num(fontSize))
	w(`<title id="%s-title">%s</title>`, id, esc(c.Title))
	if c.Desc != "" {
		w(`<desc id="%s-desc">%s</desc>`, id, esc(c.Desc))
	}

	// Grid and y axis labels.
	w(`<g class="grid" stroke="#d0d0d0" stroke-width="1">`)
	for _, v := range l.yTicks {
		if v != 0 {
			w(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(l.left), num(l.y(v)), num(l.right), num(l.y(v)))
		}
	}
	w(`</g>`)
	w(`<g class="axis y" text-anchor="end" fill="currentColor">`)
	for _, v := range l.yTicks {
		w(`<text x="%s" y="%s" dy="0.35em">%s</text>`, num(l.left-6), num(l.y(v)), esc(FormatDecimal(v, l.yDecimals)))
	}
	w(`</g>`)
	if c.Unit != "" {
		w(`<text class="unit" x="%s" y="%s" text-anchor="end" fill="currentColor">%s</text>`, num(l.left-6), num(l.top-10), esc(c.Unit))
	}

	// Bars under the lines, so that a line over a bar stays visible.
	first := 0
	if c.Bars {
		first = 1
		s := c.Series[0]
		w(`<g class="%s" fill="currentColor" fill-opacity="0.8">`, classes("bar", s.Class))
		bw := l.col * 0.7
		var missing []int
		for i, v := range s.Values {
			if math.IsNaN(v) {
				missing = append(missing, i)
				continue
			}
			y0, y1 := l.y(0), l.y(v)
			top, h := math.Min(y0, y1), math.Abs(y1-y0)
			w(`<rect x="%s" y="%s" width="%s" height="%s"/>`, num(l.x(i)-bw/2), num(top), num(bw), num(h))
		}
		w(`</g>`)
		if len(missing) > 0 {
			// Upright text would not fit a narrow column; turned, it does.
			w(`<g class="missing" font-size="16" fill="currentColor">`)
			// The word runs up from the zero line, or down from it when the
			// line is in the upper half of the plot (mostly negative values).
			y, anchor := l.y(0)-6, "start"
			if l.y(0) < (l.top+l.bottom)/2 {
				y, anchor = l.y(0)+6, "end"
			}
			for _, i := range missing {
				x := num(l.x(i))
				w(`<text x="%s" y="%s" dy="0.35em" text-anchor="%s" transform="rotate(-90 %s %s)">fehlt</text>`, x, num(y), anchor, x, num(y))
			}
			w(`</g>`)
		}
	}

	// The zero line above the bars; a value below it is negative.
	w(`<line class="zero" x1="%s" y1="%s" x2="%s" y2="%s" stroke="currentColor" stroke-width="1.5"/>`, num(l.left), num(l.y(0)), num(l.right), num(l.y(0)))

	// The x axis with its ticks and labels.
	w(`<g class="axis x" stroke="currentColor">`)
	w(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(l.left), num(l.bottom), num(l.right), num(l.bottom))
	for _, t := range c.Ticks {
		x := c.tickX(&l, t.Index)
		n, class := tickLen, "tick"
		if t.Label == "" {
			n, class = minorLen, "tick minor"
		}
		w(`<line class="%s" x1="%s" y1="%s" x2="%s" y2="%s"/>`, class, num(x), num(l.bottom), num(x), num(l.bottom+n))
	}
	w(`</g>`)
	w(`<g class="axis x" text-anchor="middle" fill="currentColor">`)
	for _, p := range l.xLabels {
		y := l.bottom + tickLen + float64(p.row+1)*rowHeight - 4
		w(`<text x="%s" y="%s">%s</text>`, num(p.x), num(y), esc(p.tk.Label))
	}
	w(`</g>`)

	for _, s := range c.Series[first:] {
		w(`<path class="%s" fill="none" stroke="currentColor" stroke-width="2.5" stroke-linejoin="round" stroke-linecap="round" d="%s"/>`, classes("line", s.Class), l.path(s.Values))
	}

	if !c.HideLegend {
		c.legend(&b, &l)
	}

	// One transparent target per column, last so that it is on top.
	w(`<g class="hover" fill="#000" fill-opacity="0">`)
	for i := range c.Points {
		w(`<rect x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`,
			num(l.left+float64(i)*l.col), num(l.top), num(l.col), num(l.bottom-l.top), esc(c.hoverText(i)))
	}
	w(`</g></svg>`)
	// Every text and attribute value above went through esc or num.
	return template.HTML(b.String()), nil
}

// path returns the d attribute of a line: one subpath per run of finite
// values, so that a NaN breaks the line. A lone value becomes a zero-length
// subpath, which the round line cap draws as a dot.
func (l *layout) path(values []float64) string {
	var b strings.Builder
	run := 0
	for i, v := range values {
		if math.IsNaN(v) {
			if run == 1 {
				b.WriteString("h0")
			}
			run = 0
			continue
		}
		switch run {
		case 0:
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString("M")
		case 1:
			b.WriteString("L")
		default:
			b.WriteByte(' ')
		}
		b.WriteString(num(l.x(i)))
		b.WriteByte(',')
		b.WriteString(num(l.y(v)))
		run++
	}
	if run == 1 {
		b.WriteString("h0")
	}
	return b.String()
}

func (c Chart) legend(b *strings.Builder, l *layout) {
	fmt.Fprintf(b, `<g class="legend" fill="currentColor">`)
	for r, row := range l.legendRows {
		y := padTop + float64(r)*rowHeight + rowHeight/2
		for _, it := range row {
			s := c.Series[it.series]
			if c.Bars && it.series == 0 {
				fmt.Fprintf(b, `<rect class="%s" x="%s" y="%s" width="%s" height="%s" fill-opacity="0.8"/>`,
					classes("swatch bar", s.Class), num(it.x), num(y-6), num(swatchLen), num(12.0))
			} else {
				fmt.Fprintf(b, `<line class="%s" x1="%s" y1="%s" x2="%s" y2="%s" stroke="currentColor" stroke-width="4"/>`,
					classes("swatch line", s.Class), num(it.x), num(y), num(it.x+swatchLen), num(y))
			}
			fmt.Fprintf(b, `<text x="%s" y="%s" dy="0.35em">%s</text>`, num(it.x+swatchLen+6), num(y), esc(s.Name))
		}
	}
	b.WriteString(`</g>`)
}

// hoverText is the <title> of column i: its label and every series' value.
func (c Chart) hoverText(i int) string {
	label := strconv.Itoa(i + 1)
	if len(c.XLabels) > 0 {
		label = c.XLabels[i]
	}
	dec := c.Decimals
	switch dec {
	case 0:
		dec = 3
	case WholeNumbers:
		dec = 0
	}
	var b strings.Builder
	b.WriteString(label)
	b.WriteString(" – ")
	for k, s := range c.Series {
		if k > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s.Name)
		b.WriteString(": ")
		v := s.Values[i]
		if math.IsNaN(v) {
			b.WriteString("fehlt")
			continue
		}
		b.WriteString(FormatDecimal(v, dec))
		if c.Unit != "" {
			b.WriteString(" ")
			b.WriteString(c.Unit)
		}
	}
	return b.String()
}

// layout works out the geometry. The order matters: the y labels decide the
// left margin, the left margin the plot width, the plot width how many rows
// the x labels need, and those the plot height.
func (c Chart) layout() layout {
	var l layout
	l.lo, l.hi, l.step = yRange(c.Series)
	l.yDecimals = decimalsFor(l.step)
	n := int(math.Round((l.hi - l.lo) / l.step))
	widest := len([]rune(c.Unit))
	for k := 0; k <= n; k++ {
		// Multiples of the step, so that 0.1+0.2 noise never reaches a label.
		v := l.lo + float64(k)*l.step
		if math.Abs(v) < l.step/2 {
			v = 0
		}
		l.yTicks = append(l.yTicks, v)
		widest = max(widest, len([]rune(FormatDecimal(v, l.yDecimals))))
	}
	l.left = math.Ceil(float64(widest)*charWidth + 14)
	l.right = width - padRight
	l.col = (l.right - l.left) / float64(c.Points)

	// The legend, in as many rows as it needs, starting a little right of the
	// unit.
	legendRows := 0
	if !c.HideLegend {
		x := l.left + 10
		var row []legendItem
		for i, s := range c.Series {
			wd := swatchLen + 6 + float64(len([]rune(s.Name)))*charWidth
			if len(row) > 0 && x+wd > width-padRight {
				l.legendRows = append(l.legendRows, row)
				row, x = nil, l.left+10
			}
			row = append(row, legendItem{x: x, series: i})
			x += wd + 12
		}
		l.legendRows = append(l.legendRows, row)
		legendRows = len(l.legendRows)
	}
	// The unit sits above the y labels, level with the first legend row.
	l.top = padTop + float64(max(legendRows, 1))*rowHeight + 10

	// x labels go to the first of two rows where they do not overlap the
	// previous label; a label that fits in neither is left out, its tick stays.
	ticks := slices.Clone(c.Ticks)
	slices.SortStableFunc(ticks, func(a, b Tick) int { return a.Index - b.Index })
	rightEdge := [2]float64{math.Inf(-1), math.Inf(-1)}
	rows := 1
	for _, t := range ticks {
		if t.Label == "" {
			continue
		}
		x := c.tickX(&l, t.Index)
		half := float64(len([]rune(t.Label))) * charWidth / 2
		for r := range rightEdge {
			if x-half >= rightEdge[r]+4 {
				rightEdge[r] = x + half
				l.xLabels = append(l.xLabels, placedLabel{x: x, row: r, tk: t})
				rows = max(rows, r+1)
				break
			}
		}
	}
	l.bottom = height - tickLen - float64(rows)*rowHeight - 2
	return l
}

// yRange returns the y axis range, which covers every finite value and 0, and
// its "nice" tick step of 1, 2 or 5 times a power of ten.
func yRange(series []Series) (lo, hi, step float64) {
	for _, s := range series {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if lo == hi { // all zero or all missing
		hi = 1
	}
	step = niceStep((hi - lo) / yTarget)
	return math.Floor(lo/step) * step, math.Ceil(hi/step) * step, step
}

// niceStep rounds a raw step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// decimalsFor is how many decimals the labels of a step need: none for a step
// of 1 or more, one for 0.5 or 0.2, and so on.
func decimalsFor(step float64) int {
	if step >= 1 {
		return 0
	}
	return int(math.Ceil(-math.Log10(step) - 1e-9))
}

// FormatDecimal formats v the German way with the given number of decimals: a
// decimal comma and a dot between thousands, e.g. -1.234,5. A value that
// rounds to zero has no minus sign. decimals below 0 count as 0; v must be
// finite.
func FormatDecimal(v float64, decimals int) string {
	decimals = max(decimals, 0)
	s := strconv.FormatFloat(math.Abs(v), 'f', decimals, 64)
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if v < 0 && strings.Trim(s, "0.") != "" {
		b.WriteByte('-')
	}
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte('.')
		}
		b.WriteRune(d)
	}
	if frac != "" {
		b.WriteByte(',')
		b.WriteString(frac)
	}
	return b.String()
}

// num formats a coordinate with at most one decimal, which is finer than a
// pixel at any size the chart is shown at and keeps the markup short.
func num(v float64) string {
	s := strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	if s == "-0" {
		return "0"
	}
	return s
}

func esc(s string) string { return html.EscapeString(s) }

// classes is the escaped class attribute of the chart's own classes and a
// series class, which may be empty.
func classes(own, series string) string {
	if strings.TrimSpace(series) == "" {
		return own
	}
	return own + " " + esc(strings.TrimSpace(series))
}
