-- Partner portal. Every statement that reads or changes a partner's data
-- takes @partner_id and filters by it in SQL: the portal session's partner,
-- never a value from the request. A row of another partner is simply not
-- found (the handlers answer 404). The two lookups by token (a link being
-- consumed, a session cookie) are how the partner is learned.

-- name: PortalLinkCreate :one
-- Stores a sign-in link for an active partner (no row for an unknown or
-- archived one). Only the token's hash is kept.
INSERT INTO portal_links (partner_id, token_hash, created_by, expires_at)
SELECT p.id, @token_hash, @created_by, @expires_at
FROM partners p
WHERE p.id = @partner_id AND p.archived_at IS NULL
RETURNING id, partner_id, created_at, expires_at;

-- name: PortalLinkConsume :one
-- Uses a link once: the conditional UPDATE lets exactly one of two racing
-- requests through. No row for a used, revoked, expired or unknown link, or
-- an archived partner's.
UPDATE portal_links l
SET used_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM partners p
WHERE l.token_hash = @token_hash
  AND l.used_at IS NULL AND l.revoked_at IS NULL
  AND l.expires_at > coalesce(sqlc.narg('now')::timestamptz, now())
  AND p.id = l.partner_id AND p.archived_at IS NULL
RETURNING l.id, l.partner_id;

-- name: PortalLinkState :one
-- Why a link did not work (the sign-in page explains it). Reads only.
SELECT l.used_at, l.revoked_at, l.expires_at, p.archived_at AS partner_archived_at
FROM portal_links l
JOIN partners p ON p.id = l.partner_id
WHERE l.token_hash = @token_hash;

-- name: PortalLinkList :many
-- A partner's links that can still be used, newest first.
SELECT id, created_by, created_at, expires_at
FROM portal_links
WHERE partner_id = @partner_id AND used_at IS NULL AND revoked_at IS NULL
  AND expires_at > coalesce(sqlc.narg('now')::timestamptz, now())
ORDER BY created_at DESC, id DESC
LIMIT 50;

-- name: PortalLinkRevoke :execrows
-- Revokes one unused link of the partner.
UPDATE portal_links SET revoked_at = now()
WHERE id = @id AND partner_id = @partner_id AND used_at IS NULL AND revoked_at IS NULL;

-- name: PortalLinkRevokeAll :execrows
-- Revokes every unused, unexpired link of the partner.
UPDATE portal_links SET revoked_at = now()
WHERE partner_id = @partner_id AND used_at IS NULL AND revoked_at IS NULL AND expires_at > now();

-- name: PortalSessionCreate :one
-- Starts a session for the partner a consumed link named. id is internal;
-- the cookie carries the random token whose hash is token_hash.
INSERT INTO portal_sessions (token_hash, partner_id, link_id, csrf_token, user_agent, remote_ip)
VALUES (@token_hash, @partner_id, @link_id, @csrf_token, @user_agent, @remote_ip)
RETURNING id;

-- name: PortalSessionGet :one
-- The session a cookie names, with its partner, unless revoked or the
-- partner archived. Idle and absolute limits are checked by the caller.
-- The partner's portal permissions are read here, per request, so an
-- operator's change applies to open sessions at once.
SELECT s.id, s.partner_id, s.csrf_token, s.created_at, s.last_seen_at, p.name AS partner_name,
       p.portal_manage_endpoints
FROM portal_sessions s
JOIN partners p ON p.id = s.partner_id
WHERE s.token_hash = @token_hash AND s.revoked_at IS NULL AND p.archived_at IS NULL;

-- name: PortalSessionTouch :exec
-- Slides the idle limit; called at most once a minute per session.
UPDATE portal_sessions SET last_seen_at = now()
WHERE id = @id AND partner_id = @partner_id;

-- name: PortalSessionRevoke :execrows
-- Ends one session of the partner (sign out, or the operator's revoke).
UPDATE portal_sessions SET revoked_at = now()
WHERE id = @id AND partner_id = @partner_id AND revoked_at IS NULL;

-- name: PortalSessionRevokeAll :execrows
-- Ends every session of the partner.
UPDATE portal_sessions SET revoked_at = now()
WHERE partner_id = @partner_id AND revoked_at IS NULL;

-- name: PortalSessionList :many
-- A partner's live sessions for its dashboard page, newest first.
SELECT id, created_at, last_seen_at, user_agent, remote_ip
FROM portal_sessions
WHERE partner_id = @partner_id AND revoked_at IS NULL
  AND last_seen_at > @idle_after::timestamptz AND created_at > @created_after::timestamptz
ORDER BY created_at DESC, id DESC
LIMIT 50;

-- name: PortalEndpointList :many
-- The partner's endpoints with breaker state and cached latency (the
-- columns of EndpointListWithHealth, so the dashboard's row mapping serves).
SELECT sqlc.embed(e), sqlc.embed(h), p.name AS partner_name
FROM endpoints e
JOIN endpoint_health h ON h.endpoint_id = e.id
JOIN partners p ON p.id = e.partner_id
WHERE e.partner_id = @partner_id
ORDER BY lower(e.name), e.id;

-- name: PortalEndpointGet :one
-- One of the partner's endpoints with its health; no row for another's.
SELECT sqlc.embed(e), sqlc.embed(h), p.name AS partner_name
FROM endpoints e
JOIN endpoint_health h ON h.endpoint_id = e.id
JOIN partners p ON p.id = e.partner_id
WHERE e.id = @id AND e.partner_id = @partner_id;

-- name: PortalEndpointCounts :many
-- Queued and dead deliveries per endpoint of the partner.
SELECT d.endpoint_id,
       count(*) FILTER (WHERE d.status IN ('pending', 'failed', 'in_flight'))::bigint AS queued,
       count(*) FILTER (WHERE d.status = 'dead')::bigint AS dead
FROM deliveries d
JOIN endpoints e ON e.id = d.endpoint_id
WHERE e.partner_id = @partner_id AND d.status IN ('pending', 'failed', 'in_flight', 'dead')
GROUP BY d.endpoint_id;

-- name: PortalDeadClusters :many
-- The dead letters of one of the partner's endpoints since a time, grouped
-- by error class and status code (the replay selector's key).
SELECT coalesce(d.last_error_class, '')::text AS error_class,
       coalesce(d.last_status_code, 0)::int AS status_code,
       count(*)::bigint AS dead_count,
       min(d.dead_at)::timestamptz AS first_dead_at,
       max(d.dead_at)::timestamptz AS last_dead_at,
       (mode() WITHIN GROUP (ORDER BY coalesce(d.last_error, '')))::text AS primary_error
FROM deliveries d
JOIN endpoints e ON e.id = d.endpoint_id
WHERE d.status = 'dead' AND d.endpoint_id = @endpoint_id AND e.partner_id = @partner_id
  AND d.dead_at >= @since::timestamptz
GROUP BY 1, 2
ORDER BY count(*) DESC, 1, 2;

-- name: PortalDeadList :many
-- The newest dead letters of one of the partner's endpoints.
SELECT d.id, d.event_id, ev.type AS event_type, d.attempt_count, d.dead_at,
       d.last_error_class, d.last_status_code
FROM deliveries d
JOIN endpoints e ON e.id = d.endpoint_id
JOIN events ev ON ev.id = d.event_id
WHERE d.status = 'dead' AND d.endpoint_id = @endpoint_id AND e.partner_id = @partner_id
ORDER BY d.dead_at DESC, d.id DESC
LIMIT @row_limit::int;

-- name: PortalDeliveryGet :one
-- One delivery to one of the partner's endpoints; no row for another's.
SELECT d.id, d.event_id, d.endpoint_id, d.status
FROM deliveries d
JOIN endpoints e ON e.id = d.endpoint_id
WHERE d.id = @id AND e.partner_id = @partner_id;

-- name: PortalEventGet :one
-- An event that has a delivery to one of the partner's endpoints; an event
-- sent only to others is not found.
SELECT ev.*
FROM events ev
WHERE ev.id = @id
  AND EXISTS (SELECT 1 FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
              WHERE d.event_id = ev.id AND e.partner_id = @partner_id);

-- name: PortalDeliveryListByEvent :many
-- An event's deliveries to the partner's endpoints only.
SELECT d.*, e.name AS endpoint_name, e.kind AS endpoint_kind
FROM deliveries d
JOIN endpoints e ON e.id = d.endpoint_id
WHERE d.event_id = @event_id AND e.partner_id = @partner_id
ORDER BY d.id;

-- name: PortalAttemptListByEvent :many
-- The attempts of an event's deliveries to the partner's endpoints, oldest
-- first.
SELECT a.*
FROM delivery_attempts a
JOIN deliveries d ON d.id = a.delivery_id
JOIN endpoints e ON e.id = d.endpoint_id
WHERE d.event_id = @event_id AND e.partner_id = @partner_id
ORDER BY a.delivery_id, a.attempt_no, a.id;

-- name: PortalDeliveryRefsByEvents :many
-- The event log's delivery chips: the partner's deliveries of these events.
SELECT d.event_id, d.id, d.endpoint_id, e.name AS endpoint_name, d.status
FROM deliveries d
JOIN endpoints e ON e.id = d.endpoint_id
WHERE d.event_id = ANY(@event_ids::uuid[]) AND e.partner_id = @partner_id
ORDER BY d.event_id, d.id;

-- name: PortalSecretExpire :execrows
-- Ends an old signing secret's overlap now (the partner has switched). The
-- current secret (no expiry) is never touched, nor another partner's.
UPDATE endpoint_secrets s SET expires_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM endpoints e
WHERE s.id = @id AND s.endpoint_id = @endpoint_id AND e.id = s.endpoint_id AND e.partner_id = @partner_id
  AND s.expires_at IS NOT NULL AND s.expires_at > coalesce(sqlc.narg('now')::timestamptz, now());
