-- name: NotificationChannelCreate :one
-- Stores a channel; its endpoint (NotificationEndpointCreate) and health
-- row are created first, in the same transaction.
INSERT INTO notification_channels (name, style, endpoint_id, kinds, created_by)
VALUES (@name, @style, @endpoint_id, @kinds, @created_by)
RETURNING *;

-- name: NotificationChannelGet :one
SELECT * FROM notification_channels WHERE id = @id;

-- name: NotificationChannelList :many
-- Every channel with its endpoint's URL, enabled flag and breaker state;
-- a partner's contact channel with whether the operator allows it
-- (partner_enabled; true for an operator's channel).
SELECT c.*, e.url, e.enabled, h.state AS breaker_state,
       (c.partner_id IS NULL OR coalesce(pc.enabled, false))::boolean AS partner_enabled
FROM notification_channels c
JOIN endpoints e ON e.id = c.endpoint_id
JOIN endpoint_health h ON h.endpoint_id = c.endpoint_id
LEFT JOIN partner_contacts pc ON pc.partner_id = c.partner_id
ORDER BY c.id;

-- name: NotificationChannelDelete :one
-- Deletes a channel. Its endpoint is disabled and renamed out of the way,
-- and what was still queued for it is dropped (the channel is gone; these
-- are not a partner's deliveries to keep).
WITH c AS (
    DELETE FROM notification_channels nc WHERE nc.id = @id RETURNING nc.id, nc.endpoint_id, nc.name
), e AS (
    UPDATE endpoints ep SET enabled = false, disabled_cause = 'operator', disabled_at = now(),
           disabled_reason = 'notification channel deleted',
           name = left(ep.name, 150) || ' (deleted ' || to_char(now(), 'YYYY-MM-DD HH24:MI:SS.MS') || ')'
    FROM c WHERE ep.id = c.endpoint_id
), d AS (
    DELETE FROM deliveries dl USING c
    WHERE dl.endpoint_id = c.endpoint_id AND dl.status IN ('pending', 'failed')
)
SELECT c.id, c.endpoint_id, c.name FROM c;
