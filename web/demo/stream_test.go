package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestGenerator(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const n = 20000
	g := newGenerator(1, "run1")
	events := g.mix(n, now)
	if len(events) != n {
		t.Fatalf("%d events, want %d", len(events), n)
	}

	counts := map[string]int{}
	keys := map[string]bool{}
	type conv struct {
		ClickID       string      `json:"click_id"`
		TransactionID string      `json:"transaction_id"`
		Status        string      `json:"status"`
		Payout        json.Number `json:"payout"`
		Currency      string      `json:"currency"`
	}
	seen := map[conv]bool{}
	repeats := 0
	for _, e := range events {
		counts[e.Type]++
		if keys[e.IdempotencyKey] {
			t.Fatalf("idempotency key %q used twice", e.IdempotencyKey)
		}
		keys[e.IdempotencyKey] = true
		if !strings.HasPrefix(e.IdempotencyKey, "demo-run1-") {
			t.Errorf("key %q does not carry the run", e.IdempotencyKey)
		}
		var p map[string]any
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatalf("%s payload %s: %v", e.Type, e.Payload, err)
		}
		if e.Type != typeConversion {
			continue
		}
		var c conv
		if err := json.Unmarshal(e.Payload, &c); err != nil {
			t.Fatal(err)
		}
		if c.ClickID == "" || c.TransactionID == "" || (c.Status != "sale" && c.Status != "lead") || c.Currency == "" {
			t.Fatalf("conversion %s lacks a field the postbacks need", e.Payload)
		}
		// Trackers get the payout as written: two decimals.
		if s := c.Payout.String(); len(s) < 4 || s[len(s)-3] != '.' {
			t.Errorf("payout %q, want two decimals like 12.50", s)
		}
		if seen[c] {
			repeats++
		}
		seen[c] = true
	}

	for typ, share := range map[string]float64{typeConversion: shareConversion, typeOrder: shareOrder, typeInvoice: shareInvoice} {
		if got := float64(counts[typ]) / n; math.Abs(got-share) > 0.02 {
			t.Errorf("%s: %.3f of the stream, want %.2f", typ, got, share)
		}
	}
	if rate := float64(repeats) / float64(counts[typeConversion]); rate < 0.02 || rate > 0.04 {
		t.Errorf("%.3f of conversions repeat an earlier one, want about %.2f", rate, repeatConversion)
	}

	t.Run("deterministic for a seed", func(t *testing.T) {
		a, b := newGenerator(7, "r").mix(50, now), newGenerator(7, "r").mix(50, now)
		for i := range a {
			if a[i].Type != b[i].Type || !bytes.Equal(a[i].Payload, b[i].Payload) {
				t.Fatalf("event %d differs: %s vs %s", i, a[i].Payload, b[i].Payload)
			}
		}
	})
}

// syncBuffer is a log destination the stream goroutine and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testStreamer is a Stream with a fast cadence, logging JSON to buf.
func testStreamer(t *testing.T, api *fakeAPI, rate float64, buf *syncBuffer) *streamer {
	t.Helper()
	o := Options{BaseURL: api.URL, APIKey: api.key, Rate: rate, Seed: 3,
		Logger: slog.New(slog.NewJSONHandler(buf, nil))}.withDefaults()
	c, err := newClient(o)
	if err != nil {
		t.Fatal(err)
	}
	return &streamer{o: o, c: c, gen: newGenerator(o.Seed, "t"),
		tick: 50 * time.Millisecond, logEvery: 300 * time.Millisecond,
		flashFirst: 400 * time.Millisecond, flashEvery: time.Hour}
}

func runFor(t *testing.T, s *streamer, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(d + 10*time.Second):
		t.Fatal("the stream did not stop when its context ended")
		return nil
	}
}

// manualClock drives a streamer's pacing from the test: each step moves the
// clock and delivers one tick, which the stream has finished handling once
// the next tick is taken.
type manualClock struct {
	mu    sync.Mutex
	t     time.Time
	ticks chan time.Time
}

func newManualClock() *manualClock {
	return &manualClock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), ticks: make(chan time.Time)}
}

func (c *manualClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) step(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	now := c.t
	c.mu.Unlock()
	c.ticks <- now
}

func TestStream(t *testing.T) {
	api := newFakeAPI(t)
	var logs syncBuffer
	const rate = 100
	s := testStreamer(t, api, rate, &logs)
	clk := newManualClock()
	s.now, s.ticks = clk.now, clk.ticks
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	clk.step(0)    // taken once the stream has read its start time
	for range 15 { // 1.5 s of simulated time
		clk.step(100 * time.Millisecond)
	}
	clk.step(0) // taken only once the last batch was posted; owes nothing
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Stream returned %v when its context ended, want nil", err)
	}

	events := api.allEvents()
	flash := int(math.Ceil(rate * flashSaleSize))
	// 1.5 s at 100/s, and the one flash sale due within 0.4 to 0.6 s.
	if n := len(events); n != 150+flash {
		t.Errorf("%d events, want %d", n, 150+flash)
	}
	orders := 0
	for _, e := range events {
		if e["type"] == typeOrder {
			orders++
		}
	}
	if orders < flash {
		t.Errorf("%d orders, want at least the flash sale's %d", orders, flash)
	}
	for _, c := range api.called() {
		if c != "POST /api/v1/events/batch" {
			t.Errorf("unexpected call %s", c)
		}
	}

	t.Run("logs totals, never payloads", func(t *testing.T) {
		out := logs.String()
		if !strings.Contains(out, `"msg":"demo event stream"`) || !strings.Contains(out, `"msg":"demo event stream stopped"`) {
			t.Errorf("no periodic and final totals in the log:\n%s", out)
		}
		var last map[string]any
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			json.Unmarshal([]byte(line), &last)
		}
		if got, _ := last["accepted"].(float64); got != float64(len(events)) {
			t.Errorf("final accepted = %v, want %d", got, len(events))
		}
		for _, e := range events {
			p := obj(e["payload"])
			for _, field := range []string{"click_id", "transaction_id", "order_id", "invoice_id"} {
				if v, ok := p[field].(string); ok && strings.Contains(out, v) {
					t.Fatalf("the log contains a %s", field)
				}
			}
		}
	})
}

func TestStreamSurvivesAnUnavailableAPI(t *testing.T) {
	api := newFakeAPI(t)
	api.failNext, api.failStatus = 3, 503
	var logs syncBuffer
	s := testStreamer(t, api, 40, &logs)
	if err := runFor(t, s, time.Second); err != nil {
		t.Fatalf("Stream = %v, want it to carry on through 503s", err)
	}
	if len(api.allEvents()) == 0 {
		t.Fatal("no events got through after the API recovered")
	}
	out := logs.String()
	if n := strings.Count(out, "batch failed"); n != 1 {
		t.Errorf("%d warnings for one outage, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "accepts events again") || !strings.Contains(out, `"failed_batches":3`) {
		t.Errorf("recovery and failed batches not logged:\n%s", out)
	}
}

func TestStreamStopsOnAWrongKey(t *testing.T) {
	api := newFakeAPI(t)
	o := Options{BaseURL: api.URL, APIKey: "hk_wrong", Rate: 20}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := Stream(ctx, o)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Stream = %v, want a 401 error", err)
	}
	if ctx.Err() != nil {
		t.Error("Stream waited for its context instead of failing fast")
	}
}
