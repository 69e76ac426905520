-- Reads for the dead-letter page, kept by page; the replays that write deliveries are in deliveries.sql.

-- name: DeadLetterClusters :many
-- Groups dead deliveries of the last @since by endpoint × error class ×
-- status code: the debugging dataset. Payout at risk sums a numeric (or
-- numeric-string, at most 15 digits before the point, so no sum overflows)
-- top-level "payout" field of the events; payout_currencies
-- lists the distinct top-level "currency" values of those events, and
-- payout_unlabelled says whether some had none (then the sum is raw).
-- hours_with_dead and max_in_one_hour tell an outage burst from a trickle;
-- max_attempts (the endpoint's) says whether there were retries at all.
WITH dead AS (
    SELECT d.id, d.endpoint_id, coalesce(d.last_error_class, '') AS error_class,
           coalesce(d.last_status_code, 0) AS status_code, d.dead_at, d.attempt_count,
           coalesce(d.last_error, '') AS last_error, ev.payload->>'payout' AS payout,
           nullif(left(btrim(ev.payload->>'currency'), 12), '') AS currency
    FROM deliveries d
    JOIN events ev ON ev.id = d.event_id
    WHERE d.status = 'dead' AND d.dead_at >= @since::timestamptz
),
hourly AS (
    SELECT endpoint_id, error_class, status_code, date_trunc('hour', dead_at) AS hour, count(*) AS n
    FROM dead
    GROUP BY 1, 2, 3, 4
)
SELECT d.endpoint_id, e.name AS endpoint_name, p.name AS partner_name, e.enabled, e.disabled_reason,
       e.max_attempts, d.error_class, d.status_code,
       count(*)::bigint AS dead_count,
       min(d.dead_at)::timestamptz AS first_dead_at,
       max(d.dead_at)::timestamptz AS last_dead_at,
       avg(d.attempt_count)::float8 AS avg_attempts,
       (mode() WITHIN GROUP (ORDER BY d.last_error))::text AS primary_error,
       coalesce(sum(CASE WHEN d.payout ~ '^-?[0-9]{1,15}(\.[0-9]{1,9})?$' THEN d.payout::numeric END), 0)::float8 AS payout_at_risk,
       coalesce(array_agg(DISTINCT d.currency ORDER BY d.currency) FILTER (WHERE d.payout ~ '^-?[0-9]{1,15}(\.[0-9]{1,9})?$' AND d.currency IS NOT NULL), '{}')::text[] AS payout_currencies,
       coalesce(bool_or(d.currency IS NULL) FILTER (WHERE d.payout ~ '^-?[0-9]{1,15}(\.[0-9]{1,9})?$'), false)::bool AS payout_unlabelled,
       (SELECT count(*) FROM hourly h WHERE h.endpoint_id = d.endpoint_id AND h.error_class = d.error_class AND h.status_code = d.status_code)::bigint AS hours_with_dead,
       (SELECT max(h.n) FROM hourly h WHERE h.endpoint_id = d.endpoint_id AND h.error_class = d.error_class AND h.status_code = d.status_code)::bigint AS max_in_one_hour
FROM dead d
JOIN endpoints e ON e.id = d.endpoint_id
JOIN partners p ON p.id = e.partner_id
GROUP BY d.endpoint_id, e.name, p.name, e.enabled, e.disabled_reason, e.max_attempts, d.error_class, d.status_code
ORDER BY count(*) DESC, d.endpoint_id
LIMIT 200;

-- name: DeadLetterClusterKeys :many
-- The clusters (endpoint × error class × status code) with a dead letter
-- since @since, for the alert watch: only one of them can be a cluster it
-- has not announced yet, and only then does it read whole clusters
-- (DeadLetterClusters, seconds with hundreds of thousands of dead letters
-- in its hour). A range of deliveries_dead.
SELECT DISTINCT d.endpoint_id, coalesce(d.last_error_class, '')::text AS error_class,
       coalesce(d.last_status_code, 0)::int AS status_code
FROM deliveries d
WHERE d.status = 'dead' AND d.dead_at >= @since::timestamptz;

-- name: DeadLetterList :many
-- The dead deliveries of one cluster (newest first), for expanding it.
SELECT d.id, d.event_id, ev.type AS event_type, d.attempt_count, d.dead_at, d.last_error,
       d.last_status_code, d.replay_count
FROM deliveries d
JOIN events ev ON ev.id = d.event_id
WHERE d.status = 'dead'
  AND d.endpoint_id = @endpoint_id
  AND coalesce(d.last_error_class, '') = @error_class::text
  AND coalesce(d.last_status_code, 0) = @status_code::int
  AND d.dead_at >= @since::timestamptz
ORDER BY d.dead_at DESC
LIMIT @row_limit::int;

-- name: DeadLetterClusterCount :one
-- How many dead letters one cluster holds since a time: its row's count,
-- kept current on the page while a replay of the cluster runs.
SELECT count(*)::bigint FROM deliveries d
WHERE d.status = 'dead'
  AND d.endpoint_id = @endpoint_id
  AND coalesce(d.last_error_class, '') = @error_class::text
  AND coalesce(d.last_status_code, 0) = @status_code::int
  AND d.dead_at >= @since::timestamptz;

-- name: DeadLetterCountSince :one
-- How many dead letters an endpoint has since a time (shown before a bulk
-- replay is confirmed).
SELECT count(*)::bigint FROM deliveries
WHERE status = 'dead' AND endpoint_id = @endpoint_id AND dead_at >= @since::timestamptz;
