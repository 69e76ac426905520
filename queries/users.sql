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
