package monitoring

import (
	"bytes"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/hookline/hookline/worker/budget"
	"github.com/hookline/hookline/worker/latency"
)

// RuleFile is a Prometheus rules file.
type RuleFile struct {
	Groups []RuleGroup `yaml:"groups"`
}

// RuleGroup is a group of rules evaluated together.
type RuleGroup struct {
	Name  string `yaml:"name"`
	Rules []Rule `yaml:"rules"`
}

// Rule is one alerting rule. Kind (a label) names the dashboard alert the
// rule mirrors (web/stats.go: dead_letters_rising, oldest_pending,
// slow_endpoints) or, for the rest, what the rule watches.
type Rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         model.Duration    `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// Thresholds of the rules that have no counterpart in the dashboard.
const (
	// BreakerOpenFor: an open breaker probes after 5 minutes and doubles
	// its cooldown each failed probe; open for 15 has failed two probes.
	BreakerOpenFor = 15 * time.Minute
	// DeadLettersPerMinute sustained over DeadRateWindow is a dead-letter
	// rate worth a look before the hourly comparison notices.
	DeadLettersPerMinute = 1
	DeadRateWindow       = 10 * time.Minute
	// NoClaimsFor: a worker runs a claim every second (its poll) while a
	// sender is free, and a send times out within two minutes, so minutes
	// without a claim statement mean its claim loop is stuck.
	NoClaimsFor = 5 * time.Minute
)

// Failure budget levels the rules warn at: the second and third of the
// levels the endpoint's notifications use (70 and 90 %).
var (
	budgetWarn     = budget.Levels[1]
	budgetCritical = budget.Levels[2]
)

// byEndpoint keeps one series per endpoint whichever replica reported it:
// every replica reads the same database.
const byEndpoint = "job, endpoint_id, endpoint"

func rule(alert, kind, severity string, forD time.Duration, expr, summary, description string) Rule {
	return Rule{
		Alert: alert, Expr: expr, For: model.Duration(forD),
		Labels:      map[string]string{"severity": severity, "kind": kind},
		Annotations: map[string]string{"summary": summary, "description": description},
	}
}

// Rules are hookline's alerting rules: the dashboard's three alerts, then
// the breaker, the failure budget, the dead-letter rate, worker liveness
// and the database.
func Rules() RuleFile {
	deadRising := func(atLeast int) string {
		return fmt.Sprintf("max by (job) (%[1]s) >= %[3]d\nand\nmax by (job) (%[1]s) > max by (job) (%[2]s)", DeadLastHour, DeadPreviousHour, atLeast)
	}
	slow := func(threshold time.Duration) string {
		return fmt.Sprintf("max by (%s) (\n  %s > %g\n  and\n  %s >= %d\n)", byEndpoint, EndpointLatencyP95, threshold.Seconds(), EndpointLatencySamples, latency.MinSamples)
	}
	budgetUsed := func(level int) string {
		return fmt.Sprintf("max by (%s) (%s) >= %g", byEndpoint, EndpointFailureBudget, float64(level)/100)
	}
	const deadDesc = "{{ $value }} deliveries went dead in the last hour, more than the hour before: endpoints are failing permanently and nobody is replaying. See the dead letters page."
	return RuleFile{Groups: []RuleGroup{{Name: "hookline", Rules: []Rule{
		rule("HooklineDeadLettersRising", "dead_letters_rising", "warning", 5*time.Minute,
			deadRising(1),
			"Dead letters are rising", deadDesc),
		rule("HooklineDeadLettersRising", "dead_letters_rising", "critical", 5*time.Minute,
			deadRising(DeadCriticalPerHour),
			fmt.Sprintf("Dead letters are rising: %d or more in an hour", DeadCriticalPerHour), deadDesc),
		rule("HooklineDeliveryLate", "oldest_pending", "critical", 2*time.Minute,
			fmt.Sprintf("max by (job) (%s) > %g", QueueOldestPending, OldestPendingAlert.Seconds()),
			fmt.Sprintf("A delivery has waited more than %s", model.Duration(OldestPendingAlert)),
			"The oldest waiting delivery is {{ $value | humanizeDuration }} old: delivery is late (workers stuck, an endpoint blocked, or the queue grows faster than it drains)."),
		rule("HooklineEndpointSlow", "slow_endpoints", "warning", 5*time.Minute, slow(latency.SlowP95),
			fmt.Sprintf("Endpoint {{ $labels.endpoint }} answers slowly (P95 over %s)", model.Duration(latency.SlowP95)),
			"Endpoint {{ $labels.endpoint }} (id {{ $labels.endpoint_id }}) has a P95 of {{ $value | humanizeDuration }}: latency rises before failures do."),
		rule("HooklineEndpointSlow", "slow_endpoints", "critical", 5*time.Minute, slow(latency.CriticalP95),
			fmt.Sprintf("Endpoint {{ $labels.endpoint }} answers very slowly (P95 over %s)", model.Duration(latency.CriticalP95)),
			"Endpoint {{ $labels.endpoint }} (id {{ $labels.endpoint_id }}) has a P95 of {{ $value | humanizeDuration }}: each attempt holds a worker for most of its timeout, and its breaker now opens after half the failures."),
		rule("HooklineBreakerOpen", "breaker", "warning", BreakerOpenFor,
			fmt.Sprintf("max by (%s) (%s{state=~\"open|half_open\"}) > 0", byEndpoint, EndpointBreakerState),
			fmt.Sprintf("Endpoint {{ $labels.endpoint }}'s breaker has been open for %s", model.Duration(BreakerOpenFor)),
			"Endpoint {{ $labels.endpoint }} (id {{ $labels.endpoint_id }}) keeps failing its probes; its deliveries wait and will be sent once a probe succeeds."),
		rule("HooklineFailureBudget", "failure_budget", "warning", 0, budgetUsed(budgetWarn),
			fmt.Sprintf("Endpoint {{ $labels.endpoint }} has used %d %% of its failure budget", budgetWarn),
			"Endpoint {{ $labels.endpoint }} (id {{ $labels.endpoint_id }}) has used {{ $value | humanizePercentage }} of its failure budget; at 100 % it is disabled."),
		rule("HooklineFailureBudget", "failure_budget", "critical", 0, budgetUsed(budgetCritical),
			fmt.Sprintf("Endpoint {{ $labels.endpoint }} has used %d %% of its failure budget", budgetCritical),
			"Endpoint {{ $labels.endpoint }} (id {{ $labels.endpoint_id }}) has used {{ $value | humanizePercentage }} of its failure budget; at 100 % it is disabled."),
		rule("HooklineDeadLetterRate", "dead_letters", "warning", DeadRateWindow,
			fmt.Sprintf("sum by (job) (rate(%s[%s])) * 60 > %d", DeliveriesDead, model.Duration(DeadRateWindow), DeadLettersPerMinute),
			fmt.Sprintf("More than %d delivery a minute goes dead", DeadLettersPerMinute),
			"{{ $value | printf \"%.1f\" }} deliveries a minute go dead. See the dead letters page for the clusters and their diagnosis."),
		rule("HooklineNoLiveWorker", "liveness", "critical", 2*time.Minute,
			fmt.Sprintf("max by (job) (%s) == 0", WorkersLive),
			"No hookline worker is running",
			fmt.Sprintf("No worker wrote a heartbeat in the last %s: nothing is delivered.", model.Duration(WorkerLiveFor))),
		rule("HooklineWorkerNotClaiming", "liveness", "critical", NoClaimsFor,
			fmt.Sprintf("max by (job, instance) (rate(%s_count[%s])) == 0", ClaimDuration, model.Duration(NoClaimsFor)),
			"Worker {{ $labels.instance }} claims nothing",
			"Worker {{ $labels.instance }} ran no claim in minutes (it looks every second while a sender is free, and sends time out): it owns no shard, lost its database session, or its claim loop is stuck."),
		rule("HooklineDatabaseDown", "database", "critical", time.Minute,
			fmt.Sprintf("min by (job, instance) (%s) == 0", DatabaseUp),
			"hookline cannot reach its database",
			"{{ $labels.instance }} could not read its metrics from PostgreSQL: ingest answers 503 and nothing is delivered."),
	}}}}
}

// RulesYAML is Rules as a rules file, ready for Prometheus's rule_files.
func RulesYAML() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# Prometheus alerting rules for hookline, generated by: hookline monitoring prometheus-rules\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(Rules()); err != nil {
		return nil, fmt.Errorf("encode rules: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode rules: %w", err)
	}
	return b.Bytes(), nil
}
