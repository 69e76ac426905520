package web

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPortalHidesPrivateAnswers: an attempt whose connection went to an
// address only an allow list opened is stored as private, and the
// partner portal shows its status but never what it answered; the
// dashboard shows both.
func TestPortalHidesPrivateAnswers(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	base := env.server()
	rcv := newHookReceiver(t, http.StatusTeapot, 0, "private-answer-of-the-operators-network")
	pid := env.createPartner("Acme")
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "acme", "kind": "webhook", "url": rcv.URL + "/in", "max_attempts": 1})
	env.startWorker()
	id := env.postEvent("order.created", map[string]any{"n": 1})
	env.waitDB("the attempt recorded as private", 20*time.Second,
		`SELECT count(*) = 1 FROM delivery_attempts WHERE response_private AND response_excerpt LIKE 'private-answer%'`)

	op := env.signIn(base, "ops@hookline.test", "operator")
	if _, doc := op.get("/events/" + id); !strings.Contains(doc.Text(), "private-answer-of-the-operators-network") {
		t.Fatal("the dashboard does not show the answer")
	}
	partner := env.portalSignIn(base, pid, "Acme")
	res, doc := partner.get("/portal/events/" + id)
	if res.StatusCode != http.StatusOK || !strings.Contains(doc.Text(), "418") {
		t.Fatalf("portal event page: %d without the attempt's status", res.StatusCode)
	}
	if strings.Contains(doc.Text(), "private-answer") {
		t.Fatal("the portal shows what a private address answered")
	}
	// An attempt to a public address (recorded so; no test dials one)
	// shows the partner its answer.
	env.exec("UPDATE delivery_attempts SET response_private = false")
	if _, doc := partner.get("/portal/events/" + id); !strings.Contains(doc.Text(), "private-answer-of-the-operators-network") {
		t.Fatal("the portal hides a public address's answer")
	}
}
