-- name: EventInsertBatch :batchone
-- Stores events in one round trip. An idempotency key already used inserts
-- nothing and returns no row (pgx.ErrNoRows for that item): the caller
-- answers with the original event. ON CONFLICT waits for a concurrent insert
-- of the same key to commit, so two racing requests cannot both create it.
-- search_keys/search_values are the payload's search keys, extracted by the
-- caller (NULL when it has none). The key is taken in event_keys
-- (migration 00022) and the event stored only when it was. api_key_id is
-- the key that posted it (migration 00028); trace_context the ingest
-- request's trace context (NULL with traces off; migration 00041).
WITH taken AS (
    INSERT INTO event_keys (idempotency_key, event_id)
    SELECT sqlc.narg('idempotency_key')::text, @id::uuid
    WHERE sqlc.narg('idempotency_key')::text IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING event_id
)
INSERT INTO events (id, type, payload, idempotency_key, partner_id, search_keys, search_values, api_key_id,
                    trace_context)
SELECT @id::uuid, @type::text, @payload::json, sqlc.narg('idempotency_key')::text, sqlc.narg('partner_id')::bigint,
       sqlc.narg('search_keys')::text[], sqlc.narg('search_values')::text[], sqlc.narg('api_key_id')::bigint,
       sqlc.narg('trace_context')::text
WHERE sqlc.narg('idempotency_key')::text IS NULL OR EXISTS (SELECT 1 FROM taken)
RETURNING id;

-- name: EventInsertSet :batchmany
-- Stores an ingest's events in one statement (EventInsertBatch takes one
-- statement per event, and a statement's own start was most of an event's
-- cost; see worker/bench/performance.md). The arrays are parallel, one
-- element per event: an empty @keys element is no idempotency key (a key
-- is 1 to 255 characters), partner 0 is none and API key 0 is none (the
-- key that posted the event, migration 00028). An event's search keys
-- and values are the slice @search_counts long at @search_offsets of
-- @search_keys/@search_values (NULL when it has none). Returns the ids
-- inserted: an idempotency key used before, or earlier in the same set,
-- inserts nothing (ON CONFLICT waits for a concurrent insert of the same
-- key to commit). A value PostgreSQL refuses fails the whole set, without
-- saying which event: the caller then stores them one statement each
-- (EventInsertBatch) to find it. A batch (of one, see db.EventSet) so that
-- it travels with BEGIN through db.TxPipeline.SendBatch. The keys are
-- taken in event_keys first, in the set's order, and an event with a key
-- is stored only when its key was taken (migration 00022). @trace_context
-- is the ingest request's trace context, the same for every event of the
-- set (NULL with traces off; migration 00041).
WITH v AS (
    SELECT unnest(@ids::uuid[]) AS id, unnest(@types::text[]) AS type, unnest(@payloads::text[]) AS payload,
           unnest(@keys::text[]) AS key, unnest(@partner_ids::bigint[]) AS partner_id,
           unnest(@api_key_ids::bigint[]) AS api_key_id,
           unnest(@search_offsets::int[]) AS search_at, unnest(@search_counts::int[]) AS n_search,
           generate_subscripts(@ids::uuid[], 1) AS n
), taken AS (
    INSERT INTO event_keys (idempotency_key, event_id)
    SELECT v.key, v.id FROM v WHERE v.key <> '' ORDER BY v.n
    ON CONFLICT DO NOTHING
    RETURNING event_id
)
INSERT INTO events (id, type, payload, idempotency_key, partner_id, search_keys, search_values, api_key_id,
                    trace_context)
SELECT v.id, v.type, v.payload::json, NULLIF(v.key, ''), NULLIF(v.partner_id, 0),
       CASE WHEN v.n_search > 0 THEN (@search_keys::text[])[v.search_at + 1 : v.search_at + v.n_search] END,
       CASE WHEN v.n_search > 0 THEN (@search_values::text[])[v.search_at + 1 : v.search_at + v.n_search] END,
       NULLIF(v.api_key_id, 0),
       sqlc.narg('trace_context')::text
FROM v
WHERE v.key = '' OR v.id IN (SELECT event_id FROM taken)
ORDER BY v.n
RETURNING id;

-- name: NotificationEnqueue :exec
-- Hands one notification to a channel's endpoint through hookline's own
-- queue: an event of type hookline/<kind> (a type the API cannot take, so
-- no producer can post one) and its one delivery, which the worker signs,
-- sends, retries and breaks like any other. The caller sends EventNotify.
WITH ev AS (
    INSERT INTO events (id, type, payload, partner_id)
    SELECT @event_id::uuid, @type::text, @payload::json, e.partner_id
    FROM endpoints e WHERE e.id = @endpoint_id
    RETURNING id
)
INSERT INTO deliveries (event_id, endpoint_id, max_attempts)
SELECT ev.id, e.id, e.max_attempts FROM ev, endpoints e WHERE e.id = @endpoint_id;

-- name: EventNotify :exec
-- Wakes the workers to look at every endpoint. Sent inside the
-- transaction that queued or re-queued deliveries, so it is delivered only
-- on commit and collapses to one notification per transaction. Not sent
-- while PostgreSQL's NOTIFY queue is fuller than max_queue_usage
-- (db.NotifyQueueLimit), so a listener that stopped reading cannot make
-- the commit fail; the workers' poll finds the deliveries then.
SELECT pg_notify('hookline_deliveries', '')
WHERE pg_notification_queue_usage() < @max_queue_usage::float8;

-- name: NotifyQueueUsage :one
-- How full PostgreSQL's NOTIFY queue is, 0 to 1, for the whole cluster:
-- it fills only while some session listening in the cluster does not
-- read its notifications, and a transaction that notifies into a full
-- queue fails to commit.
SELECT pg_notification_queue_usage()::float8 AS usage;

-- name: EventGet :one
SELECT * FROM events WHERE id = @id;

-- name: EventGetForPartner :one
-- An event of one partner, for an API key bound to it: posted for the
-- partner, or with a delivery to one of its endpoints (as its portal sees
-- it, PortalEventGet). No row for an event of others only. Reads only.
SELECT ev.*
FROM events ev
WHERE ev.id = @id
  AND (ev.partner_id = @partner_id
       OR EXISTS (SELECT 1 FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
                  WHERE d.event_id = ev.id AND e.partner_id = @partner_id));

-- name: EventListByIdempotencyKeys :many
SELECT ev.* FROM event_keys k JOIN events ev ON ev.id = k.event_id
WHERE k.idempotency_key = ANY(@keys::text[]);

-- name: EventPage :many
-- One page of the event log, newest first: events older than the cursor
-- (before_created_at, before_id) when one is given, so events stored
-- meanwhile never shift a page. type matches exactly, or by prefix when it
-- ends in "*". A walk back over events_created. Filters on deliveries are
-- EventPageByDelivery, a search EventSearch. Reads only.
SELECT ev.id, ev.type, ev.idempotency_key, ev.partner_id, ev.created_at, ev.search_keys, ev.search_values
FROM events ev
WHERE (sqlc.narg('before_created_at')::timestamptz IS NULL
       OR (ev.created_at, ev.id) < (sqlc.narg('before_created_at')::timestamptz, sqlc.narg('before_id')::uuid))
  AND (sqlc.narg('since')::timestamptz IS NULL OR ev.created_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR ev.created_at < sqlc.narg('until')::timestamptz)
  AND (sqlc.narg('type')::text IS NULL OR ev.type = sqlc.narg('type')::text
       OR (right(sqlc.narg('type')::text, 1) = '*' AND starts_with(ev.type, left(sqlc.narg('type')::text, -1))))
ORDER BY ev.created_at DESC, ev.id DESC
LIMIT @row_limit::int;

-- name: EventPageByDelivery :many
-- EventPage restricted to events with at least one delivery matching all
-- of endpoint_id, partner_id (of its endpoint) and status that are given:
-- a walk down the log probing each event's deliveries
-- (deliveries_event_id_endpoint_id_key), fast when matches are common, as
-- delivered ones are (the only filter the web sends here; endpoints,
-- partners and the rarer statuses have EventPageByEndpoints and
-- EventPageByStatus). The partner is a subquery, not a join, so without
-- one the probe reads deliveries alone (a join to endpoints per probe made
-- the first page of delivered events cost 100-270 ms at 10 million events;
-- without it, 3 ms).
SELECT ev.id, ev.type, ev.idempotency_key, ev.partner_id, ev.created_at, ev.search_keys, ev.search_values
FROM events ev
WHERE (sqlc.narg('before_created_at')::timestamptz IS NULL
       OR (ev.created_at, ev.id) < (sqlc.narg('before_created_at')::timestamptz, sqlc.narg('before_id')::uuid))
  AND (sqlc.narg('since')::timestamptz IS NULL OR ev.created_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR ev.created_at < sqlc.narg('until')::timestamptz)
  AND (sqlc.narg('type')::text IS NULL OR ev.type = sqlc.narg('type')::text
       OR (right(sqlc.narg('type')::text, 1) = '*' AND starts_with(ev.type, left(sqlc.narg('type')::text, -1))))
  AND EXISTS (SELECT 1 FROM deliveries d
              WHERE d.event_id = ev.id
                AND (sqlc.narg('endpoint_id')::bigint IS NULL OR d.endpoint_id = sqlc.narg('endpoint_id')::bigint)
                AND (sqlc.narg('partner_id')::bigint IS NULL
                     OR d.endpoint_id IN (SELECT e.id FROM endpoints e WHERE e.partner_id = sqlc.narg('partner_id')::bigint))
                AND (sqlc.narg('status')::text IS NULL OR d.status = sqlc.narg('status')::text))
ORDER BY ev.created_at DESC, ev.id DESC
LIMIT @row_limit::int;

-- name: EventPageByEndpoints :many
-- EventPageByDelivery for a filter on endpoint_id or partner_id (with any
-- of status, type and time range): each chosen endpoint's deliveries are
-- walked newest first through deliveries_endpoint_log, taking at most a
-- page from each, and the events of the newest page of those are the page.
-- A delivery's created_at is its event's, so the endpoint index is in the
-- log's order and a rare endpoint costs as little as a busy one. The type
-- filter is checked per delivery, before the per-endpoint limit, so each
-- endpoint's page holds only matching events. Only the newest page of
-- the endpoints' pages is looked up in events (a partner with 10 endpoints
-- read 510 events for a page of 51: 200 ms with a cold cache), by id from
-- an array: as "id IN (subquery)" the planner could instead walk the whole
-- log newest first until it met them, which it did when the matches were
-- older than the newest events (7.6 s for a page awaiting retry behind a
-- million newer events; by id 2 ms). Reads only.
WITH chosen AS MATERIALIZED (
    SELECT l.created_at, l.event_id
    FROM endpoints e
    CROSS JOIN LATERAL (
        SELECT d.created_at, d.event_id
        FROM deliveries d
        WHERE d.endpoint_id = e.id
          AND (sqlc.narg('before_created_at')::timestamptz IS NULL
               OR (d.created_at, d.event_id) < (sqlc.narg('before_created_at')::timestamptz, sqlc.narg('before_id')::uuid))
          AND (sqlc.narg('since')::timestamptz IS NULL OR d.created_at >= sqlc.narg('since')::timestamptz)
          AND (sqlc.narg('until')::timestamptz IS NULL OR d.created_at < sqlc.narg('until')::timestamptz)
          AND (sqlc.narg('status')::text IS NULL OR d.status = sqlc.narg('status')::text)
          AND (sqlc.narg('type')::text IS NULL
               OR EXISTS (SELECT 1 FROM events t WHERE t.id = d.event_id
                          AND (t.type = sqlc.narg('type')::text
                               OR (right(sqlc.narg('type')::text, 1) = '*' AND starts_with(t.type, left(sqlc.narg('type')::text, -1))))))
        ORDER BY d.created_at DESC, d.event_id DESC
        LIMIT @row_limit::int
    ) l
    WHERE (sqlc.narg('endpoint_id')::bigint IS NULL OR e.id = sqlc.narg('endpoint_id')::bigint)
      AND (sqlc.narg('partner_id')::bigint IS NULL OR e.partner_id = sqlc.narg('partner_id')::bigint)
)
SELECT ev.id, ev.type, ev.idempotency_key, ev.partner_id, ev.created_at, ev.search_keys, ev.search_values
FROM events ev
WHERE ev.id = ANY (ARRAY(SELECT DISTINCT ON (c.created_at, c.event_id) c.event_id
                          FROM chosen c
                          ORDER BY c.created_at DESC, c.event_id DESC
                          LIMIT @row_limit::int))
ORDER BY ev.created_at DESC, ev.id DESC
LIMIT @row_limit::int;

-- name: EventPageByStatus :many
-- EventPageByDelivery for a status filter alone, for the statuses few
-- deliveries are in (pending, failed, in_flight, dead): their deliveries
-- are walked newest first (deliveries_waiting_created for pending,
-- deliveries_retry_log for failed, deliveries_dead_log for dead, the
-- in-flight set for in_flight)
-- rather than the whole log probed for them, which costs the whole log
-- when the queue is empty. An event with two matching deliveries appears
-- once. The events are looked up by id from an array, as in
-- EventPageByEndpoints (4.9 s → 2 ms for a page awaiting retry behind a
-- million newer events). Reads only.
SELECT ev.id, ev.type, ev.idempotency_key, ev.partner_id, ev.created_at, ev.search_keys, ev.search_values
FROM events ev
WHERE ev.id = ANY (ARRAY(
    SELECT DISTINCT ON (d.created_at, d.event_id) d.event_id
    FROM deliveries d
    WHERE d.status = @status::text
      AND (sqlc.narg('before_created_at')::timestamptz IS NULL
           OR (d.created_at, d.event_id) < (sqlc.narg('before_created_at')::timestamptz, sqlc.narg('before_id')::uuid))
      AND (sqlc.narg('since')::timestamptz IS NULL OR d.created_at >= sqlc.narg('since')::timestamptz)
      AND (sqlc.narg('until')::timestamptz IS NULL OR d.created_at < sqlc.narg('until')::timestamptz)
      AND (sqlc.narg('type')::text IS NULL
           OR EXISTS (SELECT 1 FROM events t WHERE t.id = d.event_id
                      AND (t.type = sqlc.narg('type')::text
                           OR (right(sqlc.narg('type')::text, 1) = '*' AND starts_with(t.type, left(sqlc.narg('type')::text, -1))))))
    ORDER BY d.created_at DESC, d.event_id DESC
    LIMIT @row_limit::int))
ORDER BY ev.created_at DESC, ev.id DESC
LIMIT @row_limit::int;

-- name: EventSearch :many
-- EventPageByDelivery for a search: the events whose id (q_id, when q is a
-- UUID), idempotency key or any search-key value is exactly q. The matches
-- are found first, each through its own index, in a materialized CTE: a
-- search matches a handful of events, and left to itself the planner would
-- rather walk the whole log newest first hoping to meet them (it cannot
-- know a search value is nearly unique). The delivery filter is then a
-- probe per match (a scalar subquery, never hashed over all deliveries).
WITH found AS MATERIALIZED (
    SELECT id, type, idempotency_key, partner_id, created_at, search_keys, search_values
    FROM events WHERE id = sqlc.narg('q_id')::uuid
    UNION
    SELECT id, type, idempotency_key, partner_id, created_at, search_keys, search_values
    FROM events WHERE id = (SELECT event_id FROM event_keys WHERE idempotency_key = @q::text)
    UNION
    SELECT id, type, idempotency_key, partner_id, created_at, search_keys, search_values
    FROM events WHERE search_values @> ARRAY[@q::text]
)
SELECT ev.id, ev.type, ev.idempotency_key, ev.partner_id, ev.created_at, ev.search_keys, ev.search_values
FROM found ev
WHERE (sqlc.narg('before_created_at')::timestamptz IS NULL
       OR (ev.created_at, ev.id) < (sqlc.narg('before_created_at')::timestamptz, sqlc.narg('before_id')::uuid))
  AND (sqlc.narg('since')::timestamptz IS NULL OR ev.created_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR ev.created_at < sqlc.narg('until')::timestamptz)
  AND (sqlc.narg('type')::text IS NULL OR ev.type = sqlc.narg('type')::text
       OR (right(sqlc.narg('type')::text, 1) = '*' AND starts_with(ev.type, left(sqlc.narg('type')::text, -1))))
  AND ((sqlc.narg('endpoint_id')::bigint IS NULL AND sqlc.narg('partner_id')::bigint IS NULL AND sqlc.narg('status')::text IS NULL)
       OR (SELECT true FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
           WHERE d.event_id = ev.id
             AND (sqlc.narg('endpoint_id')::bigint IS NULL OR d.endpoint_id = sqlc.narg('endpoint_id')::bigint)
             AND (sqlc.narg('partner_id')::bigint IS NULL OR e.partner_id = sqlc.narg('partner_id')::bigint)
             AND (sqlc.narg('status')::text IS NULL OR d.status = sqlc.narg('status')::text)
           LIMIT 1))
ORDER BY ev.created_at DESC, ev.id DESC
LIMIT @row_limit::int;

-- name: EndpointFilterPreviewEvents :many
-- The latest events of the given types (patterns as in event_types; an
-- empty list means every type), newest first, for the endpoint form's
-- filter preview. Only the newest @scan_rows events are looked at (a walk
-- down the primary key: ids are UUIDv7, in time order), so a type that is
-- rare costs a bounded scan, never the whole table.
SELECT r.id, r.type, r.payload, r.created_at
FROM (SELECT ev.id, ev.type, ev.payload, ev.created_at
      FROM events ev ORDER BY ev.id DESC LIMIT @scan_rows) r
WHERE hookline_subscribes(@event_types::text[], r.type)
ORDER BY r.id DESC
LIMIT @max_rows;

-- name: RetentionDeleteEventsOf :one
-- Retention: deletes the events among ids older than the cutoff that have
-- no delivery left, with their idempotency keys: an event goes with its
-- last delivery, found without a scan. Returns how many went.
WITH gone AS (
    DELETE FROM events ev
    WHERE ev.id = ANY(@ids::uuid[])
      AND ev.created_at < @before::timestamptz
      AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = ev.id OFFSET 0) -- as in RetentionSweepEvents
    RETURNING ev.id
), keys AS (
    DELETE FROM event_keys k WHERE k.event_id IN (SELECT id FROM gone)
)
SELECT count(*)::bigint FROM gone;

-- name: RetentionSweepEvents :one
-- Retention: deletes the events older than the cutoff with no delivery
-- (none subscribed, or a filter took none), and their keys, a batch at a time in log order
-- after the cursor (after_created_at, after_id): the caller moves it to the last
-- event scanned, so events kept for their dead letters are passed over
-- once, not rescanned by every batch (at 10 million events, a sweep from
-- the start each batch fell from 80,000 to 45,000 events a pass as kept
-- ones piled up at its front). Returns how many were deleted and scanned,
-- and the new cursor (the last event scanned; the old one when none was).
WITH scan AS (
    SELECT id, created_at FROM events
    WHERE created_at < @before::timestamptz
      AND (created_at, id) > (@after_created_at::timestamptz, @after_id::uuid)
    ORDER BY created_at, id
    LIMIT @batch_size::int
), gone AS (
    DELETE FROM events ev
    USING scan s
    -- OFFSET 0 keeps the check a lookup per event; as an anti-join the
    -- planner sorted or hashed every delivered partition for each batch.
    WHERE ev.id = s.id AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = ev.id OFFSET 0)
    RETURNING ev.id
), keys AS (
    DELETE FROM event_keys k WHERE k.event_id IN (SELECT id FROM gone)
), last AS (
    SELECT created_at, id FROM scan ORDER BY created_at DESC, id DESC LIMIT 1
)
SELECT (SELECT count(*) FROM gone)::bigint AS deleted,
       (SELECT count(*) FROM scan)::bigint AS scanned,
       coalesce((SELECT created_at FROM last), @after_created_at::timestamptz)::timestamptz AS last_created_at,
       coalesce((SELECT id FROM last), @after_id::uuid)::uuid AS last_id;
