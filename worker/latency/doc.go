// Package latency owns hookline's delivery-latency telemetry: the log-bucket
// histogram that every attempt's duration is counted into, its compact
// binary form stored in the latency_histograms table, the in-memory Recorder
// that the delivery worker's senders feed and the flusher drains, the
// slow/critical classification of a P95, and the fixed-width series behind
// the dashboard sparklines.
//
// Every percentile hookline shows comes from merged bucket counts, never from
// averaging percentiles: a P99 of minute P99s is not the P99 of the hour.
// Buckets grow geometrically by Factor, so a reported quantile is within
// about 1 % of the exact value (PostgreSQL percentile_cont over the raw
// samples) for any distribution whose samples lie between Min and Max.
//
// The package is a pure leaf: it imports neither the database nor the worker
// loop, and every time is passed in by the caller.
package latency
