-- Two-factor sign-in: a user's TOTP secret (sealed) and one-time recovery
-- codes (salted hashes). Nothing here ever holds a code in plain text.

-- name: UserTOTPGet :one
-- A user's TOTP row, pending (enabled_at NULL) or enabled. Reads only.
SELECT * FROM user_totp WHERE user_id = @user_id;

-- name: UserTOTPEnabled :one
-- Whether a user signs in with a second factor; read on each dashboard
-- request of a user whose role HOOKLINE_REQUIRE_2FA covers.
SELECT EXISTS (SELECT 1 FROM user_totp WHERE user_id = @user_id AND enabled_at IS NOT NULL);

-- name: UserTOTPEnabledUsers :many
-- The users with two-factor sign-in on, for the users page.
SELECT user_id FROM user_totp WHERE enabled_at IS NOT NULL;

-- name: UserTOTPBegin :execrows
-- Starts (or restarts) an enrolment with a new sealed secret. No row is
-- changed when two-factor sign-in is already on: turning it off comes first.
INSERT INTO user_totp (user_id, secret)
VALUES (@user_id, @secret)
ON CONFLICT (user_id) DO UPDATE
SET secret = excluded.secret, created_at = now(), last_step = 0
WHERE user_totp.enabled_at IS NULL;

-- name: UserTOTPEnable :execrows
-- Finishes an enrolment once a code for time step @step was right. The
-- secret must still be the one the code was checked against (another tab
-- may have restarted the enrolment in between); no row when it is not, or
-- when the enrolment is already finished.
UPDATE user_totp
SET enabled_at = now(), last_step = @step
WHERE user_id = @user_id AND enabled_at IS NULL AND secret = @secret AND last_step < @step;

-- name: UserTOTPUseStep :execrows
-- Records that a code for time step @step was accepted. The conditional
-- UPDATE is the replay guard: of two requests with the same code (or a code
-- of an earlier step) exactly one gets a row.
UPDATE user_totp
SET last_step = @step
WHERE user_id = @user_id AND enabled_at IS NOT NULL AND last_step < @step;

-- name: UserTOTPDelete :execrows
-- Turns two-factor sign-in off (or drops a pending enrolment); the caller
-- deletes the recovery codes in the same transaction.
DELETE FROM user_totp WHERE user_id = @user_id;

-- name: UserRecoveryCodesReplace :exec
-- Replaces a user's recovery codes with new ones: the old ones, used or
-- not, stop working. salts[i] and hashes[i] belong together.
WITH gone AS (
    DELETE FROM user_recovery_codes WHERE user_id = @user_id
)
INSERT INTO user_recovery_codes (user_id, salt, code_hash)
SELECT @user_id, unnest(@salts::bytea[]), unnest(@hashes::bytea[]);

-- name: UserRecoveryCodesDelete :exec
-- Drops every recovery code of a user (two-factor sign-in turned off).
DELETE FROM user_recovery_codes WHERE user_id = @user_id;

-- name: UserRecoveryCodesUnused :many
-- The codes a user may still use, to compare a typed code with. Reads only.
SELECT id, salt, code_hash FROM user_recovery_codes
WHERE user_id = @user_id AND used_at IS NULL
ORDER BY id;

-- name: UserRecoveryCodeUse :execrows
-- Burns a recovery code. The conditional UPDATE lets exactly one of two
-- racing requests with the same code through.
UPDATE user_recovery_codes SET used_at = now()
WHERE id = @id AND user_id = @user_id AND used_at IS NULL;

-- name: UserRecoveryCodesLeft :one
-- How many recovery codes a user has left, for the account page.
SELECT count(*)::bigint FROM user_recovery_codes WHERE user_id = @user_id AND used_at IS NULL;
