package web

import (
	"testing"

	"github.com/hookline/hookline/web/sso"
)

// TestBrowserOIDCSignIn: a person clicks "Sign in with <provider>" in
// Chromium, the provider (mockoidc on 127.0.0.1) signs them in, and they
// land on the page they asked for, signed in with the role their groups
// map to; with password sign-in off the page shows the button only.
func TestBrowserOIDCSignIn(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	p := newOIDCProvider(t)
	env, base := newOIDCEnv(t, p, nil)
	tab := newChromeTab(t, base)

	p.queue("sub-lea", "lea@acme.test", true, "staff", "oncall")
	tab.open("/endpoints")
	tab.waitUntil("the login page", sel("[data-testid=login-sso-link]")+" && "+sel("[data-testid=login-form]"), stepTimeout)
	if got, want := tab.text("[data-testid=login-sso-link]"), "Sign in with "+p.Addr()[len("http://"):]; got != want {
		tab.fatalf("button %q, want %q", got, want)
	}
	tab.screenshot("oidc-login")
	tab.clickToLoad("[data-testid=login-sso-link]", `location.pathname === "/endpoints" && `+sel("[data-testid=nav]"))
	if got := tab.text("[data-testid=user] .user-email"); got != "lea@acme.test" {
		tab.fatalf("signed in as %q", got)
	}
	if got := tab.text("[data-testid=user-role]"); got != "operator" {
		tab.fatalf("role %q, want operator", got)
	}
	if _, role, _, sub := env.userRow("lea@acme.test"); role != "operator" || sub == nil || *sub != "sub-lea" {
		tab.fatalf("user row: role %s, subject %v", role, sub)
	}
	tab.screenshot("oidc-signed-in")

	t.Run("password sign-in off", func(t *testing.T) {
		p := newOIDCProvider(t)
		_, base := newOIDCEnv(t, p, func(c *sso.Config) { c.PasswordLogin = false })
		tab := newChromeTab(t, base)
		p.queue("sub-max", "max@acme.test", true, "hookline-admins")
		tab.open("/login")
		tab.waitUntil("the login page", sel("[data-testid=login-sso-link]"), stepTimeout)
		if n := tab.count("[data-testid=login-form], input[type=password]"); n != 0 {
			tab.fatalf("%d password form elements shown", n)
		}
		tab.screenshot("oidc-login-password-off")
		tab.clickToLoad("[data-testid=login-sso-link]", `location.pathname === "/" && `+sel("[data-testid=nav]"))
		if got := tab.text("[data-testid=user-role]"); got != "admin" {
			tab.fatalf("role %q, want admin", got)
		}
	})
}
