-- name: EndpointSecretCreate :one
-- Adds a secret and makes it the endpoint's secret_version in the same
-- statement, so no path can add one without the worker noticing.
WITH s AS (
    INSERT INTO endpoint_secrets (endpoint_id, ciphertext)
    VALUES (@endpoint_id, @ciphertext)
    RETURNING id, endpoint_id, created_at, expires_at
), v AS (
    UPDATE endpoints e SET secret_version = s.id FROM s WHERE e.id = s.endpoint_id
)
SELECT id, endpoint_id, created_at, expires_at FROM s;

-- name: EndpointSecretExpireCurrent :exec
-- Starts a rotation overlap: every unexpired secret of the endpoint other
-- than the new one keeps signing until @expires_at.
UPDATE endpoint_secrets
SET expires_at = @expires_at
WHERE endpoint_id = @endpoint_id
  AND id <> @keep_id
  AND (expires_at IS NULL OR expires_at > @expires_at);

-- name: PortalSecretExpire :execrows
-- Ends an old signing secret's overlap now (the partner has switched). The
-- current secret (no expiry) is never touched, nor another partner's.
UPDATE endpoint_secrets s SET expires_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM endpoints e
WHERE s.id = @id AND s.endpoint_id = @endpoint_id AND e.id = s.endpoint_id AND e.partner_id = @partner_id
  AND s.expires_at IS NOT NULL AND s.expires_at > coalesce(sqlc.narg('now')::timestamptz, now());

-- name: EndpointSecretListActive :many
-- The secrets that sign now, newest first (the order of v1 signatures).
SELECT id, endpoint_id, ciphertext, created_at, expires_at
FROM endpoint_secrets
WHERE endpoint_id = @endpoint_id
  AND (expires_at IS NULL OR expires_at > coalesce(sqlc.narg('now')::timestamptz, now()))
ORDER BY created_at DESC, id DESC;

-- name: EndpointSecretList :many
-- Every secret of an endpoint for the dashboard: metadata only, never the value.
SELECT id, endpoint_id, created_at, expires_at
FROM endpoint_secrets
WHERE endpoint_id = @endpoint_id
ORDER BY created_at DESC, id DESC;

-- name: EndpointSecretsForSigning :many
-- The active secrets of one endpoint, newest first, with their expiry (the
-- worker caches them per endpoint until a newer secret appears).
SELECT id, ciphertext, expires_at
FROM endpoint_secrets
WHERE endpoint_id = @endpoint_id
  AND (expires_at IS NULL OR expires_at > coalesce(sqlc.narg('now')::timestamptz, now()))
ORDER BY created_at DESC, id DESC;
