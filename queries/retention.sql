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

-- name: RetentionDeleteDelivered :execrows
-- Delivered deliveries. Their attempts go by their own retention. Dead
-- letters are kept: they are the debugging dataset.
DELETE FROM deliveries
WHERE id IN (SELECT id FROM deliveries
             WHERE status = 'delivered' AND delivered_at < @before::timestamptz
             LIMIT @batch_size::int);

-- name: RetentionDeleteEvents :execrows
-- Events older than the cutoff with no delivery left.
DELETE FROM events
WHERE id IN (SELECT ev.id FROM events ev
             WHERE ev.created_at < @before::timestamptz
               AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = ev.id)
             LIMIT @batch_size::int);

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
