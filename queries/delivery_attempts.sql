-- name: AttemptListByEvent :many
-- Attempts of every delivery of one event, oldest first.
SELECT a.*
FROM delivery_attempts a
JOIN deliveries d ON d.id = a.delivery_id
WHERE d.event_id = @event_id
ORDER BY a.delivery_id, a.attempt_no, a.id;
