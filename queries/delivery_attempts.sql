-- name: AttemptListByEvent :many
-- Attempts of every delivery of one event, oldest first.
SELECT a.*
FROM delivery_attempts a
JOIN deliveries d ON d.id = a.delivery_id
WHERE d.event_id = @event_id
ORDER BY a.delivery_id, a.attempt_no, a.id;

-- name: AttemptListByEndpoint :many
-- An endpoint's most recent attempts, newest first, with their delivery.
SELECT a.id, a.delivery_id, a.attempt_no, a.started_at, a.duration_ms, a.outcome, a.status_code,
       a.error_class, a.error, a.response_excerpt, d.event_id, d.status AS delivery_status
FROM delivery_attempts a
JOIN deliveries d ON d.id = a.delivery_id
WHERE a.endpoint_id = @endpoint_id
ORDER BY a.started_at DESC, a.id DESC
LIMIT @row_limit::int;
