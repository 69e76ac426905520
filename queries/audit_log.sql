-- name: AuditRecord :exec
-- Appends one audit entry; called in the same transaction as the change it
-- records, so an entry exists exactly when the change does.
INSERT INTO audit_log (actor, action, target_type, target_id, details)
VALUES (@actor, @action, @target_type, @target_id, @details);

-- name: AuditList :many
SELECT * FROM audit_log
WHERE (sqlc.narg('before_id')::bigint IS NULL OR id < sqlc.narg('before_id'))
ORDER BY id DESC
LIMIT @row_limit;
