package web

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/hookline/hookline/db"
)

// audit records who did what to which object, in the caller's transaction.
// details must never contain secrets or payload values.
func audit(ctx context.Context, q *db.Queries, actor, action, targetType string, targetID int64, details map[string]any) error {
	if details == nil {
		details = map[string]any{}
	}
	b, err := json.Marshal(details)
	if err != nil {
		return err
	}
	target := ""
	if targetID != 0 {
		target = strconv.FormatInt(targetID, 10)
	}
	return q.AuditRecord(ctx, db.AuditRecordParams{
		Actor: actor, Action: action, TargetType: targetType, TargetID: target, Details: b,
	})
}
