-- Portal sessions; as in portal.sql, whatever touches a partner's data filters by its @partner_id.

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

-- name: RetentionDeletePortalSessions :execrows
-- Retention: deletes portal sessions past their limits (8 h idle, 7 days
-- absolute; web), with a margin: refused already, dead weight now.
DELETE FROM portal_sessions
WHERE last_seen_at < @idle_before::timestamptz OR created_at < @created_before::timestamptz;
