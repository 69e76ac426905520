-- name: EventGetByIdempotencyKey :one
SELECT * FROM events WHERE idempotency_key = @idempotency_key;

-- name: EventGet :one
SELECT * FROM events WHERE id = @id;

-- name: EventNotify :exec
-- Wakes the workers. Sent inside the ingest transaction, so it is delivered
-- only on commit and collapses to one notification per transaction.
SELECT pg_notify('hookline_deliveries', '');

-- name: EventInsertBatch :batchone
-- Stores events in one round trip. An idempotency key already used inserts
-- nothing and returns no row (pgx.ErrNoRows for that item): the caller
-- answers with the original event. ON CONFLICT waits for a concurrent insert
-- of the same key to commit, so two racing requests cannot both create it.
INSERT INTO events (id, type, payload, idempotency_key, partner_id)
VALUES (@id, @type, @payload, sqlc.narg('idempotency_key'), sqlc.narg('partner_id'))
ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id;

-- name: EventListByIdempotencyKeys :many
SELECT * FROM events WHERE idempotency_key = ANY(@keys::text[]);
