-- name: EndpointSparklinesRebuild :exec
-- Rebuilds every endpoint's sparkline (@slots slots of @step_seconds from
-- start: latency.SparkSlots and latency.SparkStep) from the histograms of
-- that resolution, in one statement; endpoints without data in the window
-- lose theirs.
WITH series AS (
    SELECT a.endpoint_id,
           array_agg(coalesce(l.p50_ms, 0)::real ORDER BY g.slot) AS p50,
           array_agg(coalesce(l.p95_ms, 0)::real ORDER BY g.slot) AS p95,
           array_agg(coalesce(l.p99_ms, 0)::real ORDER BY g.slot) AS p99,
           array_agg(coalesce(l.count, 0)::int ORDER BY g.slot) AS counts
    FROM (SELECT DISTINCT h.endpoint_id
          FROM latency_histograms h
          JOIN endpoints e ON e.id = h.endpoint_id
          WHERE h.resolution_seconds = sqlc.arg(step_seconds)::int AND h.bucket_start >= sqlc.arg(start)::timestamptz) a
    CROSS JOIN generate_series(sqlc.arg(start)::timestamptz,
                               sqlc.arg(start)::timestamptz + make_interval(secs => sqlc.arg(step_seconds)::int * (sqlc.arg(slots)::int - 1)),
                               make_interval(secs => sqlc.arg(step_seconds)::int)) AS g (slot)
    LEFT JOIN latency_histograms l
           ON l.endpoint_id = a.endpoint_id AND l.resolution_seconds = sqlc.arg(step_seconds)::int AND l.bucket_start = g.slot
    GROUP BY a.endpoint_id
),
stale AS (
    DELETE FROM endpoint_sparklines WHERE endpoint_id NOT IN (SELECT endpoint_id FROM series)
)
INSERT INTO endpoint_sparklines (endpoint_id, start, p50, p95, p99, counts)
SELECT endpoint_id, sqlc.arg(start)::timestamptz, p50, p95, p99, counts FROM series
ON CONFLICT (endpoint_id) DO UPDATE
SET start = excluded.start, p50 = excluded.p50, p95 = excluded.p95, p99 = excluded.p99, counts = excluded.counts;

-- name: EndpointSparklines :many
-- The cached sparklines of the given endpoints (those a page shows).
SELECT * FROM endpoint_sparklines WHERE endpoint_id = ANY(@endpoint_ids::bigint[]);
