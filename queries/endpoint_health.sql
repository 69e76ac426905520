-- name: EndpointHealthCreate :exec
-- Every endpoint has exactly one health row, created with it.
INSERT INTO endpoint_health (endpoint_id) VALUES (@endpoint_id);

-- name: EndpointHealthGetForUpdate :one
-- Locks one endpoint's breaker for an operator action.
SELECT * FROM endpoint_health WHERE endpoint_id = @endpoint_id FOR UPDATE;

-- name: EndpointHealthSetBreaker :exec
-- Writes an operator's breaker action (pause, resume, force close),
-- computed by worker/breaker. Clears any Retry-After pause and probe.
UPDATE endpoint_health
SET state = @state, consecutive_failures = @consecutive_failures, opened_at = sqlc.narg('opened_at'),
    cooldown_seconds = @cooldown_seconds, paused = @paused, paused_until = NULL,
    probe_delivery_id = NULL, updated_at = now()
WHERE endpoint_id = @endpoint_id;

-- name: EndpointHealthBudgetReset :exec
-- Starts an endpoint's failure budget afresh (it was enabled again by an
-- operator), so the next failure does not disable it at once.
UPDATE endpoint_health
SET failed_deliveries = 0, first_failed_at = NULL, budget_warned = 0, updated_at = now()
WHERE endpoint_id = @endpoint_id;

-- name: EndpointBreakerStates :many
-- Every endpoint's breaker, cached P95 (with the samples behind it) and
-- failure budget, for /metrics. Reads only; one row per endpoint.
SELECT e.id, e.name, e.enabled, h.state, h.paused, h.p95_ms, h.recent_p95_ms, h.sample_count, h.recent_sample_count,
       e.disable_after_failures, h.failed_deliveries
FROM endpoints e
JOIN endpoint_health h ON h.endpoint_id = e.id
ORDER BY e.id;

-- name: EndpointHealthOpen :many
-- Open breakers no operator paused: the candidates for a probe, which
-- breaker.Policy.StartProbe decides.
SELECT endpoint_id, state, opened_at, cooldown_seconds, consecutive_failures, paused
FROM endpoint_health
WHERE state = 'open' AND NOT paused AND opened_at IS NOT NULL;

-- name: EndpointHealthStartProbes :many
-- Moves the given breakers to half_open, each only if it is still open since
-- the time read (compare-and-set: when replicas race, one UPDATE wins and
-- the others match no row).
UPDATE endpoint_health h
SET state = 'half_open', probe_delivery_id = NULL,
    opened_at = coalesce(sqlc.narg('now')::timestamptz, now()), updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM (SELECT unnest(@endpoint_ids::bigint[]) AS endpoint_id, unnest(@opened_ats::timestamptz[]) AS opened_at) r
WHERE h.endpoint_id = r.endpoint_id
  AND h.state = 'open'
  AND NOT h.paused
  AND h.opened_at = r.opened_at
RETURNING h.endpoint_id;

-- name: EndpointHealthRead :many
-- EndpointHealthLock's rows without the locks: a completion batch reads
-- first and locks only the endpoints its results change (see
-- Worker.applyBreaker). Same columns, so the row converts to
-- EndpointHealthLockRow.
SELECT h.*, e.failure_threshold, e.disable_after_failures, e.disable_after_hours, e.enabled
FROM endpoint_health h
JOIN endpoints e ON e.id = h.endpoint_id
WHERE h.endpoint_id = ANY(@endpoint_ids::bigint[])
ORDER BY h.endpoint_id;

-- name: EndpointHealthLock :many
-- Locks the health rows of the endpoints in a completion batch, in id order
-- (every writer locks in that order, so replicas cannot deadlock). With
-- the endpoint's failure budget: the streak is kept on the same row.
SELECT h.*, e.failure_threshold, e.disable_after_failures, e.disable_after_hours, e.enabled
FROM endpoint_health h
JOIN endpoints e ON e.id = h.endpoint_id
WHERE h.endpoint_id = ANY(@endpoint_ids::bigint[])
ORDER BY h.endpoint_id
FOR UPDATE OF h;

-- name: EndpointHealthWrite :exec
-- Writes breaker transitions computed by worker/breaker for many endpoints.
-- Arrays cannot carry NULL through sqlc's types, so the zero time (year 1)
-- stands for NULL.
UPDATE endpoint_health h
SET state                = u.state,
    consecutive_failures = u.consecutive_failures,
    opened_at            = NULLIF(u.opened_at, '0001-01-01 00:00:00+00'),
    cooldown_seconds     = u.cooldown_seconds,
    probe_delivery_id    = NULLIF(u.probe_delivery_id, 0),
    paused_until         = NULLIF(u.paused_until, '0001-01-01 00:00:00+00'),
    last_success_at      = NULLIF(u.last_success_at, '0001-01-01 00:00:00+00'),
    last_failure_at      = NULLIF(u.last_failure_at, '0001-01-01 00:00:00+00'),
    updated_at           = coalesce(sqlc.narg('now')::timestamptz, now())
FROM (SELECT unnest(@endpoint_ids::bigint[]) AS endpoint_id,
             unnest(@states::text[]) AS state,
             unnest(@consecutive_failures::int[]) AS consecutive_failures,
             unnest(@opened_ats::timestamptz[]) AS opened_at,
             unnest(@cooldown_seconds::int[]) AS cooldown_seconds,
             unnest(@probe_delivery_ids::bigint[]) AS probe_delivery_id,
             unnest(@paused_untils::timestamptz[]) AS paused_until,
             unnest(@last_success_ats::timestamptz[]) AS last_success_at,
             unnest(@last_failure_ats::timestamptz[]) AS last_failure_at) u
WHERE h.endpoint_id = u.endpoint_id;

-- name: EndpointHealthBudgetWrite :exec
-- Writes the failure-budget streaks computed by worker/budget for the
-- endpoints of a completion batch whose streak changed (a delivery died,
-- or a success ended a streak), under the locks EndpointHealthLock took.
-- The zero time stands for NULL.
UPDATE endpoint_health h
SET failed_deliveries = u.failed_deliveries,
    first_failed_at   = NULLIF(u.first_failed_at, '0001-01-01 00:00:00+00'),
    budget_warned     = u.budget_warned
FROM (SELECT unnest(@endpoint_ids::bigint[]) AS endpoint_id,
             unnest(@failed_deliveries::int[]) AS failed_deliveries,
             unnest(@first_failed_ats::timestamptz[]) AS first_failed_at,
             unnest(@budget_warned::int[]) AS budget_warned) u
WHERE h.endpoint_id = u.endpoint_id;

-- name: EndpointHealthSetLatency :exec
-- Caches each endpoint's rolling 24 h P50/P95/P99 and recent P95 (computed
-- from merged buckets). A negative value stands for NULL (no samples).
UPDATE endpoint_health h
SET p50_ms = NULLIF(u.p50_ms, -1), p95_ms = NULLIF(u.p95_ms, -1), p99_ms = NULLIF(u.p99_ms, -1),
    sample_count = u.sample_count, ok_count = u.ok_count,
    recent_p95_ms = NULLIF(u.recent_p95_ms, -1), recent_sample_count = u.recent_sample_count,
    stats_refreshed_at = coalesce(sqlc.narg('now')::timestamptz, now())
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
-- Clears the cached percentiles of endpoints not in @keep_ids: with no
-- attempt in the window they have none.
UPDATE endpoint_health
SET p50_ms = NULL, p95_ms = NULL, p99_ms = NULL, sample_count = 0, ok_count = 0,
    recent_p95_ms = NULL, recent_sample_count = 0, stats_refreshed_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE (sample_count > 0 OR recent_sample_count > 0) AND NOT (endpoint_id = ANY(@keep_ids::bigint[]));
