-- name: UserCreate :one
-- Creates a dashboard user; a duplicate email (case-insensitive) fails with 23505.
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
-- Replaces a user's password hash (the demo prints a fresh password on a rerun).
UPDATE users SET password_hash = @password_hash WHERE id = @id;

-- name: UserRecordLogin :exec
-- Stamps a successful sign-in, shown on the users list.
UPDATE users SET last_login_at = now() WHERE id = @id;

-- name: UserSetRole :one
-- Changes a user's role; the caller ends the user's sessions so it applies at once.
UPDATE users SET role = @role WHERE id = @id RETURNING *;

-- name: UserSetDisabled :one
-- Disables (keeping the first time) or enables a user; the caller ends the
-- user's sessions, and UserSessionGet refuses a disabled user's anyway.
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
