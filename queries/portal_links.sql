-- Portal sign-in links; as in portal.sql, whatever touches a partner's data filters by its @partner_id.

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

-- name: RetentionDeletePortalLinks :execrows
-- Retention: deletes sign-in links expired before the cutoff that no kept
-- session names.
DELETE FROM portal_links l
WHERE l.expires_at < @before::timestamptz
  AND NOT EXISTS (SELECT 1 FROM portal_sessions s WHERE s.link_id = l.id);
