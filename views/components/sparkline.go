package components

// Long file: one drawing: the log scale, paths, threshold guides and summaries of the sparkline share their geometry.

import (
	"math"
	"strconv"
	"strings"
)

// SparkPoint is one time slot of an endpoint's latency, e.g. one hour of the
// rolling 24 h. Latencies are in milliseconds.
type SparkPoint struct {
	P50, P95, P99 float64
	Count         int // attempts in the slot; 0 means no data and draws a gap
}

// SparklineData is the view model of Sparkline: one endpoint's P50, P95 and
// P99 on one shared scale.
type SparklineData struct {
	Label  string // what the line is about, e.g. the endpoint name; may be empty
	Points []SparkPoint
	// MaxMs is the top of the scale. Give every sparkline in a table row (or
	// in the whole table) the same MaxMs so equal latencies sit at equal
	// heights; 0 takes the peak of Points.
	MaxMs         float64
	Width, Height int    // 120×28 when zero
	Window        string // "24 h" when empty; used in the accessible summary
}

// SingleSparkData is the view model of SingleSparkline: one series, e.g. the
// P95 column of the endpoints table.
type SingleSparkData struct {
	Label         string    // "P95"; "Latency" when empty
	Values        []float64 // milliseconds; NaN or negative is a gap
	MaxMs         float64   // shared top of the scale; 0 takes the peak of Values
	Tone          string    // "p50" | "p95" | "p99" | a Tone; "p95" when empty
	Width, Height int       // 120×28 when zero
	Window        string    // "24 h" when empty
}

// Sparkline scale. Latency spans orders of magnitude (a 40 ms endpoint that
// degrades to 4 s must still show its normal shape), so the Y axis is log10,
// from sparkFloorMs at the bottom to MaxMs at the top. The bottom is fixed and
// the top depends only on MaxMs, so two sparklines with the same MaxMs place
// the same latency at the same height. The top is at least sparkMinTopMs so a
// flat 3 ms endpoint does not turn 1 ms of jitter into a full-height zigzag.
const (
	sparkFloorMs  = 1.0
	sparkMinTopMs = 10.0
	sparkWidth    = 120
	sparkHeight   = 28
	sparkPadX     = 2.5 // room for the end dot
	sparkPadY     = 2.5
)

// PeakMs returns the highest latency in points with data, the natural MaxMs
// for a row of sparklines. It is 0 when no slot has data.
func PeakMs(points []SparkPoint) float64 {
	peak := 0.0
	for _, p := range points {
		if p.Count <= 0 {
			continue
		}
		for _, v := range []float64{p.P50, p.P95, p.P99} {
			if v > peak && !math.IsInf(v, 0) {
				peak = v
			}
		}
	}
	return peak
}

// logScale maps milliseconds to a y coordinate, clamping to [lo, hi].
type logScale struct {
	lo, hi      float64
	top, bottom float64
}

func (s logScale) y(ms float64) float64 {
	ms = math.Min(math.Max(ms, s.lo), s.hi)
	f := (math.Log10(ms) - math.Log10(s.lo)) / (math.Log10(s.hi) - math.Log10(s.lo))
	return s.bottom - f*(s.bottom-s.top)
}

// contains reports whether ms lies inside the scale, for threshold guides.
func (s logScale) contains(ms float64) bool { return ms >= s.lo && ms <= s.hi }

func sparkScale(maxMs float64, height int) logScale {
	return logScale{
		lo:     sparkFloorMs,
		hi:     math.Max(maxMs, sparkMinTopMs),
		top:    sparkPadY,
		bottom: float64(height) - sparkPadY,
	}
}

// num formats an SVG coordinate with one decimal and no trailing ".0", so
// the output is compact and byte-for-byte deterministic. It works in whole
// tenths with integer formatting: the endpoints table formats a few hundred
// thousand of these per render.
func num(v float64) string {
	var buf [24]byte
	return string(appendNum(buf[:0], v))
}

func appendNum(b []byte, v float64) []byte {
	t := int64(math.Round(v * 10))
	if t < 0 {
		b = append(b, '-')
		t = -t
	}
	b = strconv.AppendInt(b, t/10, 10)
	if d := t % 10; d != 0 {
		b = append(b, '.', byte('0'+d))
	}
	return b
}

// series is one polyline of a chart with its gaps, as SVG path data.
type series struct {
	Name     string // p50 | p95 | p99
	Class    string
	Stroke   string // presentation fallback; the stylesheet overrides it
	Width    string
	Dash     string
	D        string
	Segments int
	Dot      bool // mark the last value
	DotX     string
	DotY     string
}

// seriesStyle returns the presentation-attribute fallbacks of the series
// classes in hookline.css, for SVG viewed without the stylesheet, and whether
// name is a known series or tone.
func seriesStyle(name string) (stroke, width, dash string, ok bool) {
	switch name {
	case "p50":
		return "#1b7c83", "1.25", "", true
	case "p95":
		return "#0550ae", "1.75", "", true
	case "p99":
		return "#8250df", "1.25", "3 2", true
	case ToneOK:
		return "#1a7f37", "1.5", "", true
	case ToneWarn:
		return "#9a6700", "1.5", "", true
	case ToneCritical:
		return "#cf222e", "1.5", "", true
	case ToneInfo:
		return "#0969da", "1.5", "", true
	case ToneMuted:
		return "#6e7781", "1.5", "", true
	}
	return "", "", "", false
}

// buildPath draws values at xs, breaking the line wherever ok is false. A
// value with no neighbour would be an invisible one-point subpath, so it gets
// a tiny horizontal stroke that the round line cap turns into a dot. Points
// after a subpath's first are relative ("l" and implicit repeats, leading
// zeros dropped): a table of a thousand endpoints draws three thousand of
// these, so every byte counts.
func buildPath(xs, ys []float64, ok []bool) (string, int) {
	var b strings.Builder
	b.Grow(len(xs) * 8)
	segments := 0
	var px, py float64
	for i := range xs {
		if !ok[i] {
			continue
		}
		x, y := round1(xs[i]), round1(ys[i])
		prev := i > 0 && ok[i-1]
		next := i+1 < len(xs) && ok[i+1]
		switch {
		case !prev:
			b.WriteByte('M')
			b.WriteString(num(x))
			b.WriteByte(' ')
			b.WriteString(num(y))
			segments++
			if !next {
				b.WriteString("h.1")
			}
		case !ok[i-1] || i-1 < 0:
		default:
			if i >= 2 && ok[i-2] {
				// continuing an "l" run: implicit repeat
				writeRel(&b, x-px, true)
			} else {
				b.WriteByte('l')
				writeRel(&b, x-px, false)
			}
			writeRel(&b, y-py, true)
		}
		px, py = x, y
	}
	return b.String(), segments
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// writeRel appends a coordinate with a leading zero dropped (".5", "-.5"),
// separated from the previous one by a space unless its sign does it.
func writeRel(b *strings.Builder, v float64, sep bool) {
	var buf [24]byte
	t := appendNum(buf[:0], v)
	switch {
	case len(t) > 1 && t[0] == '0' && t[1] == '.':
		t = t[1:]
	case len(t) > 2 && t[0] == '-' && t[1] == '0' && t[2] == '.':
		t[1] = '-'
		t = t[1:]
	}
	if sep && t[0] != '-' {
		b.WriteByte(' ')
	}
	b.Write(t)
}

func newSeries(name string, xs []float64, vals []float64, ok []bool, sc logScale, dot bool) series {
	ys := make([]float64, len(vals))
	for i, v := range vals {
		if ok[i] {
			ys[i] = sc.y(v)
		}
	}
	stroke, width, dash, _ := seriesStyle(name)
	s := series{Name: name, Class: "series series-" + name, Stroke: stroke, Width: width, Dash: dash}
	s.D, s.Segments = buildPath(xs, ys, ok)
	if dot {
		for i := len(vals) - 1; i >= 0; i-- {
			if ok[i] {
				s.Dot, s.DotX, s.DotY = true, num(xs[i]), num(ys[i])
				break
			}
		}
	}
	return s
}

// guide is a horizontal threshold line.
type guide struct {
	Class  string
	Stroke string
	Y      string
}

func thresholdGuides(sc logScale) []guide {
	var gs []guide
	if sc.contains(CriticalMs) {
		y := sc.y(CriticalMs)
		gs = append(gs, guide{Class: "guide guide-critical", Stroke: "#cf222e", Y: num(y)})
	}
	if sc.contains(SlowMs) {
		y := sc.y(SlowMs)
		gs = append(gs, guide{Class: "guide guide-slow", Stroke: "#9a6700", Y: num(y)})
	}
	return gs
}

// sparkView is the geometry Sparkline and SingleSparkline render.
type sparkView struct {
	Width, Height int
	ViewBox       string
	Summary       string
	MaxMs         string
	Tone          string
	Guides        []guide
	Series        []series
}

// summary is the accessible description of one series:
// "P95 over 24 h: 38 ms → 3.1 s, max 4.2 s".
func summary(name, window string, vals []float64, ok []bool) string {
	return name + " over " + window + ": " + trend(vals, ok)
}

// trend describes a series by its first and last values and its peak:
// "38 ms → 3.1 s, max 4.2 s", "38 ms" for one value, "no data" for none.
func trend(vals []float64, ok []bool) string {
	first, last, peak, n := 0.0, 0.0, 0.0, 0
	for i, v := range vals {
		if !ok[i] {
			continue
		}
		if n == 0 {
			first = v
		}
		last = v
		peak = math.Max(peak, v)
		n++
	}
	switch n {
	case 0:
		return "no data"
	case 1:
		return Ms(last)
	}
	return Ms(first) + " → " + Ms(last) + ", max " + Ms(peak)
}

func sparkSize(w, h int) (int, int) {
	if w <= 0 {
		w = sparkWidth
	}
	if h <= 0 {
		h = sparkHeight
	}
	return w, h
}

func sparkXs(n, width int) []float64 {
	xs := make([]float64, n)
	if n == 1 {
		xs[0] = float64(width) / 2
		return xs
	}
	step := (float64(width) - 2*sparkPadX) / float64(n-1)
	for i := range xs {
		xs[i] = sparkPadX + float64(i)*step
	}
	return xs
}

func usable(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func newSparkView(d SparklineData) sparkView {
	w, h := sparkSize(d.Width, d.Height)
	maxMs := d.MaxMs
	if maxMs <= 0 {
		maxMs = PeakMs(d.Points)
	}
	sc := sparkScale(maxMs, h)
	n := len(d.Points)
	xs := sparkXs(n, w)
	ok := make([]bool, n)
	p50, p95, p99 := make([]float64, n), make([]float64, n), make([]float64, n)
	for i, p := range d.Points {
		ok[i] = p.Count > 0 && usable(p.P50) && usable(p.P95) && usable(p.P99)
		p50[i], p95[i], p99[i] = p.P50, p.P95, p.P99
	}
	text := summary("P95", orDefault(d.Window, "24 h"), p95, ok)
	if d.Label != "" {
		text = d.Label + ", " + text
	}
	return sparkView{
		Width: w, Height: h,
		ViewBox: "0 0 " + strconv.Itoa(w) + " " + strconv.Itoa(h),
		Summary: text,
		MaxMs:   num(sc.hi),
		Tone:    "p95",
		Guides:  thresholdGuides(sc),
		// p99 first so the key p95 line is drawn on top.
		Series: []series{
			newSeries("p99", xs, p99, ok, sc, false),
			newSeries("p50", xs, p50, ok, sc, false),
			newSeries("p95", xs, p95, ok, sc, true),
		},
	}
}

func newSingleSparkView(d SingleSparkData) sparkView {
	w, h := sparkSize(d.Width, d.Height)
	n := len(d.Values)
	ok := make([]bool, n)
	peak := 0.0
	for i, v := range d.Values {
		ok[i] = usable(v)
		if ok[i] {
			peak = math.Max(peak, v)
		}
	}
	maxMs := d.MaxMs
	if maxMs <= 0 {
		maxMs = peak
	}
	sc := sparkScale(maxMs, h)
	tone := d.Tone
	if _, _, _, known := seriesStyle(tone); !known {
		tone = "p95"
	}
	return sparkView{
		Width: w, Height: h,
		ViewBox: "0 0 " + strconv.Itoa(w) + " " + strconv.Itoa(h),
		Summary: summary(orDefault(d.Label, "Latency"), orDefault(d.Window, "24 h"), d.Values, ok),
		MaxMs:   num(sc.hi),
		Tone:    tone,
		Guides:  thresholdGuides(sc),
		Series:  []series{newSeries(tone, sparkXs(n, w), d.Values, ok, sc, true)},
	}
}

// SeriesValues extracts one percentile ("p50", "p95" or "p99") from points
// for SingleSparkData.Values, with NaN for slots without attempts.
func SeriesValues(points []SparkPoint, which string) []float64 {
	out := make([]float64, len(points))
	for i, p := range points {
		switch {
		case p.Count <= 0:
			out[i] = math.NaN()
		case which == "p50":
			out[i] = p.P50
		case which == "p99":
			out[i] = p.P99
		default:
			out[i] = p.P95
		}
	}
	return out
}
