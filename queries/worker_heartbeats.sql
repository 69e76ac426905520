-- name: WorkerHeartbeat :exec
-- Records this replica as alive, with the key of the advisory lock it holds
-- while it runs (see WorkerFindDead).
INSERT INTO worker_heartbeats (worker_id, hostname, lock_key, started_at, last_seen_at)
VALUES (@worker_id, @hostname, @lock_key::bigint, coalesce(sqlc.narg('now')::timestamptz, now()), coalesce(sqlc.narg('now')::timestamptz, now()))
ON CONFLICT (worker_id) DO UPDATE SET last_seen_at = excluded.last_seen_at, lock_key = excluded.lock_key;

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

-- name: WorkerLiveCount :one
-- How many replicas are alive (a per-endpoint rate is split across them).
SELECT count(*)::int AS replicas
FROM worker_heartbeats
WHERE last_seen_at > @since::timestamptz;

-- name: WorkerHeartbeatDelete :exec
-- At shutdown: removes this worker's heartbeat and any an hour stale, so
-- the live count drops at once.
DELETE FROM worker_heartbeats
WHERE worker_id = @worker_id OR last_seen_at < coalesce(sqlc.narg('now')::timestamptz, now()) - interval '1 hour';
