package worker

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/signing"
)

func TestDeliversSignedWebhooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	epID, secret := e.endpoint(endpointOpts{url: rcv.URL + "/hook?x=1"})
	payload := `{"order":"A-1","amount":12.50,"n":1e3}`
	ids := e.events(50, "order.created", payload)
	w := e.worker(nil)
	e.run(w)
	e.waitFor("50 deliveries", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 50
	})
	key, err := signing.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rcv.all() {
		if string(r.Body) != payload {
			t.Fatalf("body %q, want the stored bytes %q", r.Body, payload)
		}
		if err := signing.Verify(key, r.Header, r.Body, time.Now(), time.Hour); err != nil {
			t.Fatalf("signature does not verify: %v", err)
		}
		if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("User-Agent") != "hookline/test" || r.Header.Get("X-Custom") != "yes" {
			t.Fatalf("headers %v", r.Header)
		}
		if r.Method != http.MethodPost || r.URL != "/hook?x=1" {
			t.Fatalf("request %s %s", r.Method, r.URL)
		}
		seen[r.Header.Get("webhook-id")] = true
	}
	for _, id := range ids {
		if !seen[id.String()] {
			t.Fatalf("event %s never arrived (webhook-id must be the event id)", id)
		}
	}
	if n := e.count("SELECT count(*) FROM delivery_attempts WHERE outcome = 'ok' AND status_code = 200 AND duration_ms > 0 AND endpoint_id = $1", epID); n != 50 {
		t.Fatalf("attempt rows = %d, want 50", n)
	}
	d := e.delivery(ids[0])
	if d.AttemptCount != 1 || d.DeliveredAt == nil || d.LeaseExpiresAt != nil {
		t.Fatalf("delivery %+v", d)
	}
}

func TestDeliversPostbacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.setHandler(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("OK conversion " + r.URL.Query().Get("cid")))
	})
	e.endpoint(endpointOpts{kind: "postback", url: rcv.URL + "/pb?cid={click_id}&payout={payout}&ev={event_id}&try={attempt}", successBodyContains: "OK"})
	ids := e.events(1, "conversion.approved", `{"click_id":"abc 123&x=1","payout":12.50}`)
	e.run(e.worker(nil))
	e.waitFor("delivery", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 1 })
	got := rcv.all()[0]
	want := "/pb?cid=abc%20123%26x%3D1&payout=12.50&ev=" + ids[0].String() + "&try=1"
	if got.Method != http.MethodGet || got.URL != want {
		t.Fatalf("request %s %s, want GET %s", got.Method, got.URL, want)
	}
	var excerpt string
	if err := e.pool.QueryRow(context.Background(), "SELECT response_excerpt FROM delivery_attempts").Scan(&excerpt); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(excerpt, "abc") || !strings.Contains(excerpt, "OK conversion") {
		t.Fatalf("click id not redacted from the stored excerpt: %q", excerpt)
	}
}

func TestPostbackFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.setHandler(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("duplicate")) })
	e.endpoint(endpointOpts{kind: "postback", url: rcv.URL + "/pb?cid={click_id}", successBodyContains: "OK"})
	missing := e.events(1, "conversion.approved", `{"payout":1}`)
	mismatch := e.events(1, "conversion.approved", `{"click_id":"c1"}`)
	e.run(e.worker(nil))
	e.waitFor("both dead", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'dead'") == 2 })
	if d := e.delivery(missing[0]); *d.LastErrorClass != "missing_field" || !strings.Contains(*d.LastError, "click_id") || d.AttemptCount != 1 {
		t.Fatalf("missing field: %+v %q", d, *d.LastError)
	}
	if d := e.delivery(mismatch[0]); *d.LastErrorClass != "body_mismatch" {
		t.Fatalf("body mismatch: class %q", *d.LastErrorClass)
	}
	if n := rcv.count.Load(); n != 1 {
		t.Fatalf("receiver got %d requests; a missing field must not be sent", n)
	}
}

// TestSealedHeadersOfAnotherEndpointAreNotSent: custom header values are
// sealed per endpoint; a value copied from another endpoint's row does not
// open, and the delivery fails without a request rather than going out
// without the partner's credentials.
func TestSealedHeadersOfAnotherEndpointAreNotSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	a, _ := e.endpoint(endpointOpts{url: rcv.URL})
	b, _ := e.endpoint(endpointOpts{url: rcv.URL})
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, "UPDATE endpoints SET headers = (SELECT headers FROM endpoints WHERE id = $1) WHERE id = $2", a, b); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, "UPDATE endpoints SET enabled = false WHERE id = $1", a); err != nil {
		t.Fatal(err)
	}
	ids := e.events(1, "order.created", `{}`)
	e.run(e.worker(nil))
	e.waitFor("dead", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'dead'") == 1 })
	// a is disabled: its delivery of the event waits, pending.
	if d := e.deliveryTo(ids[0], b); d.EndpointID != b || *d.LastErrorClass != "invalid_request" || !strings.Contains(*d.LastError, "HOOKLINE_SECRET_KEY") {
		t.Fatalf("delivery %+v", d)
	}
	if n := rcv.count.Load(); n != 0 {
		t.Fatalf("receiver got %d requests", n)
	}
}

// TestGivenBoxOpensSecrets: a process builds one secret box and hands it to
// the worker; no key of its own is needed.
func TestGivenBoxOpensSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	_, secret := e.endpoint(endpointOpts{url: rcv.URL + "/hook"})
	e.events(1, "order.created", `{"n":1}`)
	box, err := secretbox.New(masterKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.run(e.worker(func(c *Config) { c.SecretKey, c.Box = nil, box }))
	e.waitFor("delivered", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 1 })
	key, err := signing.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	r := rcv.all()[0]
	if err := signing.Verify(key, r.Header, r.Body, time.Now(), time.Hour); err != nil || r.Header.Get("X-Custom") != "yes" {
		t.Fatalf("signature %v, headers %v", err, r.Header)
	}
}

// TestPostbackPathValueRedacted: a value rendered into the URL's path, which
// the query's redaction cannot see, is kept out of the stored excerpt and
// error too when the tracker echoes it back.
func TestPostbackPathValueRedacted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.setHandler(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte("unknown click " + strings.TrimPrefix(r.URL.Path, "/pb/")))
	})
	e.endpoint(endpointOpts{kind: "postback", url: rcv.URL + "/pb/{click_id}"})
	ids := e.events(1, "conversion.approved", `{"click_id":"clk-path-7781"}`)
	e.run(e.worker(nil))
	e.waitFor("dead", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'dead'") == 1 })
	var excerpt string
	if err := e.pool.QueryRow(context.Background(), "SELECT response_excerpt FROM delivery_attempts").Scan(&excerpt); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(excerpt, "clk-path") || !strings.Contains(excerpt, "unknown click") {
		t.Fatalf("stored excerpt %q", excerpt)
	}
	if d := e.delivery(ids[0]); strings.Contains(*d.LastError, "clk-path") {
		t.Fatalf("stored error %q", *d.LastError)
	}
}

// A delivery's delivered_at is its attempt's end as the attempt row has
// it, start plus duration, not when the worker got round to the result:
// here the worker's clock jumps a minute while the partner answers.
func TestDeliveredAtIsTheAttemptsEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	clk := newClock()
	rcv.setHandler(func(w http.ResponseWriter, r *http.Request) {
		clk.Advance(time.Minute)
		w.WriteHeader(http.StatusOK)
	})
	e.endpoint(endpointOpts{url: rcv.URL + "/hook"})
	ids := e.events(1, "order.created", `{}`)
	e.run(e.worker(func(c *Config) { c.Now = clk.Now }))
	e.waitFor("the delivery", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 1 })
	var gapMs float64
	if err := e.pool.QueryRow(context.Background(), `
		SELECT extract(epoch FROM d.delivered_at - a.started_at) * 1000 - a.duration_ms
		FROM deliveries d JOIN delivery_attempts a ON a.delivery_id = d.id
		WHERE d.event_id = $1`, ids[0]).Scan(&gapMs); err != nil {
		t.Fatal(err)
	}
	if gapMs < -0.01 || gapMs > 0.01 {
		t.Fatalf("delivered_at is %.3f ms after the attempt's start plus its duration", gapMs)
	}
}
