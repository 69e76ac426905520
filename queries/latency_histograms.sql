-- name: LatencySlotsEnsure :exec
-- Creates missing histogram rows so the flush can lock them. Inserted in key
-- order, so replicas flushing the same slots take the unique-index locks in
-- the same order and cannot deadlock.
INSERT INTO latency_histograms (endpoint_id, resolution_seconds, bucket_start)
SELECT k.endpoint_id, k.resolution_seconds, k.bucket_start
FROM (SELECT unnest(@endpoint_ids::bigint[]) AS endpoint_id,
             unnest(@resolutions::int[]) AS resolution_seconds,
             unnest(@bucket_starts::timestamptz[]) AS bucket_start) k
JOIN endpoints e ON e.id = k.endpoint_id
ORDER BY k.endpoint_id, k.resolution_seconds, k.bucket_start
ON CONFLICT DO NOTHING;

-- name: LatencySlotsLock :many
-- Reads and locks the rows a flush merges into (read-modify-write: the
-- bucket encoding is merged in Go).
SELECT h.endpoint_id, h.resolution_seconds, h.bucket_start, h.buckets
FROM latency_histograms h
JOIN (SELECT unnest(@endpoint_ids::bigint[]) AS endpoint_id,
             unnest(@resolutions::int[]) AS resolution_seconds,
             unnest(@bucket_starts::timestamptz[]) AS bucket_start) k
  ON k.endpoint_id = h.endpoint_id AND k.resolution_seconds = h.resolution_seconds AND k.bucket_start = h.bucket_start
ORDER BY h.endpoint_id, h.resolution_seconds, h.bucket_start
FOR UPDATE OF h;

-- name: LatencySlotsWrite :exec
-- Stores merged histograms with their counters and quantiles.
UPDATE latency_histograms h
SET count = u.count, ok_count = u.ok_count, fail_count = u.fail_count, sum_ms = u.sum_ms,
    p50_ms = u.p50_ms, p95_ms = u.p95_ms, p99_ms = u.p99_ms, buckets = u.buckets
FROM (SELECT unnest(@endpoint_ids::bigint[]) AS endpoint_id,
             unnest(@resolutions::int[]) AS resolution_seconds,
             unnest(@bucket_starts::timestamptz[]) AS bucket_start,
             unnest(@counts::bigint[]) AS count,
             unnest(@ok_counts::bigint[]) AS ok_count,
             unnest(@fail_counts::bigint[]) AS fail_count,
             unnest(@sums_ms::float8[]) AS sum_ms,
             unnest(@p50s_ms::float8[]) AS p50_ms,
             unnest(@p95s_ms::float8[]) AS p95_ms,
             unnest(@p99s_ms::float8[]) AS p99_ms,
             unnest(@buckets::bytea[]) AS buckets) u
WHERE h.endpoint_id = u.endpoint_id AND h.resolution_seconds = u.resolution_seconds AND h.bucket_start = u.bucket_start;

-- name: LatencySince :many
-- Every endpoint's histograms at one resolution since a time: hourly rows
-- for the rolling 24 h window, minute rows for the recent window.
SELECT endpoint_id, bucket_start, buckets
FROM latency_histograms
WHERE resolution_seconds = @resolution_seconds AND bucket_start >= @since::timestamptz AND count > 0
ORDER BY endpoint_id, bucket_start;

-- name: LatencyRange :many
-- One endpoint's histograms at one resolution over a time range (charts).
SELECT bucket_start, count, ok_count, fail_count, sum_ms, p50_ms, p95_ms, p99_ms, buckets
FROM latency_histograms
WHERE endpoint_id = @endpoint_id AND resolution_seconds = @resolution_seconds
  AND bucket_start >= @since::timestamptz AND bucket_start < @until::timestamptz
ORDER BY bucket_start;

-- name: EndpointHealthSetLatency :exec
-- Caches each endpoint's rolling 24 h P50/P95/P99 and recent P95 (computed
-- from merged buckets). A negative value stands for NULL (no samples).
UPDATE endpoint_health h
SET p50_ms = NULLIF(u.p50_ms, -1), p95_ms = NULLIF(u.p95_ms, -1), p99_ms = NULLIF(u.p99_ms, -1),
    sample_count = u.sample_count, ok_count = u.ok_count,
    recent_p95_ms = NULLIF(u.recent_p95_ms, -1), recent_sample_count = u.recent_sample_count,
    stats_refreshed_at = coalesce(sqlc.narg(now)::timestamptz, now())
FROM (SELECT unnest(@endpoint_ids::bigint[]) AS endpoint_id,
             unnest(@p50s_ms::float8[]) AS p50_ms,
             unnest(@p95s_ms::float8[]) AS p95_ms,
             unnest(@p99s_ms::float8[]) AS p99_ms,
             unnest(@sample_counts::bigint[]) AS sample_count,
             unnest(@ok_counts::bigint[]) AS ok_count,
             unnest(@recent_p95s_ms::float8[]) AS recent_p95_ms,
             unnest(@recent_sample_counts::bigint[]) AS recent_sample_count) u
WHERE h.endpoint_id = u.endpoint_id;

-- name: EndpointHealthClearLatency :exec
-- Endpoints with no attempt in the window have no percentiles.
UPDATE endpoint_health
SET p50_ms = NULL, p95_ms = NULL, p99_ms = NULL, sample_count = 0, ok_count = 0,
    recent_p95_ms = NULL, recent_sample_count = 0, stats_refreshed_at = coalesce(sqlc.narg(now)::timestamptz, now())
WHERE (sample_count > 0 OR recent_sample_count > 0) AND NOT (endpoint_id = ANY(@keep_ids::bigint[]));

-- name: EndpointHealthSetSparklines :exec
-- Rebuilds every endpoint's 24 h sparkline (96 slots of 15 min from
-- @start) from the 900 s histograms, in one statement; endpoints without
-- data in the window lose theirs.
WITH active AS (
    SELECT DISTINCT endpoint_id FROM latency_histograms
    WHERE resolution_seconds = 900 AND bucket_start >= @start::timestamptz
),
series AS (
    SELECT a.endpoint_id,
           array_agg(coalesce(l.p50_ms, 0)::real ORDER BY g.slot) AS p50,
           array_agg(coalesce(l.p95_ms, 0)::real ORDER BY g.slot) AS p95,
           array_agg(coalesce(l.p99_ms, 0)::real ORDER BY g.slot) AS p99,
           array_agg(coalesce(l.count, 0)::int ORDER BY g.slot) AS counts
    FROM active a
    CROSS JOIN generate_series(@start::timestamptz, sqlc.arg(start)::timestamptz + interval '15 minutes' * 95, interval '15 minutes') AS g (slot)
    LEFT JOIN latency_histograms l
           ON l.endpoint_id = a.endpoint_id AND l.resolution_seconds = 900 AND l.bucket_start = g.slot
    GROUP BY a.endpoint_id
)
UPDATE endpoint_health h
SET spark_start = CASE WHEN s.endpoint_id IS NULL THEN NULL ELSE @start::timestamptz END,
    spark_p50 = s.p50, spark_p95 = s.p95, spark_p99 = s.p99, spark_count = s.counts
FROM endpoint_health h2
LEFT JOIN series s ON s.endpoint_id = h2.endpoint_id
WHERE h.endpoint_id = h2.endpoint_id
  AND (s.endpoint_id IS NOT NULL OR h.spark_start IS NOT NULL);

-- name: LatencyBackfill :execrows
-- Writes invented history for the demo's endpoints, so sparklines have a
-- shape the moment the demo's dashboard opens. Only slots that ended before
-- the endpoint was created, only for an endpoint with no such slot yet, and
-- never over a row that exists: real data is never touched.
INSERT INTO latency_histograms
    (endpoint_id, resolution_seconds, bucket_start, count, ok_count, fail_count, sum_ms, p50_ms, p95_ms, p99_ms, buckets)
SELECT u.endpoint_id, u.resolution_seconds, u.bucket_start, u.count, u.ok_count, u.fail_count,
       u.sum_ms, u.p50_ms, u.p95_ms, u.p99_ms, u.buckets
FROM (SELECT unnest(@endpoint_ids::bigint[]) AS endpoint_id,
             unnest(@resolutions::int[]) AS resolution_seconds,
             unnest(@bucket_starts::timestamptz[]) AS bucket_start,
             unnest(@counts::bigint[]) AS count,
             unnest(@ok_counts::bigint[]) AS ok_count,
             unnest(@fail_counts::bigint[]) AS fail_count,
             unnest(@sums_ms::float8[]) AS sum_ms,
             unnest(@p50s_ms::float8[]) AS p50_ms,
             unnest(@p95s_ms::float8[]) AS p95_ms,
             unnest(@p99s_ms::float8[]) AS p99_ms,
             unnest(@buckets::bytea[]) AS buckets) u
JOIN endpoints e ON e.id = u.endpoint_id
WHERE u.bucket_start + make_interval(secs => u.resolution_seconds) <= e.created_at
  AND NOT EXISTS (SELECT 1 FROM latency_histograms h
                  WHERE h.endpoint_id = e.id
                    AND h.bucket_start + make_interval(secs => h.resolution_seconds) <= e.created_at)
ORDER BY u.endpoint_id, u.resolution_seconds, u.bucket_start
ON CONFLICT DO NOTHING;

-- name: LatencyPendingInsert :exec
-- Stores one completion batch's latency samples in the batch's own
-- transaction (see latency_pending). Append-only; merged later by
-- LatencyPendingTake.
INSERT INTO latency_pending (endpoint_ids, minutes, histograms)
VALUES (@endpoint_ids::bigint[], @minutes::timestamptz[], @histograms::bytea[]);

-- name: LatencyPendingTake :many
-- Deletes and returns the oldest pending sample batches for the flush to
-- merge into latency_histograms in the same transaction: if the merge
-- fails, the delete rolls back with it. SKIP LOCKED lets replicas flush at
-- once without merging a batch twice.
DELETE FROM latency_pending p
WHERE p.id IN (SELECT id FROM latency_pending ORDER BY id LIMIT @max_rows::int FOR UPDATE SKIP LOCKED)
RETURNING p.endpoint_ids, p.minutes, p.histograms;
