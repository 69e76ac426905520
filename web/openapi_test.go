package web

import (
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestOpenAPIMatchesRoutes keeps /api/openapi.json true: every API route is
// documented with its method, and every documented operation is routed.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	env := newEnvWithPool(t, unreachablePool(t))
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	rec := env.do(http.MethodGet, "/api/openapi.json", nil)
	mustStatus(t, rec, http.StatusOK)
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("openapi.json does not parse: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	param := regexp.MustCompile(`:([a-z_]+)`)
	routed := map[string]bool{}
	for _, r := range env.srv.Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") || strings.HasSuffix(r.Path, "/*") {
			continue
		}
		routed[r.Method+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	var missing, stale []string
	for k := range routed {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !routed[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing) > 0 || len(stale) > 0 {
		t.Fatalf("openapi.json out of date:\n routes not documented: %v\n documented but not routed: %v", missing, stale)
	}
	if len(routed) < 10 {
		t.Fatalf("only %d API routes found; route walking is broken", len(routed))
	}
	// Every $ref must resolve.
	var whole map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &whole)
	for _, ref := range regexp.MustCompile(`"\$ref":\s*"#/components/(\w+)/(\w+)"`).FindAllStringSubmatch(rec.Body.String(), -1) {
		comp := whole["components"].(map[string]any)[ref[1]].(map[string]any)
		if _, ok := comp[ref[2]]; !ok {
			t.Errorf("unresolved $ref %s/%s", ref[1], ref[2])
		}
	}
}
