-- +goose Up
-- Two-factor sign-in (TOTP, RFC 6238) for dashboard users, in tables of
-- their own so that users keeps its columns (and every SELECT * on it its
-- shape).
--
-- user_totp holds a user's authenticator secret, sealed with the server's
-- secret box (bound to the user id, so a row copied onto another user does
-- not open). enabled_at is NULL while an enrolment waits for its first code;
-- last_step is the last RFC 6238 time step a code was accepted for, and a
-- code is accepted only for a later step, so a code seen once (over a
-- shoulder, in a proxy's log) cannot be used again.
CREATE TABLE user_totp (
    user_id    bigint      PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret     bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    enabled_at timestamptz,
    last_step  bigint      NOT NULL DEFAULT 0
);

-- One-time recovery codes, for a lost authenticator. Only a salted SHA-256
-- of each is kept: the codes are 80 random bits, so a slow hash would add
-- nothing against guessing and cost a bcrypt per stored code per attempt.
-- A used code keeps its row (used_at set) so the account page can count
-- what is left.
CREATE TABLE user_recovery_codes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    salt       bytea       NOT NULL,
    code_hash  bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    used_at    timestamptz
);
CREATE INDEX user_recovery_codes_user ON user_recovery_codes (user_id);

-- +goose Down
DROP TABLE user_recovery_codes;
DROP TABLE user_totp;
