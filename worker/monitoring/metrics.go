// Package monitoring owns what hookline tells a monitoring stack: the name,
// type, help and labels of every metric it exports, the alert thresholds
// it shares with the dashboard's own alerts, and the Prometheus rules and
// Grafana dashboard generated from them.
//
// The worker (worker.NewMetrics) and the web server's queue collector
// register their metrics from the definitions here, and the rules and
// panels build their queries from the same values, so a renamed metric
// renames its alerts too; TestMetricsReferenced (package main) scrapes the
// registry the binary builds and fails on any name a rule or panel uses
// that the process does not export.
package monitoring

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookline/hookline/db"
)

// Kind is a metric's Prometheus type.
type Kind string

// The kinds hookline exports.
const (
	Counter   Kind = "counter"
	Gauge     Kind = "gauge"
	Histogram Kind = "histogram"
)

// Metric is one metric family's definition.
type Metric struct {
	Name   string
	Kind   Kind
	Help   string
	Labels []string
}

// String is the metric's name, for building queries.
func (m Metric) String() string { return m.Name }

// CounterOpts, GaugeOpts and HistogramOpts are the options to register m
// with.
func (m Metric) CounterOpts() prometheus.CounterOpts {
	return prometheus.CounterOpts{Name: m.Name, Help: m.Help}
}

func (m Metric) GaugeOpts() prometheus.GaugeOpts {
	return prometheus.GaugeOpts{Name: m.Name, Help: m.Help}
}

func (m Metric) HistogramOpts(buckets []float64) prometheus.HistogramOpts {
	return prometheus.HistogramOpts{Name: m.Name, Help: m.Help, Buckets: buckets}
}

// Desc describes m for a collector that builds its metrics at scrape time.
func (m Metric) Desc() *prometheus.Desc {
	return prometheus.NewDesc(m.Name, m.Help, m.Labels, nil)
}

// QueueCountCap is how many deliveries of a status the pipeline summary
// counts before it takes PostgreSQL's estimate (web.pipelineRow).
const QueueCountCap = 100_000

// The worker's metrics: what one replica did.
var (
	DeliveryAttempts          = Metric{"hookline_delivery_attempts_total", Counter, "Delivery attempts by outcome (ok, transient, permanent, gone) and error class.", []string{"outcome", "error_class"}}
	DeliveryAttemptDuration   = Metric{"hookline_delivery_attempt_duration_seconds", Histogram, "Duration of delivery attempts that reached the network, by outcome.", []string{"outcome"}}
	DeliveriesDead            = Metric{"hookline_deliveries_dead_total", Counter, "Deliveries that went dead (dead letters), by the outcome of their last attempt: transient (attempts used up), permanent or gone.", []string{"outcome"}}
	ClaimDuration             = Metric{"hookline_claim_duration_seconds", Histogram, "Duration of one claim statement.", nil}
	DeliveriesClaimed         = Metric{"hookline_deliveries_claimed_total", Counter, "Deliveries claimed by this replica.", nil}
	FlushDuration             = Metric{"hookline_complete_flush_duration_seconds", Histogram, "Duration of one completion transaction (a batch of results).", nil}
	FlushErrors               = Metric{"hookline_complete_flush_errors_total", Counter, "Completion transactions that failed and were retried.", nil}
	RetentionPasses           = Metric{"hookline_retention_passes_total", Counter, "Retention passes by result: caught_up (everything past its retention deleted), behind (stopped at its budget with rows left; the next pass follows soon), skipped (another replica was running one) or failed.", []string{"result"}}
	RetentionDeletedRows      = Metric{"hookline_retention_deleted_rows_total", Counter, "Rows retention deleted, by table (attempt partitions dropped whole are not counted).", []string{"table"}}
	WorkerShardsOwned         = Metric{"hookline_worker_shards_owned", Gauge, "Shards of endpoints this replica owns and claims from (of 256; the live replicas divide them).", nil}
	BreakerReachabilityChecks = Metric{"hookline_breaker_reachability_checks_total", Counter, "Checks whether the partner of an endpoint whose breaker opened on connection failures accepts a TCP connection again, by result: accepted (its probe is sent now) or failed. Not attempts: nothing is sent.", []string{"result"}}
)

// The database's metrics, read at scrape time by any replica (web or
// worker), so each gives the same picture.
var (
	QueueDeliveries          = Metric{"hookline_queue_deliveries", Gauge, fmt.Sprintf("Deliveries by status (pending, failed = awaiting retry, in_flight, dead); past %d a status is PostgreSQL's estimate, from its last ANALYZE of the queue.", QueueCountCap), []string{"status"}}
	QueueOldestPending       = Metric{"hookline_queue_oldest_pending_seconds", Gauge, "Age of the oldest delivery waiting to be sent (0 when none).", nil}
	DeadLastHour             = Metric{"hookline_deliveries_dead_last_hour", Gauge, "Deliveries that went dead in the last hour (the pipeline summary's dead_last_hour).", nil}
	DeadPreviousHour         = Metric{"hookline_deliveries_dead_previous_hour", Gauge, "Deliveries that went dead in the hour before the last one.", nil}
	EndpointBreakerState     = Metric{"hookline_endpoint_breaker_state", Gauge, "1 for the endpoint's current breaker state (closed, open, half_open, paused, disabled).", []string{"endpoint_id", "endpoint", "state"}}
	EndpointLatencyP95       = Metric{"hookline_endpoint_latency_p95_seconds", Gauge, "Endpoint P95 attempt latency over the window (24h or 10m), from merged histograms.", []string{"endpoint_id", "endpoint", "window"}}
	EndpointLatencySamples   = Metric{"hookline_endpoint_latency_samples", Gauge, "Attempts the endpoint's P95 over the window (24h or 10m) is computed from.", []string{"endpoint_id", "endpoint", "window"}}
	EndpointFailureBudget    = Metric{"hookline_endpoint_failure_budget_used_ratio", Gauge, "How much of its failure budget an enabled endpoint has used (0 to 1; 1 disables it), for endpoints with auto-disable on.", []string{"endpoint_id", "endpoint"}}
	WorkersLive              = Metric{"hookline_workers_live", Gauge, "Worker replicas with a heartbeat in the last 20 seconds.", nil}
	DatabaseUp               = Metric{"hookline_database_up", Gauge, "1 when the database answered the metrics queries.", nil}
	NotifyQueueUsage         = Metric{"hookline_notify_queue_usage", Gauge, fmt.Sprintf("How full PostgreSQL's NOTIFY queue is (0 to 1, the whole cluster). From %g hookline stops sending wake-up NOTIFYs and workers find deliveries by polling; it fills only while a listening session does not read.", db.NotifyQueueLimit), nil}
	RetentionOldestDelivered = Metric{"hookline_retention_oldest_delivered_seconds", Gauge, "Age of the oldest delivered delivery still kept (0 when none): about HOOKLINE_RETAIN_DELIVERED while retention keeps up, more when it falls behind.", nil}
)

// All is every metric hookline defines, worker's then database's.
var All = []Metric{
	DeliveryAttempts, DeliveryAttemptDuration, DeliveriesDead, ClaimDuration, DeliveriesClaimed,
	FlushDuration, FlushErrors, RetentionPasses, RetentionDeletedRows, WorkerShardsOwned,
	BreakerReachabilityChecks, QueueDeliveries, QueueOldestPending, DeadLastHour, DeadPreviousHour, EndpointBreakerState,
	EndpointLatencyP95, EndpointLatencySamples, EndpointFailureBudget, WorkersLive, DatabaseUp,
	NotifyQueueUsage, RetentionOldestDelivered,
}

// The read replica's metrics, exported only by a web server with
// HOOKLINE_READ_DATABASE_URL set: kept out of All, which every process
// exports and the generated rules and dashboard may read.
var (
	ReadReplicaUp  = Metric{"hookline_read_replica_up", Gauge, "1 when the read replica (HOOKLINE_READ_DATABASE_URL) answered its last lag measurement as a standby; 0 sends dashboard reads to the primary.", nil}
	ReadReplicaLag = Metric{"hookline_read_replica_lag_seconds", Gauge, "How far behind the primary the read replica's data is: the age of the oldest primary WAL position, measured once a second, that it has not replayed (0 when it has replayed everything).", nil}
)

// Replica is the read replica's metrics (see ReadReplicaUp).
var Replica = []Metric{ReadReplicaUp, ReadReplicaLag}

// Thresholds the dashboard's alerts (web/stats.go) and the generated rules
// share.
const (
	// OldestPendingAlert: a delivery waiting longer is late.
	OldestPendingAlert = 30 * time.Minute
	// DeadCriticalPerHour dead letters in an hour make the rising alert
	// critical.
	DeadCriticalPerHour = 100
	// WorkerLiveFor is how recent a heartbeat must be for its worker to
	// count as live (the pipeline summary's in-flight figure uses the same).
	WorkerLiveFor = 20 * time.Second
)
