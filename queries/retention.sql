-- name: RetentionDeleteAttempts :execrows
-- Retention deletes run in small batches, each its own short transaction, so
-- delivery never waits behind one giant DELETE.
DELETE FROM delivery_attempts
WHERE id IN (SELECT id FROM delivery_attempts WHERE started_at < @before::timestamptz LIMIT @batch_size::int);

-- name: RetentionDeleteHistograms :execrows
DELETE FROM latency_histograms
WHERE (endpoint_id, resolution_seconds, bucket_start) IN (
    SELECT endpoint_id, resolution_seconds, bucket_start FROM latency_histograms
    WHERE resolution_seconds = ANY(@resolutions::int[]) AND bucket_start < @before::timestamptz
    LIMIT @batch_size::int);

-- name: RetentionDeleteDelivered :many
-- Delivered deliveries. Their attempts go by their own retention. Dead
-- letters are kept: they are the debugging dataset. Returns the deleted
-- deliveries' events, for RetentionDeleteEventsOf.
DELETE FROM deliveries
WHERE id IN (SELECT id FROM deliveries
             WHERE status = 'delivered' AND delivered_at < @before::timestamptz
             LIMIT @batch_size::int)
RETURNING event_id;

-- name: RetentionDeleteEventsOf :execrows
-- The events among ids older than the cutoff that have no delivery left:
-- an event goes with its last delivery, found without a scan.
DELETE FROM events ev
WHERE ev.id = ANY(@ids::uuid[])
  AND ev.created_at < @before::timestamptz
  AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = ev.id);

-- name: RetentionSweepEvents :one
-- The events older than the cutoff with no delivery (none subscribed, or
-- a filter took none), a batch at a time in log order after the cursor
-- (after_created_at, after_id): the caller moves the cursor to the last
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
    WHERE ev.id = s.id AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = ev.id)
    RETURNING ev.id
), last AS (
    SELECT created_at, id FROM scan ORDER BY created_at DESC, id DESC LIMIT 1
)
SELECT (SELECT count(*) FROM gone)::bigint AS deleted,
       (SELECT count(*) FROM scan)::bigint AS scanned,
       coalesce((SELECT created_at FROM last), @after_created_at::timestamptz)::timestamptz AS last_created_at,
       coalesce((SELECT id FROM last), @after_id::uuid)::uuid AS last_id;

-- name: RetentionDeletePortalSessions :execrows
-- Portal sessions past their limits (8 h idle, 7 days absolute; web), with
-- a margin: refused already, dead weight now.
DELETE FROM portal_sessions
WHERE last_seen_at < @idle_before::timestamptz OR created_at < @created_before::timestamptz;

-- name: RetentionDeletePortalLinks :execrows
-- Sign-in links expired before the cutoff that no kept session names.
DELETE FROM portal_links l
WHERE l.expires_at < @before::timestamptz
  AND NOT EXISTS (SELECT 1 FROM portal_sessions s WHERE s.link_id = l.id);
