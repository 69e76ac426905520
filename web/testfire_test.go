package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/worker"
	"github.com/hookline/hookline/worker/request"
	"github.com/hookline/hookline/worker/ssrf"
)

// TestTestFireSendsWhatTheWorkerSends: for the same endpoint, keys, event
// and time, the test fire's request and the worker's delivery arrive at the
// receiver byte for byte the same (request line, every header including the
// signature, body), for a signed webhook with a custom header and for a
// postback whose template uses every built-in macro. Both build through
// request.Build; this keeps a future change to either caller honest.
func TestTestFireSendsWhatTheWorkerSends(t *testing.T) {
	t.Parallel()
	// A fixed clock a minute ahead: the worker claims the event at once,
	// and both requests carry the same webhook-timestamp and {timestamp}.
	at := time.Now().Add(time.Minute).Truncate(time.Second)
	clock := func() time.Time { return at }
	env := newEnv(t, allowLoopback, func(c *Config) { c.Now = clock })

	got := make(chan string, 8)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dump, err := httputil.DumpRequest(r, true)
		if err != nil {
			t.Errorf("dump: %v", err)
		}
		got <- string(dump)
	}))
	defer rcv.Close()
	next := func(what string) string {
		t.Helper()
		select {
		case d := <-got:
			return d
		case <-time.After(15 * time.Second):
			t.Fatalf("no request arrived for %s", what)
			return ""
		}
	}

	partner := env.createPartner("Identity")
	hook := env.createEndpoint(map[string]any{"partner_id": partner, "name": "hook", "kind": "webhook", "url": rcv.URL + "/hook",
		"headers": map[string]string{"X-Api-Key": "k-identity"}})
	pb := env.createEndpoint(map[string]any{"partner_id": partner, "name": "pb", "kind": "postback", "method": "GET",
		"url": rcv.URL + "/pb?cid={click_id}&p={payout}&n={attempt}&ts={timestamp}&e={event_id}&t={event_type}"})

	w, err := worker.New(worker.Config{
		Pool:         env.pool,
		SecretKey:    testKey(1), // the web server's
		Guard:        ssrf.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}),
		UserAgent:    "hookline/test", // the web server's Version is "test"
		PollInterval: 50 * time.Millisecond,
		Now:          clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	}()

	const typ = "conversion.approved"
	id := env.postEvent(typ, map[string]any{"click_id": "clk 1&x", "payout": 12.5})
	delivered := map[string]string{}
	for range 2 {
		d := next("the worker's deliveries")
		delivered[strings.Fields(d)[1][:3]] = d // "/ho" or "/pb"
	}
	var payload []byte
	if err := env.pool.QueryRow(context.Background(), `SELECT payload FROM events WHERE id = $1`, id).Scan(&payload); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		id   int64
		path string
	}{{"webhook", hook.ID, "/ho"}, {"postback", pb.ID, "/pb"}} {
		t.Run(c.name, func(t *testing.T) {
			cfg, keys, err := env.srv.savedTestFireConfig(context.Background(), c.id)
			if err != nil {
				t.Fatal(err)
			}
			req, err := testFireRequest(cfg, keys, request.Event{ID: id, Type: typ, Payload: payload, Attempt: 1}, at)
			if err != nil {
				t.Fatal(err)
			}
			if res := env.srv.send.Send(context.Background(), req.Request); res.ErrorClass != "" {
				t.Fatalf("test fire request: %s %s", res.ErrorClass, res.Error)
			}
			fired, want := next("the test fire"), delivered[c.path]
			if want == "" {
				t.Fatal("the worker sent nothing to this endpoint")
			}
			if fired != want {
				t.Fatalf("test fire sent\n%s\nthe worker sent\n%s", fired, want)
			}
			for _, must := range []string{"Webhook-Signature: v1,", "X-Api-Key: k-identity"} {
				if c.name == "webhook" && !strings.Contains(fired, must) {
					t.Errorf("request lacks %q:\n%s", must, fired)
				}
			}
		})
	}
}
