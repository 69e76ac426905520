-- name: EndpointSetSendTraceparent :one
-- Writes whether an endpoint's attempts carry a traceparent header (create
-- and edit, after the main write, in the same transaction; migration
-- 00041). It changes nothing else.
UPDATE endpoints SET send_traceparent = @send_traceparent
WHERE id = @id
RETURNING *;
