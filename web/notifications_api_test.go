package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestAPIFailureBudgetFields(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Budget fields")
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{"partner_id": pid, "name": "ep-" + fmt.Sprint(len(extra)), "kind": "webhook", "url": "https://hooks.test/in"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	t.Run("defaults", func(t *testing.T) {
		ep := env.createEndpoint(base(nil))
		if ep.DisableAfterFailures != 10 || ep.DisableAfterHours != 72 || ep.DisabledCause != "" || ep.DisabledAt != nil {
			t.Fatalf("defaults = %+v", ep.failureBudgetFields)
		}
		rec := env.do(http.MethodGet, fmt.Sprintf("/api/v1/endpoints/%d", ep.ID), nil)
		mustStatus(t, rec, http.StatusOK)
		if v := decodeBody[endpointJSON](t, rec); v.FailureBudget == nil || v.FailureBudget.FailedDeliveries != 0 || v.FailureBudget.Progress != "" {
			t.Fatalf("fresh budget = %+v", v.FailureBudget)
		}
	})
	for _, c := range []struct {
		name  string
		field string
		value any
	}{
		{"negative failures", "disable_after_failures", -1},
		{"too many failures", "disable_after_failures", 10001},
		{"negative hours", "disable_after_hours", -1},
		{"more than a year", "disable_after_hours", 8761},
		{"not a number", "disable_after_hours", "72"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := env.do(http.MethodPost, "/api/v1/endpoints", base(map[string]any{c.field: c.value}))
			mustError(t, rec, http.StatusUnprocessableEntity, c.field)
		})
	}
	t.Run("patch sets, off, and an operator disable is recorded", func(t *testing.T) {
		ep := env.createEndpoint(base(map[string]any{"name": "patched"}))
		rec := env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", ep.ID), map[string]any{"disable_after_failures": 0, "disable_after_hours": 1})
		mustStatus(t, rec, http.StatusOK)
		if v := decodeBody[endpointJSON](t, rec); v.DisableAfterFailures != 0 || v.DisableAfterHours != 1 {
			t.Fatalf("patched = %+v", v.failureBudgetFields)
		}
		mustError(t, env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", ep.ID), map[string]any{"disable_after_failures": 20000}),
			http.StatusUnprocessableEntity, "disable_after_failures")
		rec = env.do(http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", ep.ID), map[string]any{"enabled": false})
		mustStatus(t, rec, http.StatusOK)
		if v := decodeBody[endpointJSON](t, rec); v.DisabledCause != "operator" || v.DisabledAt == nil {
			t.Fatalf("operator disable = %+v", v.failureBudgetFields)
		}
		var audited int
		if err := env.pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action = 'endpoint.update'
			AND target_id = $1 AND details->'changed' ? 'disable_after_failures'`, fmt.Sprint(ep.ID)).Scan(&audited); err != nil || audited != 1 {
			t.Fatalf("budget change audited %d times (%v)", audited, err)
		}
	})
}

func TestAPINotificationChannels(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	ok := map[string]any{"name": "ops", "style": "webhook", "url": "https://hooks.test/notify", "kinds": []string{"breaker.opened", "endpoint.disabled"}}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range ok {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	for _, c := range []struct {
		name, field string
		body        map[string]any
	}{
		{"no name", "name", with("name", " ")},
		{"unknown style", "style", with("style", "pager")}, // email is a style since email channels
		{"no url", "url", with("url", "")},
		{"not http", "url", with("url", "ftp://hooks.test/")},
		{"private address", "url", with("url", "http://10.1.2.3/hook")},
		{"metadata address", "url", with("url", "http://169.254.169.254/latest")},
		{"unknown kind", "kinds", with("kinds", []string{"breaker.exploded"})},
		{"no kinds", "kinds", with("kinds", []string{})},
	} {
		t.Run(c.name, func(t *testing.T) {
			mustError(t, env.do(http.MethodPost, "/api/v1/notification-channels", c.body), http.StatusUnprocessableEntity, c.field)
		})
	}
	t.Run("unauthenticated", func(t *testing.T) {
		rec := env.do(http.MethodGet, "/api/v1/notification-channels", nil, "Authorization", "")
		mustStatus(t, rec, http.StatusUnauthorized)
	})

	rec := env.do(http.MethodPost, "/api/v1/notification-channels", ok)
	mustStatus(t, rec, http.StatusCreated)
	created := decodeBody[channelJSON](t, rec)
	if !strings.HasPrefix(created.Secret, "whsec_") || created.EndpointID == 0 || len(created.Kinds) != 2 {
		t.Fatalf("created = %+v", created)
	}
	var ciphertext []byte
	if err := env.pool.QueryRow(context.Background(), `SELECT ciphertext FROM endpoint_secrets WHERE endpoint_id = $1`, created.EndpointID).Scan(&ciphertext); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(ciphertext), created.Secret) {
		t.Fatal("channel secret stored in plain text")
	}
	mustError(t, env.do(http.MethodPost, "/api/v1/notification-channels", with("name", "OPS")), http.StatusConflict, "name")

	chat := env.do(http.MethodPost, "/api/v1/notification-channels", func() map[string]any { m := with("name", "chat"); m["style"] = "chat"; return m }())
	mustStatus(t, chat, http.StatusCreated)
	if c := decodeBody[channelJSON](t, chat); c.Secret != "" {
		t.Fatal("a chat channel showed a signing secret nobody verifies")
	}

	rec = env.do(http.MethodGet, "/api/v1/notification-channels", nil)
	mustStatus(t, rec, http.StatusOK)
	list := decodeBody[struct{ Channels []channelJSON }](t, rec)
	if len(list.Channels) != 2 || list.Channels[0].Secret != "" || list.Channels[0].URL != "https://hooks.test/notify" {
		t.Fatalf("list = %+v", list.Channels)
	}

	mustStatus(t, env.do(http.MethodPost, fmt.Sprintf("/api/v1/notification-channels/%d/test", created.ID), nil), http.StatusAccepted)
	mustStatus(t, env.do(http.MethodDelete, fmt.Sprintf("/api/v1/notification-channels/%d", created.ID), nil), http.StatusNoContent)
	mustError(t, env.do(http.MethodDelete, fmt.Sprintf("/api/v1/notification-channels/%d", created.ID), nil), http.StatusNotFound, "")
	mustError(t, env.do(http.MethodPost, fmt.Sprintf("/api/v1/notification-channels/%d/test", created.ID), nil), http.StatusNotFound, "")
	var held, audits int
	if err := env.pool.QueryRow(context.Background(), `SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status IN ('pending', 'failed')`, created.EndpointID).Scan(&held); err != nil || held != 0 {
		t.Fatalf("deleted channel still has %d queued deliveries (%v)", held, err)
	}
	if err := env.pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action LIKE 'notification_channel.%'`).Scan(&audits); err != nil || audits != 4 {
		t.Fatalf("%d audit entries (%v), want create ×2, test, delete", audits, err)
	}
}
