-- name: APIKeyCreate :one
-- Stores a new API key by the SHA-256 of its value; the value itself is never stored.
-- scope and partner_id are checked by the table (migration 00028): an
-- unknown partner fails with 23503, an admin key bound to one with 23514.
INSERT INTO api_keys (name, prefix, key_hash, created_by, scope, partner_id)
VALUES (@name, @prefix, @key_hash, @created_by, @scope, sqlc.narg('partner_id'))
RETURNING id, name, prefix, created_by, created_at, last_used_at, revoked_at, scope, partner_id;

-- name: APIKeyAuthenticate :one
-- Looks a key up by the SHA-256 of its value; revoked keys do not match.
-- The scope and partner come with it: each API route checks them.
SELECT id, name, prefix, last_used_at, scope, partner_id
FROM api_keys
WHERE key_hash = @key_hash AND revoked_at IS NULL;

-- name: APIKeyTouch :exec
-- Records use at most once a minute per key, so authentication stays a
-- read on the hot path.
UPDATE api_keys SET last_used_at = now()
WHERE id = @id AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute');

-- name: APIKeyList :many
-- Every key for the settings page, with its partner's name. Reads only.
SELECT k.id, k.name, k.prefix, k.created_by, k.created_at, k.last_used_at, k.revoked_at,
       k.scope, k.partner_id, p.name AS partner_name
FROM api_keys k
LEFT JOIN partners p ON p.id = k.partner_id
ORDER BY k.revoked_at IS NOT NULL, k.created_at DESC;

-- name: APIKeyRevoke :one
-- Revokes a key: it stops authenticating at once and stays listed as revoked.
-- No row when it is unknown or already revoked.
UPDATE api_keys SET revoked_at = now()
WHERE id = @id AND revoked_at IS NULL
RETURNING id, name, prefix, created_by, created_at, last_used_at, revoked_at, scope, partner_id;
