package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestBrowserSignedPostback: a signed hash-style postback's page shows the
// verification code, and its test fire, sent from that page in Chromium,
// reaches the tracker with a signature that verifies by the documented
// scheme (HMAC-SHA256, keyed with the secret's bytes after "whsec_", of the
// URL up to "&sig=") and the click id substituted.
func TestBrowserSignedPostback(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t, allowLoopback)
	base := env.server()
	tracker := newHookReceiver(t, http.StatusOK, 0, "ok")
	pid := env.createPartner("Cakewalk")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "cake", "kind": "postback", "macro_style": "hash",
		"signature_param": "sig", "url": tracker.URL + "/pb?cid=#click_id#&amount=#payout#"})
	if !strings.HasPrefix(ep.Secret, "whsec_") {
		t.Fatalf("a signed postback's create response has no secret: %q", ep.Secret)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(ep.Secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}

	env.createDashUser("ops@example.com", "operator")
	tab := newChromeTab(t, base)
	tab.login("ops@example.com")
	tab.open(fmt.Sprintf("/endpoints/%d", ep.ID))
	tab.waitUntil("the verification code", sel("[data-testid=signed-postback] [data-testid=verify-python]"), stepTimeout)
	if got := tab.text("[data-testid=signed-postback]"); !containsAll(got, "sig", "hmac") {
		tab.fatalf("the verification panel reads %q", got)
	}
	tab.click("[data-testid=test-fire-button]")
	tab.waitUntil("the test fire's result", fmt.Sprintf(`document.querySelector("#%s").textContent.includes("200")`, "test-result"), stepTimeout)
	reqs := tracker.requests()
	if len(reqs) != 1 {
		t.Fatalf("the tracker got %d requests, want the test fire", len(reqs))
	}
	q := reqs[0].Query
	signed, sig, ok := strings.Cut("/pb?"+q, "&sig=")
	if !ok || !strings.Contains(q, "ts=") || strings.Contains(q, "#click_id#") {
		t.Fatalf("the postback %q is not a signed, substituted URL", q)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(tracker.URL + signed))
	if want := hex.EncodeToString(mac.Sum(nil)); sig != want {
		t.Fatalf("signature %s does not verify (want %s over %q)", sig, want, tracker.URL+signed)
	}
}
