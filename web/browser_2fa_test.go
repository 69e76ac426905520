package web

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookline/hookline/web/twofactor"
)

// TestBrowserTwoFactor: a user sets up two-factor sign-in from the secret
// the account page shows, signs out, and signs in again with the password
// and a code computed here from that secret, as their app would.
func TestBrowserTwoFactor(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t)
	base := env.server()
	const email = "ops@hookline.test"
	env.createDashUser(email, "operator")
	tab := newChromeTab(t, base)
	tab.login(email)

	tab.clickToLoad("[data-testid=account-link]", `location.pathname === "/account" && `+sel("[data-testid=two-factor-setup]"))
	tab.screenshot("account-two-factor-off")
	tab.clickToLoad("[data-testid=two-factor-setup]", sel("#totp-secret")+" && "+sel("[data-testid=totp-qr] path"))
	tab.screenshot("account-two-factor-setup")
	secret := strings.ReplaceAll(tab.text("#totp-secret"), " ", "")
	if len(secret) != 32 {
		tab.fatalf("secret shown: %q", secret)
	}
	code, err := twofactor.Code(secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tab.typeInto("#enable-code", code)
	tab.clickToLoad("[data-testid=two-factor-enable]", sel("#recovery-codes"))
	if state := tab.attr("[data-testid=two-factor]", "data-state"); state != "on" {
		tab.fatalf("two-factor state %q after the first code", state)
	}
	if n := len(strings.Fields(tab.text("#recovery-codes"))); n != 10 {
		tab.fatalf("%d recovery codes shown", n)
	}
	tab.screenshot("account-two-factor-on")

	tab.clickToLoad("[data-testid=logout-form] button", `location.pathname === "/login" && `+sel("#email"))
	tab.do("fill in the login form",
		chromedp.SendKeys(chromedp.CSS("#email"), email),
		chromedp.SendKeys(chromedp.CSS("#password"), dashPassword),
	)
	tab.clickToLoad("[data-testid=login-submit]", `location.pathname === "/login/code" && `+sel("#code"))
	if tab.count("[data-testid=nav]") != 0 {
		tab.fatalf("signed in before the code")
	}
	tab.screenshot("login-code")
	// The next step's code: the one used to enable is spent.
	next, _ := twofactor.Code(secret, time.Now().Add(twofactor.Period))
	tab.typeInto("#code", next)
	tab.clickToLoad("[data-testid=login-code-submit]", `location.pathname === "/" && `+sel("[data-testid=nav]"))
	if got := tab.text("[data-testid=user] .user-email"); got != email {
		tab.fatalf("signed in as %q, want %q", got, email)
	}
}
