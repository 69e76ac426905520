package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Stream cadence and shape.
const (
	streamTick = 500 * time.Millisecond
	// maxBatch keeps one request well under hookline's default body limit
	// (256 KiB) with payloads of a few hundred bytes.
	maxBatch = 500
	// maxCatchUp bounds the events owed after a stall (the API was down):
	// the stream stays steady instead of flooding on recovery.
	maxCatchUp = 2 * time.Second
	// A flash sale every minute or so adds a burst of orders: enough to trip
	// BurstyAPI's quota, which steady traffic stays under.
	flashSaleEvery = 45 * time.Second // plus up to as much again, at random
	flashSaleFirst = 10 * time.Second // plus up to half as much again
	flashSaleSize  = 4                // seconds' worth of the stream
	// repeatConversion is the part of conversions posted a second time
	// (same click and transaction id, new idempotency key), which trackers
	// answer with "duplicate".
	repeatConversion = 0.03
	recentKept       = 256
)

// eventInput is one event of POST /api/v1/events/batch (EventInput in
// web/openapi.json).
type eventInput struct {
	Type           string          `json:"type"`
	Payload        json.RawMessage `json:"payload"`
	IdempotencyKey string          `json:"idempotency_key"`
}

// batchResult is the answer of POST /api/v1/events/batch.
type batchResult struct {
	Accepted  int `json:"accepted"`
	Duplicate int `json:"duplicate"`
	Rejected  int `json:"rejected"`
	Results   []struct {
		Status string `json:"status"`
		Error  *struct {
			Code, Message, Field string
		} `json:"error"`
	} `json:"results"`
}

// Stream posts events until ctx ends, then returns nil: order.created and
// invoice.paid for the webhooks, conversion.approved (click_id,
// transaction_id, status "sale" or "lead", payout, currency) for the
// postbacks, at Options.Rate per second in batches through
// POST /api/v1/events/batch, each with an idempotency key. About 3 % of
// conversions are posted again under a new key, which the trackers answer
// with "duplicate", and every minute or so a flash sale adds a burst of
// orders on top of the rate.
//
// It logs a line a minute with totals, never payloads or click ids. An
// unreachable or failing hookline is logged and retried on the next tick;
// an answer that no retry can fix (401, 403, 404, 400, 413, 422) ends the
// stream with an error.
func Stream(ctx context.Context, o Options) error {
	o = o.withDefaults()
	c, err := newClient(o)
	if err != nil {
		return err
	}
	s := &streamer{
		o:          o,
		c:          c,
		gen:        newGenerator(o.Seed, strconv.FormatInt(time.Now().UnixMilli(), 36)),
		tick:       streamTick,
		logEvery:   time.Minute,
		flashFirst: flashSaleFirst,
		flashEvery: flashSaleEvery,
	}
	return s.run(ctx)
}

// streamer is one running Stream.
type streamer struct {
	o   Options
	c   *client
	gen *generator
	// Cadence: a batch per tick, totals every logEvery, the first flash
	// sale after flashFirst (plus up to half as much again) and then every
	// flashEvery (plus up to as much again).
	tick, logEvery, flashFirst, flashEvery time.Duration
	// now and ticks pace the stream: the wall clock and a ticker every
	// tick unless a test drives them.
	now   func() time.Time
	ticks <-chan time.Time

	// Totals since the start, for the log.
	sent, accepted, duplicate, rejected, failedBatches int64
	failing                                            bool // the last batch failed
}

func (s *streamer) run(ctx context.Context) error {
	if s.now == nil {
		s.now = time.Now
	}
	if s.ticks == nil {
		tick := time.NewTicker(s.tick)
		defer tick.Stop()
		s.ticks = tick.C
	}
	start := s.now()
	s.o.Logger.Info("demo event stream started", "per_second", s.o.Rate)
	last, nextLog := start, start.Add(s.logEvery)
	nextFlash := start.Add(s.flashFirst + s.gen.jitter(s.flashFirst/2))
	owed := 0.0
	for {
		select {
		case <-ctx.Done():
			s.logTotals("demo event stream stopped", s.now().Sub(start))
			return nil
		case <-s.ticks:
		}
		now := s.now()
		owed = math.Min(owed+s.o.Rate*now.Sub(last).Seconds(), s.o.Rate*maxCatchUp.Seconds())
		last = now
		// Totals first: a slow post must not hold back the minute's line.
		if !now.Before(nextLog) {
			s.logTotals("demo event stream", s.now().Sub(start))
			nextLog = nextLog.Add(s.logEvery)
		}
		n := int(owed)
		owed -= float64(n)
		events := s.gen.mix(n, s.o.Now())
		if !now.Before(nextFlash) {
			events = append(events, s.gen.orders(int(math.Ceil(s.o.Rate*flashSaleSize)), s.o.Now())...)
			nextFlash = now.Add(s.flashEvery + s.gen.jitter(s.flashEvery))
		}
		for len(events) > 0 {
			chunk := events[:min(len(events), maxBatch)]
			events = events[len(chunk):]
			if err := s.post(ctx, chunk); err != nil {
				if ctx.Err() != nil {
					s.logTotals("demo event stream stopped", s.now().Sub(start))
					return nil
				}
				return err
			}
		}
	}
}

// post sends one batch. Only errors that retrying cannot fix, and the end
// of ctx, are returned; the rest are counted and logged once until a batch
// goes through again.
func (s *streamer) post(ctx context.Context, events []eventInput) error {
	var res batchResult
	err := s.c.call(ctx, http.MethodPost, "/api/v1/events/batch", map[string]any{"events": events}, &res)
	switch code := statusOf(err); {
	case err == nil:
	case code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusNotFound ||
		code == http.StatusBadRequest || code == http.StatusRequestEntityTooLarge || code == http.StatusUnprocessableEntity:
		return fmt.Errorf("demo: post events: %w", err)
	case ctx.Err() != nil:
		return ctx.Err() // stopping: the batch was not refused
	default:
		s.failedBatches++
		if !s.failing {
			s.o.Logger.Warn("demo event stream: batch failed; retrying on the next tick", "events", len(events), "err", err)
		}
		s.failing = true
		return nil
	}
	if s.failing {
		s.o.Logger.Info("demo event stream: hookline accepts events again")
		s.failing = false
	}
	s.sent += int64(len(events))
	s.accepted += int64(res.Accepted)
	s.duplicate += int64(res.Duplicate)
	s.rejected += int64(res.Rejected)
	if res.Rejected > 0 {
		for _, r := range res.Results {
			if r.Status == "rejected" && r.Error != nil {
				// The error names a field, never its value.
				s.o.Logger.Warn("demo event stream: events rejected", "count", res.Rejected,
					"code", r.Error.Code, "field", r.Error.Field, "message", r.Error.Message)
				break
			}
		}
	}
	return nil
}

func (s *streamer) logTotals(msg string, running time.Duration) {
	perSecond := 0.0
	if running > 0 {
		perSecond = float64(s.sent) / running.Seconds()
	}
	s.o.Logger.Info(msg,
		slog.Int64("events", s.sent), slog.Int64("accepted", s.accepted), slog.Int64("duplicate", s.duplicate),
		slog.Int64("rejected", s.rejected), slog.Int64("failed_batches", s.failedBatches),
		slog.String("per_second", strconv.FormatFloat(perSecond, 'f', 1, 64)),
		slog.Duration("running", running.Round(time.Second)))
}

// generator invents the stream's events. It is deterministic for a seed,
// except for run, which keeps idempotency keys unique across runs (hookline
// would answer a key from an earlier run as a duplicate).
type generator struct {
	rnd *rand.Rand
	run string
	seq int64
	// recent holds the last conversions, the ones that get posted twice.
	recent []conversion
	next   int
}

type conversion struct {
	ClickID       string      `json:"click_id"`
	TransactionID string      `json:"transaction_id"`
	Status        string      `json:"status"`
	Payout        json.Number `json:"payout"` // "12.50": trackers get two decimals
	Currency      string      `json:"currency"`
	OfferID       int         `json:"offer_id"`
}

func newGenerator(seed uint64, run string) *generator {
	return &generator{rnd: rand.New(rand.NewPCG(seed, 0xde70)), run: run}
}

func (g *generator) jitter(upTo time.Duration) time.Duration {
	return time.Duration(g.rnd.Int64N(int64(upTo) + 1))
}

// mix returns n events of the stream's types in their shares.
func (g *generator) mix(n int, now time.Time) []eventInput {
	out := make([]eventInput, 0, n)
	for range n {
		switch x := g.rnd.Float64(); {
		case x < shareConversion:
			out = append(out, g.conversion())
		case x < shareConversion+shareOrder:
			out = append(out, g.order(now))
		default:
			out = append(out, g.invoice(now))
		}
	}
	return out
}

// orders returns n order.created events (a flash sale).
func (g *generator) orders(n int, now time.Time) []eventInput {
	out := make([]eventInput, 0, n)
	for range n {
		out = append(out, g.order(now))
	}
	return out
}

func (g *generator) event(typ string, payload any) eventInput {
	g.seq++
	b, err := json.Marshal(payload)
	if err != nil {
		panic("demo: payload does not encode: " + err.Error()) // the payload types are fixed above
	}
	return eventInput{Type: typ, Payload: b, IdempotencyKey: fmt.Sprintf("demo-%s-%d", g.run, g.seq)}
}

var currencies = []string{"USD", "EUR", "GBP", "BRL"}

func (g *generator) money(lo, hi float64) json.Number {
	return json.Number(strconv.FormatFloat(lo+g.rnd.Float64()*(hi-lo), 'f', 2, 64))
}

// Alike in shape to invoice on purpose: each event type's payload reads whole where it is made.
func (g *generator) order(now time.Time) eventInput {
	return g.event(typeOrder, map[string]any{
		"order_id":    fmt.Sprintf("ord_%s_%d", g.run, g.seq+1),
		"customer_id": fmt.Sprintf("cus_%04d", g.rnd.IntN(5000)),
		"total":       g.money(9, 480),
		"currency":    currencies[g.rnd.IntN(len(currencies))],
		"items":       1 + g.rnd.IntN(6),
		"created_at":  now.UTC().Format(time.RFC3339),
	})
}

func (g *generator) invoice(now time.Time) eventInput {
	return g.event(typeInvoice, map[string]any{
		"invoice_id":  fmt.Sprintf("in_%s_%d", g.run, g.seq+1),
		"customer_id": fmt.Sprintf("cus_%04d", g.rnd.IntN(5000)),
		"amount_paid": g.money(19, 990),
		"currency":    currencies[g.rnd.IntN(len(currencies))],
		"paid_at":     now.UTC().Format(time.RFC3339),
	})
}

func (g *generator) conversion() eventInput {
	if len(g.recent) > 0 && g.rnd.Float64() < repeatConversion {
		return g.event(typeConversion, g.recent[g.rnd.IntN(len(g.recent))])
	}
	c := conversion{
		ClickID:       fmt.Sprintf("%016x", g.rnd.Uint64()),
		TransactionID: fmt.Sprintf("tx_%s_%d", g.run, g.seq+1),
		Status:        "sale",
		Payout:        json.Number([]string{"12.50", "25.00", "7.80", "40.00", "3.20"}[g.rnd.IntN(5)]),
		Currency:      currencies[g.rnd.IntN(2)],
		OfferID:       100 + g.rnd.IntN(12),
	}
	if g.rnd.Float64() < 0.3 {
		c.Status, c.Payout = "lead", g.money(0.5, 2.5)
	}
	if len(g.recent) < recentKept {
		g.recent = append(g.recent, c)
	} else {
		g.recent[g.next] = c
		g.next = (g.next + 1) % recentKept
	}
	return g.event(typeConversion, c)
}
