package worker

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/signing"
)

// fakeTrackers parses postbacks the way Keitaro and Affise document them
// and records what each understood: Keitaro's statuses are the words lead,
// sale, rejected (and rebill), in status, with subid and payout; Affise's
// are the codes 1 approved, 2 pending, 3 declined, 5 hold, in status, with
// clickid and sum. Anything else is answered 400, as a tracker that drops
// the postback.
type fakeTrackers struct {
	mu      sync.Mutex
	keitaro []url.Values
	affise  []url.Values
}

func (f *fakeTrackers) handler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/KEY/postback"):
		if q.Get("subid") == "" || !slices.Contains([]string{"lead", "sale", "rejected", "rebill"}, q.Get("status")) {
			http.Error(w, "bad status", http.StatusBadRequest)
			return
		}
		f.keitaro = append(f.keitaro, q)
		_, _ = w.Write([]byte(q.Get("return")))
	case r.URL.Path == "/postback":
		if q.Get("clickid") == "" || !slices.Contains([]string{"1", "2", "3", "5"}, q.Get("status")) {
			http.Error(w, "bad status", http.StatusBadRequest)
			return
		}
		f.affise = append(f.affise, q)
	default:
		http.NotFound(w, r)
	}
}

// presetEndpoint makes an endpoint from a preset, its host replaced by the
// receiver's, with the preset's value maps and extra rules.
func (e *env) presetEndpoint(rcvURL, id string, rules postback.Rules) int64 {
	e.t.Helper()
	p, _ := postback.PresetByID(id)
	rules.ValueMaps = p.ValueMaps
	b, _ := json.Marshal(rules)
	tmpl := strings.Replace(p.Template, "https://YOUR-DOMAIN.example/POSTBACK-KEY", rcvURL+"/KEY", 1)
	tmpl = strings.Replace(tmpl, "https://YOUR-DOMAIN.example", rcvURL, 1)
	ep, _ := e.endpoint(endpointOpts{kind: "postback", url: tmpl, successBodyContains: p.SuccessBodyContains, rules: string(b)})
	return ep
}

// TestPostbackValueMapsReachTrackers: the producer says approved, pending
// and declined; Keitaro gets sale, lead and rejected, Affise 1, 2 and 3
// with a 70 % payout share, each parsed as the tracker documents it.
func TestPostbackValueMapsReachTrackers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	trackers := &fakeTrackers{}
	rcv.setHandler(trackers.handler)
	e.presetEndpoint(rcv.URL, "keitaro", postback.Rules{Unmapped: postback.UnmappedFail})
	e.presetEndpoint(rcv.URL, "affise", postback.Rules{PayoutShareBP: 7000})
	for _, status := range []string{"approved", "pending", "declined"} {
		e.events(1, "conversion", `{"click_id":"c-`+status+`","transaction_id":"T-`+status+`","payout":12.5,"status":"`+status+`"}`)
	}
	e.run(e.worker(nil))
	e.waitFor("six deliveries", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE status IN ('delivered', 'dead')") == 6
	})
	if n := e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'"); n != 6 {
		t.Fatalf("%d of 6 delivered: %s", n, e.deliveryStates())
	}
	trackers.mu.Lock()
	defer trackers.mu.Unlock()
	got := map[string]string{}
	for _, q := range trackers.keitaro {
		got["keitaro "+q.Get("subid")] = q.Get("status") + " " + q.Get("payout")
	}
	for _, q := range trackers.affise {
		got["affise "+q.Get("clickid")] = q.Get("status") + " " + q.Get("sum")
	}
	want := map[string]string{
		"keitaro c-approved": "sale 12.5", "keitaro c-pending": "lead 12.5", "keitaro c-declined": "rejected 12.5",
		"affise c-approved": "1 8.75", "affise c-pending": "2 8.75", "affise c-declined": "3 8.75",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: the tracker got %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// TestPostbackUnmappedValues: under skip nothing is sent and the delivery
// is finished as delivered with class unmapped_value (the event log shows
// it as skipped); under fail it is dead with that class; neither counts
// against the endpoint's breaker; an endpoint without rules sends the same
// event exactly as before.
func TestPostbackUnmappedValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rules := func(policy string) string {
		return `{"value_maps":{"status":{"approved":"sale"}},"unmapped":"` + policy + `"}`
	}
	skip, _ := e.endpoint(endpointOpts{kind: "postback", url: rcv.URL + "/skip?s={status}", rules: rules("skip")})
	fail, _ := e.endpoint(endpointOpts{kind: "postback", url: rcv.URL + "/fail?s={status}", rules: rules("fail")})
	plain, _ := e.endpoint(endpointOpts{kind: "postback", url: rcv.URL + "/plain?s={status}&d={sub2|}"})
	ids := e.events(1, "conversion", `{"status":"chargeback"}`)
	e.run(e.worker(nil))
	e.waitFor("three results", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE status IN ('delivered', 'dead')") == 3
	})
	if d := e.deliveryTo(ids[0], skip); d.Status != "delivered" || deref(d.LastErrorClass) != classUnmapped || !strings.Contains(deref(d.LastError), `"chargeback"`) {
		t.Errorf("skip: %s %v %v", d.Status, deref(d.LastErrorClass), deref(d.LastError))
	}
	if d := e.deliveryTo(ids[0], fail); d.Status != "dead" || deref(d.LastErrorClass) != classUnmapped {
		t.Errorf("fail: %s %v", d.Status, deref(d.LastErrorClass))
	}
	if d := e.deliveryTo(ids[0], plain); d.Status != "delivered" || d.LastErrorClass != nil {
		t.Errorf("plain: %s %v", d.Status, deref(d.LastErrorClass))
	}
	var urls []string
	for _, r := range rcv.all() {
		urls = append(urls, r.URL)
	}
	if !slices.Equal(urls, []string{"/plain?s=chargeback&d="}) {
		t.Errorf("sent %v, want only the plain endpoint's", urls)
	}
	for _, id := range []int64{skip, fail} {
		if h := e.health(id); h.ConsecutiveFailures != 0 {
			t.Errorf("endpoint %d: %d breaker failures from values never sent", id, h.ConsecutiveFailures)
		}
	}
	if n := e.count("SELECT count(*) FROM delivery_attempts WHERE error_class = 'unmapped_value' AND outcome = 'ok'"); n != 1 {
		t.Errorf("%d skipped attempts recorded, want 1", n)
	}
}

// TestDeliversPostPostbacks: a JSON body postback signed with Standard
// Webhooks headers over its exact bytes, and a form body postback, reach
// the tracker with the same macros, maps and share as a URL would carry.
func TestDeliversPostPostbacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rules := `{"value_maps":{"status":{"approved":"sale"}},"payout_share_bp":5000}`
	_, secret := e.endpoint(endpointOpts{kind: "postback", method: "POST", url: rcv.URL + "/json?cid={click_id}", rules: rules,
		bodyTemplate: `{"cid": "{click_id}", "status": "{status}", "payout": {payout}, "geo": "{user.country|XX}"}`, bodyFormat: "json", bodySignature: "webhook"})
	e.endpoint(endpointOpts{kind: "postback", method: "POST", url: rcv.URL + "/form", rules: rules,
		bodyTemplate: `cid={click_id}&status={status}&payout={payout}`, bodyFormat: "form"})
	e.events(1, "conversion", `{"click_id":"a \"b\"&c","status":"approved","payout":12.5}`)
	e.run(e.worker(nil))
	e.waitFor("two deliveries", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 2 })
	for _, r := range rcv.all() {
		if r.Method != http.MethodPost {
			t.Fatalf("%s sent with %s", r.URL, r.Method)
		}
		switch {
		case strings.HasPrefix(r.URL, "/json"):
			if r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("content type %q", r.Header.Get("Content-Type"))
			}
			var body map[string]any
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatalf("JSON body %s: %v", r.Body, err)
			}
			if body["cid"] != `a "b"&c` || body["status"] != "sale" || body["payout"] != 6.25 || body["geo"] != "XX" {
				t.Errorf("JSON body %s", r.Body)
			}
			key, _ := signing.ParseSecret(secret)
			if err := signing.Verify(key, r.Header, r.Body, time.Now(), time.Hour); err != nil {
				t.Errorf("body signature: %v", err)
			}
		case r.URL == "/form":
			q, err := url.ParseQuery(string(r.Body))
			if err != nil || q.Get("cid") != `a "b"&c` || q.Get("status") != "sale" || q.Get("payout") != "6.25" ||
				r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
				t.Errorf("form body %s (%v), content type %q", r.Body, err, r.Header.Get("Content-Type"))
			}
		default:
			t.Errorf("unexpected request %s", r.URL)
		}
	}
}
