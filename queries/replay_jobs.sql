-- name: ReplayJobCreate :one
-- Starts a bulk replay, running, with the count the operator confirmed; the
-- worker re-queues its deliveries a batch at a time (DeliveryReplayBatch).
INSERT INTO replay_jobs (status, endpoint_id, event_type, q, since, until, total, created_by)
VALUES (@status, sqlc.narg('endpoint_id'), sqlc.narg('event_type'), sqlc.narg('q'), sqlc.narg('since'), sqlc.narg('until'), @total, @created_by)
RETURNING *;

-- name: ReplayJobGet :one
SELECT * FROM replay_jobs WHERE id = @id;

-- name: ReplayJobClaim :one
-- The oldest running job, locked for this replica's batch; other replicas
-- skip it (and take the next one).
SELECT * FROM replay_jobs WHERE state = 'running' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED;

-- name: ReplayJobAnyRunning :one
-- Whether a replay is running: the maintenance loop's check, one cheap
-- read (replay_jobs_running) before it opens a transaction for a batch.
SELECT EXISTS (SELECT 1 FROM replay_jobs WHERE state = 'running');

-- name: ReplayJobAdvance :exec
-- Records a batch's progress, in the batch's transaction; done when the
-- batch was the last.
UPDATE replay_jobs
SET replayed = replayed + @replayed, last_id = greatest(last_id, @last_id::bigint),
    state = CASE WHEN @done::bool THEN 'done' ELSE state END,
    finished_at = CASE WHEN @done::bool THEN now() ELSE finished_at END
WHERE id = @id;

-- name: ReplayJobCancel :one
-- Stops a running job; what it re-queued stays queued.
UPDATE replay_jobs SET state = 'canceled', finished_at = now()
WHERE id = @id AND state = 'running'
RETURNING *;
