-- name: UserSessionCreate :exec
-- Stores a new dashboard session. id is the SHA-256 of the random value in
-- the cookie, so a leaked table does not hand out live sessions.
INSERT INTO user_sessions (id, user_id, csrf_token, user_agent, remote_ip)
VALUES (@id, @user_id, @csrf_token, @user_agent, @remote_ip);

-- name: UserSessionGet :one
-- A session with its user; disabled users have no sessions.
SELECT s.id, s.user_id, s.csrf_token, s.created_at, s.last_seen_at,
       u.email, u.role
FROM user_sessions s
JOIN users u ON u.id = s.user_id
WHERE s.id = @id AND u.disabled_at IS NULL;

-- name: UserSessionTouch :exec
-- Slides the idle timeout; called at most once a minute per session.
UPDATE user_sessions SET last_seen_at = now() WHERE id = @id;

-- name: UserSessionDelete :exec
-- Ends one session: sign-out, or a browser's previous session when it signs in again.
DELETE FROM user_sessions WHERE id = @id;

-- name: UserSessionDeleteForUser :exec
-- Ends every session of a user (disabled, role changed, password reset).
DELETE FROM user_sessions WHERE user_id = @user_id;

-- name: UserSessionDeleteExpired :execrows
-- Retention: deletes sessions past their idle or absolute limit (web refuses
-- them already; the worker sweeps them).
DELETE FROM user_sessions WHERE last_seen_at < @idle_before::timestamptz OR created_at < @created_before::timestamptz;
