-- name: NotificationContactEndpointCreate :one
-- The endpoint an email channel or a partner's contact channel is
-- delivered through: kind email (url mailto:<recipients>, sent over SMTP)
-- or webhook; url_set_by 'partner' for a URL a partner entered, so the
-- worker dials it through the partner guard. Like every channel endpoint it
-- takes every hookline/* event and is never auto-disabled.
INSERT INTO endpoints (partner_id, name, kind, url, url_set_by, method, event_types, max_attempts, disable_after_failures)
VALUES (@partner_id, @name, @kind, @url, @url_set_by, 'POST', ARRAY['hookline/*'], 8, 0)
RETURNING id;

-- name: NotificationContactEndpointSetURL :exec
-- Changes a contact channel's recipients or URL (the partner edited its
-- contacts). Deliveries still queued go to the new address.
UPDATE endpoints SET url = @url, url_set_by = @url_set_by, updated_at = now()
WHERE id = @id;

-- name: NotificationChannelCreateForPartner :one
-- Stores a partner's contact channel (one per style); its endpoint is
-- created first, in the same transaction.
INSERT INTO notification_channels (name, style, endpoint_id, kinds, created_by, partner_id)
VALUES (@name, @style, @endpoint_id, @kinds, @created_by, @partner_id)
RETURNING *;

-- name: NotificationChannelsOfPartner :many
-- A partner's contact channels with their endpoint's URL.
SELECT c.id, c.style, c.endpoint_id, c.kinds, e.url
FROM notification_channels c
JOIN endpoints e ON e.id = c.endpoint_id
WHERE c.partner_id = @partner_id
ORDER BY c.style;

-- name: PartnerContactsEnabled :one
-- Whether the operator lets the partner's contacts hear about its
-- endpoints (false without a row).
SELECT coalesce((SELECT enabled FROM partner_contacts WHERE partner_id = @partner_id), false)::boolean AS enabled;

-- name: PartnerContactsSetEnabled :exec
-- The operator's opt-in (or opt-out) for a partner; the contact channels
-- stay stored either way.
INSERT INTO partner_contacts (partner_id, enabled, updated_by, updated_at)
VALUES (@partner_id, @enabled, @updated_by, now())
ON CONFLICT (partner_id) DO UPDATE
SET enabled = excluded.enabled, updated_by = excluded.updated_by, updated_at = excluded.updated_at;

-- name: NotificationBreakersHeldOpen :many
-- Endpoints whose breaker has been open (or probing) since a
-- breaker.opened notification older than @opened_before, with no
-- breaker.closed or breaker.held_open recorded after it: the breaker watch
-- writes one breaker.held_open for each. Paused endpoints are the
-- operator's doing and are left out. Reads only; the watch writes.
SELECT h.endpoint_id, n.created_at AS opened_at
FROM endpoint_health h
JOIN LATERAL (
    SELECT x.kind, x.created_at FROM notifications x
    WHERE x.endpoint_id = h.endpoint_id AND x.kind IN ('breaker.opened', 'breaker.closed', 'breaker.held_open')
    ORDER BY x.id DESC LIMIT 1
) n ON n.kind = 'breaker.opened'
WHERE h.state <> 'closed' AND NOT h.paused
  AND n.created_at <= @opened_before::timestamptz
ORDER BY h.endpoint_id;
