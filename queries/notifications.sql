-- name: NotificationInsertBatch :exec
-- Writes outbox rows in the transaction that records what happened (a
-- completion batch, an operator's change), so a notification exists exactly
-- when its cause does. Nothing is sent here: the dispatcher does that
-- later, outside the delivery path. 0 stands for "no endpoint".
INSERT INTO notifications (kind, endpoint_id, subject, figures, created_at)
SELECT u.kind, NULLIF(u.endpoint_id, 0), u.subject, u.figures, coalesce(sqlc.narg('now')::timestamptz, now())
FROM (SELECT unnest(@kinds::text[]) AS kind,
             unnest(@endpoint_ids::bigint[]) AS endpoint_id,
             unnest(@subjects::text[]) AS subject,
             unnest(@figures::jsonb[]) AS figures) u;

-- name: NotificationInsertTest :exec
-- A channel's test notification: sent to that channel only, whatever it
-- subscribes to, never rate-limited.
INSERT INTO notifications (kind, channel_id, figures) VALUES ('test', @channel_id, '{}');

-- name: NotificationMark :exec
-- Records the dispatcher's decision on outbox rows.
UPDATE notifications
SET state = @state, repeats = @repeats, sent_at = CASE WHEN @state = 'sent' THEN coalesce(sqlc.narg('now')::timestamptz, now()) END
WHERE id = ANY (@ids::bigint[]);

-- name: NotificationPrune :execrows
-- Retention of the outbox: decided rows older than the cutoff go.
DELETE FROM notifications
WHERE created_at < @before::timestamptz AND state <> 'pending';

-- name: NotificationDispatchLock :one
-- One dispatcher at a time across replicas, for the rest of the
-- transaction; the others skip their turn.
SELECT pg_try_advisory_xact_lock(7270736902) AS locked;

-- name: NotificationPending :many
-- The outbox rows still to decide, oldest first, with the endpoint and
-- partner they are about (partner_id 0: none; a partner's own contact
-- channels hear only about its endpoints) and whether that endpoint is itself a
-- notification channel's (such rows are skipped: a channel never notifies
-- about itself).
SELECT n.id, n.kind, n.endpoint_id, n.subject, n.figures, n.channel_id, n.created_at,
       coalesce(e.name, '')::text AS endpoint_name, coalesce(p.name, '')::text AS partner_name,
       coalesce(e.partner_id, 0)::bigint AS partner_id,
       EXISTS (SELECT 1 FROM notification_channels c WHERE c.endpoint_id = n.endpoint_id) AS about_channel
FROM notifications n
LEFT JOIN endpoints e ON e.id = n.endpoint_id
LEFT JOIN partners p ON p.id = e.partner_id
WHERE n.state = 'pending'
ORDER BY n.id
LIMIT @max_rows::int;

-- name: NotificationLastSent :one
-- When a notification of this endpoint, kind and subject last went out
-- (the rate limit's reference); the zero time (year 1) when never.
SELECT coalesce(max(sent_at), '0001-01-01 00:00:00+00')::timestamptz AS sent_at
FROM notifications
WHERE state = 'sent' AND kind = @kind AND subject = @subject
  AND endpoint_id IS NOT DISTINCT FROM sqlc.narg('endpoint_id')::bigint;

-- name: NotificationRecent :many
-- The latest outbox rows, for the settings page.
SELECT n.id, n.kind, n.subject, n.state, n.repeats, n.created_at, n.sent_at,
       coalesce(e.name, 'channel: ' || c.name, '')::text AS endpoint_name
FROM notifications n
LEFT JOIN endpoints e ON e.id = n.endpoint_id
LEFT JOIN notification_channels c ON c.id = n.channel_id
ORDER BY n.id DESC
LIMIT @max_rows::int;

-- name: NotificationWatchLock :one
-- One alert watcher at a time across replicas, for the rest of the
-- transaction; the others skip their turn.
SELECT pg_try_advisory_xact_lock(7270736903) AS locked;

-- name: NotificationAlertStates :many
-- The last recorded state (alert.fired or alert.resolved) of each
-- pipeline alert, by its name (subject).
SELECT DISTINCT ON (subject) subject, kind
FROM notifications
WHERE kind IN ('alert.fired', 'alert.resolved')
ORDER BY subject, id DESC;

-- name: NotificationRecentSubjects :many
-- The subjects of one kind recorded since a time (dead-letter clusters
-- already announced).
SELECT DISTINCT subject FROM notifications
WHERE kind = @kind AND created_at >= @since::timestamptz;
