-- Reads for the stats report, /metrics and alerts, kept by report (over deliveries and the latency caches).

-- name: PipelineStats :one
-- The article's one-row pipeline summary. Each figure reads a partial index
-- or the minute histograms, never the delivered history, so it stays cheap
-- with months of it. Throughput and failures of the last hour come from
-- the histograms (every attempt is in them within seconds). A backlog is
-- counted up to @count_cap rows a status and no further: an exact count
-- reads every row, 0.2 s a million on this project's machine, and the
-- metrics scrape, the overview (every 5 s) and the alert watch all read
-- this summary; a count that reaches the cap is replaced by an estimate
-- (QueueStatusEstimates, web/stats.go). The oldest waiting delivery is the
-- first entry of deliveries_waiting_created whose endpoint is enabled, not
-- the min() of a join, which read the whole backlog.
SELECT
    (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'pending' LIMIT @count_cap::bigint) c)::bigint AS pending,
    (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'failed' LIMIT @count_cap::bigint) c)::bigint AS awaiting_retry,
    -- In flight: probes leased in deliveries, and what the live workers
    -- hold in memory (claims write nothing; each worker's heartbeat says how
    -- many it holds, a few seconds stale). Those rows are still pending or
    -- awaiting retry in deliveries; the report takes them out of those.
    (SELECT count(*) FROM deliveries WHERE status = 'in_flight')::bigint AS leased,
    (SELECT coalesce(sum(in_flight), 0) FROM worker_heartbeats
      WHERE last_seen_at > coalesce(sqlc.narg('now')::timestamptz, now()) - interval '20 seconds')::bigint AS held,
    (SELECT coalesce(sum(in_flight_retries), 0) FROM worker_heartbeats
      WHERE last_seen_at > coalesce(sqlc.narg('now')::timestamptz, now()) - interval '20 seconds')::bigint AS held_retries,
    (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'dead' LIMIT @count_cap::bigint) c)::bigint AS dead,
    (SELECT count(*) FROM deliveries WHERE status = 'dead' AND dead_at >= coalesce(sqlc.narg('now')::timestamptz, now()) - interval '1 hour')::bigint AS dead_last_hour,
    (SELECT count(*) FROM deliveries WHERE status = 'dead' AND dead_at >= coalesce(sqlc.narg('now')::timestamptz, now()) - interval '2 hours'
                                                         AND dead_at < coalesce(sqlc.narg('now')::timestamptz, now()) - interval '1 hour')::bigint AS dead_previous_hour,
    (SELECT coalesce(sum(fail_count), 0) FROM latency_histograms
      WHERE resolution_seconds = 60 AND bucket_start >= coalesce(sqlc.narg('now')::timestamptz, now()) - interval '1 hour')::bigint AS failed_last_hour,
    (SELECT coalesce(sum(ok_count), 0) FROM latency_histograms
      WHERE resolution_seconds = 60 AND bucket_start >= coalesce(sqlc.narg('now')::timestamptz, now()) - interval '1 hour')::bigint AS ok_attempts_last_hour,
    (SELECT coalesce(sum(sum_ms) / NULLIF(sum(count), 0), 0) FROM latency_histograms
      WHERE resolution_seconds = 60 AND bucket_start >= coalesce(sqlc.narg('now')::timestamptz, now()) - interval '1 hour')::float8 AS avg_attempt_ms_last_hour,
    -- Deliveries held for a disabled endpoint wait by design (the endpoint
    -- page says so); the late-delivery figure is about the rest.
    coalesce((SELECT extract(epoch FROM coalesce(sqlc.narg('now')::timestamptz, now()) - d.created_at)
                FROM deliveries d
               WHERE d.status IN ('pending', 'failed')
                 AND d.endpoint_id IN (SELECT id FROM endpoints WHERE enabled)
               ORDER BY d.created_at
               LIMIT 1), 0)::float8 AS oldest_pending_seconds;

-- name: QueueStatusEstimates :many
-- The planner's estimate of the queue's rows by status: the share of each
-- status in the last ANALYZE's sample, times the rows the table holds now
-- (its tuples per page then, times its pages now, as the planner counts).
-- No rows before the table's first ANALYZE. For backlogs PipelineStats
-- stops counting; as fresh as autovacuum's last analysis of the queue,
-- which a growing backlog brings about often.
SELECT v.status::text AS status,
       (v.freq * c.reltuples / greatest(c.relpages, 1)
          * (pg_catalog.pg_relation_size(c.oid) / current_setting('block_size')::bigint))::bigint AS estimate
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN LATERAL (
    SELECT unnest(s.most_common_vals::text::text[]) AS status, unnest(s.most_common_freqs::float8[]) AS freq
    FROM pg_catalog.pg_stats s
    WHERE s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'status'
) v ON true
WHERE c.oid = 'deliveries_queue'::regclass AND c.reltuples >= 0;

-- name: RetentionOldestDelivered :one
-- Age of the oldest delivered delivery still kept (0 when none): it stays
-- about HOOKLINE_RETAIN_DELIVERED while retention keeps up, and grows past
-- it when retention falls behind. One probe of deliveries_delivered.
SELECT coalesce(extract(epoch FROM coalesce(sqlc.narg('now')::timestamptz, now()) - min(delivered_at)), 0)::float8 AS seconds
FROM deliveries
WHERE status = 'delivered';

-- name: StatsSlowEndpoints :many
-- Endpoints whose recent or 24 h P95 crosses the slow line (2 s), worst
-- first: latency rises before failures do.
SELECT e.id, e.name, p.name AS partner_name, h.state, h.p95_ms, h.sample_count,
       h.recent_p95_ms, h.recent_sample_count, h.consecutive_failures
FROM endpoint_health h
JOIN endpoints e ON e.id = h.endpoint_id
JOIN partners p ON p.id = e.partner_id
WHERE (h.recent_p95_ms > @slow_ms::float8 AND h.recent_sample_count >= @min_samples::bigint)
   OR (h.p95_ms > @slow_ms::float8 AND h.sample_count >= @min_samples::bigint)
ORDER BY greatest(coalesce(h.recent_p95_ms, 0), coalesce(h.p95_ms, 0)) DESC
LIMIT 100;

-- name: StatsDeadByEndpoint :many
-- Endpoints with dead letters in the last hour (the rising alert names them).
SELECT d.endpoint_id, e.name, count(*)::bigint AS dead
FROM deliveries d
JOIN endpoints e ON e.id = d.endpoint_id
WHERE d.status = 'dead' AND d.dead_at >= @since::timestamptz
GROUP BY d.endpoint_id, e.name
ORDER BY count(*) DESC
LIMIT 20;

-- name: StatsUnsentDead :many
-- Dead deliveries whose last attempt never reached the partner, per
-- endpoint: a payload missing a postback field, a refused destination, an
-- unusable request or secret, a send cut short, a lease that expired with
-- its worker. The latency histograms hold only attempts that were sent, so
-- failure counts, success rates and "last failure" add these. dead counts
-- the ones since @count_since, last_dead_at is the newest since @since (the
-- earlier of the two); one endpoint when endpoint_id is set. The class list
-- is written out, not a parameter, so that the planner can use the partial
-- index deliveries_dead_unsent, whose predicate repeats it.
SELECT endpoint_id,
       count(*) FILTER (WHERE dead_at >= @count_since::timestamptz)::bigint AS dead,
       max(dead_at)::timestamptz AS last_dead_at
FROM deliveries
WHERE status = 'dead' AND dead_at >= @since::timestamptz
  AND last_error_class IN ('missing_field', 'blocked_destination', 'invalid_request', 'signing', 'canceled', 'lease_expired')
  AND (sqlc.narg('endpoint_id')::bigint IS NULL OR endpoint_id = sqlc.narg('endpoint_id'))
GROUP BY endpoint_id;
