package web

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBrowserNotificationsSettings: an admin adds a webhook channel on
// /settings/notifications, copies its secret (shown once), sends a test
// notification that the worker delivers, signed, to the loopback
// receiver, and deletes the channel.
func TestBrowserNotificationsSettings(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t, allowLoopback)
	base := env.server()
	env.createDashUser("admin@example.com", "admin")
	env.startWorker()
	channel := newHookReceiver(t, http.StatusOK, 0, "")

	tab := newChromeTab(t, base)
	tab.login("admin@example.com")
	tab.open("/settings/notifications")
	tab.waitUntil("the channel form", sel("[data-testid=channel-form]"), stepTimeout)
	tab.typeInto("#channel-name", "on-call")
	tab.typeInto("#channel-url", channel.URL+"/notify")
	evalJS[bool](tab, sel("#kind-breaker\\.closed")+".click(); true")
	tab.clickToLoad("[data-testid=channel-add]", sel("[data-testid=new-channel-secret]"))
	if got := tab.text("[data-testid=new-channel-secret]"); !strings.Contains(got, "shown only once") {
		tab.fatalf("secret box %q", got)
	}
	if got := tab.text("[data-testid=channel-row]"); !strings.Contains(got, "breaker.closed") || !strings.Contains(got, "on-call") {
		tab.fatalf("channel row %q", got)
	}
	tab.clickToLoad("[data-testid=channel-test]", sel(".flash, [role=status]")+` && document.body.textContent.includes("Test notification queued")`)
	deadline := time.Now().Add(20 * time.Second)
	for len(channel.requests()) == 0 {
		if time.Now().After(deadline) {
			tab.fatalf("the test notification never arrived")
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := channel.requests()[0]
	if got.Header.Get("webhook-signature") == "" || !strings.Contains(string(got.Body), "Test notification") {
		tab.fatalf("test notification %s %q", got.Header, got.Body)
	}
	tab.open("/settings/notifications")
	tab.waitUntil("the latest notifications", sel("[data-testid=recent-row]"), stepTimeout)
	tab.screenshot("notifications")
	tab.acceptConfirms()
	tab.clickToLoad("[data-testid=channel-delete]", "!"+sel("[data-testid=channel-row]"))
}
