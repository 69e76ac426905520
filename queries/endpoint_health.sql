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

-- name: EndpointBreakerStates :many
-- Every endpoint's breaker and cached P95, for /metrics.
SELECT e.id, e.name, e.enabled, h.state, h.paused, h.p95_ms, h.recent_p95_ms, h.sample_count
FROM endpoints e
JOIN endpoint_health h ON h.endpoint_id = e.id
ORDER BY e.id;

-- name: EndpointHealthBudgetReset :exec
-- Starts an endpoint's failure budget afresh (it was enabled again by an
-- operator), so the next failure does not disable it at once.
UPDATE endpoint_health
SET failed_deliveries = 0, first_failed_at = NULL, budget_warned = 0, updated_at = now()
WHERE endpoint_id = @endpoint_id;
