-- name: AttemptInsert :copyfrom
-- Appends attempts with COPY, one batch per completion flush (or rescue), in
-- the transaction that records their deliveries' outcome; never updated.
INSERT INTO delivery_attempts (
    delivery_id, endpoint_id, attempt_no, started_at, duration_ms, outcome,
    status_code, error_class, error, response_excerpt
) VALUES (
    @delivery_id, @endpoint_id, @attempt_no, @started_at, @duration_ms, @outcome,
    @status_code, @error_class, @error, @response_excerpt
);

-- name: AttemptListByEvent :many
-- Attempts of every delivery of one event, oldest first.
SELECT a.*
FROM delivery_attempts a
JOIN deliveries d ON d.id = a.delivery_id
WHERE d.event_id = @event_id
ORDER BY a.delivery_id, a.attempt_no, a.id;

-- name: AttemptPageByEndpoint :many
-- One page of an endpoint's attempts, newest first: those older than the
-- cursor (before_started_at, before_id) when one is given, failures only
-- when @failures_only, successes only when ok_only, started in [since,
-- until) and answered with status_code when given. Keyset paging over delivery_attempts_endpoint: a
-- page costs the same however far back it is, and attempts written
-- meanwhile never shift a page.
SELECT a.id, a.delivery_id, a.attempt_no, a.started_at, a.duration_ms, a.outcome, a.status_code,
       a.error_class, a.error, a.response_excerpt, d.event_id, d.status AS delivery_status
FROM delivery_attempts a
JOIN deliveries d ON d.id = a.delivery_id
WHERE a.endpoint_id = @endpoint_id
  AND (sqlc.narg('before_started_at')::timestamptz IS NULL
       OR (a.started_at, a.id) < (sqlc.narg('before_started_at')::timestamptz, sqlc.narg('before_id')::bigint))
  AND (NOT @failures_only::bool OR a.outcome <> 'ok')
  AND (NOT coalesce(sqlc.narg('ok_only')::bool, false) OR a.outcome = 'ok')
  AND (sqlc.narg('since')::timestamptz IS NULL OR a.started_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR a.started_at < sqlc.narg('until')::timestamptz)
  AND (sqlc.narg('status_code')::int IS NULL OR a.status_code = sqlc.narg('status_code')::int)
ORDER BY a.started_at DESC, a.id DESC
LIMIT @row_limit::int;

-- name: RetentionDeleteAttempts :execrows
-- Retention: deletes a batch of attempts started before the cutoff. Every
-- retention delete runs in small batches, each its own short transaction, so
-- delivery never waits behind one giant DELETE.
DELETE FROM delivery_attempts
WHERE id IN (SELECT id FROM delivery_attempts WHERE started_at < @before::timestamptz LIMIT @batch_size::int);
