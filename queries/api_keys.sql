-- name: APIKeyCreate :one
-- Stores a new API key by the SHA-256 of its value; the value itself is never stored.
INSERT INTO api_keys (name, prefix, key_hash, created_by)
VALUES (@name, @prefix, @key_hash, @created_by)
RETURNING id, name, prefix, created_by, created_at, last_used_at, revoked_at;

-- name: APIKeyAuthenticate :one
-- Looks a key up by the SHA-256 of its value; revoked keys do not match.
SELECT id, name, prefix, last_used_at
FROM api_keys
WHERE key_hash = @key_hash AND revoked_at IS NULL;

-- name: APIKeyTouch :exec
-- Records use at most once a minute per key, so authentication stays a
-- read on the hot path.
UPDATE api_keys SET last_used_at = now()
WHERE id = @id AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute');

-- name: APIKeyList :many
SELECT id, name, prefix, created_by, created_at, last_used_at, revoked_at
FROM api_keys
ORDER BY revoked_at IS NOT NULL, created_at DESC;

-- name: APIKeyRevoke :one
-- Revokes a key: it stops authenticating at once and stays listed as revoked.
-- No row when it is unknown or already revoked.
UPDATE api_keys SET revoked_at = now()
WHERE id = @id AND revoked_at IS NULL
RETURNING id, name, prefix, created_by, created_at, last_used_at, revoked_at;
