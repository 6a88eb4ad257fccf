package chart_test

import (
	"bytes"
	"encoding/xml"
	"flag"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedbridge/schedbridge/api/consoleweb/chart"
	"github.com/schedbridge/schedbridge/pipeline"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// starts returns the UTC start of every quarter-hour of the delivery day.
func starts(d pipeline.Day) []time.Time {
	out := make([]time.Time, d.Intervals())
	for i := range out {
		out[i] = d.Start().UTC().Add(time.Duration(i) * 15 * time.Minute)
	}
	return out
}

var (
	springForward = pipeline.NewDay(2027, time.March, 28)
	normalDay     = pipeline.NewDay(2027, time.June, 15)
	fallBack      = pipeline.NewDay(2027, time.October, 31)
)

func labelled(ticks []chart.Tick) []string {
	var out []string
	for _, t := range ticks {
		if t.Label != "" {
			out = append(out, t.Label+"@"+strconv.Itoa(t.Index))
		}
	}
	return out
}

func TestQuarterHourAxis(t *testing.T) {
	tests := []struct {
		name     string
		day      pipeline.Day
		points   int
		ticks    int      // hour ticks and the end tick
		labelled []string // label@index
		at       map[int]string
	}{
		{
			name: "spring forward", day: springForward, points: 92, ticks: 24,
			labelled: []string{"00@0", "03@8", "06@20", "09@32", "12@44", "15@56", "18@68", "21@80", "24@92"},
			at:       map[int]string{0: "00:00", 7: "01:45", 8: "03:00", 91: "23:45"},
		},
		{
			name: "normal", day: normalDay, points: 96, ticks: 25,
			labelled: []string{"00@0", "03@12", "06@24", "09@36", "12@48", "15@60", "18@72", "21@84", "24@96"},
			at:       map[int]string{0: "00:00", 9: "02:15", 12: "03:00", 95: "23:45"},
		},
		{
			name: "fall back", day: fallBack, points: 100, ticks: 26,
			labelled: []string{"00@0", "02A@8", "02B@12", "03@16", "06@28", "09@40", "12@52", "15@64", "18@76", "21@88", "24@100"},
			at: map[int]string{7: "01:45", 8: "02:00 MESZ", 11: "02:45 MESZ", 12: "02:00 MEZ", 15: "02:45 MEZ",
				16: "03:00", 99: "23:45"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			labels, ticks := chart.QuarterHourAxis(starts(tc.day), pipeline.Berlin)
			if len(labels) != tc.points {
				t.Fatalf("%d labels, want %d", len(labels), tc.points)
			}
			if len(ticks) != tc.ticks {
				t.Errorf("%d ticks, want %d: %v", len(ticks), tc.ticks, ticks)
			}
			if got := labelled(ticks); !slices.Equal(got, tc.labelled) {
				t.Errorf("labelled ticks %v, want %v", got, tc.labelled)
			}
			for i, want := range tc.at {
				if labels[i] != want {
					t.Errorf("label %d is %q, want %q", i, labels[i], want)
				}
			}
			seen := map[string]bool{}
			for i, l := range labels {
				if seen[l] {
					t.Errorf("label %d %q occurs twice", i, l)
				}
				seen[l] = true
				if tc.day == springForward && strings.HasPrefix(l, "02:") {
					t.Errorf("label %d is %q on the spring-forward day", i, l)
				}
			}
			for i, tk := range ticks {
				if i > 0 && tk.Index <= ticks[i-1].Index {
					t.Errorf("tick %d at %d does not follow %d", i, tk.Index, ticks[i-1].Index)
				}
			}
		})
	}
}

func TestQuarterHourAxisNilLocationIsUTC(t *testing.T) {
	labels, ticks := chart.QuarterHourAxis(starts(normalDay), nil)
	// Berlin midnight in June is 22:00 UTC, so the day ends at 22:00 UTC too
	// and there is no end tick.
	if labels[0] != "22:00" || labels[8] != "00:00" {
		t.Errorf("labels start %q, %q; want 22:00, 00:00", labels[0], labels[8])
	}
	want := []string{"00@8", "03@20", "06@32", "09@44", "12@56", "15@68", "18@80", "21@92"}
	if got := labelled(ticks); !slices.Equal(got, want) {
		t.Errorf("labelled ticks %v, want %v", got, want)
	}
}

// dayChart is the Lage chart of one day: forecast, position and the open
// position (their difference, negative in the evening), with a gap in the
// position.
func dayChart(d pipeline.Day) chart.Chart {
	labels, ticks := chart.QuarterHourAxis(starts(d), pipeline.Berlin)
	n := len(labels)
	forecast := make([]float64, n)
	position := make([]float64, n)
	open := make([]float64, n)
	for i := range n {
		forecast[i] = 120 + 60*math.Sin(float64(i)/float64(n)*2*math.Pi) + float64(i%7)*0.125
		position[i] = 140 + float64(i/4)
		if i >= 40 && i < 44 {
			position[i] = math.NaN()
		}
		open[i] = forecast[i] - position[i]
	}
	return chart.Chart{
		ID:    "lage-tennet",
		Title: "TenneT: Prognose, Position und offene Position am " + d.String(),
		Desc:  "Viertelstundenwerte in MW, Ortszeit",
		Unit:  "MW", Points: n, XLabels: labels, Ticks: ticks,
		Series: []chart.Series{
			{Name: "Prognose", Class: "s-forecast", Values: forecast},
			{Name: "Position", Class: "s-position", Values: position},
			{Name: "Offene Position", Class: "s-open", Values: open},
		},
	}
}

func kalkulationChart() chart.Chart {
	cost := []float64{1234.5, 980, -250.25, math.NaN(), 1500, 1720.8, 640}
	var labels []string
	var ticks []chart.Tick
	for i := range cost {
		l := pipeline.NewDay(2027, time.March, 22).AddDays(i).String()
		labels = append(labels, l)
		ticks = append(ticks, chart.Tick{Index: i, Label: l[8:] + "."})
	}
	return chart.Chart{
		ID: "kalk", Title: "Kosten je Tag, März 2027", Desc: "Kosten in Euro je Liefertag", Unit: "€",
		Points: len(cost), XLabels: labels, Ticks: ticks, Bars: true, CenterTicks: true, Decimals: 2,
		Series: []chart.Series{{Name: "Kosten", Class: "s-cost", Values: cost}},
	}
}

// node is a generic XML element, enough to walk the SVG.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []node     `xml:",any"`
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n node) hasClass(c string) bool { return slices.Contains(strings.Fields(n.attr("class")), c) }

// all returns n and its descendants that match.
func (n node) all(match func(node) bool) []node {
	var out []node
	if match(n) {
		out = append(out, n)
	}
	for _, c := range n.Nodes {
		out = append(out, c.all(match)...)
	}
	return out
}

func parse(t *testing.T, svg string) node {
	t.Helper()
	var root node
	d := xml.NewDecoder(strings.NewReader(svg))
	d.Strict = true
	if err := d.Decode(&root); err != nil {
		t.Fatalf("the SVG is not well-formed XML: %v", err)
	}
	if _, err := d.Token(); err == nil {
		t.Fatal("markup after the <svg> element")
	}
	if root.XMLName.Local != "svg" {
		t.Fatalf("root element %q, want svg", root.XMLName.Local)
	}
	return root
}

func render(t *testing.T, c chart.Chart) (string, node) {
	t.Helper()
	h, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	return string(h), parse(t, string(h))
}

// subpaths splits a path's d attribute into its subpaths' points.
func subpaths(t *testing.T, d string) [][][2]float64 {
	t.Helper()
	var out [][][2]float64
	for _, sub := range strings.Split(d, "M")[1:] {
		sub = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(sub), "h0"))
		var pts [][2]float64
		for _, pair := range strings.Fields(strings.ReplaceAll(sub, "L", " ")) {
			xs, ys, ok := strings.Cut(pair, ",")
			x, err1 := strconv.ParseFloat(xs, 64)
			y, err2 := strconv.ParseFloat(ys, 64)
			if !ok || err1 != nil || err2 != nil {
				t.Fatalf("bad point %q in %q", pair, d)
			}
			pts = append(pts, [2]float64{x, y})
		}
		out = append(out, pts)
	}
	return out
}

func float(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("%s differs from the output; inspect it and run go test -update if the change is meant", path)
	}
}

func TestSVGDays(t *testing.T) {
	tests := []struct {
		name   string
		day    pipeline.Day
		points int
		golden string
		xText  []string // the x axis labels in document order
	}{
		{"spring forward", springForward, 92, "lage-92.svg", []string{"00", "03", "06", "09", "12", "15", "18", "21", "24"}},
		{"normal", normalDay, 96, "lage-96.svg", []string{"00", "03", "06", "09", "12", "15", "18", "21", "24"}},
		{"fall back", fallBack, 100, "lage-100.svg", []string{"00", "02A", "02B", "03", "06", "09", "12", "15", "18", "21", "24"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := dayChart(tc.day)
			svg, root := render(t, c)
			golden(t, tc.golden, svg)

			for _, s := range c.Series {
				paths := root.all(func(n node) bool { return n.XMLName.Local == "path" && n.hasClass(s.Class) })
				if len(paths) != 1 {
					t.Fatalf("%s: %d paths, want 1", s.Name, len(paths))
				}
				total, wantSubs := 0, 1
				if s.Class != "s-forecast" {
					wantSubs = 2 // the position's gap at 40..43 breaks it and the open position
				}
				subs := subpaths(t, paths[0].attr("d"))
				for _, sub := range subs {
					total += len(sub)
				}
				if len(subs) != wantSubs {
					t.Errorf("%s: %d subpaths, want %d", s.Name, len(subs), wantSubs)
				}
				finite := 0
				for _, v := range s.Values {
					if !math.IsNaN(v) {
						finite++
					}
				}
				if total != finite || (wantSubs == 1 && total != tc.points) {
					t.Errorf("%s: %d points on the line, want %d of %d", s.Name, total, finite, tc.points)
				}
			}

			var xText []string
			for _, g := range root.all(func(n node) bool { return n.XMLName.Local == "g" && n.hasClass("x") }) {
				for _, tx := range g.all(func(n node) bool { return n.XMLName.Local == "text" }) {
					xText = append(xText, tx.Text)
				}
			}
			if !slices.Equal(xText, tc.xText) {
				t.Errorf("x axis labels %v, want %v", xText, tc.xText)
			}

			hovers := root.all(func(n node) bool {
				return n.XMLName.Local == "rect" && len(n.Nodes) == 1 && n.Nodes[0].XMLName.Local == "title"
			})
			if len(hovers) != tc.points {
				t.Fatalf("%d hover targets, want %d", len(hovers), tc.points)
			}
			for i, h := range hovers {
				if want := c.XLabels[i] + " – Prognose: "; !strings.HasPrefix(h.Nodes[0].Text, want) {
					t.Errorf("hover %d %q does not start with %q", i, h.Nodes[0].Text, want)
				}
			}
		})
	}
}

func TestSVGDocument(t *testing.T) {
	svg, root := render(t, dayChart(fallBack))
	checks := []struct{ what, got, want string }{
		{"class", root.attr("class"), "chart"},
		{"role", root.attr("role"), "img"},
		{"aria-labelledby", root.attr("aria-labelledby"), "lage-tennet-title"},
		{"aria-describedby", root.attr("aria-describedby"), "lage-tennet-desc"},
		{"viewBox", root.attr("viewBox"), "0 0 600 300"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s is %q, want %q", c.what, c.got, c.want)
		}
	}
	ids := root.all(func(n node) bool { return n.attr("id") != "" })
	if len(ids) != 2 || ids[0].XMLName.Local != "title" || ids[0].attr("id") != "lage-tennet-title" ||
		ids[1].XMLName.Local != "desc" || ids[1].attr("id") != "lage-tennet-desc" {
		t.Errorf("elements with ids: %v", ids)
	}
	// The page's CSP has no 'unsafe-inline' for styles.
	if n := root.all(func(n node) bool { return n.XMLName.Local == "style" || n.attr("style") != "" }); len(n) > 0 {
		t.Errorf("inline styles: %v", n)
	}
	scripted := func(n node) bool {
		return n.XMLName.Local == "script" || slices.ContainsFunc(n.Attrs, func(a xml.Attr) bool { return strings.HasPrefix(a.Name.Local, "on") })
	}
	if n := root.all(scripted); len(n) > 0 {
		t.Errorf("scripts: %v", n)
	}
	legend := root.all(func(n node) bool { return n.XMLName.Local == "g" && n.hasClass("legend") })
	if len(legend) != 1 {
		t.Fatalf("%d legends", len(legend))
	}
	var names []string
	for _, tx := range legend[0].all(func(n node) bool { return n.XMLName.Local == "text" }) {
		names = append(names, tx.Text)
	}
	if !slices.Equal(names, []string{"Prognose", "Position", "Offene Position"}) {
		t.Errorf("legend %v", names)
	}
	for _, class := range []string{"s-forecast", "s-position", "s-open"} {
		if len(legend[0].all(func(n node) bool { return n.hasClass("swatch") && n.hasClass(class) })) != 1 {
			t.Errorf("no legend swatch with class %s", class)
		}
	}
	t.Logf("3 series x 100 points: %d bytes", len(svg))
	// The Lage page shows four of these; keep each well under 32 KiB.
	if len(svg) > 32<<10 {
		t.Errorf("3 series x 100 points take %d bytes", len(svg))
	}
}

func TestSVGInHTMLTemplate(t *testing.T) {
	// The console pages embed the chart with {{.}}; html/template must take
	// it as it is, not escape it into text.
	h, err := dayChart(normalDay).SVG()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	page := template.Must(template.New("p").Parse(`<figure>{{.}}</figure>`))
	if err := page.Execute(&out, h); err != nil {
		t.Fatal(err)
	}
	if want := "<figure>" + string(h) + "</figure>"; out.String() != want {
		t.Errorf("the template changed the chart")
	}
}

func TestSVGHoverText(t *testing.T) {
	c := chart.Chart{
		ID: "h", Title: "t", Unit: "MW", Points: 2, XLabels: []string{"02:15", "02:30"},
		Series: []chart.Series{
			{Name: "Prognose", Class: "a", Values: []float64{123.456, 1234.5678}},
			{Name: "Position", Class: "b", Values: []float64{math.NaN(), -0.25}},
		},
	}
	_, root := render(t, c)
	var got []string
	for _, n := range root.all(func(n node) bool { return n.XMLName.Local == "title" }) {
		got = append(got, n.Text)
	}
	want := []string{"t", "02:15 – Prognose: 123,456 MW; Position: fehlt", "02:30 – Prognose: 1.234,568 MW; Position: -0,250 MW"}
	if !slices.Equal(got, want) {
		t.Errorf("titles %q, want %q", got, want)
	}

	c.XLabels, c.Unit, c.Decimals = nil, "", chart.WholeNumbers
	c.Series = c.Series[:1]
	_, root = render(t, c)
	got = got[:0]
	for _, n := range root.all(func(n node) bool { return n.XMLName.Local == "title" }) {
		got = append(got, n.Text)
	}
	want = []string{"t", "1 – Prognose: 123", "2 – Prognose: 1.235"}
	if !slices.Equal(got, want) {
		t.Errorf("titles %q, want %q", got, want)
	}
}

func TestSVGGaps(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		values []float64
		runs   []int // points per subpath
		dots   int   // lone points, drawn as zero-length subpaths
	}{
		{"no gap", []float64{1, 2, 3, 4}, []int{4}, 0},
		{"one gap", []float64{1, 2, nan, 4, 5}, []int{2, 2}, 0},
		{"leading and trailing", []float64{nan, 2, 3, nan}, []int{2}, 0},
		{"lone points", []float64{1, nan, 3, nan, nan, 6, 7}, []int{1, 1, 2}, 2},
		{"all missing", []float64{nan, nan}, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := chart.Chart{ID: "g", Title: "t", Points: len(tc.values), Series: []chart.Series{{Name: "s", Class: "s", Values: tc.values}}}
			_, root := render(t, c)
			p := root.all(func(n node) bool { return n.XMLName.Local == "path" })
			if len(p) != 1 {
				t.Fatalf("%d paths", len(p))
			}
			d := p[0].attr("d")
			var runs []int
			for _, s := range subpaths(t, d) {
				runs = append(runs, len(s))
			}
			if !slices.Equal(runs, tc.runs) {
				t.Errorf("subpaths of %v points (d=%q), want %v", runs, d, tc.runs)
			}
			if got := strings.Count(d, "h0"); got != tc.dots {
				t.Errorf("%d dots, want %d", got, tc.dots)
			}
		})
	}
}

// zeroY is the y coordinate of the zero line.
func zeroY(t *testing.T, root node) float64 {
	t.Helper()
	z := root.all(func(n node) bool { return n.hasClass("zero") })
	if len(z) != 1 || z[0].attr("y1") != z[0].attr("y2") {
		t.Fatalf("zero lines: %v", z)
	}
	return float(t, z[0].attr("y1"))
}

func TestSVGNegativeBelowZero(t *testing.T) {
	values := []float64{50, -20, 0, -0.5, 10}
	c := chart.Chart{ID: "n", Title: "t", Points: len(values), Series: []chart.Series{{Name: "Offen", Class: "s-open", Values: values}}}
	_, root := render(t, c)
	zero := zeroY(t, root)
	p := root.all(func(n node) bool { return n.XMLName.Local == "path" })
	pts := subpaths(t, p[0].attr("d"))[0]
	for i, v := range values {
		y := pts[i][1]
		switch {
		case v < 0 && y <= zero, v > 0 && y >= zero, v == 0 && y != zero:
			t.Errorf("value %v at y %v, zero line at %v (y grows downwards)", v, y, zero)
		}
	}

	c.Bars = true
	_, root = render(t, c)
	zero = zeroY(t, root)
	g := root.all(func(n node) bool { return n.XMLName.Local == "g" && n.hasClass("bar") })
	if len(g) != 1 {
		t.Fatalf("%d bar groups", len(g))
	}
	bars := g[0].Nodes
	if len(bars) != len(values) {
		t.Fatalf("%d bars, want %d", len(bars), len(values))
	}
	for i, v := range values {
		y, h := float(t, bars[i].attr("y")), float(t, bars[i].attr("height"))
		switch {
		// Coordinates have one decimal, so a bar's end may be 0.1 off.
		case v < 0 && (math.Abs(y-zero) > 0.11 || h <= 0), v > 0 && (math.Abs(y+h-zero) > 0.11 || h <= 0), v == 0 && h != 0:
			t.Errorf("bar %v spans y %v..%v, zero line at %v", v, y, y+h, zero)
		}
	}
}

func TestSVGMissingBarBelowZero(t *testing.T) {
	// With mostly negative values the zero line is near the top, and the
	// "fehlt" mark runs down from it rather than out of the plot.
	c := chart.Chart{ID: "m", Title: "t", Points: 3, Bars: true,
		Series: []chart.Series{{Name: "Kosten", Values: []float64{-100, math.NaN(), 5}}}}
	_, root := render(t, c)
	zero := zeroY(t, root)
	m := root.all(func(n node) bool { return n.XMLName.Local == "text" && n.Text == "fehlt" })
	if len(m) != 1 || m[0].attr("text-anchor") != "end" || float(t, m[0].attr("y")) <= zero {
		t.Errorf("missing mark %v, zero line at %v", m, zero)
	}
	g := root.all(func(n node) bool { return n.XMLName.Local == "g" && n.attr("class") == "bar" })
	if len(g) != 1 {
		t.Errorf("bar groups without a series class: %v", g)
	}
}

func TestSVGBars(t *testing.T) {
	c := kalkulationChart()
	svg, root := render(t, c)
	golden(t, "kalkulation.svg", svg)
	g := root.all(func(n node) bool { return n.XMLName.Local == "g" && n.hasClass("bar") })
	if len(g) != 1 || !g[0].hasClass("s-cost") {
		t.Fatalf("bar groups: %v", g)
	}
	if got := len(g[0].Nodes); got != 6 { // the missing day has no bar
		t.Errorf("%d bars, want 6", got)
	}
	// The missing day is flagged in the middle of its column, where its tick is.
	missing := root.all(func(n node) bool { return n.XMLName.Local == "text" && n.Text == "fehlt" })
	ticks := root.all(func(n node) bool { return n.hasClass("tick") })
	if len(missing) != 1 || len(ticks) != 7 || missing[0].attr("x") != ticks[3].attr("x1") {
		t.Errorf("missing marks %v, ticks %v", missing, ticks)
	}
	if b := g[0].Nodes[0]; math.Abs(float(t, b.attr("x"))+float(t, b.attr("width"))/2-float(t, ticks[0].attr("x1"))) > 0.11 {
		t.Errorf("the first bar %v is not centred on its tick %v", b, ticks[0])
	}
	if n := root.all(func(n node) bool { return n.XMLName.Local == "path" }); len(n) != 0 {
		t.Errorf("a bar chart of one series has %d lines", len(n))
	}
	titles := root.all(func(n node) bool { return n.XMLName.Local == "title" })
	if got := titles[3].Text; got != "2027-03-24 – Kosten: -250,25 €" {
		t.Errorf("hover of day 3: %q", got)
	}
}

func TestSVGYAxis(t *testing.T) {
	tests := []struct {
		name   string
		values []float64
		want   []string
	}{
		{"positive", []float64{12, 123}, []string{"0", "50", "100", "150"}},
		{"negative and positive", []float64{-30, 80}, []string{"-50", "0", "50", "100"}},
		{"all negative", []float64{-7, -2}, []string{"-8", "-6", "-4", "-2", "0"}},
		{"fractions", []float64{0.1, 0.43}, []string{"0,0", "0,1", "0,2", "0,3", "0,4", "0,5"}},
		{"hundredths", []float64{0.01, 0.07}, []string{"0,00", "0,02", "0,04", "0,06", "0,08"}},
		{"thousands", []float64{1000, 12345}, []string{"0", "5.000", "10.000", "15.000"}},
		{"exact step", []float64{0, 100}, []string{"0", "20", "40", "60", "80", "100"}},
		{"all zero", []float64{0, 0}, []string{"0,0", "0,2", "0,4", "0,6", "0,8", "1,0"}},
		{"all missing", []float64{math.NaN(), math.NaN()}, []string{"0,0", "0,2", "0,4", "0,6", "0,8", "1,0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := chart.Chart{ID: "y", Title: "t", Unit: "MW", Points: len(tc.values), Series: []chart.Series{{Name: "s", Class: "s", Values: tc.values}}}
			_, root := render(t, c)
			g := root.all(func(n node) bool { return n.XMLName.Local == "g" && n.hasClass("y") })
			if len(g) != 1 {
				t.Fatalf("%d y axes", len(g))
			}
			var got []string
			var ys []float64
			for _, tx := range g[0].Nodes {
				got = append(got, tx.Text)
				ys = append(ys, float(t, tx.attr("y")))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("y labels %q, want %q", got, tc.want)
			}
			for i := 1; i < len(ys); i++ {
				if ys[i] >= ys[i-1] {
					t.Errorf("label %q at y %v is not above %q at %v", got[i], ys[i], got[i-1], ys[i-1])
				}
			}
			unit := root.all(func(n node) bool { return n.hasClass("unit") })
			if len(unit) != 1 || unit[0].Text != "MW" {
				t.Errorf("unit labels %v", unit)
			}
		})
	}
}

func TestSVGEscapes(t *testing.T) {
	c := chart.Chart{ID: "e", Title: `A & B <"x">`, Desc: "</desc><script>", Unit: "<u>", Points: 1,
		XLabels: []string{"a&b"}, Ticks: []chart.Tick{{Index: 0, Label: "<t>"}},
		Series: []chart.Series{{Name: "n'<>", Class: `c" onload="x`, Values: []float64{1}}}}
	svg, root := render(t, c)
	if strings.Contains(svg, "<script") || strings.Contains(svg, `onload="`) {
		t.Errorf("unescaped input in %s", svg)
	}
	if got := root.all(func(n node) bool { return n.XMLName.Local == "title" })[0].Text; got != c.Title {
		t.Errorf("title %q", got)
	}
}

func TestSVGErrors(t *testing.T) {
	ok := func() chart.Chart {
		return chart.Chart{ID: "ok", Title: "t", Points: 3, XLabels: []string{"a", "b", "c"},
			Ticks:  []chart.Tick{{Index: 0, Label: "a"}, {Index: 3, Label: "end"}},
			Series: []chart.Series{{Name: "s", Class: "s", Values: []float64{1, 2, 3}}}}
	}
	if _, err := ok().SVG(); err != nil {
		t.Fatalf("the valid chart fails: %v", err)
	}
	tests := []struct {
		name   string
		change func(*chart.Chart)
		want   string
	}{
		{"series too short", func(c *chart.Chart) { c.Series[0].Values = []float64{1, 2} }, `series 0 ("s") has 2 values for 3 points`},
		{"series too long", func(c *chart.Chart) { c.Series[0].Values = []float64{1, 2, 3, 4} }, "has 4 values for 3 points"},
		{"no points", func(c *chart.Chart) { c.Points, c.XLabels, c.Ticks, c.Series[0].Values = 0, nil, nil, nil }, "Points is 0, want at least 1"},
		{"negative points", func(c *chart.Chart) { c.Points = -1 }, "Points is -1"},
		{"too many points", func(c *chart.Chart) { c.Points = 10001 }, "at most 10000"},
		{"tick before", func(c *chart.Chart) { c.Ticks[0].Index = -1 }, `tick "a" at index -1 is outside 0..3`},
		{"tick after", func(c *chart.Chart) { c.Ticks[1].Index = 4 }, `tick "end" at index 4 is outside 0..3`},
		{"centred tick after", func(c *chart.Chart) { c.CenterTicks = true }, `tick "end" at index 3 is outside 0..2`},
		{"labels", func(c *chart.Chart) { c.XLabels = c.XLabels[:2] }, "2 XLabels for 3 points"},
		{"no id", func(c *chart.Chart) { c.ID = "" }, "ID \"\" must start with a letter"},
		{"bad id", func(c *chart.Chart) { c.ID = "a b" }, "ID \"a b\" must start with a letter"},
		{"no title", func(c *chart.Chart) { c.Title = " " }, "Title is empty"},
		{"no series", func(c *chart.Chart) { c.Series = nil }, "no series"},
		{"no name", func(c *chart.Chart) { c.Series[0].Name = "" }, "series 0 has no name"},
		{"infinite", func(c *chart.Chart) { c.Series[0].Values[1] = math.Inf(-1) }, `series "s" value 1 is infinite`},
		{"huge", func(c *chart.Chart) { c.Series[0].Values[2] = -2e15 }, `series "s" value 2 is -2e+15, outside ±1e+15`},
		{"decimals", func(c *chart.Chart) { c.Decimals = 7 }, "Decimals is 7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok()
			tc.change(&c)
			h, err := c.SVG()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if h != "" {
				t.Errorf("markup %q with the error", h)
			}
		})
	}
}

func TestFormatDecimal(t *testing.T) {
	tests := []struct {
		v    float64
		dec  int
		want string
	}{
		{0, 0, "0"},
		{1.5, 1, "1,5"},
		{123.456, 3, "123,456"},
		{1234.5, 1, "1.234,5"},
		{-1234567.891, 2, "-1.234.567,89"},
		{999.9999, 3, "1.000,000"},
		{100, 0, "100"},
		{-0.0001, 2, "0,00"},
		{-0.6, 0, "-1"},
		{12345, -1, "12.345"},
	}
	for _, tc := range tests {
		if got := chart.FormatDecimal(tc.v, tc.dec); got != tc.want {
			t.Errorf("FormatDecimal(%v, %d) = %q, want %q", tc.v, tc.dec, got, tc.want)
		}
	}
}

func TestCSSSizesTheChart(t *testing.T) {
	// The stylesheet is for the chart's own classes; it must at least size the
	// root, or the SVG would not scale with its container.
	if !strings.Contains(chart.CSS, ".chart {") || !strings.Contains(chart.CSS, "width: 100%") {
		t.Errorf("CSS does not size .chart: %s", chart.CSS)
	}
}

func BenchmarkSVG(b *testing.B) {
	c := dayChart(fallBack)
	var n int
	for b.Loop() {
		h, err := c.SVG()
		if err != nil {
			b.Fatal(err)
		}
		n = len(h)
	}
	b.ReportMetric(float64(n), "bytes/chart")
}

func TestSVGCrowdedLabels(t *testing.T) {
	// A label at every quarter-hour cannot fit: labels move to a second row
	// or are left out, their ticks stay, and no two labels of a row overlap.
	labels, _ := chart.QuarterHourAxis(starts(normalDay), pipeline.Berlin)
	c := dayChart(normalDay)
	c.Ticks = nil
	for i, l := range labels {
		c.Ticks = append(c.Ticks, chart.Tick{Index: i, Label: l})
	}
	_, root := render(t, c)
	if n := len(root.all(func(n node) bool { return n.hasClass("tick") })); n != 96 {
		t.Errorf("%d ticks, want 96", n)
	}
	var texts []node
	for _, g := range root.all(func(n node) bool { return n.XMLName.Local == "g" && n.hasClass("x") }) {
		texts = append(texts, g.all(func(n node) bool { return n.XMLName.Local == "text" })...)
	}
	if len(texts) < 10 || len(texts) >= 96 {
		t.Fatalf("%d of 96 labels drawn", len(texts))
	}
	last := map[string]float64{}
	rows := map[string]bool{}
	for _, tx := range texts {
		y, x := tx.attr("y"), float(t, tx.attr("x"))
		rows[y] = true
		// "00:00" is five characters of at most 0.6em at 18 units.
		if prev, ok := last[y]; ok && x-prev < 5*0.6*18 {
			t.Errorf("label %q at x %v overlaps the one at %v", tx.Text, x, prev)
		}
		last[y] = x
	}
	if len(rows) != 2 {
		t.Errorf("labels on %d rows, want 2", len(rows))
	}
}

func TestSVGLegendWraps(t *testing.T) {
	c := dayChart(normalDay)
	for i := range c.Series {
		c.Series[i].Name = strings.Repeat("Langer Name ", 2) + strconv.Itoa(i)
	}
	_, root := render(t, c)
	legend := root.all(func(n node) bool { return n.XMLName.Local == "g" && n.hasClass("legend") })[0]
	ys := map[string]int{}
	for _, tx := range legend.all(func(n node) bool { return n.XMLName.Local == "text" }) {
		ys[tx.attr("y")]++
		if x := float(t, tx.attr("x")); x+float64(len(tx.Text))*0.6*18 > 600 {
			t.Errorf("legend entry %q at x %v runs out of the chart", tx.Text, x)
		}
	}
	if len(ys) < 2 {
		t.Errorf("legend of three long names on %d row(s)", len(ys))
	}
	// The plot starts below the legend.
	hover := root.all(func(n node) bool { return n.XMLName.Local == "rect" && len(n.Nodes) == 1 })[0]
	for y := range ys {
		if float(t, y) >= float(t, hover.attr("y")) {
			t.Errorf("legend row at y %s is inside the plot, which starts at %s", y, hover.attr("y"))
		}
	}
}

func TestSVGHideLegend(t *testing.T) {
	c := dayChart(normalDay)
	c.HideLegend = true
	_, root := render(t, c)
	if n := root.all(func(n node) bool { return n.hasClass("legend") || n.hasClass("swatch") }); len(n) != 0 {
		t.Errorf("legend drawn: %v", n)
	}
}
