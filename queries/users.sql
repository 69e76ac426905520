-- name: UserCreate :one
INSERT INTO users (email, password_hash, role)
VALUES (@email, @password_hash, @role)
RETURNING *;

-- name: UserGetByEmail :one
SELECT * FROM users WHERE lower(email) = lower(@email);

-- name: UserGet :one
SELECT * FROM users WHERE id = @id;

-- name: UserList :many
SELECT * FROM users ORDER BY disabled_at IS NOT NULL, lower(email);

-- name: UserSetPassword :exec
UPDATE users SET password_hash = @password_hash WHERE id = @id;

-- name: UserRecordLogin :exec
UPDATE users SET last_login_at = now() WHERE id = @id;

-- name: UserSetRole :one
UPDATE users SET role = @role WHERE id = @id RETURNING *;

-- name: UserSetDisabled :one
UPDATE users
SET disabled_at = CASE WHEN @disabled::boolean THEN coalesce(disabled_at, now()) END
WHERE id = @id
RETURNING *;

-- name: UserCountActiveAdmins :one
-- Active admins, locked so two concurrent demotions cannot both pass the
-- last-admin check.
SELECT count(*)::bigint FROM (
    SELECT id FROM users WHERE role = 'admin' AND disabled_at IS NULL FOR UPDATE
) a;

-- name: SetupCounts :one
-- Users and active API keys, so a new installation can say how to get in.
SELECT (SELECT count(*) FROM users)::bigint AS users,
       (SELECT count(*) FROM api_keys WHERE revoked_at IS NULL)::bigint AS api_keys;
