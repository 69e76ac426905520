package web

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hookline/hookline/web/account"
)

// TestOpenAPIScopes keeps each operation's x-required-scope and
// x-partner-bound-keys equal to what the route takes (apiRouteScopes,
// itself kept true by TestAPIRouteScopes), and documents its 403.
func TestOpenAPIScopes(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]struct {
			Scopes    []string                   `json:"x-required-scope"`
			Partner   *bool                      `json:"x-partner-bound-keys"`
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{([a-z_]+)\}`)
	checked := 0
	for path, ops := range doc.Paths {
		for method, op := range ops {
			route := strings.ToUpper(method) + " " + param.ReplaceAllString(path, ":$1")
			want, ok := apiRouteScopes[route]
			if !ok {
				t.Errorf("%s is documented but has no scope in apiRouteScopes", route)
				continue
			}
			scopes := want.scopes
			if len(scopes) == 0 {
				scopes = []string{account.ScopeAdmin}
			}
			if !slices.Equal(op.Scopes, scopes) {
				t.Errorf("%s: x-required-scope %v, the route takes %v", route, op.Scopes, scopes)
			}
			if op.Partner == nil || *op.Partner != want.partner {
				t.Errorf("%s: x-partner-bound-keys %v, the route %v", route, op.Partner, want.partner)
			}
			if _, ok := op.Responses["403"]; !ok {
				t.Errorf("%s: no 403 response documented", route)
			}
			checked++
		}
	}
	if checked != len(apiRouteScopes) {
		t.Fatalf("%d operations checked, %d routes", checked, len(apiRouteScopes))
	}
}
