-- Dashboard users signed in through OpenID Connect (web/dash_oidc_user.go).

-- name: UserGetByOIDC :one
-- The user linked to a provider account, locked so that two sign-ins of the
-- same account at once update it one after the other.
SELECT * FROM users WHERE oidc_issuer = @issuer AND oidc_subject = @subject FOR UPDATE;

-- name: UserGetByEmailForLink :one
-- A user by email (case-insensitive), locked while a sign-in decides whether
-- to link it to a provider account.
SELECT * FROM users WHERE lower(email) = lower(@email) FOR UPDATE;

-- name: UserOIDCCreate :one
-- Provisions a user at its first single sign-on. password_hash is the hash
-- of a random password nobody knows (see provisionUser). A duplicate email
-- or provider account fails with 23505.
INSERT INTO users (email, password_hash, role, oidc_issuer, oidc_subject)
VALUES (@email, @password_hash, @role, @issuer, @subject)
RETURNING *;

-- name: UserOIDCLink :one
-- Links an existing user, not yet linked to any provider account, to one,
-- and sets its role from the provider's claim. No row when the user was
-- linked meanwhile.
UPDATE users
SET oidc_issuer = @issuer, oidc_subject = @subject, role = @role
WHERE id = @id AND oidc_issuer IS NULL
RETURNING *;

-- name: UserOIDCSync :one
-- Updates a linked user's email and role from the provider at a sign-in; a
-- new email that another user has fails with 23505.
UPDATE users SET email = @email, role = @role WHERE id = @id RETURNING *;
