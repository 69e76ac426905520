-- name: AuditRecord :exec
-- Appends one audit entry; called in the same transaction as the change it
-- records, so an entry exists exactly when the change does.
INSERT INTO audit_log (actor, action, target_type, target_id, details)
VALUES (@actor, @action, @target_type, @target_id, @details);

-- name: AuditPage :many
-- One page of the audit log, newest first, for the API, the dashboard page
-- and its CSV export. Keyset-paged on the identity id below @before_id
-- (never OFFSET: entries added meanwhile never shift a page); ids grow with
-- the insert, so id order is time order within a transaction's clock.
-- Every filter is optional: actor, action (exactly, or @action_prefix),
-- target type and id, and the time range (since inclusive, until
-- exclusive). Reads only.
SELECT id, at, actor, action, target_type, target_id, details
FROM audit_log
WHERE (sqlc.narg('actor')::text IS NULL OR actor = sqlc.narg('actor'))
  AND (sqlc.narg('action')::text IS NULL OR action = sqlc.narg('action'))
  AND (sqlc.narg('action_prefix')::text IS NULL OR starts_with(action, sqlc.narg('action_prefix')))
  AND (sqlc.narg('target_type')::text IS NULL OR target_type = sqlc.narg('target_type'))
  AND (sqlc.narg('target_id')::text IS NULL OR target_id = sqlc.narg('target_id'))
  AND (sqlc.narg('since')::timestamptz IS NULL OR at >= sqlc.narg('since'))
  AND (sqlc.narg('until')::timestamptz IS NULL OR at < sqlc.narg('until'))
  AND (sqlc.narg('before_id')::bigint IS NULL OR id < sqlc.narg('before_id'))
ORDER BY id DESC
LIMIT @row_limit;
