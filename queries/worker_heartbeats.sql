-- name: WorkerHeartbeat :exec
-- Records this replica as alive, with the key of the advisory lock it holds
-- while it runs (see WorkerFindDead), the claim protocol it speaks (2:
-- claims by shard ownership, migration 00020), how many deliveries it holds
-- (claimed, result not yet recorded; how many of them retries) and whether
-- it is stopping.
INSERT INTO worker_heartbeats (worker_id, hostname, lock_key, started_at, last_seen_at, claim_protocol, in_flight, in_flight_retries, draining)
VALUES (@worker_id, @hostname, @lock_key::bigint, coalesce(sqlc.narg('now')::timestamptz, now()), coalesce(sqlc.narg('now')::timestamptz, now()),
        2, @in_flight::int, @in_flight_retries::int, @draining::boolean)
ON CONFLICT (worker_id) DO UPDATE
SET last_seen_at = excluded.last_seen_at, lock_key = excluded.lock_key, claim_protocol = excluded.claim_protocol,
    in_flight = excluded.in_flight, in_flight_retries = excluded.in_flight_retries, draining = excluded.draining;

-- name: WorkerLockHold :one
-- Taken once per worker on a connection of its own and held until the
-- process exits: the session-level lock is the worker's proof of life.
-- Returns false when the key is held (another worker picked the same random
-- key, or a rescue is checking it this instant); the caller picks again.
SELECT pg_try_advisory_lock(@lock_key::bigint) AS held;

-- name: WorkerFindDead :many
-- Workers whose liveness lock is free: their session ended, so they are
-- dead, however recently they wrote a heartbeat. A live worker, however
-- slow, holds its lock and is never listed. The transaction-level try-lock
-- is released when this statement's transaction ends; it writes nothing.
SELECT worker_id
FROM worker_heartbeats
WHERE worker_id <> @worker_id::text
  AND lock_key IS NOT NULL
  AND pg_try_advisory_xact_lock(lock_key)
ORDER BY worker_id;

-- name: WorkerHeartbeatForget :exec
-- Removes the heartbeats of workers found dead, once their leases are
-- rescued, so they stop counting as replicas at once.
DELETE FROM worker_heartbeats WHERE worker_id = ANY (@worker_ids::text[]);

-- name: WorkerOwnersLive :many
-- The other workers alive now, as shard owners see them: a recent heartbeat
-- and the liveness lock held (the transaction-level try-lock fails; it
-- writes nothing and ends with this statement). claim_protocol NULL is a
-- worker of an older version, which claims by leasing rows: while one is
-- alive nothing is claimed by ownership. Runs on the liveness session
-- several times a second; the table holds a row per replica.
SELECT worker_id, claim_protocol, draining
FROM worker_heartbeats
WHERE worker_id <> @worker_id::text
  AND last_seen_at > coalesce(sqlc.narg('now')::timestamptz, now()) - make_interval(secs => @live_for_seconds::float8)
  AND lock_key IS NOT NULL
  AND NOT pg_try_advisory_xact_lock(lock_key)
ORDER BY worker_id;

-- name: WorkerTerminateHung :many
-- Ends the liveness sessions of workers that hold their liveness lock but
-- have written no heartbeat for @hung_after_seconds: a hung process (or a
-- frozen machine) whose connection PostgreSQL still takes for alive. A
-- worker writes its heartbeat from the loop that keeps its shards, so one
-- that stopped beating stopped managing them too; ending its session frees
-- its shards (and its liveness lock) for the others. A worker that wakes up
-- later finds its session gone and claims nothing until it has a new one.
-- Same-role sessions may be ended without superuser rights. Returns the
-- workers whose session was ended.
--
-- The sessions are chosen in a materialised CTE and ended after it: in one
-- WHERE, pg_terminate_backend(l.pid) names pg_locks alone, and the planner
-- would push it down to the scan of pg_locks and end every session holding
-- any lock, this one included.
WITH hung AS MATERIALIZED (
    SELECT h.worker_id, l.pid
    FROM worker_heartbeats h
    JOIN pg_catalog.pg_locks l ON l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
     AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = current_database())
     AND l.classid = ((h.lock_key >> 32) & 4294967295)::oid
     AND l.objid = (h.lock_key & 4294967295)::oid
    WHERE h.worker_id <> @worker_id::text
      AND h.lock_key IS NOT NULL
      AND h.last_seen_at < coalesce(sqlc.narg('now')::timestamptz, now()) - make_interval(secs => @hung_after_seconds::float8)
      AND l.pid <> pg_backend_pid()
)
SELECT worker_id FROM hung WHERE pg_terminate_backend(pid);

-- name: WorkerHeartbeatDelete :exec
-- At shutdown: removes this worker's heartbeat and any an hour stale, so
-- the live count drops at once.
DELETE FROM worker_heartbeats
WHERE worker_id = @worker_id OR last_seen_at < coalesce(sqlc.narg('now')::timestamptz, now()) - interval '1 hour';

-- name: WorkerHeartbeatsLive :one
-- How many workers wrote a heartbeat in the last @live_for_seconds, for
-- /metrics (the worker-liveness alert). Reads only.
SELECT count(*)::bigint AS live
FROM worker_heartbeats
WHERE last_seen_at > coalesce(sqlc.narg('now')::timestamptz, now()) - make_interval(secs => @live_for_seconds::float8);
