-- The claim cycle on deliveries, kept in one file: shard ownership, the claim, and every write after it, fenced by the attempt count it was claimed with.
-- Their transactions' other writes live with their tables; the bench baselines keep their SQL in worker/bench.

-- name: ClaimSettings :exec
-- A setting for the claim's transaction only: force_generic_plan stops
-- PostgreSQL planning DeliveryClaim afresh on every call, which costs as
-- much as claiming dozens of rows; see worker/architecture.md (and
-- Worker.analyzeYoung, which keeps that one plan from being one made for a
-- near-empty table). enable_seqscan and enable_bitmapscan off:
-- deliveries_queue fills and empties faster than vacuum and ANALYZE run
-- (migration 00021), so its statistics can describe a few live rows while
-- its heap and indexes hold a minute of dead ones. A plan made from them
-- that scans the table reads them all; one that scans deliveries_due by
-- bitmap reads every entry of an endpoint's range, dead ones included
-- (only a plain index scan marks dead entries for the next scan to skip),
-- and sorts them for a LIMIT of a few: claims of 10-90 ms for minutes at
-- a time, until the next ANALYZE (worker/bench/performance.md, "Plans
-- made from a near-empty queue"). The claim writes nothing, so it has nothing
-- to commit.
SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true),
       set_config('enable_bitmapscan', 'off', true);

-- name: DeliveryClaim :many
-- Reads due deliveries for this worker to send; it writes nothing. It runs
-- on the session that holds this worker's shard locks, so it reads only
-- while those locks are held: endpoints whose shard (id % the length of
-- @shards) is owned by this worker (@shards[shard + 1]; NULL = all) are the
-- only ones it looks at, and no other worker claims them meanwhile. The
-- worker keeps what it claimed in memory until the result is recorded:
-- @held_endpoint_ids/@held_ids are those deliveries, skipped here and
-- counted against each endpoint's max_in_flight. Enabled, closed, unpaused
-- endpoints get at most their free in-flight slots and this worker's rate
-- tokens (@capped_ids/@caps), in random order so one backlog cannot starve
-- the others. With @endpoint_ids the claim looks at those endpoints only
-- (the wake path: an ingest's NOTIFY names the endpoints it queued for), so
-- its cost follows the work rather than the number of endpoints; NULL looks
-- at every endpoint. partner_url: the URL was last set by the partner, and
-- is dialled with the partner guard. trace_context, partner_id and
-- send_traceparent serve traces (worker/tracing; trace_context is NULL for
-- events ingested with traces off). See worker/architecture.md, "The claim".
--
-- Without @endpoint_ids the claim starts from the endpoints that have
-- deliveries waiting (queued: a skip scan of deliveries_due, one index
-- descent per such endpoint), not from every endpoint: an endpoint with
-- nothing queued gives no row either way, and walking all of them made a
-- claim's cost grow with the endpoints configured (100,000 endpoints: every
-- endpoint and health row read and sorted, 300,000 buffers a claim;
-- worker/bench/performance.md, "Cost as work grows").
WITH RECURSIVE queued AS (
    (SELECT d.endpoint_id FROM deliveries d
     WHERE d.status IN ('pending', 'failed')
     ORDER BY d.endpoint_id LIMIT 1)
    UNION ALL
    SELECT (SELECT d.endpoint_id FROM deliveries d
            WHERE d.status IN ('pending', 'failed') AND d.endpoint_id > q.endpoint_id
            ORDER BY d.endpoint_id LIMIT 1)
    FROM queued q
    WHERE q.endpoint_id IS NOT NULL
),
live AS (
    SELECT e.id, e.max_in_flight, e.rate_per_sec IS NOT NULL AS limited
    FROM endpoints e
    JOIN endpoint_health h ON h.endpoint_id = e.id
    WHERE e.enabled
      AND e.id = ANY (coalesce(sqlc.narg('endpoint_ids')::bigint[],
                               (SELECT array_agg(q.endpoint_id) FROM queued q WHERE q.endpoint_id IS NOT NULL)))
      AND (sqlc.narg('shards')::bool[] IS NULL
           OR (sqlc.narg('shards')::bool[])[e.id % cardinality(sqlc.narg('shards')::bool[]) + 1])
      AND h.state = 'closed'
      AND (h.paused_until IS NULL OR h.paused_until <= coalesce(sqlc.narg('now')::timestamptz, now()))
),
held AS (
    SELECT endpoint_id, count(*)::int AS n, array_agg(id) AS ids
    FROM (SELECT unnest(@held_endpoint_ids::bigint[]) AS endpoint_id, unnest(@held_ids::bigint[]) AS id) x
    GROUP BY endpoint_id
),
room AS (
    SELECT l.id,
           LEAST(l.max_in_flight - coalesce(f.n, 0),
                 CASE WHEN c.cap IS NOT NULL THEN c.cap
                      WHEN l.limited THEN 0
                      ELSE l.max_in_flight END) AS n,
           coalesce(f.ids, '{}'::bigint[]) AS held
    FROM live l
    LEFT JOIN held f ON f.endpoint_id = l.id
    LEFT JOIN (SELECT unnest(@capped_ids::bigint[]) AS id, unnest(@caps::int[]) AS cap) c ON c.id = l.id
),
picked AS (
    SELECT d.id, d.event_id, d.endpoint_id, d.status, d.attempt_count, d.max_attempts
    FROM (SELECT id, n, held FROM room WHERE n > 0 ORDER BY random()) r
    CROSS JOIN LATERAL (
        SELECT d.id, d.event_id, d.endpoint_id, d.status, d.attempt_count, d.max_attempts
        FROM deliveries d
        WHERE d.endpoint_id = r.id
          AND d.status IN ('pending', 'failed')
          AND d.next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now())
          AND d.id <> ALL (r.held)
        ORDER BY d.next_attempt_at
        LIMIT r.n
    ) d
    LIMIT @max_rows::int
)
SELECT p.id, p.event_id, p.endpoint_id, p.attempt_count, p.max_attempts, p.status = 'failed' AS retry,
       ev.type AS event_type, ev.payload,
       e.kind, e.url, e.method, e.headers, e.timeout_ms, e.success_body_contains,
       e.secret_version, e.macro_style, e.signature_param, e.url_set_by = 'partner' AS partner_url,
       e.egress_rev, e.postback_rules,
       e.body_template, e.body_format, e.body_signature,
       ev.trace_context, e.partner_id, e.send_traceparent
FROM picked p
JOIN events ev ON ev.id = p.event_id
JOIN endpoints e ON e.id = p.endpoint_id;

-- name: DeliveryClaimProbes :many
-- Claims exactly one probe delivery per half-open endpoint of this worker's
-- shards (@shards, as in DeliveryClaim) that has none
-- (EndpointHealthStartProbes opened them): the health row is locked (SKIP
-- LOCKED) and marked with the probe's id in the same statement, so no
-- second probe is ever claimed while the first is unresolved. A probe is
-- leased (in_flight, lease_owner = @worker_id), so if its worker dies,
-- rescue finds it and counts it as a failed probe. Deliveries this worker
-- still holds (@held_ids) are not picked.
WITH ready AS (
    SELECT h.endpoint_id
    FROM endpoint_health h
    JOIN endpoints e ON e.id = h.endpoint_id
    WHERE h.state = 'half_open'
      AND h.probe_delivery_id IS NULL
      AND e.enabled
      AND (sqlc.narg('shards')::bool[] IS NULL
           OR (sqlc.narg('shards')::bool[])[e.id % cardinality(sqlc.narg('shards')::bool[]) + 1])
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
          AND NOT (d.id = ANY (coalesce(@held_ids::bigint[], '{}')))
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
  AND d.status IN ('pending', 'failed') -- as picked; plans deliveries_queue only
RETURNING d.id, d.event_id, d.endpoint_id, d.attempt_count, d.max_attempts, false AS retry,
          ev.type AS event_type, ev.payload,
          e.kind, e.url, e.method, e.headers, e.timeout_ms, e.success_body_contains,
          e.secret_version, e.macro_style, e.signature_param, e.url_set_by = 'partner' AS partner_url,
          e.egress_rev, e.postback_rules,
          e.body_template, e.body_format, e.body_signature,
          ev.trace_context, e.partner_id, e.send_traceparent;

-- name: DeliveryComplete :many
-- Applies a batch of attempt outcomes, fenced by the attempt count each
-- delivery was claimed with and by how it was claimed: a delivery claimed
-- by reading (its owner empty) must still be waiting (pending or failed),
-- one leased as a probe (its owner this worker's id) must still be leased
-- to this worker. A result that arrives after another worker took the
-- delivery over (this one lost its shard with its session, or its probe
-- lease was rescued) and recorded an attempt of its own changes nothing;
-- attempt_count only grows, so it cannot match again.
--
-- The plan must be one primary-key lookup per result, driven by the
-- results. Any test on deliveries alone (status, lease_owner) would be
-- estimated on its own and could make the planner scan deliveries first and
-- unnest the whole batch again for each row it finds: 43 ms for 127 results
-- instead of 4 ms, measured. So the owner is unnested beside the results
-- and compared as a join condition, which leaves deliveries nothing to be
-- scanned by (TestCompletionPlan). Returns the ids actually updated; the
-- same transaction writes their attempts (AttemptInsert), latency samples
-- and breaker rows (EndpointHealthWrite).
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
             unnest(@owners::text[]) AS owner,
             unnest(@statuses::text[]) AS status,
             unnest(@next_attempt_ats::timestamptz[]) AS next_attempt_at,
             unnest(@finished_ats::timestamptz[]) AS finished_at,
             unnest(@errors::text[]) AS error,
             unnest(@error_classes::text[]) AS error_class,
             unnest(@status_codes::int[]) AS status_code,
             unnest(@durations_ms::float8[]) AS duration_ms) u
WHERE d.id = u.id
  AND d.attempt_count = u.attempt_count
  AND CASE WHEN u.owner = '' THEN d.status IN ('pending', 'failed') ELSE d.lease_owner = u.owner END
  -- Leaves the delivered rows' partitions out of the plan (migration
  -- 00021): only deliveries_queue is read, and a row updated to delivered
  -- moves into its partition of deliveries_delivered. Written as <>, which
  -- every row of the queue passes, so that it changes no estimate.
  AND d.status <> 'delivered'
RETURNING d.id;

-- name: DeliveryRelease :exec
-- Returns probes this worker leased but did not attempt (shutdown cancelled
-- the send) to the queue, due now, without using an attempt. The owner is a
-- join condition for the reason DeliveryComplete gives. (A delivery claimed
-- by reading needs nothing: it is still waiting, as it was.)
UPDATE deliveries d
SET status = 'failed', next_attempt_at = coalesce(sqlc.narg('now')::timestamptz, now()), lease_expires_at = NULL, lease_owner = NULL
FROM (SELECT unnest(@ids::bigint[]) AS id, unnest(@attempt_counts::int[]) AS attempt_count,
             unnest(array_fill(@worker_id::text, ARRAY[cardinality(@ids::bigint[])])) AS owner) u
WHERE d.id = u.id
  AND d.lease_owner = u.owner
  AND d.attempt_count = u.attempt_count
  AND d.status <> 'delivered'; -- as in DeliveryComplete

-- name: DeliveryReleaseOwned :execrows
-- At shutdown, after the last flush: anything still leased by this worker
-- (a probe) goes back to the queue, due now. Normally matches nothing.
UPDATE deliveries
SET status = 'failed', next_attempt_at = coalesce(sqlc.narg('now')::timestamptz, now()), lease_expires_at = NULL, lease_owner = NULL
WHERE status = 'in_flight' AND lease_owner = @worker_id::text;

-- name: ShardLockTry :many
-- Takes the advisory locks of the given shards that no other session
-- holds, on this worker's liveness session: a held lock is the ownership
-- of that shard's endpoints, and ends with the session (the worker died, or
-- its connection did). @class is the locks' first key (shardLockClass).
-- Returns the shards now held.
SELECT s::int AS shard
FROM unnest(@shards::int[]) AS s
WHERE pg_try_advisory_lock(@class::int, s);

-- name: ShardUnlock :exec
-- Gives shards up (their deliveries held by this worker are all recorded):
-- another worker may take them at once.
SELECT count(*) FILTER (WHERE pg_advisory_unlock(@class::int, s)) FROM unnest(@shards::int[]) AS s;

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
WHERE d.id = x.id AND d.status = 'in_flight'
RETURNING d.id, d.endpoint_id, d.attempt_count;

-- name: TablesYoung :many
-- The queue's tables autovacuum has not analyzed yet, with how many live
-- rows they hold and how many they had when last analyzed (see
-- Worker.analyzeYoung).
SELECT c.relname::text AS name, pg_catalog.pg_stat_get_live_tuples(c.oid)::bigint AS rows_now,
       greatest(c.reltuples, 0)::bigint AS rows_estimate
FROM pg_catalog.pg_class c
WHERE c.oid = ANY (SELECT to_regclass(t)::oid FROM unnest(@tables::text[]) AS t)
  AND pg_catalog.pg_stat_get_last_autoanalyze_time(c.oid) IS NULL
ORDER BY c.relname;

-- name: AnalyzeDeliveries :exec
-- The queue's partition (migration 00021): the claims and completions read
-- only it, and autovacuum never analyzes a partitioned table itself.
ANALYZE deliveries_queue;

-- name: AnalyzeSettings :exec
-- A smaller sample for the worker's own analyses of young tables, for the
-- transaction they run in: 3,000 rows instead of 30,000 (the target is 300
-- rows per unit). They are there so that the first plans are not made for
-- an empty table, and autovacuum's own ANALYZE, at the cluster's target,
-- follows them. At the default target, ANALYZE of a 91,000-row partition
-- of events took 164-297 ms of a core, unthrottled, and each one the worker
-- ran at 5,000 events/s showed as a second or two of higher latency (p99
-- 141 ms in the second it ran); at 10, 9-10 ms (worker/bench/performance.md,
-- "The worker's own ANALYZE, with a smaller sample").
SELECT set_config('default_statistics_target', '10', true);

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
