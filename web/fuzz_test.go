package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzAPI sends arbitrary bodies, queries and ids to the API's write
// handlers on a real database and fails on any 5xx or panic (the recovery
// middleware turns a panic into a 500): no input may be the server's fault.
// CI runs it briefly: go test -run '^$' -fuzz '^FuzzAPI$' -fuzztime 20s ./web/
func FuzzAPI(f *testing.F) {
	env := newEnv(f)
	pid := env.createPartner("Fuzz partner")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "fuzz", "kind": "webhook", "url": "https://hooks.test/h"})
	pb := env.createEndpoint(map[string]any{"partner_id": pid, "name": "fuzz-pb", "kind": "postback", "url": "https://hooks.test/pb?c={click_id}"})

	// Routes by number; the fuzzer picks one per input.
	type route struct{ method, path string }
	routes := []route{
		{http.MethodPost, "/api/v1/endpoints"},
		{http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", ep.ID)},
		{http.MethodPatch, fmt.Sprintf("/api/v1/endpoints/%d", pb.ID)},
		{http.MethodPost, "/api/v1/partners"},
		{http.MethodPost, "/api/v1/events"},
		{http.MethodPost, "/api/v1/events/batch"},
		{http.MethodPost, fmt.Sprintf("/api/v1/endpoints/%d/secrets/rotate", ep.ID)},
		{http.MethodPost, "/api/v1/dead-letters/replay"},
		{http.MethodGet, "/api/v1/endpoints"},
		{http.MethodGet, "/api/v1/dead-letters/clusters"},
		{http.MethodGet, "/api/v1/partners/"},  // the id is the fuzzed segment
		{http.MethodGet, "/api/v1/endpoints/"}, // the id is the fuzzed segment
		{http.MethodGet, "/api/v1/events/"},    // the id is the fuzzed segment
	}

	endpoint := func(extra string) []byte {
		return []byte(fmt.Sprintf(`{"partner_id": %d, "name": "n", "kind": "postback", "url": "https://hooks.test/pb?c={click_id}"%s}`, pid, extra))
	}
	seeds := []struct {
		route       uint8
		body        []byte
		query, item string
	}{
		{0, endpoint(""), "", ""},
		{0, endpoint(`, "rate_per_sec": 1e-300`), "", ""},
		{0, endpoint(`, "rate_per_sec": 1e400`), "", ""},
		{0, endpoint(`, "max_attempts": 99999999999999999999`), "", ""},
		{0, endpoint(`, "timeout_ms": -1, "burst": 0`), "", ""},
		{0, endpoint(`, "headers": {"X-A\u0000": "v\u0000"}`), "", ""},
		{0, endpoint(`, "success_body_contains": "\u0000"`), "", ""},
		{0, endpoint(`, "event_types": []`), "", ""},
		{0, endpoint(`, "event_types": null, "headers": null`), "", ""},
		{0, endpoint(`, "event_types": "x"`), "", ""},
		{0, []byte(fmt.Sprintf(`{"partner_id": %d, "name": "n", "kind": "postback", "url": "https://hooks.test:0/pb?c={click_id}"}`, pid)), "", ""},
		{0, []byte(fmt.Sprintf(`{"partner_id": %d, "name": "n", "kind": "webhook", "url": "https://hooks.test:99999/h"}`, pid)), "", ""},
		{0, []byte(fmt.Sprintf(`{"partner_id": %d, "name": "n", "kind": "postback", "url": "https://hooks.test/pb?c={click_id}&x=%s"}`, pid, strings.Repeat("a", 5000))), "", ""},
		{0, []byte(`{"partner_id": 9223372036854775807, "name": "n", "kind": "webhook", "url": "https://hooks.test/"}`), "", ""},
		{0, []byte(`{"partner_id": -1}`), "", ""},
		{0, []byte(`[]`), "", ""},
		{0, []byte(`null`), "", ""},
		{0, []byte(`{"name": "fuzz", "partner_id": ` + fmt.Sprint(pid) + `, "kind": "webhook", "url": "https://hooks.test/dup"}`), "", ""},
		{1, []byte(`{"name": "x\u0000"}`), "", ""},
		{1, []byte(`{"headers": {"X-A": null}}`), "", ""},
		{1, []byte(`{"rate_per_sec": null, "burst": 3}`), "", ""},
		{1, []byte(`{"url": "https://hooks.test:65536/"}`), "", ""},
		{2, []byte(`{"url": "https://hooks.test/pb?c={click_id"}`), "", ""},
		{2, []byte(`{"kind": "webhook"}`), "", ""},
		{3, []byte(`{"name": "Fuzz partner"}`), "", ""},
		{3, []byte(`{"name": "a\u0000b"}`), "", ""},
		{3, []byte("{\"name\": \"a\xff\"}"), "", ""},
		{3, []byte(`{"name": "` + strings.Repeat("é", 201) + `"}`), "", ""},
		{4, []byte(`{"type": "t", "payload": {"a": "\u0000"}}`), "", ""},
		{4, []byte(`{"type": "t", "payload": {"a": "\ud800"}}`), "", ""},
		{4, []byte("{\"type\": \"t\", \"payload\": {\"a\": \"\xff\"}}"), "", ""},
		{4, []byte(`{"type": "t", "payload": {"a": 1e1000000}}`), "", ""},
		{4, []byte(`{"type": "t", "payload": {}, "partner_id": 12}`), "", ""},
		{4, []byte(`{"type": "t", "payload": {}, "idempotency_key": "k"}`), "", "k"},
		{4, []byte(`{"type": "t", "payload": {"b": 1}, "idempotency_key": "k"}`), "", ""},
		{4, []byte(`{"type": "t", "payload": []}`), "", ""},
		{5, []byte(`{"events": [{"type": "t", "payload": {"a": "\u0000"}}, {"type": "ok", "payload": {}}]}`), "", ""},
		{5, []byte("{\"events\": [{\"type\": \"t\", \"payload\": {\"a\": \"\xff\"}}, {\"type\": \"ok\", \"payload\": {}}]}"), "", ""},
		{5, []byte(`{"events": [5, null, [], "x", {"type": 5}]}`), "", ""},
		{5, []byte(`{"events": []}`), "", ""},
		{5, []byte(`{"events": {}}`), "", ""},
		{6, []byte(`{"overlap_seconds": 4611686018427387904}`), "", ""},
		{6, []byte(`{"overlap_seconds": -9223372036854775808}`), "", ""},
		{6, []byte(`{"overlap_seconds": 1e400}`), "", ""},
		{6, nil, "", ""},
		{7, []byte(`{"cluster": "1:\u0000:0"}`), "", ""},
		{7, []byte(`{"delivery_ids": [-1, 0, 9223372036854775807]}`), "", ""},
		{7, []byte(`{"endpoint_id": 1, "since": "0000-01-01T00:00:00Z"}`), "", ""},
		{7, []byte(`{"endpoint_id": 1, "since": "9999-12-31T23:59:59Z"}`), "", ""},
		{7, []byte(`{"cluster": "9223372036854775807:x:2147483647", "hours": 2160}`), "", ""},
		{8, nil, "partner_id=12abc", ""},
		{8, nil, "partner_id=%00", ""},
		{8, nil, "partner_id=%FF", ""},
		{9, nil, "hours=99999999999999999999", ""},
		{10, nil, "", "12abc"},
		{10, nil, "", fmt.Sprint(pid)},
		{11, nil, "", "99999999999999999999"},
		{12, nil, "", "not-a-uuid"},
		{12, nil, "", "00000000-0000-0000-0000-000000000000"},
	}
	for _, s := range seeds {
		f.Add(s.route, s.body, s.query, s.item)
	}

	f.Fuzz(func(t *testing.T, n uint8, body []byte, query, item string) {
		r := routes[int(n)%len(routes)]
		req := httptest.NewRequest(r.method, "/", strings.NewReader(string(body)))
		req.URL.Path = r.path
		if strings.HasSuffix(r.path, "/") {
			req.URL.Path += item
		} else if item != "" && validHeaderValue(item) {
			req.Header.Set("Idempotency-Key", item)
		}
		req.URL.RawQuery = query
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+env.key)
		rec := httptest.NewRecorder()
		env.srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s?%s with %q: %d %s", r.method, req.URL.Path, query, body, rec.Code, rec.Body.String())
		}
		if rec.Code >= 400 {
			var eb errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
				t.Fatalf("%s %s: %d without the error shape: %s", r.method, req.URL.Path, rec.Code, rec.Body.String())
			}
		}
	})
}

// validHeaderValue is what net/http lets through in a header value: no
// control characters but tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
