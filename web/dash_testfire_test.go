package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// TestTestFireDestinationCheck: the test fire's destination check gives the
// guard's verdict on every address it resolved, also when the test stops
// before sending: a destination the guard refuses (the form's own check),
// or a postback whose sample lacks a field the template needs.
func TestTestFireDestinationCheck(t *testing.T) {
	t.Parallel()
	verdicts := func(t *testing.T, env *testEnv, form url.Values) (string, []string) {
		t.Helper()
		op := env.signIn(env.server(), "ops@example.com", "operator")
		res, doc := op.htmx(http.MethodPost, "/endpoints/test-fire", form)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("test fire: %d", res.StatusCode)
		}
		var rows []string
		testid(doc, "ssrf-verdict").Find("[data-testid=verdict]").Each(func(_ int, s *goquery.Selection) {
			rows = append(rows, strings.Join(strings.Fields(s.Text()), " "))
		})
		return strings.Join(strings.Fields(testid(doc, "test-result-view").Text()), " "), rows
	}

	t.Run("refused destination", func(t *testing.T) {
		env := newEnv(t) // loopback not allowed
		_, rows := verdicts(t, env, url.Values{"kind": {"webhook"}, "url": {"http://127.0.0.1:9/hook"}, "method": {"POST"}})
		if len(rows) != 1 || !strings.HasPrefix(rows[0], "127.0.0.1 blocked") || !strings.Contains(rows[0], "HOOKLINE_ALLOW_NETWORKS") {
			t.Fatalf("verdicts %q, want 127.0.0.1 blocked, naming HOOKLINE_ALLOW_NETWORKS", rows)
		}
	})
	t.Run("postback stopped by a missing field", func(t *testing.T) {
		env := newEnv(t, allowLoopback)
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Errorf("the test fire sent %s", r.URL) }))
		defer rcv.Close()
		text, rows := verdicts(t, env, url.Values{"kind": {"postback"}, "url": {rcv.URL + "/pb?ref={order_ref}"}, "method": {"GET"}})
		if !strings.Contains(text, "missing_field") {
			t.Fatalf("result: %s", text)
		}
		if len(rows) != 1 || !strings.HasPrefix(rows[0], "127.0.0.1 allowed") {
			t.Fatalf("verdicts %q, want 127.0.0.1 allowed", rows)
		}
	})
	t.Run("sent", func(t *testing.T) {
		env := newEnv(t, allowLoopback)
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		defer rcv.Close()
		_, rows := verdicts(t, env, url.Values{"kind": {"webhook"}, "url": {rcv.URL + "/hook"}, "method": {"POST"}})
		if len(rows) != 1 || !strings.HasPrefix(rows[0], "127.0.0.1 allowed") {
			t.Fatalf("verdicts %q, want 127.0.0.1 allowed", rows)
		}
	})
}
