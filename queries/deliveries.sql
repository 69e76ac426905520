-- name: FanOutSettings :exec
-- DeliveryFanOut's setting, for the rest of its transaction (it is the
-- last statement before COMMIT; db.TxPipeline sends this just before it,
-- in the same round trip). enable_seqscan off: the set's types are known
-- only when the statement runs, so the planner prices the one search of
-- endpoints_event_types (exact) for an unknown array, above a scan of a
-- few thousand endpoints, and a scan of every endpoint per ingest grows
-- with the endpoints.
SELECT set_config('enable_seqscan', 'off', true);

-- name: DeliveryFanOut :batchmany
-- Queues one pending delivery per endpoint of an active partner that
-- subscribes to the event's type (hookline_subscribes: all types when
-- event_types is empty; "prefix.*" matches by prefix), for every event of
-- an ingest in one statement: @event_ids, @event_types and @partner_ids
-- are parallel (partner 0: any partner). Endpoints whose payload filter an
-- event does not pass (evaluated in Go, see EndpointFilters) are listed as
-- pairs in @excluded_event_ids/@excluded_endpoint_ids and get no delivery
-- of it. Disabled endpoints get theirs too: the claim skips them, so they
-- wait, pending, until the endpoint is enabled again (never dropped, never
-- dead). The queue's unique (event_id, endpoint_id) makes a repeated
-- fan-out harmless: ON CONFLICT names no columns because deliveries, being
-- partitioned, has no unique index of its own, and a new row is checked
-- against the indexes of the partition it goes to, deliveries_queue
-- (migration 00021).
--
-- Cost follows the matches, not the endpoints: exact subscriptions are
-- found through endpoints_event_types (GIN), and only the endpoints in
-- endpoints_wildcard (every type, or a pattern) are tested one by one
-- (migration 00017). The index is searched once for all of the set's
-- types (exact), whose endpoints are then joined to the events by type,
-- as a hash join: an index search per event cost 40-50 µs each, half of
-- the statement at ten events (worker/bench/performance.md, "The
-- fan-out's subscriptions in one search"). One statement rather than one
-- per event: the per-statement cost was most of a small fan-out's, about
-- 0.6 ms an event against 0.8 ms for ten (worker/bench/performance.md).
-- Rows are inserted, and returned, in event order and then endpoint
-- order. A batch (of one, see db.FanOut) so that it travels through
-- db.TxPipeline.SendBatch with the COMMIT.
--
-- It also sends ingest's wake-up NOTIFY (woken), naming the endpoints it
-- queued deliveries for, so that a worker's claim looks at those
-- endpoints only instead of at every one (worker/architecture.md, "The
-- wake path"). Over 500 endpoints the payload is empty, which means "look
-- everywhere"; with no delivery queued there is no notification. The names
-- come from the rows just inserted, so nothing reads the queue for them: a
-- separate statement that looked them up in deliveries_queue walked a
-- whole index per event whenever the queue had been analyzed nearly empty
-- (worker/bench/performance.md, "Plans made from a near-empty queue"). Like
-- EventNotify, it is delivered on commit, and not sent while PostgreSQL's
-- NOTIFY queue is fuller than @wake_under (db.NotifyQueueLimit; 0: never).
-- woken runs because the final SELECT's condition reads it, once, before
-- the first row: a CTE that nothing reads is not run.
WITH v AS (
    SELECT unnest(@event_ids::uuid[]) AS event_id, unnest(@event_types::text[]) AS event_type,
           unnest(@partner_ids::bigint[]) AS partner_id, generate_subscripts(@event_ids::uuid[], 1) AS n
),
exact AS (
    SELECT e.id, e.partner_id, e.max_attempts, t.event_type
    FROM endpoints e CROSS JOIN LATERAL unnest(e.event_types) AS t(event_type)
    WHERE e.event_types && (SELECT array_agg(DISTINCT v.event_type) FROM v)
),
subscribed AS (
    SELECT v.n, v.event_id, e.id AS endpoint_id, e.partner_id, e.max_attempts
    FROM v JOIN exact e ON e.event_type = v.event_type
    WHERE v.partner_id = 0 OR e.partner_id = v.partner_id
    UNION
    SELECT v.n, v.event_id, e.id, e.partner_id, e.max_attempts
    FROM v JOIN endpoints e ON hookline_wildcard(e.event_types) AND hookline_subscribes(e.event_types, v.event_type)
    WHERE v.partner_id = 0 OR e.partner_id = v.partner_id
),
queued AS (
    INSERT INTO deliveries (event_id, endpoint_id, max_attempts)
    SELECT s.event_id, s.endpoint_id, s.max_attempts
    FROM subscribed s
    JOIN partners p ON p.id = s.partner_id
    WHERE p.archived_at IS NULL
      AND NOT EXISTS (SELECT 1
                      FROM (SELECT unnest(@excluded_event_ids::uuid[]) AS event_id,
                                   unnest(@excluded_endpoint_ids::bigint[]) AS endpoint_id) x
                      WHERE x.event_id = s.event_id AND x.endpoint_id = s.endpoint_id)
    ORDER BY s.n, s.endpoint_id
    ON CONFLICT DO NOTHING
    RETURNING id, event_id, endpoint_id, status
),
woken AS (
    SELECT pg_notify('hookline_deliveries',
                     CASE WHEN count(DISTINCT endpoint_id) <= 500 THEN string_agg(DISTINCT endpoint_id::text, ',') ELSE '' END)
    FROM queued
    HAVING count(*) > 0 AND pg_notification_queue_usage() < @wake_under::float8
)
SELECT id, event_id, endpoint_id, status FROM queued
WHERE (SELECT count(*) FROM woken) >= 0;

-- name: DeliveryGet :one
SELECT * FROM deliveries WHERE id = @id;

-- name: DeliveryListByEvent :many
SELECT d.*, e.name AS endpoint_name, e.kind AS endpoint_kind
FROM deliveries d
JOIN endpoints e ON e.id = d.endpoint_id
WHERE d.event_id = @event_id
ORDER BY d.id;

-- name: DeliveryRefsByEvents :many
SELECT event_id, id, endpoint_id, status FROM deliveries
WHERE event_id = ANY(@event_ids::uuid[])
ORDER BY event_id, id;

-- name: EndpointQueueDepths :many
-- Deliveries waiting or in flight, per endpoint (the endpoints table), the
-- waiting ones counted up to @count_cap an endpoint: one range of
-- deliveries_due each. Counting the whole backlog grouped by endpoint read
-- every waiting row on every load and 10-s refresh of the page (0.2 s with a million
-- waiting); this reads at most @count_cap an endpoint (9-40 ms there, the
-- backlog on 100 endpoints).
-- In flight are the probes leased in the table: one an endpoint at most.
SELECT e.id AS endpoint_id,
       ((SELECT count(*) FROM (SELECT 1 FROM deliveries d
                                WHERE d.endpoint_id = e.id AND d.status IN ('pending', 'failed')
                                LIMIT @count_cap::bigint) w)
        + (SELECT count(*) FROM deliveries d WHERE d.endpoint_id = e.id AND d.status = 'in_flight'))::bigint AS queued
FROM endpoints e;

-- name: EndpointDeadCounts :many
-- Dead letters per endpoint (of one partner's, when @partner_id is given),
-- counted up to @count_cap an endpoint: one range of
-- deliveries_dead_cluster each (migrations 00025, 00026). Dead letters are kept
-- for good; counted all at once they made the page's cost grow with them.
SELECT e.id AS endpoint_id,
       (SELECT count(*) FROM (SELECT 1 FROM deliveries d
                               WHERE d.endpoint_id = e.id AND d.status = 'dead'
                               LIMIT @count_cap::bigint) x)::bigint AS dead
FROM endpoints e
WHERE sqlc.narg('partner_id')::bigint IS NULL OR e.partner_id = sqlc.narg('partner_id')::bigint;

-- name: EndpointQueueDepth :one
SELECT count(*) FILTER (WHERE status IN ('pending', 'failed', 'in_flight'))::bigint AS queued,
       count(*) FILTER (WHERE status = 'dead')::bigint AS dead
FROM deliveries
WHERE endpoint_id = @endpoint_id AND status IN ('pending', 'failed', 'in_flight', 'dead');

-- name: DeliveryResend :one
-- Sends a delivery again, whatever its state but in flight (a partner may
-- have lost a delivered one): as a dead-letter replay does, it gets a fresh
-- attempt budget (attempt numbers keep counting), is due now and goes
-- through the breaker and rate limit; the same event id (webhook-id) is
-- sent. No row when it is in flight (the worker holds it) or unknown.
UPDATE deliveries d
SET status = 'pending', next_attempt_at = now(), dead_at = NULL, delivered_at = NULL,
    max_attempts = d.attempt_count + e.max_attempts, replay_count = d.replay_count + 1,
    replayed_at = now()
FROM endpoints e
WHERE e.id = d.endpoint_id AND d.id = @id AND d.status <> 'in_flight'
RETURNING d.id, d.status;

-- name: DeadLetterReplay :many
-- Replays dead deliveries, chosen by id, by cluster (endpoint, error class
-- and status code) or by endpoint, dead since a time: each gets a fresh
-- attempt budget (attempt numbers keep counting, so the attempt log stays
-- unambiguous), is due now and goes through the breaker and rate limit like
-- any delivery. Only dead rows change; the same event id (webhook-id) is
-- sent again.
UPDATE deliveries d
SET status = 'pending', next_attempt_at = coalesce(sqlc.narg('now')::timestamptz, now()), dead_at = NULL,
    max_attempts = d.attempt_count + e.max_attempts, replay_count = d.replay_count + 1,
    replayed_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM endpoints e
WHERE e.id = d.endpoint_id AND d.status = 'dead'
  AND (sqlc.narg('ids')::bigint[] IS NULL OR d.id = ANY(sqlc.narg('ids')::bigint[]))
  AND (sqlc.narg('endpoint_id')::bigint IS NULL OR d.endpoint_id = sqlc.narg('endpoint_id')::bigint)
  AND (sqlc.narg('error_class')::text IS NULL OR coalesce(d.last_error_class, '') = sqlc.narg('error_class')::text)
  AND (sqlc.narg('status_code')::int IS NULL OR coalesce(d.last_status_code, 0) = sqlc.narg('status_code')::int)
  AND d.dead_at >= coalesce(sqlc.narg('since')::timestamptz, '-infinity')
RETURNING d.id, d.replayed_at;

-- name: DeliveryReplayCount :one
-- How many deliveries a bulk replay's filter matches (shown before it is
-- confirmed): status dead or delivered; optionally one endpoint, events
-- of a type (exact, or a prefix ending in *), an event found by q (a
-- search-key value or idempotency key, exactly), and event times in
-- [since, until).
SELECT count(*)::bigint
FROM deliveries d
JOIN events ev ON ev.id = d.event_id
WHERE d.status = @status::text
  AND (sqlc.narg('endpoint_id')::bigint IS NULL OR d.endpoint_id = sqlc.narg('endpoint_id')::bigint)
  AND (sqlc.narg('since')::timestamptz IS NULL OR d.created_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR d.created_at < sqlc.narg('until')::timestamptz)
  AND (sqlc.narg('event_type')::text IS NULL OR ev.type = sqlc.narg('event_type')::text
       OR (right(sqlc.narg('event_type')::text, 1) = '*' AND starts_with(ev.type, left(sqlc.narg('event_type')::text, -1))))
  AND (sqlc.narg('q')::text IS NULL OR ev.search_values @> ARRAY[sqlc.narg('q')::text] OR ev.idempotency_key = sqlc.narg('q')::text);

-- name: DeliveryReplayBatch :many
-- Re-queues the next batch of a bulk replay's deliveries after after_id, in
-- id order (DeliveryReplayCount's filter): each gets a fresh attempt budget,
-- is due now, goes through breaker and rate limit, and keeps its event id
-- (webhook-id); replayed_at = stamp marks the job's.
UPDATE deliveries d
SET status = 'pending', next_attempt_at = now(), dead_at = NULL, delivered_at = NULL,
    max_attempts = d.attempt_count + e.max_attempts, replay_count = d.replay_count + 1,
    replayed_at = @stamp::timestamptz
FROM endpoints e
WHERE e.id = d.endpoint_id
  AND d.id IN (
    SELECT m.id
    FROM deliveries m
    JOIN events ev ON ev.id = m.event_id
    WHERE m.status = @status::text
      AND m.id > @after_id::bigint
      AND (sqlc.narg('endpoint_id')::bigint IS NULL OR m.endpoint_id = sqlc.narg('endpoint_id')::bigint)
      AND (sqlc.narg('since')::timestamptz IS NULL OR m.created_at >= sqlc.narg('since')::timestamptz)
      AND (sqlc.narg('until')::timestamptz IS NULL OR m.created_at < sqlc.narg('until')::timestamptz)
      AND (sqlc.narg('event_type')::text IS NULL OR ev.type = sqlc.narg('event_type')::text
           OR (right(sqlc.narg('event_type')::text, 1) = '*' AND starts_with(ev.type, left(sqlc.narg('event_type')::text, -1))))
      AND (sqlc.narg('q')::text IS NULL OR ev.search_values @> ARRAY[sqlc.narg('q')::text] OR ev.idempotency_key = sqlc.narg('q')::text)
    ORDER BY m.id
    LIMIT @batch_size::int
    FOR UPDATE OF m)
RETURNING d.id;

-- name: ReplayProgress :one
-- How the deliveries of one replay (one replay timestamp: a dead-letter
-- replay's, of its endpoint, or a bulk replay's stamp, of any endpoint) are
-- doing: delivered, still waiting, or dead again (deliveries_replayed).
SELECT count(*) FILTER (WHERE status = 'delivered')::bigint AS delivered,
       count(*) FILTER (WHERE status IN ('pending', 'failed', 'in_flight'))::bigint AS waiting,
       count(*) FILTER (WHERE status = 'dead')::bigint AS dead
FROM deliveries
WHERE replayed_at = @replayed_at
  AND (sqlc.narg('endpoint_id')::bigint IS NULL OR endpoint_id = sqlc.narg('endpoint_id')::bigint);

-- name: RetentionDeleteDelivered :many
-- Retention of the delivered rows that no span partition holds (migration
-- 00021; the spans are dropped whole, worker/partitions.go): deletes a
-- batch of those delivered longest ago, before the cutoff, from
-- deliveries_delivered_default. Returns the deleted deliveries' events,
-- for RetentionDeleteEventsOf.
-- The batch is picked through deliveries_delivered_at, oldest first, and
-- deleted by key from an array: written as id IN (subquery), the planner
-- hashed the batch against a scan of the whole table, so every batch read
-- all of it (244 ms for 5,000 rows of 540,000, against 24 ms by key) and
-- retention slowed as the table grew (TestRetentionPlan).
DELETE FROM deliveries_delivered_default
WHERE id = ANY (ARRAY(
    SELECT id FROM deliveries_delivered_default
    WHERE delivered_at < @before::timestamptz
    ORDER BY delivered_at
    LIMIT @batch_size::int))
RETURNING event_id;

-- name: SpanPartitionRanges :many
-- The span partitions of a table partitioned by event id, events or
-- deliveries_delivered (worker/partitions_delivered.go), with the event
-- ids each covers, [from_id, to_id), in order; the default partition is
-- left out. The bounds are read from the partition's definition, "FOR
-- VALUES FROM (MINVALUE | 'uuid') TO ('uuid')"; MINVALUE reads as the nil
-- UUID.
SELECT c.relname::text AS name,
       coalesce((regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\)'))[1],
                '00000000-0000-0000-0000-000000000000')::uuid AS from_id,
       (regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::uuid AS to_id
FROM pg_catalog.pg_inherits i
JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = to_regclass(@parent::text)
  AND pg_catalog.pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
ORDER BY to_id;
