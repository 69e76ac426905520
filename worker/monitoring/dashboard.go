package monitoring

import (
	"encoding/json"
	"fmt"

	"github.com/hookline/hookline/worker/budget"
	"github.com/hookline/hookline/worker/latency"
)

// The dashboard's variables, as its queries use them.
const (
	jobVar      = `job=~"$job"`
	endpointVar = `endpoint=~"$endpoint"`
	rateWindow  = "$__rate_interval"
)

// Panel is one Grafana panel.
type Panel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"` // row, timeseries, stat, bargauge, table
	Title       string         `json:"title"`
	Description string         `json:"description,omitempty"`
	GridPos     GridPos        `json:"gridPos"`
	Datasource  *Datasource    `json:"datasource,omitempty"`
	Targets     []Target       `json:"targets,omitempty"`
	FieldConfig map[string]any `json:"fieldConfig,omitempty"`
	Options     map[string]any `json:"options,omitempty"`
	Collapsed   *bool          `json:"collapsed,omitempty"`
	Panels      []Panel        `json:"panels,omitempty"` // of a collapsed row
}

// GridPos places a panel on Grafana's 24-column grid.
type GridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// Datasource names the dashboard's Prometheus (its variable).
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one query of a panel.
type Target struct {
	RefID        string      `json:"refId"`
	Expr         string      `json:"expr"`
	LegendFormat string      `json:"legendFormat,omitempty"`
	Instant      bool        `json:"instant,omitempty"`
	Format       string      `json:"format,omitempty"`
	Datasource   *Datasource `json:"datasource,omitempty"`
}

var promDS = &Datasource{Type: "prometheus", UID: "${datasource}"}

// panelSpec is a panel before it is placed.
type panelSpec struct {
	typ, title, description, unit string
	w, h                          int
	targets                       []Target
	// thresholds are the values from which a panel turns orange, then red.
	thresholds []float64
	min, max   *float64
	stacked    bool
}

func q(expr, legend string) Target { return Target{Expr: expr, LegendFormat: legend} }

func ptr(f float64) *float64 { return &f }

// dashboardRows are the dashboard's rows and their panels, in order.
func dashboardRows() []struct {
	title  string
	panels []panelSpec
} {
	quantile := func(phi float64, m Metric, by string) string {
		return fmt.Sprintf("histogram_quantile(%g, sum by (%s) (rate(%s_bucket{%s}[%s])))", phi, by, m, jobVar, rateWindow)
	}
	return []struct {
		title  string
		panels []panelSpec
	}{
		{"Pipeline", []panelSpec{
			{typ: "timeseries", title: "Throughput", unit: "reqps", w: 12, h: 8, stacked: true,
				description: "Delivery attempts a second, by outcome (ok, transient, permanent, gone).",
				targets:     []Target{q(fmt.Sprintf("sum by (outcome) (rate(%s{%s}[%s]))", DeliveryAttempts, jobVar, rateWindow), "{{outcome}}")}},
			{typ: "timeseries", title: "Queue depth", unit: "short", w: 12, h: 8,
				description: "Deliveries by status: pending, failed (awaiting retry), in flight, dead.",
				targets:     []Target{q(fmt.Sprintf("max by (status) (%s{%s})", QueueDeliveries, jobVar), "{{status}}")}},
			{typ: "timeseries", title: "Oldest waiting delivery", unit: "s", w: 8, h: 8,
				description: fmt.Sprintf("Age of the oldest delivery waiting to be sent; past %s the dashboard and HooklineDeliveryLate call delivery late.", OldestPendingAlert),
				thresholds:  []float64{OldestPendingAlert.Seconds() / 2, OldestPendingAlert.Seconds()},
				targets:     []Target{q(fmt.Sprintf("max(%s{%s})", QueueOldestPending, jobVar), "oldest")}},
			{typ: "timeseries", title: "Dead letters a minute", unit: "short", w: 8, h: 8, stacked: true,
				description: "Deliveries that went dead, a minute, by the outcome of their last attempt.",
				thresholds:  []float64{DeadLettersPerMinute},
				targets:     []Target{q(fmt.Sprintf("sum by (outcome) (rate(%s{%s}[%s])) * 60", DeliveriesDead, jobVar, rateWindow), "{{outcome}}")}},
			{typ: "stat", title: "Dead letters, last hour", unit: "short", w: 8, h: 8,
				description: "Deliveries that went dead in the last hour and in the hour before; more than before is the dashboard's dead-letters-rising alert.",
				thresholds:  []float64{1, DeadCriticalPerHour},
				targets: []Target{q(fmt.Sprintf("max(%s{%s})", DeadLastHour, jobVar), "last hour"),
					q(fmt.Sprintf("max(%s{%s})", DeadPreviousHour, jobVar), "hour before")}},
		}},
		{"Latency", []panelSpec{
			{typ: "timeseries", title: "Attempt latency P50 / P95 / P99", unit: "s", w: 12, h: 8,
				description: "Duration of the attempts that reached the network, over all endpoints, from the workers' histograms.",
				thresholds:  []float64{latency.SlowP95.Seconds(), latency.CriticalP95.Seconds()},
				targets: []Target{q(quantile(0.5, DeliveryAttemptDuration, "le"), "P50"),
					q(quantile(0.95, DeliveryAttemptDuration, "le"), "P95"),
					q(quantile(0.99, DeliveryAttemptDuration, "le"), "P99")}},
			{typ: "timeseries", title: "Endpoint P95 (last 10 minutes)", unit: "s", w: 12, h: 8,
				description: fmt.Sprintf("Each endpoint's P95 over the last 10 minutes: over %s it is slow, over %s critical (its breaker opens sooner).", latency.SlowP95, latency.CriticalP95),
				thresholds:  []float64{latency.SlowP95.Seconds(), latency.CriticalP95.Seconds()},
				targets:     []Target{q(fmt.Sprintf(`max by (endpoint) (%s{%s, %s, window="10m"})`, EndpointLatencyP95, jobVar, endpointVar), "{{endpoint}}")}},
		}},
		{"Endpoints", []panelSpec{
			{typ: "timeseries", title: "Breaker states", unit: "short", w: 8, h: 8, stacked: true,
				description: "How many endpoints are in each breaker state.",
				targets:     []Target{q(fmt.Sprintf("count by (state) (max by (endpoint_id, state) (%s{%s}))", EndpointBreakerState, jobVar), "{{state}}")}},
			{typ: "table", title: "Breakers not closed", w: 8, h: 8,
				description: "Endpoints whose breaker is open, probing (half_open), paused or disabled.",
				targets: []Target{{Expr: fmt.Sprintf(`max by (endpoint_id, endpoint, state) (%s{%s, %s, state!="closed"})`, EndpointBreakerState, jobVar, endpointVar),
					Instant: true, Format: "table"}}},
			{typ: "bargauge", title: "Failure budget used", unit: "percentunit", w: 8, h: 8, min: ptr(0), max: ptr(1),
				description: "How much of its failure budget each endpoint has used; at 100 % it is disabled. Warnings at 50, 70 and 90 %.",
				thresholds:  budgetThresholds(),
				targets:     []Target{{Expr: fmt.Sprintf("sort_desc(max by (endpoint) (%s{%s, %s}))", EndpointFailureBudget, jobVar, endpointVar), LegendFormat: "{{endpoint}}", Instant: true}}},
		}},
		{"Workers and database", []panelSpec{
			{typ: "stat", title: "Live workers", unit: "short", w: 4, h: 8,
				description: "Worker replicas with a recent heartbeat.",
				targets:     []Target{q(fmt.Sprintf("max(%s{%s})", WorkersLive, jobVar), "workers")}},
			{typ: "stat", title: "Database", unit: "short", w: 4, h: 8,
				description: "1 when every replica reads its metrics from PostgreSQL.",
				targets:     []Target{q(fmt.Sprintf("min(%s{%s})", DatabaseUp, jobVar), "up")}},
			{typ: "timeseries", title: "Claims a second", unit: "reqps", w: 8, h: 8,
				description: "Deliveries each replica claims a second.",
				targets:     []Target{q(fmt.Sprintf("sum by (instance) (rate(%s{%s}[%s]))", DeliveriesClaimed, jobVar, rateWindow), "{{instance}}")}},
			{typ: "timeseries", title: "Claim and completion P95", unit: "s", w: 8, h: 8,
				description: "Duration of one claim statement and of one completion transaction.",
				targets: []Target{q(quantile(0.95, ClaimDuration, "le"), "claim"),
					q(quantile(0.95, FlushDuration, "le"), "completion")}},
			{typ: "timeseries", title: "Process", unit: "short", w: 12, h: 8,
				description: "Goroutines and resident memory (MiB) of each replica.",
				targets: []Target{q(fmt.Sprintf("go_goroutines{%s}", jobVar), "goroutines {{instance}}"),
					q(fmt.Sprintf("process_resident_memory_bytes{%s} / 1048576", jobVar), "MiB {{instance}}")}},
			{typ: "timeseries", title: "Retention and NOTIFY", unit: "short", w: 12, h: 8,
				description: "Age in hours of the oldest delivered delivery kept, and how full PostgreSQL's NOTIFY queue is (0 to 1).",
				targets: []Target{q(fmt.Sprintf("max(%s{%s}) / 3600", RetentionOldestDelivered, jobVar), "oldest delivered (h)"),
					q(fmt.Sprintf("max(%s{%s})", NotifyQueueUsage, jobVar), "NOTIFY queue")}},
		}},
	}
}

// Panels are the dashboard's panels, placed: a row, then its panels left
// to right, wrapping at 24 columns.
func Panels() []Panel {
	var out []Panel
	id, y := 1, 0
	for _, row := range dashboardRows() {
		out = append(out, Panel{ID: id, Type: "row", Title: row.title, GridPos: GridPos{H: 1, W: 24, X: 0, Y: y}, Collapsed: new(bool)})
		id, y = id+1, y+1
		x, rowH := 0, 0
		for _, s := range row.panels {
			if x+s.w > 24 {
				x, y, rowH = 0, y+rowH, 0
			}
			p := Panel{ID: id, Type: s.typ, Title: s.title, Description: s.description,
				GridPos: GridPos{H: s.h, W: s.w, X: x, Y: y}, Datasource: promDS, FieldConfig: fieldConfig(s)}
			for i, t := range s.targets {
				t.RefID = string(rune('A' + i))
				t.Datasource = promDS
				p.Targets = append(p.Targets, t)
			}
			switch s.typ {
			case "bargauge":
				p.Options = map[string]any{"orientation": "horizontal", "displayMode": "gradient", "showUnfilled": true}
			case "stat":
				p.Options = map[string]any{"reduceOptions": map[string]any{"calcs": []string{"lastNotNull"}}, "colorMode": "value"}
			case "timeseries":
				p.Options = map[string]any{"legend": map[string]any{"displayMode": "list", "placement": "bottom"}, "tooltip": map[string]any{"mode": "multi"}}
			}
			out = append(out, p)
			id, x, rowH = id+1, x+s.w, max(rowH, s.h)
		}
		y += rowH
	}
	return out
}

// budgetThresholds are the failure budget's warning levels as ratios.
func budgetThresholds() []float64 {
	out := make([]float64, len(budget.Levels))
	for i, l := range budget.Levels {
		out[i] = float64(l) / 100
	}
	return out
}

func fieldConfig(s panelSpec) map[string]any {
	colors := []string{"orange", "red"}
	if len(s.thresholds) == 3 {
		colors = []string{"yellow", "orange", "red"}
	}
	steps := []map[string]any{{"color": "green", "value": nil}}
	for i, v := range s.thresholds {
		steps = append(steps, map[string]any{"color": colors[min(i, len(colors)-1)], "value": v})
	}
	defaults := map[string]any{"thresholds": map[string]any{"mode": "absolute", "steps": steps}}
	if s.unit != "" {
		defaults["unit"] = s.unit
	}
	if s.min != nil {
		defaults["min"] = *s.min
	}
	if s.max != nil {
		defaults["max"] = *s.max
	}
	if s.typ == "timeseries" {
		custom := map[string]any{"fillOpacity": 10, "showPoints": "never"}
		if s.stacked {
			custom["stacking"] = map[string]any{"mode": "normal"}
		}
		if len(s.thresholds) > 0 {
			custom["thresholdsStyle"] = map[string]any{"mode": "dashed"}
		}
		defaults["custom"] = custom
	}
	return map[string]any{"defaults": defaults, "overrides": []any{}}
}

// Dashboard is the Grafana dashboard, as JSON to import (Dashboards →
// New → Import), with a Prometheus data source chosen at import.
func Dashboard() ([]byte, error) {
	variable := func(name, label, query string) map[string]any {
		return map[string]any{
			"name": name, "label": label, "type": "query", "datasource": promDS,
			"query":      map[string]any{"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
			"definition": query, "refresh": 2, "includeAll": true, "multi": true, "allValue": ".*",
			"current": map[string]any{"text": "All", "value": "$__all"}, "sort": 1,
		}
	}
	d := map[string]any{
		"uid": "hookline", "title": "hookline", "description": "Delivery, queue, latency, breakers and failure budgets of hookline; generated by: hookline monitoring grafana-dashboard",
		"tags": []string{"hookline"}, "editable": true, "schemaVersion": 39, "version": 1,
		"time": map[string]any{"from": "now-6h", "to": "now"}, "refresh": "30s", "timezone": "",
		"templating": map[string]any{"list": []map[string]any{
			{"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus", "current": map[string]any{}},
			variable("job", "Job", fmt.Sprintf("label_values(%s, job)", DatabaseUp)),
			variable("endpoint", "Endpoint", fmt.Sprintf("label_values(%s{%s}, endpoint)", EndpointBreakerState, jobVar)),
		}},
		"annotations": map[string]any{"list": []any{}},
		"panels":      Panels(),
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode dashboard: %w", err)
	}
	return append(b, '\n'), nil
}

// Queries are every PromQL expression the rules and the dashboard run, the
// dashboard's with its variables as Grafana leaves them.
func Queries() []string {
	var out []string
	for _, g := range Rules().Groups {
		for _, r := range g.Rules {
			out = append(out, r.Expr)
		}
	}
	for _, p := range Panels() {
		for _, t := range p.Targets {
			out = append(out, t.Expr)
		}
	}
	return out
}
