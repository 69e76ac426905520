package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// openAPI is web/openapi.json, the contract the fake API holds requests and
// its own answers to.
type openAPI struct{ doc map[string]any }

func loadOpenAPI(t *testing.T) *openAPI {
	t.Helper()
	raw, err := os.ReadFile("../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return &openAPI{doc}
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

func (a *openAPI) operation(method, path string) map[string]any {
	return obj(obj(obj(a.doc["paths"])[path])[strings.ToLower(method)])
}

func (a *openAPI) resolve(s map[string]any) map[string]any {
	for s != nil {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
		var cur any = a.doc
		for _, p := range parts {
			cur = obj(cur)[p]
		}
		s = obj(cur)
	}
	return s
}

// requestSchema is the JSON body schema of an operation.
func (a *openAPI) requestSchema(method, path string) map[string]any {
	return obj(obj(obj(obj(a.operation(method, path)["requestBody"])["content"])["application/json"])["schema"])
}

// responseSchema is the JSON schema of one documented answer.
func (a *openAPI) responseSchema(method, path string, status int) map[string]any {
	r := a.resolve(obj(obj(a.operation(method, path)["responses"])[strconv.Itoa(status)]))
	return obj(obj(obj(r["content"])["application/json"])["schema"])
}

// properties collects an object schema's properties across $ref and allOf.
func (a *openAPI) properties(s map[string]any) map[string]any {
	s = a.resolve(s)
	out := map[string]any{}
	for k, v := range obj(s["properties"]) {
		out[k] = v
	}
	for _, part := range anySlice(s["allOf"]) {
		for k, v := range a.properties(obj(part)) {
			out[k] = v
		}
	}
	return out
}

// validate checks v (decoded with UseNumber) against schema. strict also
// refuses properties the schema does not name, as hookline's decoder does
// for request bodies (DisallowUnknownFields); objects without declared
// properties (event payloads) take anything.
func (a *openAPI) validate(schema map[string]any, v any, strict bool, at string) []string {
	s := a.resolve(schema)
	if s == nil {
		return []string{at + ": no schema"}
	}
	if v == nil {
		if s["nullable"] == true {
			return nil
		}
		if _, typed := s["type"]; typed {
			return []string{at + ": null"}
		}
	}
	var errs []string
	if parts, ok := s["allOf"].([]any); ok {
		for _, p := range parts {
			errs = append(errs, a.validate(obj(p), v, false, at)...)
		}
		if m, ok := v.(map[string]any); ok && strict {
			props := a.properties(s)
			for k := range m {
				if _, ok := props[k]; !ok {
					errs = append(errs, fmt.Sprintf("%s.%s: not a documented field", at, k))
				}
			}
			for k, sub := range props {
				if val, ok := m[k]; ok {
					errs = append(errs, a.validate(obj(sub), val, strict, at+"."+k)...)
				}
			}
		}
		return errs
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an object", at, v)}
		}
		for _, r := range anySlice(s["required"]) {
			if _, ok := m[r.(string)]; !ok {
				errs = append(errs, fmt.Sprintf("%s.%s: required", at, r))
			}
		}
		props := obj(s["properties"])
		for k, val := range m {
			sub, ok := props[k]
			switch {
			case ok:
				errs = append(errs, a.validate(obj(sub), val, strict, at+"."+k)...)
			case obj(s["additionalProperties"]) != nil:
				errs = append(errs, a.validate(obj(s["additionalProperties"]), val, strict, at+"."+k)...)
			case strict && len(props) > 0:
				errs = append(errs, fmt.Sprintf("%s.%s: not a documented field", at, k))
			}
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an array", at, v)}
		}
		if max, ok := s["maxItems"].(float64); ok && float64(len(arr)) > max {
			errs = append(errs, fmt.Sprintf("%s: %d items, at most %v", at, len(arr), max))
		}
		for i, item := range arr {
			errs = append(errs, a.validate(obj(s["items"]), item, strict, fmt.Sprintf("%s[%d]", at, i))...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want a string", at, v)}
		}
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(str) {
			errs = append(errs, fmt.Sprintf("%s: %q does not match %s", at, str, p))
		}
		if max, ok := s["maxLength"].(float64); ok && float64(len(str)) > max {
			errs = append(errs, fmt.Sprintf("%s: longer than %v", at, max))
		}
		if enum := anySlice(s["enum"]); enum != nil && !slices.Contains(enum, any(str)) {
			errs = append(errs, fmt.Sprintf("%s: %q not in %v", at, str, enum))
		}
	case "integer", "number":
		n, ok := v.(json.Number)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want a number", at, v)}
		}
		f, err := n.Float64()
		if err != nil {
			return []string{at + ": " + err.Error()}
		}
		if _, err := n.Int64(); s["type"] == "integer" && err != nil {
			errs = append(errs, fmt.Sprintf("%s: %s is not an integer", at, n))
		}
		if min, ok := s["minimum"].(float64); ok && f < min {
			errs = append(errs, fmt.Sprintf("%s: %v below %v", at, f, min))
		}
		if max, ok := s["maximum"].(float64); ok && f > max {
			errs = append(errs, fmt.Sprintf("%s: %v above %v", at, f, max))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			errs = append(errs, fmt.Sprintf("%s: %T, want true or false", at, v))
		}
	}
	return errs
}

func anySlice(v any) []any { s, _ := v.([]any); return s }

func decodeNumbers(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// fakeAPI serves the few hookline API routes the demo calls, from memory,
// checking every request body against web/openapi.json and every answer it
// gives against the same document.
type fakeAPI struct {
	t    *testing.T
	spec *openAPI
	key  string
	*httptest.Server

	mu        sync.Mutex
	partners  []map[string]any
	endpoints []map[string]any
	events    []map[string]any // every event of every batch, in order
	batches   []int            // the size of every batch, in order
	keys      map[string]bool  // idempotency keys seen
	calls     []string         // "METHOD /path"
	// failNext makes the next batches answer with this status (and counts down).
	failNext       int
	failStatus     int
	blockEndpoints bool // answer POST /endpoints like an SSRF guard without an allow list
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{t: t, spec: loadOpenAPI(t), key: "hk_test_key", keys: map[string]bool{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeAPI) allEvents() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.events)
}

// lastBatch is the size of the last batch received (0 before any).
func (f *fakeAPI) lastBatch() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.batches) == 0 {
		return 0
	}
	return f.batches[len(f.batches)-1]
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path)
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		f.fail(w, r, "", 401, "unauthorized", "missing or invalid API key", "")
		return
	}
	var body any
	if r.Method == http.MethodPost || r.Method == http.MethodPatch {
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			f.t.Errorf("%s %s: content type %q", r.Method, r.URL.Path, ct)
		}
		var buf bytes.Buffer
		buf.ReadFrom(r.Body)
		var err error
		if body, err = decodeNumbers(buf.Bytes()); err != nil {
			f.t.Errorf("%s %s: body is not JSON: %v", r.Method, r.URL.Path, err)
			f.fail(w, r, "", 400, "bad_request", "malformed JSON", "")
			return
		}
	}
	id, hasID := strings.CutPrefix(r.URL.Path, "/api/v1/endpoints/")
	switch {
	case r.Method == "POST" && r.URL.Path == "/api/v1/partners":
		f.check(r, "/api/v1/partners", body)
		in := obj(body)
		for _, p := range f.partners {
			if strings.EqualFold(p["name"].(string), in["name"].(string)) {
				f.fail(w, r, "/api/v1/partners", 409, "conflict", "a partner with this name already exists", "name")
				return
			}
		}
		p := map[string]any{"id": len(f.partners) + 1, "name": in["name"], "contact": in["contact"], "notes": in["notes"],
			"created_at": time.Now().UTC(), "updated_at": time.Now().UTC(), "archived_at": nil}
		f.partners = append(f.partners, p)
		f.answer(w, r, "/api/v1/partners", 201, p)
	case r.Method == "GET" && r.URL.Path == "/api/v1/partners":
		f.answer(w, r, "/api/v1/partners", 200, map[string]any{"partners": f.partners})
	case r.Method == "POST" && r.URL.Path == "/api/v1/endpoints":
		f.check(r, "/api/v1/endpoints", body)
		in := obj(body)
		if f.blockEndpoints {
			f.fail(w, r, "/api/v1/endpoints", 422, "invalid", "points to a blocked destination: 127.0.0.1 is a loopback address", "url")
			return
		}
		pid, _ := in["partner_id"].(json.Number).Int64()
		if pid < 1 || int(pid) > len(f.partners) {
			f.fail(w, r, "/api/v1/endpoints", 422, "invalid", "no partner with this id", "partner_id")
			return
		}
		for _, e := range f.endpoints {
			if e["partner_id"] == pid && e["name"] == in["name"] {
				f.fail(w, r, "/api/v1/endpoints", 409, "conflict", "this partner already has an endpoint with this name", "name")
				return
			}
		}
		e := map[string]any{}
		for k, v := range in {
			e[k] = v
		}
		e["id"], e["partner_id"], e["secret"] = int64(len(f.endpoints)+1), pid, "whsec_test"
		f.endpoints = append(f.endpoints, e)
		f.answer(w, r, "/api/v1/endpoints", 201, e)
	case r.Method == "GET" && r.URL.Path == "/api/v1/endpoints":
		pid, _ := strconv.ParseInt(r.URL.Query().Get("partner_id"), 10, 64)
		out := []map[string]any{}
		for _, e := range f.endpoints {
			if pid == 0 || e["partner_id"] == pid {
				c := map[string]any{}
				for k, v := range e {
					if k != "secret" {
						c[k] = v
					}
				}
				out = append(out, c)
			}
		}
		f.answer(w, r, "/api/v1/endpoints", 200, map[string]any{"endpoints": out})
	case r.Method == "PATCH" && hasID:
		f.check(r, "/api/v1/endpoints/{id}", body)
		n, err := strconv.Atoi(id)
		if err != nil || n < 1 || n > len(f.endpoints) {
			f.fail(w, r, "/api/v1/endpoints/{id}", 404, "not_found", "no such endpoint", "")
			return
		}
		for k, v := range obj(body) {
			f.endpoints[n-1][k] = v
		}
		f.answer(w, r, "/api/v1/endpoints/{id}", 200, f.endpoints[n-1])
	case r.Method == "POST" && r.URL.Path == "/api/v1/events/batch":
		f.check(r, "/api/v1/events/batch", body)
		if f.failNext > 0 {
			f.failNext--
			w.Header().Set("Retry-After", "1")
			f.fail(w, r, "/api/v1/events/batch", f.failStatus, "unavailable", "database unavailable", "")
			return
		}
		res := map[string]any{"accepted": 0, "duplicate": 0, "rejected": 0}
		var results []map[string]any
		for _, ev := range anySlice(obj(body)["events"]) {
			e := obj(ev)
			f.events = append(f.events, e)
			key, _ := e["idempotency_key"].(string)
			status := "accepted"
			if f.keys[key] {
				status = "duplicate"
			}
			f.keys[key] = true
			res[status] = res[status].(int) + 1
			results = append(results, map[string]any{"status": status, "id": "0190b1c2-0000-7000-8000-000000000001", "deliveries": []any{}})
		}
		f.batches = append(f.batches, len(results))
		res["results"] = results
		f.answer(w, r, "/api/v1/events/batch", 202, res)
	default:
		f.t.Errorf("the demo called an unexpected route: %s %s", r.Method, r.URL.Path)
		f.fail(w, r, "", 404, "not_found", "no such API route", "")
	}
}

// check holds a request body to the documented request schema, strictly.
func (f *fakeAPI) check(r *http.Request, path string, body any) {
	schema := f.spec.requestSchema(r.Method, path)
	if schema == nil {
		f.t.Errorf("%s %s is not documented", r.Method, path)
		return
	}
	for _, e := range f.spec.validate(schema, body, true, "body") {
		f.t.Errorf("%s %s: request does not match web/openapi.json: %s", r.Method, r.URL.Path, e)
	}
}

// answer writes v after holding it to the documented answer schema, so
// the fake cannot drift from the real API's contract.
func (f *fakeAPI) answer(w http.ResponseWriter, r *http.Request, path string, status int, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		f.t.Fatal(err)
	}
	if path != "" {
		schema := f.spec.responseSchema(r.Method, path, status)
		if schema == nil {
			f.t.Errorf("%s %s: status %d is not documented", r.Method, path, status)
		}
		decoded, _ := decodeNumbers(raw)
		for _, e := range f.spec.validate(schema, decoded, false, "answer") {
			f.t.Errorf("fake %s %s answer does not match web/openapi.json: %s", r.Method, path, e)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(raw)
}

func (f *fakeAPI) fail(w http.ResponseWriter, r *http.Request, path string, status int, code, msg, field string) {
	e := map[string]any{"code": code, "message": msg}
	if field != "" {
		e["field"] = field
	}
	f.answer(w, r, path, status, map[string]any{"error": e})
}

// TestFakeAPIHoldsToTheDocument makes sure the validator behind the fake
// actually refuses what hookline refuses.
func TestFakeAPIHoldsToTheDocument(t *testing.T) {
	spec := loadOpenAPI(t)
	schema := spec.requestSchema("POST", "/api/v1/endpoints")
	tests := []struct {
		name string
		body string
		ok   bool
	}{
		{"minimal webhook", `{"partner_id":1,"name":"a","kind":"webhook","url":"http://x/"}`, true},
		{"unknown field", `{"partner_id":1,"name":"a","kind":"webhook","url":"http://x/","retries":3}`, false},
		{"missing kind", `{"partner_id":1,"name":"a","url":"http://x/"}`, false},
		{"bad kind", `{"partner_id":1,"name":"a","kind":"email","url":"http://x/"}`, false},
		{"attempts out of range", `{"partner_id":1,"name":"a","kind":"webhook","url":"http://x/","max_attempts":51}`, false},
		{"rate as text", `{"partner_id":1,"name":"a","kind":"webhook","url":"http://x/","rate_per_sec":"3"}`, false},
		{"null rate", `{"partner_id":1,"name":"a","kind":"webhook","url":"http://x/","rate_per_sec":null}`, true},
	}
	for _, tt := range tests {
		v, err := decodeNumbers([]byte(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		errs := spec.validate(schema, v, true, "body")
		if (len(errs) == 0) != tt.ok {
			t.Errorf("%s: errors %v, want ok=%v", tt.name, errs, tt.ok)
		}
	}
	batch := spec.requestSchema("POST", "/api/v1/events/batch")
	for body, ok := range map[string]bool{
		`{"events":[{"type":"order.created","payload":{"a":{"b":1}},"idempotency_key":"k"}]}`: true,
		`{"events":[{"type":"order created","payload":{}}]}`:                                  false,
		`{"events":[{"payload":{}}]}`:                                                         false,
		`{"events":[{"type":"a","payload":[1]}]}`:                                             false,
	} {
		v, _ := decodeNumbers([]byte(body))
		if errs := spec.validate(batch, v, true, "body"); (len(errs) == 0) != ok {
			t.Errorf("%s: errors %v, want ok=%v", body, errs, ok)
		}
	}
}
