-- name: LatencyPendingInsert :exec
-- Stores one completion batch's latency samples in the batch's own
-- transaction (see latency_pending). Append-only; merged later by
-- LatencyPendingTake.
INSERT INTO latency_pending (endpoint_ids, minutes, histograms)
VALUES (@endpoint_ids::bigint[], @minutes::timestamptz[], @histograms::bytea[]);

-- name: LatencyPendingTake :many
-- Deletes and returns the oldest pending sample batches for the flush to
-- merge into latency_histograms in the same transaction: if the merge
-- fails, the delete rolls back with it. SKIP LOCKED lets replicas flush at
-- once without merging a batch twice.
DELETE FROM latency_pending p
WHERE p.id IN (SELECT id FROM latency_pending ORDER BY id LIMIT @max_rows::int FOR UPDATE SKIP LOCKED)
RETURNING p.endpoint_ids, p.minutes, p.histograms;
