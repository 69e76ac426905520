package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// Inputs PostgreSQL would refuse, and settings that pass a naive check but
// break delivery, are 4xx answers naming the field; never a 500.

func TestEventPayloadPostgreSQLRefuses(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	cases := []struct {
		name    string
		payload string
	}{
		{"invalid UTF-8 bytes", "{\"click_id\": \"a\xff\xfeb\"}"},
		{"invalid UTF-8 in a key", "{\"a\xc3\": 1}"},
		{"NUL escape", `{"click_id": "a\u0000b"}`},
		{"NUL escape in a key", `{"a\u0000": 1}`},
		{"lone high surrogate", `{"click_id": "\ud800"}`},
		{"high surrogate then text", `{"click_id": "\ud800abc"}`},
		{"lone low surrogate", `{"click_id": "\udc00"}`},
		{"two high surrogates", `{"click_id": "\ud800\ud800"}`},
		{"number overflowing numeric", `{"payout": 1e1000000}`},
		{"number beyond a double", `{"payout": 1e309}`},
		{"integer beyond a double", `{"payout": 1` + strings.Repeat("0", 400) + `}`},
		{"number too precise for numeric", `{"payout": 1e-20000}`},
	}
	for _, tc := range cases {
		t.Run("single "+tc.name, func(t *testing.T) {
			rec := env.do(http.MethodPost, "/api/v1/events", `{"type": "conversion.approved", "payload": `+tc.payload+`}`)
			mustError(t, rec, http.StatusUnprocessableEntity, "payload")
		})
	}
	t.Run("a surrogate pair and escaped text are fine", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/events", `{"type": "t", "payload": {"s": "\ud83d\ude00 \\u0000 \"\u00e9", "n": 1e300, "m": -0.5e-300}}`)
		mustStatus(t, rec, http.StatusAccepted)
	})

	t.Run("batch rejects each alone and stores the valid ones", func(t *testing.T) {
		before := countRows(t, env.pool, "events")
		var events []string
		for _, tc := range cases {
			events = append(events, `{"type": "t", "payload": `+tc.payload+`}`)
		}
		events = append(events,
			`{"type": "ok.one", "payload": {"a": 1}}`,
			`{"type": 5, "payload": {"a": 1}}`,
			`{"type": "t", "payload": {"a": 1}, "unknown": true}`,
			`{"type": "bad\u0000type", "payload": {"a": 1}}`,
			`{"type": "t", "payload": {"a": 1}, "idempotency_key": "k\u0000"}`,
			`5`, `null`, `"event"`, `[]`,
			`{"type": "ok.two", "payload": {"b": 2}}`,
		)
		rec := env.do(http.MethodPost, "/api/v1/events/batch", `{"events": [`+strings.Join(events, ",")+`]}`)
		mustStatus(t, rec, http.StatusAccepted)
		out := decodeBody[struct {
			Results []struct {
				Status string
				Error  *struct{ Code, Message, Field string }
			}
			Accepted, Rejected int
		}](t, rec)
		if out.Accepted != 2 || out.Rejected != len(events)-2 {
			t.Fatalf("accepted %d, rejected %d: %s", out.Accepted, out.Rejected, rec.Body.String())
		}
		for i, r := range out.Results[:len(cases)] {
			if r.Status != ingestRejected || r.Error == nil || r.Error.Field != "payload" {
				t.Errorf("%s: %+v", cases[i].name, r)
			}
		}
		wantField := map[int]string{len(cases) + 1: "type", len(cases) + 2: "unknown", len(cases) + 3: "type", len(cases) + 4: "idempotency_key"}
		for i, f := range wantField {
			if r := out.Results[i]; r.Error == nil || r.Error.Field != f {
				t.Errorf("event %d: %+v, want an error on %q", i, r, f)
			}
		}
		if got := countRows(t, env.pool, "events") - before; got != 2 {
			t.Fatalf("%d events stored, want the 2 valid ones", got)
		}
	})
	t.Run("Idempotency-Key header that is not UTF-8", func(t *testing.T) {
		rec := env.do(http.MethodPost, "/api/v1/events", `{"type": "t", "payload": {}}`, "Idempotency-Key", "k\xff")
		mustError(t, rec, http.StatusUnprocessableEntity, "idempotency_key")
	})
}

func TestNULInAPITextFields(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "hook", "kind": "webhook", "url": "https://hooks.test/h"})
	epPath := fmt.Sprintf("/api/v1/endpoints/%d", ep.ID)
	webhook := func(extra string) string {
		return fmt.Sprintf(`{"partner_id": %d, "name": "n", "kind": "webhook", "url": "https://hooks.test/x"%s}`, pid, extra)
	}
	cases := []struct {
		name, method, path, body, field string
	}{
		{"partner name", http.MethodPost, "/api/v1/partners", `{"name": "a\u0000b"}`, "name"},
		{"partner contact", http.MethodPost, "/api/v1/partners", `{"name": "P2", "contact": "\u0000"}`, "contact"},
		{"partner notes", http.MethodPost, "/api/v1/partners", `{"name": "P3", "notes": "x\u0000"}`, "notes"},
		{"endpoint name", http.MethodPost, "/api/v1/endpoints", fmt.Sprintf(`{"partner_id": %d, "name": "a\u0000", "kind": "webhook", "url": "https://hooks.test/x"}`, pid), "name"},
		{"success_body_contains", http.MethodPost, "/api/v1/endpoints", webhook(`, "success_body_contains": "OK\u0000"`), "success_body_contains"},
		{"header name", http.MethodPost, "/api/v1/endpoints", webhook(`, "headers": {"X-A\u0000": "v"}`), "headers"},
		{"header value", http.MethodPost, "/api/v1/endpoints", webhook(`, "headers": {"X-A": "v\u0000"}`), "headers"},
		{"event type", http.MethodPost, "/api/v1/endpoints", webhook(`, "event_types": ["a\u0000"]`), "event_types"},
		{"url", http.MethodPost, "/api/v1/endpoints", fmt.Sprintf(`{"partner_id": %d, "name": "n", "kind": "webhook", "url": "https://hooks.test/\u0000"}`, pid), "url"},
		{"kind", http.MethodPost, "/api/v1/endpoints", fmt.Sprintf(`{"partner_id": %d, "name": "n", "kind": "webhook\u0000", "url": "https://hooks.test/"}`, pid), "kind"},
		{"patch name", http.MethodPatch, epPath, `{"name": "x\u0000"}`, "name"},
		{"patch success_body_contains", http.MethodPatch, epPath, `{"success_body_contains": "\u0000"}`, "success_body_contains"},
		{"patch header value", http.MethodPatch, epPath, `{"headers": {"X-B": "\u0000"}}`, "headers"},
		{"event type of an event", http.MethodPost, "/api/v1/events", `{"type": "a\u0000", "payload": {}}`, "type"},
		{"idempotency key", http.MethodPost, "/api/v1/events", `{"type": "a", "payload": {}, "idempotency_key": "a\u0000"}`, "idempotency_key"},
		{"replay cluster", http.MethodPost, "/api/v1/dead-letters/replay", `{"cluster": "1:\u0000:0"}`, "cluster"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustError(t, env.do(tc.method, tc.path, tc.body), http.StatusUnprocessableEntity, tc.field)
		})
	}
	t.Run("query values", func(t *testing.T) {
		mustError(t, env.do(http.MethodGet, "/api/v1/dead-letters/clusters?hours=1%00", nil), http.StatusUnprocessableEntity, "hours")
		mustError(t, env.do(http.MethodGet, "/api/v1/endpoints?partner_id=%FF", nil), http.StatusUnprocessableEntity, "partner_id")
	})
}

func TestEndpointSettingsRanges(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	n := 0
	create := func(kind, url string, extra map[string]any) *httptest.ResponseRecorder {
		n++
		body := map[string]any{"partner_id": pid, "name": fmt.Sprintf("e%d", n), "kind": kind, "url": url}
		for k, v := range extra {
			body[k] = v
		}
		return env.do(http.MethodPost, "/api/v1/endpoints", body)
	}
	long := "https://hooks.test/pb?x=" + strings.Repeat("a", maxURLLength)
	for _, tc := range []struct {
		name, kind, url string
		extra           map[string]any
		field           string
	}{
		{"postback template over the length limit", "postback", long + "&c={click_id}", nil, "url"},
		{"postback template of multibyte characters over the limit", "postback", "https://hooks.test/pb?c={click_id}&x=" + strings.Repeat("é", maxURLLength), nil, "url"},
		{"webhook url over the length limit", "webhook", long, nil, "url"},
		{"webhook port 0", "webhook", "https://hooks.test:0/h", nil, "url"},
		{"webhook port 65536", "webhook", "https://hooks.test:65536/h", nil, "url"},
		{"webhook port 99999", "webhook", "http://hooks.test:99999/h", nil, "url"},
		{"postback port 0", "postback", "https://hooks.test:0/pb?c={click_id}", nil, "url"},
		{"postback port 70000", "postback", "https://hooks.test:70000/pb?c={click_id}", nil, "url"},
		{"rate 1e-300", "webhook", "https://hooks.test/h", map[string]any{"rate_per_sec": 1e-300}, "rate_per_sec"},
		{"rate below the floor", "webhook", "https://hooks.test/h", map[string]any{"rate_per_sec": 0.009}, "rate_per_sec"},
		{"rate above the ceiling", "webhook", "https://hooks.test/h", map[string]any{"rate_per_sec": 100001}, "rate_per_sec"},
		{"rate overflowing a float", "webhook", "https://hooks.test/h", map[string]any{"rate_per_sec": json1e400{}}, "rate_per_sec"},
		{"burst 0", "webhook", "https://hooks.test/h", map[string]any{"rate_per_sec": 5, "burst": 0}, "burst"},
		{"burst over the ceiling", "webhook", "https://hooks.test/h", map[string]any{"rate_per_sec": 5, "burst": 100001}, "burst"},
		{"max_attempts 0", "webhook", "https://hooks.test/h", map[string]any{"max_attempts": 0}, "max_attempts"},
		{"max_attempts 51", "webhook", "https://hooks.test/h", map[string]any{"max_attempts": 51}, "max_attempts"},
		{"max_attempts beyond int64", "webhook", "https://hooks.test/h", map[string]any{"max_attempts": json1e400{}}, "max_attempts"},
		{"timeout_ms 99", "webhook", "https://hooks.test/h", map[string]any{"timeout_ms": 99}, "timeout_ms"},
		{"timeout_ms 120001", "webhook", "https://hooks.test/h", map[string]any{"timeout_ms": 120001}, "timeout_ms"},
		{"max_in_flight 0", "webhook", "https://hooks.test/h", map[string]any{"max_in_flight": 0}, "max_in_flight"},
		{"max_in_flight 1001", "webhook", "https://hooks.test/h", map[string]any{"max_in_flight": 1001}, "max_in_flight"},
		{"failure_threshold 0", "webhook", "https://hooks.test/h", map[string]any{"failure_threshold": 0}, "failure_threshold"},
		{"failure_threshold 1001", "webhook", "https://hooks.test/h", map[string]any{"failure_threshold": 1001}, "failure_threshold"},
		{"max_attempts as a fraction", "webhook", "https://hooks.test/h", map[string]any{"max_attempts": 2.5}, "max_attempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustError(t, create(tc.kind, tc.url, tc.extra), http.StatusUnprocessableEntity, tc.field)
		})
	}
	t.Run("the bounds themselves are accepted", func(t *testing.T) {
		rec := create("webhook", "https://hooks.test:65535/h", map[string]any{"rate_per_sec": 0.01, "burst": 100000,
			"max_attempts": 50, "timeout_ms": 100, "max_in_flight": 1000, "failure_threshold": 1000})
		mustStatus(t, rec, http.StatusCreated)
		rec = create("postback", "https://hooks.test:1/pb?c={click_id}", map[string]any{"rate_per_sec": 100000,
			"max_attempts": 1, "timeout_ms": 120000, "max_in_flight": 1, "failure_threshold": 1})
		mustStatus(t, rec, http.StatusCreated)
	})
	t.Run("patch is held to the same ranges", func(t *testing.T) {
		ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "patched", "kind": "webhook", "url": "https://hooks.test/h"})
		path := fmt.Sprintf("/api/v1/endpoints/%d", ep.ID)
		mustError(t, env.do(http.MethodPatch, path, map[string]any{"rate_per_sec": 1e-300}), http.StatusUnprocessableEntity, "rate_per_sec")
		mustError(t, env.do(http.MethodPatch, path, map[string]any{"url": "https://hooks.test:0/h"}), http.StatusUnprocessableEntity, "url")
	})
	t.Run("a blocked destination names HOOKLINE_ALLOW_NETWORKS", func(t *testing.T) {
		eb := mustError(t, create("webhook", "http://127.0.0.1:9/h", nil), http.StatusUnprocessableEntity, "url")
		if !strings.Contains(eb.Error.Message, "HOOKLINE_ALLOW_NETWORKS") || !strings.Contains(eb.Error.Message, "127.0.0.0/8") {
			t.Fatalf("message %q", eb.Error.Message)
		}
		eb = mustError(t, create("postback", "http://10.1.2.3/pb?c={click_id}", nil), http.StatusUnprocessableEntity, "url")
		if !strings.Contains(eb.Error.Message, "HOOKLINE_ALLOW_NETWORKS") || !strings.Contains(eb.Error.Message, "10.0.0.0/8") {
			t.Fatalf("message %q", eb.Error.Message)
		}
	})
}

// json1e400 marshals as a number no float64 or int holds.
type json1e400 struct{}

func (json1e400) MarshalJSON() ([]byte, error) { return []byte("1e400"), nil }

func TestRotateOverlapOverflow(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "hook", "kind": "webhook", "url": "https://hooks.test/h"})
	path := fmt.Sprintf("/api/v1/endpoints/%d/secrets/rotate", ep.ID)
	for _, body := range []string{
		`{"overlap_seconds": 4611686018427387904}`, // × 1e9 ns wraps to 0
		`{"overlap_seconds": 9223372036854775807}`,
		`{"overlap_seconds": 18446744073709551616}`,
		`{"overlap_seconds": -1}`,
		`{"overlap_seconds": 2592001}`,
		`{"overlap_seconds": 1.5}`,
	} {
		mustError(t, env.do(http.MethodPost, path, body), http.StatusUnprocessableEntity, "overlap_seconds")
	}
	var unexpired int
	if err := env.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM endpoint_secrets WHERE endpoint_id = $1 AND (expires_at IS NULL OR expires_at > now())", ep.ID).Scan(&unexpired); err != nil {
		t.Fatal(err)
	}
	if unexpired != 1 {
		t.Fatalf("%d usable secrets after refused rotations, want the original 1", unexpired)
	}
	mustStatus(t, env.do(http.MethodPost, path, `{"overlap_seconds": 2592000}`), http.StatusOK)
}

func TestStrictIDs(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Acme")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "hook", "kind": "webhook", "url": "https://hooks.test/h"})
	for _, suffix := range []string{"abc", "x", ".0", "e0", "%20"} {
		mustError(t, env.do(http.MethodGet, fmt.Sprintf("/api/v1/partners/%d%s", pid, suffix), nil), http.StatusNotFound, "")
		mustError(t, env.do(http.MethodGet, fmt.Sprintf("/api/v1/endpoints/%d%s", ep.ID, suffix), nil), http.StatusNotFound, "")
		mustError(t, env.do(http.MethodGet, fmt.Sprintf("/api/v1/endpoints?partner_id=%d%s", pid, suffix), nil), http.StatusUnprocessableEntity, "partner_id")
	}
	for _, v := range []string{"+1", "-1", "0", " 1", "99999999999999999999", "0x1"} {
		mustError(t, env.do(http.MethodGet, "/api/v1/endpoints?partner_id="+strings.ReplaceAll(v, " ", "%20"), nil), http.StatusUnprocessableEntity, "partner_id")
	}
	mustStatus(t, env.do(http.MethodGet, fmt.Sprintf("/api/v1/endpoints?partner_id=%d", pid), nil), http.StatusOK)
	mustStatus(t, env.do(http.MethodGet, fmt.Sprintf("/api/v1/partners/%d", pid), nil), http.StatusOK)
}

func TestParseID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"1": 1, "0012": 12, "9223372036854775807": 9223372036854775807} {
		if got, ok := parseID(in); !ok || got != want {
			t.Errorf("parseID(%q) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "0", "12abc", "+12", "-12", " 12", "12 ", "1e3", "0x10", "9223372036854775808", "１２"} {
		if got, ok := parseID(in); ok {
			t.Errorf("parseID(%q) = %d, accepted", in, got)
		}
	}
}

func TestNameLimitsCountCharacters(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	name := strings.Repeat("é", 200) // 400 bytes, 200 characters: the database's limit
	rec := env.do(http.MethodPost, "/api/v1/partners", map[string]any{"name": name, "contact": strings.Repeat("ü", 500)})
	mustStatus(t, rec, http.StatusCreated)
	pid := decodeBody[partnerJSON](t, rec).ID
	mustError(t, env.do(http.MethodPost, "/api/v1/partners", map[string]any{"name": name + "é"}), http.StatusUnprocessableEntity, "name")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": name, "kind": "webhook", "url": "https://hooks.test/h",
		"success_body_contains": strings.Repeat("ö", 200)})
	mustError(t, env.do(http.MethodPost, "/api/v1/endpoints", map[string]any{"partner_id": pid, "name": name + "x",
		"kind": "webhook", "url": "https://hooks.test/h"}), http.StatusUnprocessableEntity, "name")
}

func TestDuplicateEndpointNameIsAConflict(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Acme")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "orders", "kind": "webhook", "url": "https://hooks.test/a"})
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "refunds", "kind": "webhook", "url": "https://hooks.test/b"})
	path := fmt.Sprintf("/api/v1/endpoints/%d", ep.ID)
	mustError(t, env.do(http.MethodPatch, path, map[string]any{"name": "orders"}), http.StatusConflict, "name")
	mustError(t, env.do(http.MethodPatch, path, map[string]any{"name": "orders", "max_attempts": 0}), http.StatusUnprocessableEntity, "max_attempts")

	op := env.signIn(base, "op@example.com", "operator")
	op.get(fmt.Sprintf("/endpoints/%d/edit", ep.ID))
	res, doc := op.postForm(fmt.Sprintf("/endpoints/%d/edit", ep.ID), url.Values{"name": {"orders"}, "url": {"https://hooks.test/b"},
		"max_attempts": {"5"}, "timeout_ms": {"15000"}, "max_in_flight": {"8"}, "failure_threshold": {"10"}, "enabled": {"true"}})
	msg := doc.Find(`[name="name"]`).Closest(".field").Find(".field-error").Text()
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, "already has an endpoint") {
		t.Fatalf("status %d, name error %q", res.StatusCode, msg)
	}
}

// An event PostgreSQL refuses for a reason validation does not know is
// still rejected alone: the others are stored.
func TestBatchEventRefusedByPostgreSQLIsRejectedAlone(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	if _, err := env.pool.Exec(context.Background(),
		`ALTER TABLE events ADD CONSTRAINT test_poison CHECK (payload->>'poison' IS NULL)`); err != nil {
		t.Fatal(err)
	}
	before := countRows(t, env.pool, "events")
	rec := env.do(http.MethodPost, "/api/v1/events/batch", `{"events": [
		{"type": "a", "payload": {"n": 1}},
		{"type": "b", "payload": {"poison": true}},
		{"type": "c", "payload": {"n": 3}},
		{"type": "d", "payload": {"poison": 2}}]}`)
	mustStatus(t, rec, http.StatusAccepted)
	out := decodeBody[struct {
		Results []struct {
			Status string
			Error  *struct{ Field string }
		}
	}](t, rec)
	want := []string{ingestAccepted, ingestRejected, ingestAccepted, ingestRejected}
	for i, r := range out.Results {
		if r.Status != want[i] || (r.Status == ingestRejected && (r.Error == nil || r.Error.Field != "payload")) {
			t.Fatalf("result %d: %+v; body %s", i, r, rec.Body.String())
		}
	}
	if got := countRows(t, env.pool, "events") - before; got != 2 {
		t.Fatalf("%d events stored, want 2", got)
	}
	mustError(t, env.do(http.MethodPost, "/api/v1/events", `{"type": "e", "payload": {"poison": 1}}`), http.StatusUnprocessableEntity, "payload")
}

// A value PostgreSQL refuses that validation let through is a 4xx, not a
// 500: the error handler's last line of defence.
func TestDatabaseRefusalIsNotA500(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	if _, err := env.pool.Exec(context.Background(),
		`ALTER TABLE partners ADD CONSTRAINT test_poison CHECK (name <> 'poison')`); err != nil {
		t.Fatal(err)
	}
	eb := mustError(t, env.do(http.MethodPost, "/api/v1/partners", map[string]any{"name": "poison"}), http.StatusUnprocessableEntity, "")
	if eb.Error.Code != "invalid_value" {
		t.Fatalf("code %q", eb.Error.Code)
	}
}
