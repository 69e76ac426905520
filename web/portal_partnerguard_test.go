package web

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
)

// allowPartnerLoopback opens loopback to URLs partners enter, as
// HOOKLINE_PARTNER_ALLOW_NETWORKS=127.0.0.0/8 would.
func allowPartnerLoopback(c *Config) {
	c.PartnerGuard = ssrf.NewPartner([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
}

// fakeResolver answers lookups from a table, so that tests exercise name
// resolution without DNS; a name it does not know does not resolve.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

// testResolver knows a name that resolves to loopback (as a rebinding
// partner's would) and one that resolves to a public address, which is
// never dialled.
var testResolver = fakeResolver{
	"rebind.invalid": {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("127.0.0.1")},
	"hooks.invalid":  {netip.MustParseAddr("93.184.215.14")},
}

// TestPortalPartnerGuard: URLs a partner enters are judged by the partner
// guard, not by the operator's HOOKLINE_ALLOW_NETWORKS (here 127.0.0.0/8, as
// the quick start sets it): refused at save time with a field error naming
// why, refused at dial time for test fires (the receiver sees nothing),
// and recorded as the partner's so the worker and every later test fire
// dial them the same way.
func TestPortalPartnerGuard(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback, func(c *Config) { c.Resolver = testResolver })
	base := env.server()
	rcv := newHookReceiver(t, http.StatusOK, 0, `{"internal":"metrics"}`)
	pid := env.createPartner("Alpha")
	env.exec("UPDATE partners SET portal_manage_endpoints = true WHERE id = $1", pid)
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "alpha-hooks", "kind": "webhook", "url": "https://hooks.invalid/alpha",
		"headers": map[string]string{"X-Key": "stored-secret"}})
	epPath := "/portal/endpoints/" + itoa64(ep.ID)
	partner := env.portalSignIn(base, pid, "Alpha")
	stored := func() (string, string) {
		var u, by string
		if err := env.pool.QueryRow(t.Context(), "SELECT url, url_set_by FROM endpoints WHERE id = $1", ep.ID).Scan(&u, &by); err != nil {
			t.Fatal(err)
		}
		return u, by
	}
	nothingReceived := func(t *testing.T) {
		t.Helper()
		if n := len(rcv.requests()); n != 0 {
			t.Fatalf("the loopback receiver got %d requests", n)
		}
	}
	const why = "partners may only use public addresses"

	t.Run("test fire to loopback refused", func(t *testing.T) {
		_, doc := partner.htmx(http.MethodPost, epPath+"/test-fire", url.Values{"url": {rcv.URL + "/"}, "headers": {"X-Key: typed"}})
		got := testid(doc, "test-result-view").Text()
		if !strings.Contains(got, "resolves to a private address (127.0.0.1, loopback); "+why) {
			t.Fatalf("test fire: %q", got)
		}
		if strings.Contains(got, "HOOKLINE_") {
			t.Fatalf("the portal names the operator's configuration: %q", got)
		}
		nothingReceived(t)
	})
	t.Run("test fire refused at dial time", func(t *testing.T) {
		// Past the form's check (a name that resolved to a public address
		// a moment ago would get here): the partner sender's dial hook
		// refuses the address itself.
		cfg, errs := validateEndpoint(endpointInput{PartnerID: pid, Name: "x", Kind: "webhook", URL: rcv.URL + "/"}, env.srv.guard)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		res := env.srv.testFire(t.Context(), cfg, nil, fireOpts{partner: true, portal: true})
		if res.Class != sender.ClassBlocked || res.RemoteAddr != "" {
			t.Fatalf("partner test fire: %s %q via %q", res.Class, res.Error, res.RemoteAddr)
		}
		nothingReceived(t)
	})
	t.Run("edit to a loopback address refused", func(t *testing.T) {
		for _, u := range []string{rcv.URL + "/x", "http://127.0.0.1:8080/metrics", "http://[::ffff:127.0.0.1]:8080/metrics"} {
			res, doc := partner.htmx(http.MethodPost, epPath+"/edit", url.Values{"url": {u}, "headers": {"X-Key: ********"}})
			msg := doc.Find("#portal-url-error").Text()
			if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, "resolves to a private address") || !strings.Contains(msg, why) {
				t.Fatalf("%s: %d, url error %q", u, res.StatusCode, msg)
			}
		}
		if u, by := stored(); u != "https://hooks.invalid/alpha" || by != urlSetByOperator {
			t.Fatalf("stored %s set by %s", u, by)
		}
	})
	t.Run("edit to a name resolving to loopback refused", func(t *testing.T) {
		res, doc := partner.htmx(http.MethodPost, epPath+"/edit", url.Values{"url": {"https://rebind.invalid/hook"}, "headers": {"X-Key: ********"}})
		msg := doc.Find("#portal-url-error").Text()
		if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, "127.0.0.1") || !strings.Contains(msg, why) {
			t.Fatalf("%d, url error %q", res.StatusCode, msg)
		}
		if u, _ := stored(); u != "https://hooks.invalid/alpha" {
			t.Fatalf("stored %s", u)
		}
	})
	t.Run("create refused for loopback, a public one is the partner's", func(t *testing.T) {
		res, doc := partner.postForm("/portal/endpoints", url.Values{"kind": {"webhook"}, "name": {"alpha-internal"}, "url": {"http://127.0.0.1:8080/metrics"}})
		if msg := doc.Find("[data-field=url] [data-testid=field-error]").Text(); res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, why) {
			t.Fatalf("loopback create: %d, url error %q", res.StatusCode, msg)
		}
		res, doc = partner.postForm("/portal/endpoints", url.Values{"kind": {"webhook"}, "name": {"alpha-rebind"}, "url": {"https://rebind.invalid/x"}})
		if msg := doc.Find("[data-field=url] [data-testid=field-error]").Text(); res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, why) {
			t.Fatalf("rebinding name create: %d, url error %q", res.StatusCode, msg)
		}
		res, _ = partner.postForm("/portal/endpoints", url.Values{"kind": {"postback"}, "name": {"alpha-pb"}, "url": {"https://hooks.invalid/pb?cid={click_id}"}, "macro_style": {"braces"}})
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("public create: %d", res.StatusCode)
		}
		var by string
		if err := env.pool.QueryRow(t.Context(), "SELECT url_set_by FROM endpoints WHERE name = 'alpha-pb'").Scan(&by); err != nil || by != urlSetByPartner {
			t.Fatalf("created URL set by %q (%v)", by, err)
		}
	})
	t.Run("who set the URL", func(t *testing.T) {
		res, _ := partner.postForm(epPath+"/edit", url.Values{"url": {"https://hooks.invalid/moved"}, "headers": {"X-Key: ********"}})
		if res.StatusCode != http.StatusOK {
			t.Fatalf("public edit: %d", res.StatusCode)
		}
		if u, by := stored(); u != "https://hooks.invalid/moved" || by != urlSetByPartner {
			t.Fatalf("after the partner's edit: %s set by %s", u, by)
		}
		// An operator edit that leaves the URL alone leaves it the
		// partner's; one that changes it makes it the operator's.
		mustStatus(t, env.do(http.MethodPatch, "/api/v1/endpoints/"+itoa64(ep.ID), map[string]any{"timeout_ms": 5000}), http.StatusOK)
		if _, by := stored(); by != urlSetByPartner {
			t.Fatalf("after an operator edit of the timeout: set by %s", by)
		}
		mustStatus(t, env.do(http.MethodPatch, "/api/v1/endpoints/"+itoa64(ep.ID), map[string]any{"url": rcv.URL + "/op"}), http.StatusOK)
		if _, by := stored(); by != urlSetByOperator {
			t.Fatalf("after the operator set the URL: set by %s", by)
		}
		// A partner edit that does not touch the URL keeps the
		// operator's (loopback, which the operator allows) as it is.
		res, _ = partner.htmx(http.MethodPost, epPath+"/event-types", url.Values{"event_types": {"order.paid"}})
		if u, by := stored(); res.StatusCode != http.StatusOK || u != rcv.URL+"/op" || by != urlSetByOperator {
			t.Fatalf("event types: %d, %s set by %s", res.StatusCode, u, by)
		}
	})
	t.Run("saved URL of a partner's dialled with the partner guard", func(t *testing.T) {
		env.exec("UPDATE endpoints SET url = $2, url_set_by = 'partner' WHERE id = $1", ep.ID, rcv.URL+"/rebound")
		_, doc := partner.htmx(http.MethodPost, epPath+"/test", url.Values{})
		if got := testid(doc, "test-result-view").Text(); !strings.Contains(got, sender.ClassBlocked) {
			t.Fatalf("portal test event: %q", got)
		}
		op := env.signIn(base, "ops@example.com", "operator")
		_, doc = op.htmx(http.MethodPost, "/endpoints/"+itoa64(ep.ID)+"/test", url.Values{})
		if got := testid(doc, "test-result-view").Text(); !strings.Contains(got, sender.ClassBlocked) || !strings.Contains(got, ssrf.PartnerVariable) {
			t.Fatalf("dashboard test event: %q", got)
		}
		nothingReceived(t)
		env.exec("UPDATE endpoints SET url = $2, url_set_by = 'operator' WHERE id = $1", ep.ID, rcv.URL+"/op")
	})
}

// TestTestFireStoredCredential: a test fire that keeps a stored header
// value (sends the mask back) goes only to the endpoint's saved URL; to
// any other it is refused (422, on the headers field) and nothing is sent.
// Typed again, the value goes anywhere the guard allows.
func TestTestFireStoredCredential(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback, allowPartnerLoopback)
	base := env.server()
	rcv := newHookReceiver(t, http.StatusOK, 0, `{"from":"the receiver"}`)
	pid := env.createPartner("Alpha")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "alpha-hooks", "kind": "webhook", "url": rcv.URL + "/saved",
		"headers": map[string]string{"X-Key": "stored-secret"}})
	partner := env.portalSignIn(base, pid, "Alpha")
	op := env.signIn(base, "ops@example.com", "operator")
	const refusal = `"X-Key": type the value again: the stored value is sent only to the saved URL`
	last := func(t *testing.T, n int) receivedHook {
		t.Helper()
		got := rcv.requests()
		if len(got) != n {
			t.Fatalf("the receiver got %d requests, want %d", len(got), n)
		}
		if n == 0 {
			return receivedHook{}
		}
		return got[n-1]
	}
	portalFire := func(u, headers string) (*http.Response, string) {
		res, doc := partner.htmx(http.MethodPost, "/portal/endpoints/"+itoa64(ep.ID)+"/test-fire", url.Values{"url": {u}, "headers": {headers}})
		return res, testid(doc, "test-result-view").Text()
	}
	dashFire := func(u, headers string) (*http.Response, string) {
		res, doc := op.htmx(http.MethodPost, "/endpoints/test-fire", endpointForm(map[string]string{"kind": "webhook", "url": u, "method": "POST",
			"headers": headers, "endpoint_id": itoa64(ep.ID)}))
		return res, testid(doc, "test-result-view").Text()
	}

	for _, c := range []struct {
		name string
		fire func(u, headers string) (*http.Response, string)
	}{{"portal", portalFire}, {"dashboard", dashFire}} {
		t.Run(c.name+": masked to another URL refused", func(t *testing.T) {
			before := len(rcv.requests())
			for _, u := range []string{rcv.URL + "/elsewhere", rcv.URL + "/saved?x=1", "https://hooks.invalid/saved"} {
				res, text := c.fire(u, "X-Key: ********")
				if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(text, "headers: "+refusal) {
					t.Fatalf("%s: %d %q", u, res.StatusCode, text)
				}
			}
			last(t, before)
		})
		t.Run(c.name+": masked to the saved URL sends the stored value", func(t *testing.T) {
			before := len(rcv.requests())
			res, text := c.fire(rcv.URL+"/saved", "X-Key: ********")
			if res.StatusCode != http.StatusOK || !strings.Contains(text, "ok") {
				t.Fatalf("%d %q", res.StatusCode, text)
			}
			if h := last(t, before+1); h.Path != "/saved" || h.Header.Get("X-Key") != "stored-secret" {
				t.Fatalf("received %s with X-Key %q", h.Path, h.Header.Get("X-Key"))
			}
		})
		t.Run(c.name+": typed again, to another URL", func(t *testing.T) {
			before := len(rcv.requests())
			if res, text := c.fire(rcv.URL+"/elsewhere", "X-Key: typed-again"); res.StatusCode != http.StatusOK || !strings.Contains(text, "ok") {
				t.Fatalf("%d %q", res.StatusCode, text)
			}
			if h := last(t, before+1); h.Path != "/elsewhere" || h.Header.Get("X-Key") != "typed-again" {
				t.Fatalf("received %s with X-Key %q", h.Path, h.Header.Get("X-Key"))
			}
		})
	}
}

// TestPortalTestFirePrivateAnswer: with HOOKLINE_PARTNER_ALLOW_NETWORKS
// opening loopback (an on-premise receiver), a partner's test fire is sent
// and shows status and latency, but not what the receiver answered; the
// operator's dashboard shows the answer.
func TestPortalTestFirePrivateAnswer(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback, allowPartnerLoopback)
	base := env.server()
	const answer = "hookline_internal_metric 42"
	rcv := newHookReceiver(t, http.StatusOK, 0, answer)
	pid := env.createPartner("Alpha")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "alpha-hooks", "kind": "webhook", "url": "https://hooks.invalid/alpha"})
	partner := env.portalSignIn(base, pid, "Alpha")

	res, doc := partner.htmx(http.MethodPost, "/portal/endpoints/"+itoa64(ep.ID)+"/test-fire", url.Values{"url": {rcv.URL + "/onprem"}})
	view := testid(doc, "test-result-view")
	if res.StatusCode != http.StatusOK || !strings.Contains(view.Text(), "200") || testid(doc, "test-latency").Length() != 1 {
		t.Fatalf("portal test fire: %d %q", res.StatusCode, view.Text())
	}
	if strings.Contains(doc.Text(), answer) || testid(doc, "test-excerpt-hidden").Length() != 1 {
		t.Fatalf("the portal shows the private receiver's answer: %q", view.Text())
	}
	if n := len(rcv.requests()); n != 1 {
		t.Fatalf("the receiver got %d requests", n)
	}

	op := env.signIn(base, "ops@example.com", "operator")
	_, doc = op.htmx(http.MethodPost, "/endpoints/test-fire", endpointForm(map[string]string{"kind": "webhook", "url": rcv.URL + "/onprem", "method": "POST"}))
	if got := testid(doc, "test-excerpt").Text(); got != answer {
		t.Fatalf("the dashboard's excerpt %q, want the answer", got)
	}
}
