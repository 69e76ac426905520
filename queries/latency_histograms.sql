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
-- Stores merged histograms with their counters and quantiles, under the
-- locks LatencySlotsLock took.
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

-- name: RetentionDeleteHistograms :execrows
-- Retention: deletes a batch of histogram rows of the given resolutions
-- older than the cutoff (each group of resolutions has its own window),
-- found through latency_histograms_slot and deleted by their row
-- addresses, never hashed against a scan of the table (see
-- RetentionDeleteDelivered). A row a flush updates meanwhile has moved and
-- is left for the next batch.
DELETE FROM latency_histograms
WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM latency_histograms
    WHERE resolution_seconds = ANY(@resolutions::int[]) AND bucket_start < @before::timestamptz
    LIMIT @batch_size::int));
