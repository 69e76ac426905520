-- Reads for the dead-letter page, kept by page; the replays that write deliveries are in deliveries.sql.

-- name: DeadLetterClusters :many
-- The dead letters since @since (a UTC hour: the tallies count by hour)
-- grouped by endpoint × error class × status code: the debugging dataset.
-- Counted from dead_letter_tallies and the changes not yet folded into it
-- (migration 00027), a row a cluster an hour, so it costs the same with a
-- thousand dead letters in the window as with millions. Payout at risk
-- sums a numeric (or numeric-string) top-level "payout" field of the
-- events; payout_currencies lists the distinct top-level "currency" values
-- of those events, and payout_unlabelled says whether some had none (then
-- the sum is raw). hours_with_dead and max_in_one_hour tell an outage burst
-- from a trickle; max_attempts (the endpoint's) says whether there were
-- retries at all. The first and last dead letter are two ends of
-- deliveries_dead_cluster; the primary error is the most common among the
-- cluster's newest 1,000.
WITH tally AS (
    SELECT t.endpoint_id, t.error_class, t.status_code, t.hour, t.currency, t.dead, t.attempts, t.payouts, t.payout
    FROM dead_letter_tallies t WHERE t.hour >= @since::timestamptz
    UNION ALL
    SELECT c.endpoint_id, c.error_class, c.status_code, c.hour, c.currency, c.dead, c.attempts, c.payouts, c.payout
    FROM dead_letter_tally_changes c WHERE c.hour >= @since::timestamptz
), hourly AS (
    SELECT endpoint_id, error_class, status_code, hour, sum(dead) AS dead
    FROM tally GROUP BY endpoint_id, error_class, status_code, hour
), currencies AS (
    SELECT endpoint_id, error_class, status_code, currency,
           sum(attempts) AS attempts, sum(payouts) AS payouts, sum(payout) AS payout
    FROM tally GROUP BY endpoint_id, error_class, status_code, currency
), clusters AS (
    SELECT h.endpoint_id, h.error_class, h.status_code, sum(h.dead)::bigint AS dead_count,
           (count(*) FILTER (WHERE h.dead > 0))::bigint AS hours_with_dead,
           max(h.dead)::bigint AS max_in_one_hour
    FROM hourly h GROUP BY h.endpoint_id, h.error_class, h.status_code
    HAVING sum(h.dead) > 0
), top AS (
    SELECT c.endpoint_id, e.name AS endpoint_name, p.name AS partner_name, e.enabled, e.disabled_reason,
           e.max_attempts, c.error_class, c.status_code, c.dead_count, c.hours_with_dead, c.max_in_one_hour
    FROM clusters c
    JOIN endpoints e ON e.id = c.endpoint_id
    JOIN partners p ON p.id = e.partner_id
    ORDER BY c.dead_count DESC, c.endpoint_id, c.error_class, c.status_code
    LIMIT 200
)
SELECT t.endpoint_id, t.endpoint_name, t.partner_name, t.enabled, t.disabled_reason,
       t.max_attempts, t.error_class, t.status_code, t.dead_count,
       -- Two ends of the cluster's range of deliveries_dead_cluster (as
       -- min() and max() in one LATERAL the planner read the whole range).
       coalesce((SELECT d.dead_at FROM deliveries d
                 WHERE d.status = 'dead' AND d.endpoint_id = t.endpoint_id
                   AND coalesce(d.last_error_class, '') = t.error_class AND coalesce(d.last_status_code, 0) = t.status_code
                   AND d.dead_at >= @since::timestamptz
                 ORDER BY d.dead_at LIMIT 1), @since::timestamptz)::timestamptz AS first_dead_at,
       coalesce((SELECT d.dead_at FROM deliveries d
                 WHERE d.status = 'dead' AND d.endpoint_id = t.endpoint_id
                   AND coalesce(d.last_error_class, '') = t.error_class AND coalesce(d.last_status_code, 0) = t.status_code
                   AND d.dead_at >= @since::timestamptz
                 ORDER BY d.dead_at DESC LIMIT 1), @since::timestamptz)::timestamptz AS last_dead_at,
       (cu.attempts / t.dead_count)::float8 AS avg_attempts,
       coalesce((SELECT mode() WITHIN GROUP (ORDER BY n.last_error)
                 FROM (SELECT coalesce(d.last_error, '') AS last_error FROM deliveries d
                       WHERE d.status = 'dead' AND d.endpoint_id = t.endpoint_id
                         AND coalesce(d.last_error_class, '') = t.error_class AND coalesce(d.last_status_code, 0) = t.status_code
                         AND d.dead_at >= @since::timestamptz
                       ORDER BY d.dead_at DESC LIMIT 1000) n), '')::text AS primary_error,
       cu.payout::float8 AS payout_at_risk,
       cu.currencies::text[] AS payout_currencies,
       cu.unlabelled::bool AS payout_unlabelled,
       t.hours_with_dead, t.max_in_one_hour
FROM top t
CROSS JOIN LATERAL (
    SELECT sum(c.attempts) AS attempts, coalesce(sum(c.payout), 0) AS payout,
           coalesce(array_agg(c.currency ORDER BY c.currency) FILTER (WHERE c.currency <> '' AND c.payouts > 0), '{}') AS currencies,
           coalesce(bool_or(c.currency = '' AND c.payouts > 0), false) AS unlabelled
    FROM currencies c
    WHERE c.endpoint_id = t.endpoint_id AND c.error_class = t.error_class AND c.status_code = t.status_code
) cu
ORDER BY t.dead_count DESC, t.endpoint_id, t.error_class, t.status_code;

-- name: DeadLetterTallyFold :one
-- Folds up to @max_rows tally changes into dead_letter_tallies (migration
-- 00027), in key order so that two replicas folding at once take their row
-- locks in the same order (and a change one of them deleted is skipped by
-- the other). Returns how many changes went in.
WITH folded AS (
    DELETE FROM dead_letter_tally_changes
    WHERE ctid = ANY (ARRAY(SELECT ctid FROM dead_letter_tally_changes LIMIT @max_rows::int))
    RETURNING *
), summed AS (
    SELECT endpoint_id, error_class, status_code, hour, currency,
           sum(dead) AS dead, sum(attempts) AS attempts, sum(payouts) AS payouts, sum(payout) AS payout
    FROM folded
    GROUP BY endpoint_id, error_class, status_code, hour, currency
), applied AS (
    INSERT INTO dead_letter_tallies AS t (endpoint_id, error_class, status_code, hour, currency, dead, attempts, payouts, payout)
    SELECT endpoint_id, error_class, status_code, hour, currency, dead, attempts, payouts, payout
    FROM summed
    ORDER BY endpoint_id, error_class, status_code, hour, currency
    ON CONFLICT (endpoint_id, error_class, status_code, hour, currency) DO UPDATE
    SET dead = t.dead + excluded.dead, attempts = t.attempts + excluded.attempts,
        payouts = t.payouts + excluded.payouts, payout = t.payout + excluded.payout
    RETURNING 1
)
SELECT count(*)::bigint FROM folded;

-- name: DeadLetterTallyPrune :execrows
-- Drops the tallies whose dead letters have all gone (replayed or deleted).
DELETE FROM dead_letter_tallies WHERE dead = 0;

-- name: DeadLetterClusterKeys :many
-- The clusters (endpoint × error class × status code) with a dead letter
-- since @since, for the alert watch: only one of them can be a cluster it
-- has not announced yet, and only then does it read the clusters' figures
-- (DeadLetterClusters). A range of deliveries_dead.
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
-- How many dead letters one cluster holds since a UTC hour: its row's
-- count, kept current on the page while a replay of the cluster runs. From
-- the tallies (migration 00027), as DeadLetterClusters counts.
SELECT coalesce(sum(x.dead), 0)::bigint FROM (
    SELECT t.dead FROM dead_letter_tallies t
    WHERE t.endpoint_id = @endpoint_id AND t.error_class = @error_class::text
      AND t.status_code = @status_code::int AND t.hour >= @since::timestamptz
    UNION ALL
    SELECT c.dead FROM dead_letter_tally_changes c
    WHERE c.endpoint_id = @endpoint_id AND c.error_class = @error_class::text
      AND c.status_code = @status_code::int AND c.hour >= @since::timestamptz
) x;

-- name: DeadLetterCountSince :one
-- How many dead letters an endpoint has since a time (shown before a bulk
-- replay is confirmed).
SELECT count(*)::bigint FROM deliveries
WHERE status = 'dead' AND endpoint_id = @endpoint_id AND dead_at >= @since::timestamptz;
