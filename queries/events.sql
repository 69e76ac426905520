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
-- search_keys/search_values are the payload's search keys, extracted by the
-- caller (NULL when it has none).
INSERT INTO events (id, type, payload, idempotency_key, partner_id, search_keys, search_values)
VALUES (@id, @type, @payload, sqlc.narg('idempotency_key'), sqlc.narg('partner_id'),
        sqlc.narg('search_keys')::text[], sqlc.narg('search_values')::text[])
ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id;

-- name: EventListByIdempotencyKeys :many
SELECT * FROM events WHERE idempotency_key = ANY(@keys::text[]);

-- name: EventPage :many
-- One page of the event log, newest first: events older than the cursor
-- (before_created_at, before_id) when one is given, so events stored
-- meanwhile never shift a page. q matches exactly the event id (q_id, when q
-- is a UUID), the idempotency key or any search-key value, each through its
-- own index. type matches exactly, or by prefix when it ends in "*".
-- endpoint_id, partner_id and status select events with at least one
-- delivery matching all of those given; partner_id alone also matches
-- events targeted at that partner that reached no endpoint. Reads only.
SELECT ev.id, ev.type, ev.idempotency_key, ev.partner_id, ev.created_at, ev.search_keys, ev.search_values
FROM events ev
WHERE (sqlc.narg('before_created_at')::timestamptz IS NULL
       OR (ev.created_at, ev.id) < (sqlc.narg('before_created_at')::timestamptz, sqlc.narg('before_id')::uuid))
  AND (sqlc.narg('since')::timestamptz IS NULL OR ev.created_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR ev.created_at < sqlc.narg('until')::timestamptz)
  AND (sqlc.narg('type')::text IS NULL OR ev.type = sqlc.narg('type')::text
       OR (right(sqlc.narg('type')::text, 1) = '*' AND starts_with(ev.type, left(sqlc.narg('type')::text, -1))))
  AND (sqlc.narg('q')::text IS NULL
       OR ev.id = sqlc.narg('q_id')::uuid
       OR ev.idempotency_key = sqlc.narg('q')::text
       OR ev.search_values @> ARRAY[sqlc.narg('q')::text])
  AND ((sqlc.narg('endpoint_id')::bigint IS NULL AND sqlc.narg('partner_id')::bigint IS NULL AND sqlc.narg('status')::text IS NULL)
       OR EXISTS (SELECT 1 FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
                  WHERE d.event_id = ev.id
                    AND (sqlc.narg('endpoint_id')::bigint IS NULL OR d.endpoint_id = sqlc.narg('endpoint_id')::bigint)
                    AND (sqlc.narg('partner_id')::bigint IS NULL OR e.partner_id = sqlc.narg('partner_id')::bigint)
                    AND (sqlc.narg('status')::text IS NULL OR d.status = sqlc.narg('status')::text))
       OR (sqlc.narg('endpoint_id')::bigint IS NULL AND sqlc.narg('status')::text IS NULL
           AND ev.partner_id = sqlc.narg('partner_id')::bigint))
ORDER BY ev.created_at DESC, ev.id DESC
LIMIT @row_limit::int;
