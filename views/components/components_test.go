package components_test

import (
	"bytes"
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"

	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/worker/latency"
)

func render(t *testing.T, c templ.Component) (*goquery.Document, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	html := buf.String()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return doc, html
}

func one(t *testing.T, doc *goquery.Document, sel string) *goquery.Selection {
	t.Helper()
	s := doc.Find(sel)
	if s.Length() != 1 {
		t.Fatalf("%s: found %d elements, want 1", sel, s.Length())
	}
	return s
}

func attr(t *testing.T, s *goquery.Selection, name string) string {
	t.Helper()
	v, ok := s.Attr(name)
	if !ok {
		t.Fatalf("missing attribute %s", name)
	}
	return v
}

// firstY returns the y of the first point of an SVG path "M x y ...".
func firstY(t *testing.T, d string) float64 {
	t.Helper()
	f := strings.Fields(strings.TrimPrefix(d, "M"))
	if len(f) < 2 {
		t.Fatalf("path %q has no point", d)
	}
	ys := f[1]
	if i := strings.IndexAny(ys, "LMlh"); i >= 0 {
		ys = ys[:i]
	}
	y, err := strconv.ParseFloat(ys, 64)
	if err != nil {
		t.Fatalf("path %q: %v", d, err)
	}
	return y
}

func TestThresholdsMatchLatencyFlags(t *testing.T) {
	if components.SlowMs != float64(latency.SlowP95.Milliseconds()) {
		t.Errorf("SlowMs = %v, latency.SlowP95 = %v", components.SlowMs, latency.SlowP95)
	}
	if components.CriticalMs != float64(latency.CriticalP95.Milliseconds()) {
		t.Errorf("CriticalMs = %v, latency.CriticalP95 = %v", components.CriticalMs, latency.CriticalP95)
	}
}

func hourly(vals ...float64) []components.SparkPoint {
	pts := make([]components.SparkPoint, len(vals))
	for i, v := range vals {
		if v < 0 {
			continue // a gap: Count 0
		}
		pts[i] = components.SparkPoint{P50: v / 2, P95: v, P99: v * 2, Count: 10}
	}
	return pts
}

func TestSparkline(t *testing.T) {
	t.Run("accessible name summarises P95", func(t *testing.T) {
		doc, _ := render(t, components.Sparkline(components.SparklineData{
			Label: "acme-orders", Points: hourly(38, 120, 4200, 3100),
		}))
		svg := one(t, doc, `svg[data-testid="sparkline"]`)
		want := "acme-orders, P95 over 24 h: 38 ms → 3.10 s, max 4.20 s"
		if got := attr(t, svg, "aria-label"); got != want {
			t.Errorf("aria-label = %q, want %q", got, want)
		}
		if got := svg.Find("title").Text(); got != want {
			t.Errorf("title = %q, want %q", got, want)
		}
		if got := attr(t, svg, "role"); got != "img" {
			t.Errorf("role = %q, want img", got)
		}
		if w, h := attr(t, svg, "width"), attr(t, svg, "height"); w != "120" || h != "28" {
			t.Errorf("size = %s×%s, want the default 120×28", w, h)
		}
		for _, s := range []string{"p50", "p95", "p99"} {
			if doc.Find(`path[data-series="`+s+`"]`).Length() != 1 {
				t.Errorf("no %s line", s)
			}
		}
	})

	t.Run("slots without attempts break the line", func(t *testing.T) {
		doc, _ := render(t, components.Sparkline(components.SparklineData{
			Points: hourly(40, 45, -1, -1, 50, 55, -1, 60),
		}))
		p95 := one(t, doc, `path[data-series="p95"]`)
		d := attr(t, p95, "d")
		if got := strings.Count(d, "M"); got != 3 {
			t.Errorf("path %q has %d subpaths, want 3", d, got)
		}
		if got := attr(t, p95, "data-segments"); got != "3" {
			t.Errorf("data-segments = %s, want 3", got)
		}
		if !strings.Contains(d, "h.1") {
			t.Errorf("path %q: a lone value must still be drawn as a dot", d)
		}
	})

	t.Run("no data at all", func(t *testing.T) {
		doc, _ := render(t, components.Sparkline(components.SparklineData{Points: hourly(-1, -1)}))
		if got := attr(t, one(t, doc, "svg"), "aria-label"); got != "P95 over 24 h: no data" {
			t.Errorf("aria-label = %q", got)
		}
		if doc.Find("path").Length() != 0 {
			t.Error("an empty sparkline draws no lines")
		}
	})

	t.Run("deterministic", func(t *testing.T) {
		d := components.SparklineData{Label: "x", Points: hourly(38, 120, -1, 4200, 3100), MaxMs: 9000}
		_, a := render(t, components.Sparkline(d))
		_, b := render(t, components.Sparkline(d))
		if a != b {
			t.Error("two renders of the same data differ")
		}
	})

	t.Run("thresholds appear only inside the scale", func(t *testing.T) {
		doc, _ := render(t, components.Sparkline(components.SparklineData{Points: hourly(40, 50)}))
		if n := doc.Find("line.guide").Length(); n != 0 {
			t.Errorf("a 100 ms scale has %d threshold guides, want 0", n)
		}
		doc, _ = render(t, components.Sparkline(components.SparklineData{Points: hourly(40, 50), MaxMs: 6000}))
		if n := doc.Find("line.guide").Length(); n != 2 {
			t.Errorf("a 6 s scale has %d threshold guides, want 2", n)
		}
	})
}

func TestSingleSparklineSharedScale(t *testing.T) {
	y := func(vals []float64, maxMs float64) float64 {
		doc, _ := render(t, components.SingleSparkline(components.SingleSparkData{Label: "P95", Values: vals, MaxMs: maxMs}))
		return firstY(t, attr(t, one(t, doc, "path"), "d"))
	}
	a := y([]float64{250, 30, 40}, 8000)
	b := y([]float64{250, 4000, 7000}, 8000)
	if a != b {
		t.Errorf("same value, same MaxMs: y %v and %v differ", a, b)
	}
	if c := y([]float64{250, 30, 40}, 300); c == a {
		t.Errorf("a different MaxMs must move the value (y %v)", c)
	}
	// Higher latency is higher on the chart: a smaller y.
	if lo, hi := y([]float64{20}, 8000), y([]float64{2000}, 8000); hi >= lo {
		t.Errorf("2 s at y %v is not above 20 ms at y %v", hi, lo)
	}
}

func TestSingleSparklineGapsAndTone(t *testing.T) {
	doc, _ := render(t, components.SingleSparkline(components.SingleSparkData{
		Label: "P99", Values: []float64{10, math.NaN(), 12, -1, 14, 15}, Tone: "p99", Width: 64, Height: 22,
	}))
	svg := one(t, doc, `svg[data-testid="sparkline"]`)
	if got := attr(t, svg, "aria-label"); got != "P99 over 24 h: 10 ms → 15 ms, max 15 ms" {
		t.Errorf("aria-label = %q", got)
	}
	if got := attr(t, svg, "viewBox"); got != "0 0 64 22" {
		t.Errorf("viewBox = %q", got)
	}
	p := one(t, doc, `path[data-series="p99"]`)
	if got := attr(t, p, "data-segments"); got != "3" {
		t.Errorf("data-segments = %s, want 3", got)
	}
	if !strings.Contains(attr(t, svg, "class"), "sparkline-p99") {
		t.Errorf("class = %q", attr(t, svg, "class"))
	}
}

func TestLatencyChart(t *testing.T) {
	start := time.Date(2026, 3, 13, 15, 0, 0, 0, time.UTC)
	now := start.Add(23*time.Hour + 42*time.Minute)
	vals := make([]float64, 24)
	for i := range vals {
		vals[i] = 40 * math.Pow(1.2, float64(i))
	}
	vals[5] = -1
	pts := hourly(vals...)

	doc, html := render(t, components.LatencyChart(components.ChartData{
		Label: "acme-orders", Start: start, Step: time.Hour, Points: pts, Now: now,
	}))
	one(t, doc, `figure[data-testid="latency-chart"]`)
	plot := one(t, doc, `svg[data-testid="chart-plot"]`)
	label := attr(t, plot, "aria-label")
	if !strings.HasPrefix(label, "acme-orders: Latency over 24 h: P95 40 ms → ") {
		t.Errorf("aria-label = %q", label)
	}
	if got := doc.Find(`[data-testid="chart-threshold"]`).Length(); got != 2 {
		t.Errorf("%d threshold lines, want slow and critical", got)
	}
	for _, want := range []string{">1 s<", ">10 s<", ">100 ms<", ">18:00<", ">00:00<"} {
		if !strings.Contains(html, want) {
			t.Errorf("missing axis label %s", want)
		}
	}
	if doc.Find(`[data-testid="chart-now"]`).Length() != 1 {
		t.Error("no marker for now")
	}
	if got := doc.Find(".chart-bar").Length(); got != 23 {
		t.Errorf("%d attempt bars, want 23 (one slot is empty)", got)
	}
	if got := attr(t, one(t, doc, `path[data-series="p95"]`), "data-segments"); got != "2" {
		t.Errorf("p95 segments = %s, want 2 around the empty slot", got)
	}
	rows := doc.Find(".chart-data tbody tr")
	if rows.Length() != 24 {
		t.Fatalf("%d data rows, want 24", rows.Length())
	}
	if got := rows.Eq(5).Find("td").Eq(2).Text(); got != "—" {
		t.Errorf("empty slot P50 = %q, want —", got)
	}
	if got := rows.Eq(23).Find("td").First().Text(); got != "14:00–15:00 (in progress)" {
		t.Errorf("last slot = %q", got)
	}
	if got := doc.Find(".chart-slot title").First().Text(); !strings.HasPrefix(got, "15:00–16:00 · 10 attempts · P50 20 ms") {
		t.Errorf("slot tooltip = %q", got)
	}
	if !strings.Contains(doc.Find(".chart-legend").Text(), "max 10 per slot") {
		t.Errorf("legend = %q", doc.Find(".chart-legend").Text())
	}

	t.Run("empty", func(t *testing.T) {
		doc, _ := render(t, components.LatencyChart(components.ChartData{Start: start, Step: time.Hour, Points: make([]components.SparkPoint, 24)}))
		one(t, doc, `[data-testid="chart-empty"]`)
		if doc.Find("svg").Length() != 0 {
			t.Error("an empty chart draws no SVG")
		}
	})
}

func TestBreakerBadge(t *testing.T) {
	now := time.Date(2026, 3, 14, 14, 42, 0, 0, time.UTC)
	probe := now.Add(3*time.Minute + 5*time.Second)
	past := now.Add(-time.Second)
	tests := []struct {
		name     string
		b        components.BreakerData
		text     string
		state    string
		tone     string
		titleHas string
	}{
		{"closed", components.BreakerData{State: "closed", Enabled: true}, "closed", "closed", "badge-ok", "delivering"},
		{"half open", components.BreakerData{State: "half_open", Enabled: true}, "half-open · probing", "half_open", "badge-warn", "probe"},
		{"open", components.BreakerData{State: "open", Enabled: true, NextProbe: &probe, Now: now}, "open · next probe in 3 min", "open", "badge-critical", "2026-03-14 14:45:05 UTC"},
		{"open, probe due", components.BreakerData{State: "open", Enabled: true, NextProbe: &past, Now: now}, "open · probe due", "open", "badge-critical", "held"},
		{"paused wins over state", components.BreakerData{State: "open", Enabled: true, Paused: true}, "paused", "paused", "badge-muted", "operator"},
		{"disabled wins over all", components.BreakerData{State: "closed", Paused: true, DisabledReason: "410 Gone"}, "disabled", "disabled", "badge-muted", "410 Gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, _ := render(t, components.BreakerBadge(tt.b))
			b := one(t, doc, `[data-testid="breaker-badge"]`)
			if got := b.Text(); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if got := attr(t, b, "data-state"); got != tt.state {
				t.Errorf("data-state = %q, want %q", got, tt.state)
			}
			if !b.HasClass(tt.tone) {
				t.Errorf("class = %q, want %s", attr(t, b, "class"), tt.tone)
			}
			if got := attr(t, b, "title"); !strings.Contains(got, tt.titleHas) {
				t.Errorf("title = %q, want it to mention %q", got, tt.titleHas)
			}
		})
	}
}

func TestLatencyFlag(t *testing.T) {
	for flag, tone := range map[string]string{"ok": "badge-ok", "slow": "badge-warn", "critical": "badge-critical", "": "badge-muted"} {
		doc, _ := render(t, components.LatencyFlag(flag))
		b := one(t, doc, `[data-testid="latency-flag"]`)
		if !b.HasClass(tone) {
			t.Errorf("flag %q: class %q, want %s", flag, attr(t, b, "class"), tone)
		}
	}
}

func TestStatusBadges(t *testing.T) {
	doc, _ := render(t, components.DeliveryStatus("dead"))
	if b := one(t, doc, `[data-testid="delivery-status"]`); !b.HasClass("badge-critical") || attr(t, b, "data-state") != "dead" {
		t.Errorf("dead: %q", attr(t, b, "class"))
	}
	for code, tone := range map[int]string{0: "badge-critical", 204: "badge-ok", 301: "badge-info", 429: "badge-warn", 503: "badge-critical"} {
		doc, _ := render(t, components.HTTPStatus(code))
		if b := one(t, doc, `[data-testid="http-status"]`); !b.HasClass(tone) {
			t.Errorf("HTTP %d: class %q, want %s", code, attr(t, b, "class"), tone)
		}
	}
}

func TestTile(t *testing.T) {
	doc, _ := render(t, components.Tile(components.TileData{ID: "tile-pending", Label: "Pending", Value: "12,408", Hint: "oldest 3 min", Tone: "warn", Href: "/deliveries?status=pending"}))
	a := one(t, doc, `a[data-testid="tile"]`)
	if attr(t, a, "id") != "tile-pending" || attr(t, a, "href") != "/deliveries?status=pending" || !a.HasClass("tile-warn") {
		t.Errorf("tile attributes: id=%q href=%q class=%q", attr(t, a, "id"), attr(t, a, "href"), attr(t, a, "class"))
	}
	if got := a.Find(`[data-testid="tile-value"]`).Text(); got != "12,408" {
		t.Errorf("value = %q", got)
	}
	doc, _ = render(t, components.Tile(components.TileData{Label: "Pending", Value: "0", Tone: "bogus"}))
	d := one(t, doc, `div[data-testid="tile"]`)
	if _, ok := d.Attr("id"); ok {
		t.Error("a tile without ID has no id attribute")
	}
	if !d.HasClass("tile-info") || doc.Find(".tile-hint").Length() != 0 {
		t.Errorf("class = %q; an unknown tone falls back to info, no hint without Hint", attr(t, d, "class"))
	}
}

func TestAlert(t *testing.T) {
	doc, _ := render(t, components.Alert(components.AlertData{
		Tone: "critical", Title: "Dead letters rising", Message: "37 in the last hour",
		Links: []components.Link{{Label: "Open", Href: "/dead-letters"}, {Label: "Replay", Href: "/dead-letters/replay"}},
	}))
	a := one(t, doc, `[data-testid="alert"]`)
	if attr(t, a, "role") != "alert" || attr(t, a, "data-tone") != "critical" || !a.HasClass("alert-critical") {
		t.Errorf("critical alert: role=%q class=%q", attr(t, a, "role"), attr(t, a, "class"))
	}
	if a.Find("a").Length() != 2 || attr(t, a.Find("a").Last(), "href") != "/dead-letters/replay" {
		t.Error("links missing")
	}
	doc, _ = render(t, components.Alert(components.AlertData{Tone: "warn", Title: "Slow"}))
	if got := attr(t, one(t, doc, `[data-testid="alert"]`), "role"); got != "status" {
		t.Errorf("warn alert role = %q, want status", got)
	}
}

func TestEmptyState(t *testing.T) {
	doc, _ := render(t, components.EmptyState("No dead letters", "Nothing failed for good.", &components.Link{Label: "Endpoints", Href: "/endpoints"}))
	e := one(t, doc, `[data-testid="empty-state"]`)
	if e.Find(".empty-title").Text() != "No dead letters" || attr(t, e.Find("a.btn"), "href") != "/endpoints" {
		t.Error("title or action missing")
	}
	doc, _ = render(t, components.EmptyState("Nothing", "", nil))
	if doc.Find("a").Length() != 0 || doc.Find(".empty-body").Length() != 0 {
		t.Error("no action and no body expected")
	}
}

func TestField(t *testing.T) {
	t.Run("error and help are described", func(t *testing.T) {
		doc, _ := render(t, components.Field(components.FieldData{
			Name: "url", Label: "URL", Type: "url", Value: "http://x", Required: true,
			Help: "https only", Error: "URL must use https.",
		}))
		f := one(t, doc, `[data-testid="field"]`)
		if !f.HasClass("field-invalid") || attr(t, f, "data-field") != "url" {
			t.Errorf("field class = %q", attr(t, f, "class"))
		}
		in := one(t, doc, "input")
		if attr(t, in, "id") != "field-url" || attr(t, in, "type") != "url" || attr(t, in, "value") != "http://x" {
			t.Errorf("input: %v", in.Nodes[0].Attr)
		}
		if attr(t, one(t, doc, "label"), "for") != "field-url" {
			t.Error("label is not tied to the input")
		}
		if got := attr(t, in, "aria-describedby"); got != "field-url-error field-url-help" {
			t.Errorf("aria-describedby = %q", got)
		}
		if attr(t, in, "aria-invalid") != "true" {
			t.Error("aria-invalid missing")
		}
		if _, ok := in.Attr("required"); !ok {
			t.Error("required missing")
		}
		if got := one(t, doc, "#field-url-error").Text(); got != "URL must use https." {
			t.Errorf("error = %q", got)
		}
		one(t, doc, "#field-url-help")
	})

	t.Run("valid field has no error attributes", func(t *testing.T) {
		doc, _ := render(t, components.Field(components.FieldData{ID: "ep-name", Name: "name", Label: "Name"}))
		in := one(t, doc, "input#ep-name")
		for _, a := range []string{"aria-invalid", "aria-describedby", "required"} {
			if _, ok := in.Attr(a); ok {
				t.Errorf("unexpected %s", a)
			}
		}
		if attr(t, in, "type") != "text" {
			t.Error("default type is text")
		}
	})

	t.Run("password is never echoed", func(t *testing.T) {
		doc, _ := render(t, components.Field(components.FieldData{Name: "password", Label: "Password", Type: "password", Value: "hunter2hunter2"}))
		if attr(t, one(t, doc, "input"), "value") != "" {
			t.Error("password value rendered")
		}
	})

	t.Run("number, select, textarea, checkbox", func(t *testing.T) {
		doc, _ := render(t, components.Field(components.FieldData{Name: "rate", Label: "Rate", Type: "number", Min: "1", Step: "1", Attrs: templ.Attributes{"inputmode": "numeric"}}))
		in := one(t, doc, "input")
		if attr(t, in, "min") != "1" || attr(t, in, "step") != "1" || attr(t, in, "inputmode") != "numeric" {
			t.Errorf("number input: %v", in.Nodes[0].Attr)
		}
		doc, _ = render(t, components.Field(components.FieldData{Name: "kind", Label: "Kind", Type: "select", Value: "postback",
			Options: []components.Option{{Value: "webhook", Label: "Webhook"}, {Value: "postback", Label: "Postback"}}}))
		if got := one(t, doc, "select#field-kind option[selected]").Text(); got != "Postback" {
			t.Errorf("selected = %q", got)
		}
		doc, _ = render(t, components.Field(components.FieldData{Name: "notes", Label: "Notes", Type: "textarea", Value: "<b>hi</b>"}))
		if got := one(t, doc, "textarea").Text(); got != "<b>hi</b>" {
			t.Errorf("textarea = %q", got)
		}
		doc, _ = render(t, components.Field(components.FieldData{Name: "enabled", Label: "Enabled", Type: "checkbox", Checked: true}))
		cb := one(t, doc, `input[type="checkbox"]`)
		if _, ok := cb.Attr("checked"); !ok || attr(t, cb, "value") != "true" {
			t.Errorf("checkbox: %v", cb.Nodes[0].Attr)
		}
	})
}

func TestFormErrorsAndCSRF(t *testing.T) {
	_, html := render(t, components.FormErrors(nil))
	if strings.TrimSpace(html) != "" {
		t.Errorf("FormErrors(nil) = %q, want nothing", html)
	}
	doc, _ := render(t, components.FormErrors([]string{"a", "b"}))
	box := one(t, doc, `[data-testid="form-errors"]`)
	if attr(t, box, "role") != "alert" || box.Find("li").Length() != 2 || attr(t, box, "id") != components.FormErrorsID {
		t.Error("form errors box")
	}
	doc, _ = render(t, components.CSRFField("tok"))
	in := one(t, doc, `input[type="hidden"]`)
	if attr(t, in, "name") != "csrf_token" || attr(t, in, "value") != "tok" {
		t.Errorf("csrf field: %v", in.Nodes[0].Attr)
	}
}

func TestCopyBox(t *testing.T) {
	doc, _ := render(t, components.CopyBox("secret-7", "whsec_abc", "Signing secret"))
	one(t, doc, `[data-testid="copybox"]`)
	code := one(t, doc, `code#secret-7`)
	if code.Text() != "whsec_abc" {
		t.Errorf("value = %q", code.Text())
	}
	btn := one(t, doc, "button[data-copy]")
	if attr(t, btn, "data-copy") != "secret-7" || attr(t, btn, "type") != "button" {
		t.Error("copy button does not point at the value")
	}
	if _, ok := btn.Attr("hidden"); !ok {
		t.Error("copy button must be hidden until the script enables it")
	}
	if attr(t, one(t, doc, "pre"), "aria-labelledby") != "secret-7-label" {
		t.Error("value is not labelled")
	}
}

func TestPageHeaderAndHelpers(t *testing.T) {
	ctx := templ.WithChildren(context.Background(), templ.Raw(`<a class="btn" href="/new">New</a>`))
	var buf bytes.Buffer
	if err := components.PageHeader("Endpoints", "All of them", []components.Link{{Label: "Overview", Href: "/"}}).Render(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	doc, _ := goquery.NewDocumentFromReader(&buf)
	if doc.Find("h1").Text() != "Endpoints" || doc.Find(".page-actions a.btn").Length() != 1 || doc.Find(`nav[aria-label="Breadcrumb"] a`).Length() != 1 {
		t.Error("page header")
	}

	now := time.Date(2026, 3, 14, 14, 42, 0, 0, time.UTC)
	doc, _ = render(t, components.RelTime(now.Add(-3*time.Minute), now))
	tm := one(t, doc, "time")
	if tm.Text() != "3 min ago" || attr(t, tm, "datetime") != "2026-03-14T14:39:00Z" || attr(t, tm, "title") != "2026-03-14 14:39:00 UTC" {
		t.Errorf("reltime: %q %v", tm.Text(), tm.Nodes[0].Attr)
	}
	doc, _ = render(t, components.Indicator("rows-loading"))
	if !one(t, doc, "#rows-loading").HasClass("htmx-indicator") {
		t.Error("indicator class")
	}
	doc, _ = render(t, components.TableWrap("Endpoints"))
	w := one(t, doc, `[data-testid="table-wrap"]`)
	if attr(t, w, "role") != "region" || attr(t, w, "aria-label") != "Endpoints" || attr(t, w, "tabindex") != "0" {
		t.Error("table wrap must be a focusable, labelled region")
	}
}

func TestSeriesValuesAndSparkCell(t *testing.T) {
	pts := hourly(40, -1, 60)
	got := components.SeriesValues(pts, "p99")
	if len(got) != 3 || got[0] != 80 || !math.IsNaN(got[1]) || got[2] != 120 {
		t.Errorf("SeriesValues p99 = %v", got)
	}
	if got := components.SeriesValues(pts, "p50"); got[0] != 20 {
		t.Errorf("SeriesValues p50 = %v", got)
	}
	v := 60.0
	doc, _ := render(t, components.SparkCell(&v, components.SingleSparkData{Label: "P95", Values: components.SeriesValues(pts, "p95"), MaxMs: 120}))
	cell := one(t, doc, `[data-testid="spark-cell"]`)
	if cell.Find(".spark-value").Text() != "60 ms" || cell.Find(`svg[data-testid="sparkline"]`).Length() != 1 {
		t.Errorf("spark cell = %q", cell.Text())
	}
}
