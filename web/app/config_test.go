package app

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/web"
)

func TestLoadConfig(t *testing.T) {
	key := "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="
	cases := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{"defaults: embedded database", nil, "", func(t *testing.T, c Config) {
			if !c.Embedded() || c.Addr != ":8080" || c.DataDir != "data" || c.MaxBodyBytes != 262144 ||
				c.ShutdownGrace != 20*time.Second || c.Retention.Attempts != 7*24*time.Hour || c.SecretKey != nil {
				t.Fatalf("%+v", c)
			}
		}},
		{"external database needs a secret key", map[string]string{"DATABASE_URL": "postgres://u@db/h"}, "HOOKLINE_SECRET_KEY is required", nil},
		{"external database with key", map[string]string{"DATABASE_URL": "postgres://u@db/h", "HOOKLINE_SECRET_KEY": key}, "", func(t *testing.T, c Config) {
			if c.Embedded() || len(c.SecretKey) != 32 {
				t.Fatalf("%+v", c)
			}
		}},
		{"bad database url", map[string]string{"DATABASE_URL": "mysql://x", "HOOKLINE_SECRET_KEY": key}, "DATABASE_URL", nil},
		{"short secret key", map[string]string{"HOOKLINE_SECRET_KEY": "c2hvcnQ="}, "HOOKLINE_SECRET_KEY: want base64 of exactly 32 bytes", nil},
		{"bad session key", map[string]string{"HOOKLINE_SESSION_KEY": "%%%"}, "HOOKLINE_SESSION_KEY", nil},
		{"bad addr", map[string]string{"HOOKLINE_ADDR": "8080"}, "HOOKLINE_ADDR", nil},
		{"addr port above 65535", map[string]string{"HOOKLINE_ADDR": ":99999"}, `HOOKLINE_ADDR ":99999": want a port between 1 and 65535`, nil},
		{"addr port 0", map[string]string{"HOOKLINE_ADDR": "127.0.0.1:0"}, "HOOKLINE_ADDR", nil},
		{"addr port not a number", map[string]string{"HOOKLINE_ADDR": "localhost:web"}, "HOOKLINE_ADDR", nil},
		{"addr with host and port", map[string]string{"HOOKLINE_ADDR": "[::1]:65535"}, "", func(t *testing.T, c Config) {
			if c.Addr != "[::1]:65535" {
				t.Fatal(c.Addr)
			}
		}},
		{"allow networks", map[string]string{"HOOKLINE_ALLOW_NETWORKS": "127.0.0.0/8, 10.1.2.3"}, "", func(t *testing.T, c Config) {
			if len(c.AllowNetworks) != 2 || c.AllowNetworks[0] != netip.MustParsePrefix("127.0.0.0/8") {
				t.Fatalf("%v", c.AllowNetworks)
			}
		}},
		{"bad allow networks", map[string]string{"HOOKLINE_ALLOW_NETWORKS": "127.0.0.0/99"}, "HOOKLINE_ALLOW_NETWORKS", nil},
		{"partner allow networks empty by default", map[string]string{"HOOKLINE_ALLOW_NETWORKS": "127.0.0.0/8"}, "", func(t *testing.T, c Config) {
			if len(c.PartnerAllowNetworks) != 0 {
				t.Fatalf("the operator's allow list reached partners: %v", c.PartnerAllowNetworks)
			}
		}},
		{"partner allow networks", map[string]string{"HOOKLINE_PARTNER_ALLOW_NETWORKS": "10.20.0.0/16,192.168.7.9"}, "", func(t *testing.T, c Config) {
			if len(c.PartnerAllowNetworks) != 2 || c.PartnerAllowNetworks[1] != netip.MustParsePrefix("192.168.7.9/32") || len(c.AllowNetworks) != 0 {
				t.Fatalf("partner %v, operator %v", c.PartnerAllowNetworks, c.AllowNetworks)
			}
		}},
		{"bad partner allow networks", map[string]string{"HOOKLINE_PARTNER_ALLOW_NETWORKS": "10.0.0.0/8, intranet"}, `HOOKLINE_PARTNER_ALLOW_NETWORKS: allow list entry "intranet"`, nil},
		{"bad partner allow networks is not the operator's", map[string]string{"HOOKLINE_PARTNER_ALLOW_NETWORKS": "10.0.0.0/33"}, "HOOKLINE_PARTNER_ALLOW_NETWORKS: allow list entry \"10.0.0.0/33\"", nil},
		{"egress proxy", map[string]string{"HOOKLINE_EGRESS_PROXY": "http://10.0.0.5:3128"}, "", func(t *testing.T, c Config) {
			if c.EgressProxy == nil || c.EgressProxy.Host != "10.0.0.5:3128" {
				t.Fatalf("egress proxy %v", c.EgressProxy)
			}
		}},
		{"bad egress proxy", map[string]string{"HOOKLINE_EGRESS_PROXY": "https://10.0.0.5"}, "HOOKLINE_EGRESS_PROXY: must start with http://", nil},
		{"max body", map[string]string{"HOOKLINE_MAX_BODY_BYTES": "1048576"}, "", func(t *testing.T, c Config) {
			if c.MaxBodyBytes != 1<<20 {
				t.Fatal(c.MaxBodyBytes)
			}
		}},
		{"max body too small", map[string]string{"HOOKLINE_MAX_BODY_BYTES": "10"}, "HOOKLINE_MAX_BODY_BYTES", nil},
		{"retention", map[string]string{"HOOKLINE_RETAIN_ATTEMPTS": "72h"}, "", func(t *testing.T, c Config) {
			if c.Retention.Attempts != 72*time.Hour {
				t.Fatal(c.Retention)
			}
		}},
		{"bad retention", map[string]string{"HOOKLINE_RETAIN_ATTEMPTS": "1s"}, "HOOKLINE_RETAIN_ATTEMPTS", nil},
		{"log level", map[string]string{"HOOKLINE_LOG_LEVEL": "loud"}, "HOOKLINE_LOG_LEVEL", nil},
		{"portal defaults", nil, "", func(t *testing.T, c Config) {
			if c.PortalLinkTTL != time.Hour || c.PortalTitle != "" || c.PublicURL != "" {
				t.Fatal(c.PortalLinkTTL, c.PortalTitle, c.PublicURL)
			}
		}},
		{"portal settings", map[string]string{"HOOKLINE_PORTAL_LINK_TTL": "15m", "HOOKLINE_PORTAL_TITLE": " Acme Deliveries ", "HOOKLINE_PUBLIC_URL": "https://hooks.acme.test/"}, "", func(t *testing.T, c Config) {
			if c.PortalLinkTTL != 15*time.Minute || c.PortalTitle != "Acme Deliveries" || c.PublicURL != "https://hooks.acme.test" {
				t.Fatal(c.PortalLinkTTL, c.PortalTitle, c.PublicURL)
			}
		}},
		{"portal link ttl too long", map[string]string{"HOOKLINE_PORTAL_LINK_TTL": "30d"}, "HOOKLINE_PORTAL_LINK_TTL", nil},
		{"portal link ttl too short", map[string]string{"HOOKLINE_PORTAL_LINK_TTL": "5s"}, "HOOKLINE_PORTAL_LINK_TTL", nil},
		{"public url with a path", map[string]string{"HOOKLINE_PUBLIC_URL": "https://hooks.acme.test/x?y=1"}, "HOOKLINE_PUBLIC_URL", nil},
		{"public url without scheme", map[string]string{"HOOKLINE_PUBLIC_URL": "hooks.acme.test"}, "HOOKLINE_PUBLIC_URL", nil},
		{"search keys default", nil, "", func(t *testing.T, c Config) {
			if !slices.Equal(c.SearchKeys, web.DefaultSearchKeys()) || !slices.Contains(c.SearchKeys, "click_id") {
				t.Fatal(c.SearchKeys)
			}
		}},
		{"search keys replace the list", map[string]string{"HOOKLINE_SEARCH_KEYS": " conv_id, lead.id ,tid"}, "", func(t *testing.T, c Config) {
			if !slices.Equal(c.SearchKeys, []string{"conv_id", "lead.id", "tid"}) {
				t.Fatal(c.SearchKeys)
			}
		}},
		{"public url", map[string]string{"HOOKLINE_PUBLIC_URL": " https://hooks.test/ "}, "", func(t *testing.T, c Config) {
			if c.PublicURL != "https://hooks.test" {
				t.Errorf("PublicURL = %q", c.PublicURL)
			}
		}},
		{"public url: not a URL", map[string]string{"HOOKLINE_PUBLIC_URL": "hooks.test"}, `HOOKLINE_PUBLIC_URL "hooks.test"`, nil},
		{"edge defaults", map[string]string{}, "", func(t *testing.T, c Config) {
			if c.MetricsAddr != "127.0.0.1:9464" || c.MetricsToken != "" || c.MaxConnections != 0 {
				t.Errorf("metrics %q token %q max connections %d", c.MetricsAddr, c.MetricsToken, c.MaxConnections)
			}
		}},
		{"edge settings", map[string]string{"HOOKLINE_METRICS_ADDR": "off", "HOOKLINE_METRICS_TOKEN": "0123456789abcdef", "HOOKLINE_MAX_CONNECTIONS": "5000"}, "", func(t *testing.T, c Config) {
			if c.MetricsAddr != "off" || c.MetricsToken != "0123456789abcdef" || c.MaxConnections != 5000 {
				t.Errorf("metrics %q token %q max connections %d", c.MetricsAddr, c.MetricsToken, c.MaxConnections)
			}
		}},
		{"metrics addr: no port", map[string]string{"HOOKLINE_METRICS_ADDR": "127.0.0.1"}, `HOOKLINE_METRICS_ADDR "127.0.0.1"`, nil},
		{"metrics token: short", map[string]string{"HOOKLINE_METRICS_TOKEN": "short"}, "HOOKLINE_METRICS_TOKEN: want at least 16", nil},
		{"max connections: too few", map[string]string{"HOOKLINE_MAX_CONNECTIONS": "3"}, `HOOKLINE_MAX_CONNECTIONS "3"`, nil},
		{"search keys: empty name", map[string]string{"HOOKLINE_SEARCH_KEYS": "click_id,,cid"}, "HOOKLINE_SEARCH_KEYS", nil},
		{"search keys: bad name", map[string]string{"HOOKLINE_SEARCH_KEYS": "click id"}, `HOOKLINE_SEARCH_KEYS "click id": field name "click id"`, nil},
		{"search keys: twice", map[string]string{"HOOKLINE_SEARCH_KEYS": "cid,cid"}, `field name "cid" given twice`, nil},
		{"search keys: too many", map[string]string{"HOOKLINE_SEARCH_KEYS": fieldNames(51)}, "HOOKLINE_SEARCH_KEYS \"k0,k1,", nil},
		{"search keys: fifty", map[string]string{"HOOKLINE_SEARCH_KEYS": fieldNames(50)}, "", func(t *testing.T, c Config) {
			if len(c.SearchKeys) != 50 {
				t.Fatal(c.SearchKeys)
			}
		}},
		{"oidc off by default", nil, "", func(t *testing.T, c Config) {
			if c.OIDC != nil {
				t.Fatalf("%+v", c.OIDC)
			}
		}},
		{"oidc", oidcEnv(map[string]string{"HOOKLINE_OIDC_ALLOWED_DOMAINS": " Acme.test, @ops.acme.test ,acme.test", "HOOKLINE_OIDC_ADMIN_VALUES": "hookline-admins",
			"HOOKLINE_OIDC_OPERATOR_VALUES": "oncall, platform", "HOOKLINE_OIDC_ISSUER": "https://id.acme.test/realms/main/"}), "", func(t *testing.T, c Config) {
			o := c.OIDC
			if o == nil || o.Issuer != "https://id.acme.test/realms/main" || o.ClientID != "hookline" || o.ClientSecret != "s3cret" ||
				o.RedirectURL != "https://hooks.acme.test/login/oidc/callback" || o.RoleClaim != "groups" || o.DefaultRole != "viewer" || !o.PasswordLogin ||
				!slices.Equal(o.AllowedDomains, []string{"acme.test", "ops.acme.test"}) || !slices.Equal(o.AdminValues, []string{"hookline-admins"}) ||
				!slices.Equal(o.OperatorValues, []string{"oncall", "platform"}) {
				t.Fatalf("%+v", o)
			}
		}},
		{"oidc: role claim, no default role, password login off", oidcEnv(map[string]string{"HOOKLINE_OIDC_ROLE_CLAIM": "realm_access.roles",
			"HOOKLINE_OIDC_DEFAULT_ROLE": "none", "HOOKLINE_OIDC_PASSWORD_LOGIN": "off"}), "", func(t *testing.T, c Config) {
			if o := c.OIDC; o.RoleClaim != "realm_access.roles" || o.DefaultRole != "" || o.PasswordLogin {
				t.Fatalf("%+v", o)
			}
		}},
		{"oidc: http issuer on loopback", oidcEnv(map[string]string{"HOOKLINE_OIDC_ISSUER": "http://127.0.0.1:5556/dex"}), "", func(t *testing.T, c Config) {
			if c.OIDC.Issuer != "http://127.0.0.1:5556/dex" {
				t.Fatal(c.OIDC.Issuer)
			}
		}},
		{"oidc: needs the public url", oidcEnv(map[string]string{"HOOKLINE_PUBLIC_URL": ""}), "HOOKLINE_OIDC_ISSUER needs HOOKLINE_PUBLIC_URL", nil},
		{"oidc: http issuer elsewhere", oidcEnv(map[string]string{"HOOKLINE_OIDC_ISSUER": "http://id.acme.test"}), `HOOKLINE_OIDC_ISSUER "http://id.acme.test": want the provider's https issuer URL`, nil},
		{"oidc: issuer not a url", oidcEnv(map[string]string{"HOOKLINE_OIDC_ISSUER": "id.acme.test"}), `HOOKLINE_OIDC_ISSUER "id.acme.test"`, nil},
		{"oidc: client id and secret required", oidcEnv(map[string]string{"HOOKLINE_OIDC_CLIENT_ID": "", "HOOKLINE_OIDC_CLIENT_SECRET": " "}),
			"HOOKLINE_OIDC_CLIENT_ID is required with HOOKLINE_OIDC_ISSUER (the client id the provider gave hookline)\nHOOKLINE_OIDC_CLIENT_SECRET is required", nil},
		{"oidc: settings without an issuer", map[string]string{"HOOKLINE_OIDC_CLIENT_ID": "hookline", "HOOKLINE_OIDC_PASSWORD_LOGIN": "off"},
			"HOOKLINE_OIDC_CLIENT_ID is set but HOOKLINE_OIDC_ISSUER is not", nil},
		{"oidc: password login off without an issuer", map[string]string{"HOOKLINE_OIDC_PASSWORD_LOGIN": "off"}, "HOOKLINE_OIDC_PASSWORD_LOGIN is set but HOOKLINE_OIDC_ISSUER is not", nil},
		{"oidc: bad domain", oidcEnv(map[string]string{"HOOKLINE_OIDC_ALLOWED_DOMAINS": "acme.test,jane@acme.test"}), `HOOKLINE_OIDC_ALLOWED_DOMAINS "acme.test,jane@acme.test": domain "jane@acme.test"`, nil},
		{"oidc: bad role claim", oidcEnv(map[string]string{"HOOKLINE_OIDC_ROLE_CLAIM": "my groups"}), `HOOKLINE_OIDC_ROLE_CLAIM "my groups"`, nil},
		{"oidc: empty admin value", oidcEnv(map[string]string{"HOOKLINE_OIDC_ADMIN_VALUES": "admins,,root"}), "HOOKLINE_OIDC_ADMIN_VALUES: \"admins,,root\": an empty value", nil},
		{"oidc: a value with two roles", oidcEnv(map[string]string{"HOOKLINE_OIDC_ADMIN_VALUES": "ops", "HOOKLINE_OIDC_OPERATOR_VALUES": "ops"}), `HOOKLINE_OIDC_OPERATOR_VALUES: "ops" is an admin value too`, nil},
		{"oidc: bad default role", oidcEnv(map[string]string{"HOOKLINE_OIDC_DEFAULT_ROLE": "admin"}), `HOOKLINE_OIDC_DEFAULT_ROLE "admin": want viewer`, nil},
		{"oidc: bad password login", oidcEnv(map[string]string{"HOOKLINE_OIDC_PASSWORD_LOGIN": "no"}), `HOOKLINE_OIDC_PASSWORD_LOGIN "no": want on or off`, nil},
		{"two-factor not required by default", nil, "", func(t *testing.T, c Config) {
			if c.Require2FA != "" {
				t.Fatal(c.Require2FA)
			}
		}},
		{"two-factor required of operators", map[string]string{"HOOKLINE_REQUIRE_2FA": " Operator "}, "", func(t *testing.T, c Config) {
			if c.Require2FA != "operator" {
				t.Fatal(c.Require2FA)
			}
		}},
		{"two-factor required of all", map[string]string{"HOOKLINE_REQUIRE_2FA": "all"}, "", func(t *testing.T, c Config) {
			if c.Require2FA != "all" {
				t.Fatal(c.Require2FA)
			}
		}},
		{"two-factor: unknown value", map[string]string{"HOOKLINE_REQUIRE_2FA": "viewer"}, `HOOKLINE_REQUIRE_2FA "viewer": want admin, operator`, nil},
		{"two-factor: a list is not a value", map[string]string{"HOOKLINE_REQUIRE_2FA": "admin,operator"}, "HOOKLINE_REQUIRE_2FA", nil},
		{"several errors at once", map[string]string{"HOOKLINE_ADDR": "x", "HOOKLINE_MAX_BODY_BYTES": "y"}, "HOOKLINE_MAX_BODY_BYTES", nil},
		{"several errors at once, each by name", map[string]string{"HOOKLINE_ADDR": ":99999", "HOOKLINE_LOG_LEVEL": "loud"}, "HOOKLINE_ADDR \":99999\": want a port between 1 and 65535, such as :8080\nHOOKLINE_LOG_LEVEL", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConfig(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// oidcEnv is a complete single sign-on configuration with changes ("" unsets).
func oidcEnv(changes map[string]string) map[string]string {
	env := map[string]string{
		"HOOKLINE_PUBLIC_URL":         "https://hooks.acme.test",
		"HOOKLINE_OIDC_ISSUER":        "https://id.acme.test",
		"HOOKLINE_OIDC_CLIENT_ID":     "hookline",
		"HOOKLINE_OIDC_CLIENT_SECRET": "s3cret",
	}
	for k, v := range changes {
		env[k] = v
	}
	return env
}

// fieldNames is "k0,k1,...", n distinct payload field names.
func fieldNames(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprint("k", i)
	}
	return strings.Join(names, ",")
}

// TestDirectDatabaseURLConfig: HOOKLINE_DIRECT_DATABASE_URL goes with a
// DATABASE_URL, and must parse.
func TestDirectDatabaseURLConfig(t *testing.T) {
	env := map[string]string{"HOOKLINE_DIRECT_DATABASE_URL": "postgres://u@db.invalid/h"}
	if _, err := LoadConfig(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "HOOKLINE_DIRECT_DATABASE_URL: set only with DATABASE_URL") {
		t.Fatalf("without DATABASE_URL: %v", err)
	}
	env["DATABASE_URL"] = "postgres://u@pooler.invalid:6432/h"
	env["HOOKLINE_SECRET_KEY"] = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil || cfg.DirectDatabaseURL != "postgres://u@db.invalid/h" {
		t.Fatalf("with DATABASE_URL: %v, %q", err, cfg.DirectDatabaseURL)
	}
	env["HOOKLINE_DIRECT_DATABASE_URL"] = "postgres://u@db.invalid/h?pool_max_conns=many"
	if _, err := LoadConfig(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "HOOKLINE_DIRECT_DATABASE_URL: cannot be parsed") {
		t.Fatalf("an unparsable direct URL: %v", err)
	}
}
