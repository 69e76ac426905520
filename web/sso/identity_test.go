package sso

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func testClient(t testing.TB, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		Issuer: "https://id.acme.test", ClientID: "hookline", ClientSecret: "s3cret",
		RedirectURL: "https://hooks.acme.test/login/oidc/callback", AllowedDomains: []string{"acme.test"},
		AdminValues: []string{"hookline-admins"}, OperatorValues: []string{"oncall", "platform"}, DefaultRole: RoleViewer,
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// claims decodes JSON the way go-oidc hands claims over.
func claims(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMapRole(t *testing.T) {
	cases := []struct {
		name, claim, claims, want string
		noDefault                 bool
	}{
		{"admin value", "groups", `{"groups": ["staff", "hookline-admins"]}`, RoleAdmin, false},
		{"admin wins over operator", "groups", `{"groups": ["oncall", "hookline-admins"]}`, RoleAdmin, false},
		{"operator value", "groups", `{"groups": ["platform"]}`, RoleOperator, false},
		{"a single string", "groups", `{"groups": "oncall"}`, RoleOperator, false},
		{"no value maps: viewer", "groups", `{"groups": ["staff"]}`, RoleViewer, false},
		{"no claim: viewer", "groups", `{}`, RoleViewer, false},
		{"no value maps, no default: none", "groups", `{"groups": ["staff"]}`, "", true},
		{"values are case-sensitive", "groups", `{"groups": ["Hookline-Admins"]}`, RoleViewer, false},
		{"non-string items are ignored", "groups", `{"groups": [1, true, {"x": "oncall"}, "platform"]}`, RoleOperator, false},
		{"dotted path into an object", "realm_access.roles", `{"realm_access": {"roles": ["hookline-admins"]}}`, RoleAdmin, false},
		{"dotted path through a non-object", "realm_access.roles", `{"realm_access": ["hookline-admins"]}`, RoleViewer, false},
		{"namespaced claim with dots", "https://hooks.acme.test/roles", `{"https://hooks.acme.test/roles": ["oncall"]}`, RoleOperator, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient(t, func(c *Config) {
				c.RoleClaim = tc.claim
				if tc.noDefault {
					c.DefaultRole = ""
				}
			})
			if got := c.MapRole(claims(t, tc.claims)); got != tc.want {
				t.Fatalf("role %q, want %q", got, tc.want)
			}
		})
	}
}

func TestIdentify(t *testing.T) {
	cases := []struct {
		name, claims, wantRole, refusal string
		anyDomain                       bool
	}{
		{"verified email in an allowed domain", `{"email": "Jane@Acme.test", "email_verified": true, "groups": ["oncall"]}`, RoleOperator, "", false},
		{"email_verified as a string", `{"email": "jane@acme.test", "email_verified": "true"}`, RoleViewer, "", false},
		{"unverified email", `{"email": "jane@acme.test", "email_verified": false}`, "", "is not verified", false},
		{"email_verified missing", `{"email": "jane@acme.test"}`, "", "is not verified", false},
		{"no email", `{"email_verified": true}`, "", "did not share your email", false},
		{"not an email", `{"email": "jane@", "email_verified": true}`, "", "did not share your email", false},
		{"domain not allowed", `{"email": "jane@acme.test.evil.test", "email_verified": true}`, "", "Accounts at acme.test.evil.test cannot sign in", false},
		{"a subdomain is another domain", `{"email": "jane@eu.acme.test", "email_verified": true}`, "", "cannot sign in", false},
		{"any domain when none is configured", `{"email": "jane@elsewhere.test", "email_verified": true}`, RoleViewer, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient(t, func(c *Config) {
				if tc.anyDomain {
					c.AllowedDomains = nil
				}
			})
			id, err := c.identify("https://id.acme.test", "sub-1", claims(t, tc.claims))
			var ref *Refusal
			switch {
			case tc.refusal == "" && err != nil:
				t.Fatal(err)
			case tc.refusal == "" && (id.Role != tc.wantRole || id.Subject != "sub-1" || id.Issuer != "https://id.acme.test"):
				t.Fatalf("%+v", id)
			case tc.refusal != "" && !errors.As(err, &ref):
				t.Fatalf("err %v, want a refusal", err)
			case tc.refusal != "" && !containsFold(ref.Message, tc.refusal):
				t.Fatalf("message %q, want it to say %q", ref.Message, tc.refusal)
			}
		})
	}
	t.Run("no role and no default role", func(t *testing.T) {
		c := testClient(t, func(c *Config) { c.DefaultRole = "" })
		_, err := c.identify("https://id.acme.test", "sub-1", claims(t, `{"email": "jane@acme.test", "email_verified": true, "groups": ["staff"]}`))
		var ref *Refusal
		if !errors.As(err, &ref) || !containsFold(ref.Message, "no hookline role") {
			t.Fatalf("err %v", err)
		}
	})
}

func TestNewValidates(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"issuer not a URL":     func(c *Config) { c.Issuer = "id.acme.test" },
		"no client id":         func(c *Config) { c.ClientID = "" },
		"no redirect URL":      func(c *Config) { c.RedirectURL = "" },
		"unknown default role": func(c *Config) { c.DefaultRole = RoleAdmin },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testClient(t, nil).cfg
			mod(&cfg)
			if _, err := New(cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func ExampleClient_MapRole() {
	c, _ := New(Config{
		Issuer: "https://id.acme.test", ClientID: "hookline", RedirectURL: "https://hooks.acme.test/login/oidc/callback",
		RoleClaim: "groups", AdminValues: []string{"hookline-admins"}, OperatorValues: []string{"oncall"}, DefaultRole: RoleViewer,
	})
	fmt.Println(c.MapRole(map[string]any{"groups": []any{"staff", "oncall"}}))
	fmt.Println(c.MapRole(map[string]any{"groups": []any{"staff"}}))
	// Output:
	// operator
	// viewer
}
