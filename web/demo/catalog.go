package demo

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/simulate"
)

// Event types of the stream, and the part of it each takes.
const (
	typeOrder      = "order.created"
	typeInvoice    = "invoice.paid"
	typeConversion = "conversion.approved"

	shareOrder      = 0.35
	shareInvoice    = 0.20
	shareConversion = 0.45
)

// SlowRamp is how long the slowing-down receiver takes to climb from
// 150 ms to 3.5 s: long enough to watch P95 cross the 2 s "slow" flag,
// short enough to see it within a first look at the dashboard.
const SlowRamp = 3 * time.Minute

// flakyTimeoutMs is the Flaky Affiliates endpoints' timeout: the receiver's
// hangs turn into timeouts in two seconds instead of the default fifteen.
const flakyTimeoutMs = 2000

// Names of the demo receivers. Each demo endpoint has its own receiver, so
// its traffic and state (tracker memory, rate limit) are its own, and Seed
// returns endpoint ids under the same names.
const (
	AcmeOrders       = "acme-orders"
	AcmeInvoices     = "acme-invoices"
	ClickwaveKeitaro = "clickwave-keitaro"
	ClickwaveVoluum  = "clickwave-voluum"
	LegacyCRM        = "legacycrm"
	PartnerAuth      = "partnerauth"
	BurstyAPI        = "burstyapi"
	FlakyBinom       = "flaky-binom"
	FlakyS2S         = "flaky-s2s"
)

// partnerSpec is one demo partner as POST /api/v1/partners takes it.
type partnerSpec struct {
	Name    string `json:"name"`
	Contact string `json:"contact"`
	Notes   string `json:"notes"`
}

// endpointSpec is one demo endpoint: its receiver, its configuration (the
// fields of POST /api/v1/endpoints; omitted ones take hookline's defaults)
// and the shape of its invented history.
type endpointSpec struct {
	key     string // receiver name and key of Seed's result
	partner string
	name    string
	kind    string // webhook | postback
	// preset is the postback.Presets id whose template the URL follows;
	// webhooks post to <receiver>/webhooks.
	preset              string
	eventTypes          []string
	headers             map[string]string
	maxAttempts         int
	timeoutMs           int
	failureThreshold    int
	successBodyContains string
	history             profile
}

func demoPartners(rate float64) []partnerSpec {
	return []partnerSpec{
		{"Acme Shop", "integrations@acme-shop.example",
			"Demo partner. orders answers in tens of milliseconds; invoices starts at 150 ms and slows to 3.5 s " +
				"over three minutes: watch its P95 climb past the 2 s slow flag long before anything fails."},
		{"Clickwave Media", "tracking@clickwave.example",
			"Demo affiliate network with Keitaro- and Voluum-style trackers that answer OK. A conversion posted " +
				"twice (same click id and transaction id) gets 200 \"duplicate\": hookline records it as rejected " +
				"by the tracker, and it needs no replay."},
		{"LegacyCRM", "ops@legacycrm.example",
			"Demo partner whose service answers 500 to everything: after 10 consecutive failures its breaker " +
				"opens, its deliveries wait in the queue without using attempts, and one probe goes out per cooldown."},
		{"PartnerAuth", "api@partnerauth.example",
			"Demo partner that rotated its API token: every request gets 401 invalid_token, and its breaker opens. " +
				"Its dead letters are diagnosed as changed credentials. To fix it, set the endpoint's Authorization " +
				"header to \"Bearer " + PartnerAuthToken + "\", force-close the breaker, and replay the 401 cluster."},
		{"BurstyAPI", "platform@burstyapi.example",
			fmt.Sprintf("Demo partner that accepts about %g requests per second and answers 429 with Retry-After: 5 "+
				"beyond that. Its endpoint has no rate limit, so flash sales trip the quota; hookline pauses it "+
				"and retries. Setting rate_per_sec under the quota stops the 429s.", burstyRate(rate))},
		{"Flaky Affiliates", "support@flaky-affiliates.example",
			"Demo partner whose tracker fails about 5 % of requests (503, or no answer within 2 s). binom " +
				"retries up to 3 times and loses nothing; s2s has max_attempts 1, so every blip is a dead letter: " +
				"replay them and they go through, then raise its max_attempts."},
	}
}

func demoEndpoints() []endpointSpec {
	conv := []string{typeConversion}
	return []endpointSpec{
		{key: AcmeOrders, partner: "Acme Shop", name: "orders", kind: "webhook",
			eventTypes: []string{typeOrder}, history: ordersHistory},
		{key: AcmeInvoices, partner: "Acme Shop", name: "invoices", kind: "webhook",
			eventTypes: []string{typeInvoice}, history: invoicesHistory},
		{key: ClickwaveKeitaro, partner: "Clickwave Media", name: "keitaro", kind: "postback", preset: "keitaro",
			eventTypes: conv, successBodyContains: "OK", history: trackerHistory},
		{key: ClickwaveVoluum, partner: "Clickwave Media", name: "voluum", kind: "postback", preset: "voluum",
			eventTypes: conv, successBodyContains: "OK", history: trackerHistory},
		{key: LegacyCRM, partner: "LegacyCRM", name: "crm-sync", kind: "webhook",
			eventTypes: []string{typeOrder}, maxAttempts: 2, failureThreshold: 10, history: legacyHistory},
		{key: PartnerAuth, partner: "PartnerAuth", name: "billing", kind: "webhook",
			eventTypes: []string{typeInvoice}, headers: map[string]string{"Authorization": "Bearer " + partnerAuthRevokedToken},
			history: authHistory},
		// No rate_per_sec on purpose: the 429s are the lesson.
		{key: BurstyAPI, partner: "BurstyAPI", name: "events", kind: "webhook",
			eventTypes: []string{typeOrder}, history: burstyHistory},
		{key: FlakyBinom, partner: "Flaky Affiliates", name: "binom", kind: "postback", preset: "binom",
			eventTypes: conv, maxAttempts: 3, timeoutMs: flakyTimeoutMs, history: flakyHistory},
		// max_attempts 1: each failure is a dead letter at once, so the
		// dead-letter page has a cluster whose replay succeeds within seconds.
		{key: FlakyS2S, partner: "Flaky Affiliates", name: "s2s", kind: "postback", preset: "custom",
			eventTypes: conv, maxAttempts: 1, timeoutMs: flakyTimeoutMs, history: flakyHistory},
	}
}

// burstyRate is what BurstyAPI accepts per second: above its steady share
// of orders, so it copes with normal traffic and drains after a flash sale,
// but far below a flash sale's burst.
func burstyRate(rate float64) float64 { return rate / 2 }

// Receivers returns the simulated partners the demo endpoints point at,
// sized for a stream of rate events per second (DefaultRate when not
// positive). Start them with simulate.Start and pass the server to Seed.
func Receivers(rate float64) []simulate.Behavior {
	if !(rate > 0) {
		rate = DefaultRate
	}
	named := func(b simulate.Behavior, name string) simulate.Behavior {
		b.Name = name
		return b
	}
	return []simulate.Behavior{
		named(simulate.Fast(), AcmeOrders),
		named(simulate.SlowingDown(SlowRamp), AcmeInvoices),
		named(simulate.PostbackTracker(), ClickwaveKeitaro),
		named(simulate.PostbackTracker(), ClickwaveVoluum),
		named(simulate.Failing500(), LegacyCRM),
		partnerAuth(),
		named(simulate.RateLimited(burstyRate(rate)), BurstyAPI),
		named(simulate.Flaky(), FlakyBinom),
		named(simulate.Flaky(), FlakyS2S),
	}
}

// PartnerAuth's tokens: the endpoint is seeded with the revoked one; the
// receiver accepts the current one, which the partner's notes tell.
const (
	PartnerAuthToken        = "pa_live_7d41c0ffee_current"
	partnerAuthRevokedToken = "pa_live_2f9cdead_revoked"
)

// partnerAuth answers 401 like simulate.Unauthorized, except to requests
// that carry the partner's current token, so fixing the endpoint's header
// and replaying its dead letters works.
func partnerAuth() simulate.Behavior {
	b := simulate.Unauthorized()
	b.Name = PartnerAuth
	refuse := b.Respond
	b.Respond = func(elapsed time.Duration, rnd *rand.Rand, r *http.Request) (int, http.Header, string) {
		if r.Header.Get("Authorization") != "Bearer "+PartnerAuthToken {
			return refuse(elapsed, rnd, r)
		}
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		return http.StatusOK, h, `{"received":true}`
	}
	return b
}

// endpointURL is where an endpoint delivers: its receiver's base URL, with
// the tracker preset's path and macros for postbacks.
func endpointURL(e endpointSpec, receiver string) (string, error) {
	if e.kind != "postback" {
		return receiver + "webhooks", nil
	}
	p, ok := postback.PresetByID(e.preset)
	if !ok {
		return "", fmt.Errorf("demo: no postback preset %q", e.preset)
	}
	// Presets point at a placeholder host; keep their path and query.
	rest := p.Template
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		rest = rest[i:]
	} else {
		rest = ""
	}
	rest = strings.TrimPrefix(strings.ReplaceAll(rest, "POSTBACK-KEY", "demo-postback-key"), "/")
	return receiver + rest, nil
}
