-- The lease cycle on deliveries, kept in one file: every write after the claim is fenced by its lease.
-- Their transactions' other writes live with their tables; the bench baselines keep their SQL in worker/bench.

-- name: ClaimLock :exec
-- Serialises claims across replicas for the rest of the transaction. The
-- claim reads how many deliveries each endpoint has in flight; taken after
-- this lock, in a new statement, that count includes every claim other
-- replicas committed, so max_in_flight holds across replicas. A claim takes
-- about a millisecond, so replicas barely wait.
SELECT pg_advisory_xact_lock(7270736901);

-- name: ClaimSettings :exec
-- Settings for the claim's transaction only. synchronous_commit off saves a
-- disk flush per claim and loses nothing: a claim lost in a crash is only
-- pending again (sent twice at worst, as at-least-once allows), and the
-- completion's synchronous commit flushes the claim's WAL before any result
-- is recorded. force_generic_plan stops PostgreSQL planning DeliveryClaim
-- afresh on every call, which costs as much as claiming dozens of rows; see
-- worker/architecture.md (and Worker.analyzeYoung, which keeps that one
-- plan from being one made for a near-empty table).
SELECT set_config('synchronous_commit', 'off', true),
       set_config('plan_cache_mode', 'force_generic_plan', true);

-- name: DeliveryClaim :many
-- Claims due deliveries (status in_flight, leased to @worker_id) and commits
-- before any HTTP is sent: no transaction is held across a network call.
-- Enabled, closed, unpaused endpoints get at most their free in-flight slots
-- (across replicas) and this replica's rate tokens (@capped_ids/@caps), in
-- random order so one backlog cannot starve the others; SKIP LOCKED keeps
-- replicas off each other's rows. The picked ids reach the UPDATE as an
-- array so the cached plan (ClaimSettings) stays a few key lookups however
-- many rows are picked; see worker/architecture.md. With @endpoint_ids
-- the claim looks at those endpoints only (the wake path: an ingest's
-- NOTIFY names the endpoints it queued for), so its cost follows the work
-- rather than the number of endpoints; NULL looks at every endpoint.
WITH live AS (
    SELECT e.id, e.max_in_flight, e.rate_per_sec IS NOT NULL AS limited
    FROM endpoints e
    JOIN endpoint_health h ON h.endpoint_id = e.id
    WHERE e.enabled
      AND (sqlc.narg('endpoint_ids')::bigint[] IS NULL OR e.id = ANY (sqlc.narg('endpoint_ids')::bigint[]))
      AND h.state = 'closed'
      AND (h.paused_until IS NULL OR h.paused_until <= coalesce(sqlc.narg('now')::timestamptz, now()))
),
in_flight AS (
    SELECT endpoint_id, count(*)::int AS n
    FROM deliveries
    WHERE status = 'in_flight'
      AND (sqlc.narg('endpoint_ids')::bigint[] IS NULL OR endpoint_id = ANY (sqlc.narg('endpoint_ids')::bigint[]))
    GROUP BY endpoint_id
),
room AS (
    SELECT l.id,
           LEAST(l.max_in_flight - coalesce(f.n, 0),
                 CASE WHEN c.cap IS NOT NULL THEN c.cap
                      WHEN l.limited THEN 0
                      ELSE l.max_in_flight END) AS n
    FROM live l
    LEFT JOIN in_flight f ON f.endpoint_id = l.id
    LEFT JOIN (SELECT unnest(@capped_ids::bigint[]) AS id, unnest(@caps::int[]) AS cap) c ON c.id = l.id
),
picked AS (
    SELECT d.id
    FROM (SELECT id, n FROM room WHERE n > 0 ORDER BY random()) r
    CROSS JOIN LATERAL (
        SELECT d.id
        FROM deliveries d
        WHERE d.endpoint_id = r.id
          AND d.status IN ('pending', 'failed')
          AND d.next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now())
        ORDER BY d.next_attempt_at
        LIMIT r.n
        FOR UPDATE SKIP LOCKED
    ) d
    LIMIT @max_rows::int
)
UPDATE deliveries d
SET status = 'in_flight',
    lease_expires_at = coalesce(sqlc.narg('now')::timestamptz, now()) + (e.timeout_ms + @lease_margin_ms::int) * interval '1 millisecond',
    lease_owner = @worker_id::text
FROM events ev, endpoints e
WHERE d.id = ANY (ARRAY(SELECT id FROM picked)) AND ev.id = d.event_id AND e.id = d.endpoint_id
RETURNING d.id, d.event_id, d.endpoint_id, d.attempt_count, d.max_attempts,
          ev.type AS event_type, ev.payload,
          e.kind, e.url, e.method, e.headers, e.timeout_ms, e.success_body_contains,
          e.secret_version, e.macro_style, e.signature_param;

-- name: DeliveryClaimProbes :many
-- Claims exactly one probe delivery per half-open endpoint that has none
-- (EndpointHealthStartProbes opened them): the health row is locked (SKIP
-- LOCKED, so racing replicas skip it) and marked with the probe's id in the
-- same statement, so no second probe is ever claimed while the first is
-- unresolved.
WITH ready AS (
    SELECT h.endpoint_id
    FROM endpoint_health h
    JOIN endpoints e ON e.id = h.endpoint_id
    WHERE h.state = 'half_open'
      AND h.probe_delivery_id IS NULL
      AND e.enabled
      AND (h.paused_until IS NULL OR h.paused_until <= coalesce(sqlc.narg('now')::timestamptz, now()))
    FOR UPDATE OF h SKIP LOCKED
),
pick AS (
    SELECT r.endpoint_id, d.id
    FROM ready r
    CROSS JOIN LATERAL (
        SELECT d.id FROM deliveries d
        WHERE d.endpoint_id = r.endpoint_id
          AND d.status IN ('pending', 'failed')
          AND d.next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now())
        ORDER BY d.next_attempt_at
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    ) d
),
mark AS (
    UPDATE endpoint_health h
    SET probe_delivery_id = p.id, updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
    FROM pick p
    WHERE h.endpoint_id = p.endpoint_id
)
UPDATE deliveries d
SET status = 'in_flight',
    lease_expires_at = coalesce(sqlc.narg('now')::timestamptz, now()) + (e.timeout_ms + @lease_margin_ms::int) * interval '1 millisecond',
    lease_owner = @worker_id::text
FROM pick p, events ev, endpoints e
WHERE d.id = p.id AND ev.id = d.event_id AND e.id = d.endpoint_id
RETURNING d.id, d.event_id, d.endpoint_id, d.attempt_count, d.max_attempts,
          ev.type AS event_type, ev.payload,
          e.kind, e.url, e.method, e.headers, e.timeout_ms, e.success_body_contains,
          e.secret_version, e.macro_style, e.signature_param;

-- name: DeliveryComplete :many
-- Applies a batch of attempt outcomes. The lease owner and attempt count
-- fence the update: a result that arrives after its lease expired and the
-- delivery was rescued (and perhaps claimed again) changes nothing.
-- lease_owner is set only while a row is in flight, so it stands for the
-- status test too.
--
-- The plan must be one primary-key lookup per result, driven by the
-- results. Any test on deliveries alone (status = 'in_flight', or
-- lease_owner = @worker_id) is estimated at about one row, since nearly
-- every row is neither, so the planner makes that scan the outer side of a
-- nested loop and unnests the whole batch again for each of the worker's
-- in-flight rows: 43 ms for 127 results instead of 4 ms, measured. So the
-- owner is unnested beside the results and compared as a join condition,
-- which leaves deliveries nothing to be scanned by (TestCompletionPlan).
-- Returns the ids actually updated; the same transaction writes their
-- attempts (AttemptInsert), latency samples and breaker rows
-- (EndpointHealthWrite).
UPDATE deliveries d
SET status           = u.status,
    attempt_count    = d.attempt_count + 1,
    next_attempt_at  = u.next_attempt_at,
    lease_expires_at = NULL,
    lease_owner      = NULL,
    delivered_at     = CASE WHEN u.status = 'delivered' THEN u.finished_at ELSE d.delivered_at END,
    dead_at          = CASE WHEN u.status = 'dead' THEN u.finished_at ELSE NULL END,
    last_error       = NULLIF(u.error, ''),
    last_error_class = NULLIF(u.error_class, ''),
    last_status_code = NULLIF(u.status_code, 0),
    last_response_ms = u.duration_ms
FROM (SELECT unnest(@ids::bigint[]) AS id,
             unnest(@attempt_counts::int[]) AS attempt_count,
             unnest(@statuses::text[]) AS status,
             unnest(@next_attempt_ats::timestamptz[]) AS next_attempt_at,
             unnest(@finished_ats::timestamptz[]) AS finished_at,
             unnest(@errors::text[]) AS error,
             unnest(@error_classes::text[]) AS error_class,
             unnest(@status_codes::int[]) AS status_code,
             unnest(@durations_ms::float8[]) AS duration_ms,
             unnest(array_fill(@worker_id::text, ARRAY[cardinality(@ids::bigint[])])) AS owner) u
WHERE d.id = u.id
  AND d.lease_owner = u.owner
  AND d.attempt_count = u.attempt_count
RETURNING d.id;

-- name: DeliveryRelease :exec
-- Returns deliveries this worker claimed but did not attempt (shutdown
-- cancelled the send) to the queue, due now, without using an attempt.
-- The owner is a join condition for the reason DeliveryComplete gives.
UPDATE deliveries d
SET status = 'failed', next_attempt_at = coalesce(sqlc.narg('now')::timestamptz, now()), lease_expires_at = NULL, lease_owner = NULL
FROM (SELECT unnest(@ids::bigint[]) AS id, unnest(@attempt_counts::int[]) AS attempt_count,
             unnest(array_fill(@worker_id::text, ARRAY[cardinality(@ids::bigint[])])) AS owner) u
WHERE d.id = u.id
  AND d.lease_owner = u.owner
  AND d.attempt_count = u.attempt_count;

-- name: DeliveryReleaseOwned :execrows
-- At shutdown, after the last flush: anything still leased by this worker
-- goes back to the queue, due now. Normally matches nothing.
UPDATE deliveries
SET status = 'failed', next_attempt_at = coalesce(sqlc.narg('now')::timestamptz, now()), lease_expires_at = NULL, lease_owner = NULL
WHERE status = 'in_flight' AND lease_owner = @worker_id::text;

-- name: DeliveryRescueExpired :many
-- Rescues deliveries whose worker is gone: their lease expired (the worker
-- died or hung), or their lease owner is one of @dead_workers, found dead by
-- WorkerFindDead and checked again here under the same try-lock, now held
-- to the end of this transaction, so a worker cannot come back between the
-- check and the update. They become due again now. The lost attempt counts
-- (it may have reached the partner) but never exhausts the budget:
-- max_attempts is raised when needed so a crash can not dead-letter a
-- delivery. SKIP LOCKED keeps replicas from rescuing the same row twice.
WITH dead AS (
    SELECT worker_id
    FROM worker_heartbeats
    WHERE worker_id = ANY (@dead_workers::text[])
      AND lock_key IS NOT NULL
      AND pg_try_advisory_xact_lock(lock_key)
)
UPDATE deliveries d
SET status           = 'failed',
    attempt_count    = d.attempt_count + 1,
    max_attempts     = GREATEST(d.max_attempts, d.attempt_count + 2),
    next_attempt_at  = coalesce(sqlc.narg('now')::timestamptz, now()),
    lease_expires_at = NULL,
    lease_owner      = NULL,
    last_error       = 'lease expired: the worker sending it stopped before recording a result',
    last_error_class = 'lease_expired',
    last_status_code = NULL
FROM (
    SELECT id FROM deliveries
    WHERE status = 'in_flight'
      AND (lease_expires_at < coalesce(sqlc.narg('now')::timestamptz, now())
           OR lease_owner IN (SELECT worker_id FROM dead))
    ORDER BY lease_expires_at
    LIMIT @max_rows::int
    FOR UPDATE SKIP LOCKED
) x
WHERE d.id = x.id
RETURNING d.id, d.endpoint_id, d.attempt_count;

-- name: TablesYoung :many
-- The queue's tables autovacuum has not analyzed yet, with how many rows
-- have changed in them since they were last analyzed and how many rows
-- they had then (see Worker.analyzeYoung).
SELECT c.relname::text AS name, pg_catalog.pg_stat_get_mod_since_analyze(c.oid)::bigint AS changes,
       greatest(c.reltuples, 0)::bigint AS rows_estimate
FROM pg_catalog.pg_class c
WHERE c.oid = ANY (SELECT to_regclass(t)::oid FROM unnest(@tables::text[]) AS t)
  AND pg_catalog.pg_stat_get_last_autoanalyze_time(c.oid) IS NULL
ORDER BY c.relname;

-- name: AnalyzeDeliveries :exec
ANALYZE deliveries;

-- name: AnalyzeEvents :exec
ANALYZE events;

-- name: RetentionLockTry :one
-- One retention pass at a time across replicas: a session lock, held by
-- the connection that runs the pass and released when it ends (or when that
-- session dies with its replica). Passes in several replicas at once picked
-- the same oldest rows, and all but one waited for its locks and then
-- deleted nothing. The others skip their turn.
SELECT pg_try_advisory_lock(7270736904) AS locked;

-- name: RetentionLock :exec
-- RetentionLockTry's lock, waited for (a pass that must run: RetainNow).
SELECT pg_advisory_lock(7270736904);

-- name: RetentionUnlock :one
SELECT pg_advisory_unlock(7270736904) AS unlocked;
