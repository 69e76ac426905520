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
	t.Parallel()
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

// TestOpenAPIEndpointRanges keeps the documented ranges of the numeric
// settings equal to the ones validation enforces.
func TestOpenAPIEndpointRanges(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Minimum   *float64 `json:"minimum"`
					Maximum   *float64 `json:"maximum"`
					MaxLength *int     `json:"maxLength"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	props := doc.Components.Schemas["EndpointFields"].Properties
	want := map[string][2]float64{
		"max_attempts":      {1, maxMaxAttempts},
		"timeout_ms":        {minTimeoutMs, maxTimeoutMs},
		"rate_per_sec":      {minRatePerSec, maxRatePerSec},
		"burst":             {1, maxBurst},
		"max_in_flight":     {1, maxMaxInFlight},
		"failure_threshold": {1, maxFailureThreshold},
	}
	for name, r := range want {
		p, ok := props[name]
		if !ok || p.Minimum == nil || p.Maximum == nil || *p.Minimum != r[0] || *p.Maximum != r[1] {
			t.Errorf("%s: documented %v..%v, enforced %v..%v", name, p.Minimum, p.Maximum, r[0], r[1])
		}
		for _, v := range []float64{r[0], r[1]} {
			in := endpointInput{PartnerID: 1, Name: "n", Kind: "webhook", URL: "https://hooks.test/h"}
			n := int(v)
			switch name {
			case "max_attempts":
				in.MaxAttempts = &n
			case "timeout_ms":
				in.TimeoutMs = &n
			case "rate_per_sec":
				in.RatePerSec = &v
			case "burst":
				rate := 1.0
				in.RatePerSec, in.Burst = &rate, &n
			case "max_in_flight":
				in.MaxInFlight = &n
			case "failure_threshold":
				in.FailureThreshold = &n
			}
			if _, errs := validateEndpoint(in, nil); len(errs) > 0 {
				t.Errorf("%s = %v, a documented bound, is refused: %v", name, v, errs)
			}
		}
	}
	if p := props["url"]; p.MaxLength == nil || *p.MaxLength != maxURLLength {
		t.Errorf("url maxLength documented %v, enforced %d", p.MaxLength, maxURLLength)
	}
}

// TestOpenAPIPagedQueryParameters keeps the documented query parameters of
// the paged logs true: each typed one is read by the handler, which answers
// a malformed value with a 422 naming it.
func TestOpenAPIPagedQueryParameters(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	rec := env.do(http.MethodGet, "/api/openapi.json", nil)
	mustStatus(t, rec, http.StatusOK)
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string `json:"name"`
				In     string `json:"in"`
				Schema struct {
					Type   string   `json:"type"`
					Format string   `json:"format"`
					Enum   []string `json:"enum"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for path, concrete := range map[string]struct {
		url   string
		typed int // at least this many typed parameters documented
	}{
		"/api/v1/events":                  {"/api/v1/events", 5},
		"/api/v1/endpoints/{id}/attempts": {"/api/v1/endpoints/1/attempts", 5},
		"/api/v1/audit":                   {"/api/v1/audit", 4},
		"/api/v1/conversions":             {"/api/v1/conversions", 4},
	} {
		params := doc.Paths[path]["get"].Parameters
		checked := 0
		for _, p := range params {
			if p.In != "query" {
				continue
			}
			if p.Schema.Type == "integer" || p.Schema.Format == "date-time" || len(p.Schema.Enum) > 0 || p.Name == "cursor" {
				checked++
				t.Run(path+"?"+p.Name, func(t *testing.T) {
					mustError(t, env.do(http.MethodGet, concrete.url+"?"+p.Name+"=%21bad", nil), http.StatusUnprocessableEntity, p.Name)
				})
			}
		}
		if checked < concrete.typed {
			t.Fatalf("%s: only %d typed query parameters documented", path, checked)
		}
	}
}
