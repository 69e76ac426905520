package components

import (
	"math"
	"strconv"
	"time"
)

// ChartData is the view model of LatencyChart: consecutive slots of Step
// starting at Start, e.g. 24 hourly slots. Every slot gets a tooltip and a
// row in the numbers table, so keep it to about a hundred slots (hourly or
// 15-minute), not raw minutes.
type ChartData struct {
	Label  string // what the chart is about, e.g. the endpoint name; may be empty
	Start  time.Time
	Step   time.Duration
	Points []SparkPoint
	// Now marks the current moment on the time axis and labels the slot it
	// falls in as in progress; zero leaves both out.
	Now time.Time
}

// Chart geometry. The plot is an SVG stretched to the container's width
// (preserveAspectRatio="none", strokes that do not scale), with a fixed
// height in CSS pixels, so its y units are pixels and its x units are
// thousandths of the width. Axis labels live in separate, unstretched SVGs
// beside and below it, so text stays crisp and readable from a phone to a
// wide monitor.
const (
	chartPlotW  = 1000 // x units of the plot
	chartPlotH  = 200  // pixels
	chartPadTop = 8    // room above the top gridline for its label
	chartAxisW  = 52   // pixels for the Y labels
	chartAxisH  = 20   // pixels for the time labels
	chartBarMax = 0.3  // attempt bars use at most this share of the plot height
)

// Chart Y scale: log10, like the sparklines. The top is at least 10 s so the
// slow (2 s) and critical (5 s) thresholds are always on the chart: the point
// of the chart is how far an endpoint is from them. The bottom is the decade
// at or below the fastest value, between 0.1 ms and 100 ms, so a fast
// endpoint still shows its shape and there are always at least two decades
// of gridlines.
const (
	chartMinTopMs   = 10000.0
	chartMinFloorMs = 0.1
	chartMaxFloorMs = 100.0
)

type chartTick struct {
	Pos   string // y in pixels, or x as a percentage of the width
	Label string
	Class string
}

type chartBar struct{ X, Y, W, H string }

type chartSlot struct {
	X, W  string
	Title string
}

type chartRow struct {
	Time, Count, P50, P95, P99 string
}

// chartView is the geometry LatencyChart renders.
type chartView struct {
	Summary  string
	Empty    bool
	ViewBox  string
	PlotW    string
	PlotH    string
	AxisW    string
	AxisH    string
	AxisX    string // right edge of the Y labels
	YTicks   []chartTick
	YMarks   []chartTick // threshold values on the Y axis, when they fit
	XTicks   []chartTick
	Guides   []guide
	Bars     []chartBar
	Series   []series
	Slots    []chartSlot
	Now      *chartTick // x in plot units
	MaxCount string
	Rows     []chartRow
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if c := m * p; c >= v*(1-1e-9) {
			return c
		}
	}
	return 10 * p
}

// axisMs labels a gridline: "0.1 ms", "10 ms", "1 s", "10 s".
func axisMs(v float64) string {
	if v < 1000 {
		return strconv.FormatFloat(v, 'f', -1, 64) + " ms"
	}
	return strconv.FormatFloat(v/1000, 'f', -1, 64) + " s"
}

// windowText describes a duration for summaries: "24 h", "90 min", "7 d".
func windowText(d time.Duration) string {
	switch {
	case d <= 0:
		return "the window"
	case d%(24*time.Hour) == 0 && d >= 48*time.Hour:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + " d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + " h"
	}
	return strconv.FormatInt(int64(d/time.Minute), 10) + " min"
}

// tickEvery picks the spacing of time-axis labels: the smallest round step
// that keeps at most eight labels.
func tickEvery(span time.Duration) time.Duration {
	for _, d := range []time.Duration{
		time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 4 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	} {
		if span/d <= 8 {
			return d
		}
	}
	return 24 * time.Hour
}

func slotLabel(t time.Time, step time.Duration) string {
	if step >= 24*time.Hour {
		return t.Format("Jan 2")
	}
	return t.Format("15:04")
}

func newChartView(c ChartData) chartView {
	v := chartView{
		ViewBox: "0 0 " + strconv.Itoa(chartPlotW) + " " + strconv.Itoa(chartPlotH),
		PlotW:   strconv.Itoa(chartPlotW),
		PlotH:   strconv.Itoa(chartPlotH),
		AxisW:   strconv.Itoa(chartAxisW),
		AxisH:   strconv.Itoa(chartAxisH),
		AxisX:   strconv.Itoa(chartAxisW - 6),
	}
	n := len(c.Points)
	step := c.Step
	if step <= 0 {
		step = time.Hour
	}
	window := windowText(time.Duration(n) * step)

	// Scale from the slots that have data.
	vmin, vmax, maxCount, total := math.Inf(1), 0.0, 0, int64(0)
	ok := make([]bool, n)
	for i, p := range c.Points {
		ok[i] = p.Count > 0 && usable(p.P50) && usable(p.P95) && usable(p.P99)
		if !ok[i] {
			continue
		}
		total += int64(p.Count)
		maxCount = max(maxCount, p.Count)
		vmax = math.Max(vmax, math.Max(p.P50, math.Max(p.P95, p.P99)))
		if m := math.Min(p.P50, math.Min(p.P95, p.P99)); m > 0 {
			vmin = math.Min(vmin, m)
		}
	}
	if total == 0 {
		v.Empty = true
		v.Summary = "Latency over " + window + ": no attempts"
		if c.Label != "" {
			v.Summary = c.Label + ", " + v.Summary
		}
		return v
	}
	lo := chartMaxFloorMs
	if !math.IsInf(vmin, 1) {
		lo = math.Pow(10, math.Floor(math.Log10(vmin)))
	}
	lo = math.Min(math.Max(lo, chartMinFloorMs), chartMaxFloorMs)
	y0, y1 := float64(chartPadTop), float64(chartPlotH)
	sc := logScale{lo: lo, hi: niceCeil(math.Max(vmax, chartMinTopMs)), top: y0, bottom: y1}

	var labelled []float64
	for d := lo; d <= sc.hi*(1+1e-9); d *= 10 {
		y := sc.y(d)
		v.YTicks = append(v.YTicks, chartTick{Pos: num(y), Label: axisMs(d)})
		labelled = append(labelled, y)
	}
	v.Guides = thresholdGuides(sc)
	// Threshold values join the Y labels in their colour, unless they would
	// overlap a decade label.
	for _, t := range []struct {
		ms    float64
		class string
	}{{SlowMs, "guide-slow"}, {CriticalMs, "guide-critical"}} {
		if !sc.contains(t.ms) {
			continue
		}
		y := sc.y(t.ms)
		clear := true
		for _, ly := range labelled {
			if math.Abs(ly-y) < 12 {
				clear = false
			}
		}
		if clear {
			v.YMarks = append(v.YMarks, chartTick{Pos: num(y), Label: axisMs(t.ms), Class: t.class})
			labelled = append(labelled, y)
		}
	}

	slotW := float64(chartPlotW) / float64(max(n, 1))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = (float64(i) + 0.5) * slotW
	}
	p50, p95, p99 := make([]float64, n), make([]float64, n), make([]float64, n)
	for i, p := range c.Points {
		p50[i], p95[i], p99[i] = p.P50, p.P95, p.P99
	}
	// The plot is stretched sideways, so a dot would be an ellipse: no dot.
	v.Series = []series{
		newSeries("p99", xs, p99, ok, sc, false),
		newSeries("p50", xs, p50, ok, sc, false),
		newSeries("p95", xs, p95, ok, sc, false),
	}

	// Attempt counts as light bars on their own linear scale along the
	// bottom of the plot; the legend gives the maximum.
	v.MaxCount = Count(int64(maxCount))
	barZone := chartBarMax * (y1 - y0)
	barW := slotW * 0.6
	end := c.Start.Add(time.Duration(n) * step)
	for i, p := range c.Points {
		slotStart := c.Start.Add(time.Duration(i) * step)
		slotEnd := slotStart.Add(step)
		label := slotLabel(slotStart, step) + "–" + slotLabel(slotEnd, step)
		if !c.Now.IsZero() && !c.Now.Before(slotStart) && c.Now.Before(slotEnd) {
			label += " (in progress)"
		}
		row := chartRow{Time: label, Count: Count(int64(p.Count)), P50: Dash, P95: Dash, P99: Dash}
		title := label + " · no attempts"
		if ok[i] {
			h := math.Max(barZone*float64(p.Count)/float64(maxCount), 1)
			v.Bars = append(v.Bars, chartBar{X: num(xs[i] - barW/2), Y: num(y1 - h), W: num(barW), H: num(h)})
			row.P50, row.P95, row.P99 = Ms(p.P50), Ms(p.P95), Ms(p.P99)
			title = label + " · " + Count(int64(p.Count)) + " attempts · P50 " + row.P50 + " · P95 " + row.P95 + " · P99 " + row.P99
		}
		v.Rows = append(v.Rows, row)
		v.Slots = append(v.Slots, chartSlot{X: num(float64(i) * slotW), W: num(slotW), Title: title})
	}

	// Time axis: labels on round local times, as percentages of the width.
	// Every other label is "minor" and hidden on phones.
	span := end.Sub(c.Start)
	frac := func(t time.Time) float64 { return float64(t.Sub(c.Start)) / float64(span) }
	every := tickEvery(span)
	everyMin := int(every / time.Minute)
	t := c.Start.Truncate(time.Minute)
	if t.Before(c.Start) {
		t = t.Add(time.Minute)
	}
	for ; !t.After(end); t = t.Add(time.Minute) {
		mins := t.Hour()*60 + t.Minute()
		if (everyMin >= 1440 && mins != 0) || (everyMin < 1440 && mins%everyMin != 0) {
			continue
		}
		f := frac(t)
		if f > 0.97 {
			continue
		}
		label := t.Format("15:04")
		if every >= 24*time.Hour {
			label = t.Format("Jan 2")
		}
		tick := chartTick{Pos: num(f*100) + "%", Label: label}
		if len(v.XTicks)%2 == 1 {
			tick.Class = "minor"
		}
		v.XTicks = append(v.XTicks, tick)
		if len(v.XTicks) >= 48 {
			break // a window of months at minute steps: stop labelling
		}
	}
	if !c.Now.IsZero() && !c.Now.Before(c.Start) && !c.Now.After(end) {
		v.Now = &chartTick{Pos: num(frac(c.Now) * chartPlotW), Label: "now"}
	}

	v.Summary = "Latency over " + window + ": P95 " + trend(p95, ok) +
		"; latest P50 " + lastMs(p50, ok) + ", P99 " + lastMs(p99, ok) + "; " + Count(total) + " attempts"
	if c.Label != "" {
		v.Summary = c.Label + ": " + v.Summary
	}
	return v
}

func lastMs(vals []float64, ok []bool) string {
	for i := len(vals) - 1; i >= 0; i-- {
		if ok[i] {
			return Ms(vals[i])
		}
	}
	return Dash
}
