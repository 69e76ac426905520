package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/sender"
)

// conversionRules is fire_on "change" keyed on transaction_id, with the
// status field mapped by the preset's map.
func conversionRules() postback.Rules {
	return postback.Rules{ConversionKey: []string{"transaction_id"}, ConversionStatus: "status", FireOn: postback.FireChange}
}

func TestDecideConversion(t *testing.T) {
	t.Parallel()
	now := time.Now()
	older, _ := uuid.NewV7()
	time.Sleep(2 * time.Millisecond)
	ev, _ := uuid.NewV7()
	time.Sleep(2 * time.Millisecond)
	newer, _ := uuid.NewV7()
	s := func(v string) *string { return &v }
	id := func(v int64) *int64 { return &v }
	later, earlier := now.Add(time.Minute), now.Add(-time.Second)
	for _, tc := range []struct {
		name string
		st   db.ConversionLockRow
		want convDecision
	}{
		{"new conversion fires", db.ConversionLockRow{}, convFire},
		{"a changed status fires", db.ConversionLockRow{Status: s("lead"), NewestEventID: &older}, convFire},
		{"an unchanged status is suppressed", db.ConversionLockRow{Status: s("sale"), StatusEventID: &older, NewestEventID: &older}, convUnchanged},
		{"an older event than one fired is superseded", db.ConversionLockRow{Status: s("lead"), NewestEventID: &newer}, convSuperseded},
		{"another delivery sending waits", db.ConversionLockRow{SendingDeliveryID: id(9), SendingStatus: s("sale"), SendingUntil: &later}, convBusy},
		{"a lapsed reservation counts as not received", db.ConversionLockRow{Status: s("lead"), SendingDeliveryID: id(9), SendingUntil: &earlier, NewestEventID: &ev}, convFire},
		{"its own reservation (a crash mid-send) sends again", db.ConversionLockRow{SendingDeliveryID: id(1), SendingUntil: &later, NewestEventID: &newer}, convFire},
		{"a failed send's retry fires again", db.ConversionLockRow{Status: s("lead"), NewestEventID: &ev}, convFire},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, reason := decideConversion(tc.st, 1, ev, "sale", now); got != tc.want {
				t.Errorf("decision %d (%s), want %d", got, reason, tc.want)
			}
		})
	}
}

// BenchmarkDecideConversion is the decision's own cost, without the
// database (see BenchmarkConversionGate for the transaction's).
func BenchmarkDecideConversion(b *testing.B) {
	ev, _ := uuid.NewV7()
	st := "lead"
	row := db.ConversionLockRow{Status: &st, NewestEventID: &ev}
	for b.Loop() {
		decideConversion(row, 1, ev, "sale", time.Now())
	}
}

// statusSeq is what a tracker received for each conversion, in order.
type statusSeq struct {
	mu  sync.Mutex
	got map[string][]string
}

func (s *statusSeq) add(key, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.got == nil {
		s.got = map[string][]string{}
	}
	s.got[key] = append(s.got[key], status)
}

// TestConversionFiresOnChange: pending → approved → approved → rejected
// for one conversion sends Keitaro lead, sale, rejected; the repeated
// approval is recorded as suppressed with its reason, and the history
// holds every decision with its event and attempt. An endpoint without
// conversion rules sends all four, as before.
func TestConversionFiresOnChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	trackers := &fakeTrackers{}
	rcv.setHandler(trackers.handler)
	ep := e.presetEndpoint(rcv.URL, "keitaro", conversionRules())
	plain, _ := e.endpoint(endpointOpts{kind: "postback", url: newReceiver(t).URL + "/plain?s={status}"})
	e.run(e.worker(nil))
	var ids []uuid.UUID
	for i, status := range []string{"pending", "approved", "approved", "declined"} {
		ids = append(ids, e.events(1, "conversion", `{"click_id":"c1","transaction_id":"T1","payout":10,"currency":"EUR","status":"`+status+`"}`)...)
		e.waitFor("the event's deliveries", func() bool {
			return e.count("SELECT count(*) FROM deliveries WHERE status IN ('delivered', 'dead')") == 2*(i+1)
		})
	}
	trackers.mu.Lock()
	var got []string
	for _, q := range trackers.keitaro {
		got = append(got, q.Get("status"))
	}
	trackers.mu.Unlock()
	if !slices.Equal(got, []string{"lead", "sale", "rejected"}) {
		t.Errorf("Keitaro got %v, want lead, sale, rejected", got)
	}
	d := e.deliveryTo(ids[2], ep)
	if d.Status != "delivered" || deref(d.LastErrorClass) != classSuppressed || !strings.Contains(deref(d.LastError), `"sale" unchanged`) {
		t.Errorf("repeated approval: %s %s %q", d.Status, deref(d.LastErrorClass), deref(d.LastError))
	}
	if n := e.count("SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status = 'delivered' AND coalesce(last_error_class, '') = ''", plain); n != 4 {
		t.Errorf("the endpoint without conversion rules sent %d of 4", n)
	}
	if h := e.health(ep); h.ConsecutiveFailures != 0 {
		t.Errorf("%d breaker failures", h.ConsecutiveFailures)
	}
	rows, err := e.q.ConversionHistory(context.Background(), db.ConversionHistoryParams{EndpointID: ep, ConversionKey: "T1"})
	if err != nil {
		t.Fatal(err)
	}
	var hist []string
	for _, r := range rows {
		hist = append(hist, fmt.Sprintf("%s %s %s %d %v", r.ProducerStatus, r.Status, r.Outcome, r.AttemptNo, r.Rejection))
	}
	want := []string{"pending lead sent 1 false", "approved sale sent 1 false", "approved sale suppressed 1 false", "declined rejected sent 1 true"}
	if !slices.Equal(hist, want) {
		t.Errorf("history %v, want %v", hist, want)
	}
	var status, payout string
	if err := e.pool.QueryRow(context.Background(), "SELECT status, payout FROM conversions WHERE endpoint_id = $1", ep).Scan(&status, &payout); err != nil || status != "rejected" || payout != "10" {
		t.Errorf("state %q %q (%v)", status, payout, err)
	}
}

// TestConversionFailedSendIsNotReceived: a send the tracker does not
// accept leaves the conversion as it was; the retry fires it, and once
// accepted an unchanged status is suppressed.
func TestConversionFailedSendIsNotReceived(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	var fail atomic.Bool
	fail.Store(true)
	var sent atomic.Int64
	rcv.setHandler(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		sent.Add(1)
		w.WriteHeader(http.StatusOK)
	})
	b, _ := json.Marshal(conversionRules())
	clk := newClock()
	ep, _ := e.endpoint(endpointOpts{kind: "postback", url: rcv.URL + "/pb?tx={transaction_id}&s={status}", rules: string(b)})
	w := e.worker(func(c *Config) { c.Now = clk.Now; c.Rand = fixedRand(0) })
	e.run(w)
	first := e.events(1, "conversion", `{"transaction_id":"T9","status":"approved"}`)
	e.waitFor("a failed attempt", func() bool { return e.deliveryTo(first[0], ep).Status == "failed" })
	if n := e.count("SELECT count(*) FROM conversions WHERE status IS NOT NULL"); n != 0 {
		t.Fatalf("a status the tracker refused was recorded as received")
	}
	fail.Store(false)
	clk.Advance(time.Hour)
	w.Wake()
	e.waitFor("the retry delivered", func() bool { return e.deliveryTo(first[0], ep).Status == "delivered" })
	again := e.events(1, "conversion", `{"transaction_id":"T9","status":"approved"}`)
	e.waitFor("the repeat recorded", func() bool { return e.deliveryTo(again[0], ep).Status == "delivered" })
	if d := e.deliveryTo(again[0], ep); deref(d.LastErrorClass) != classSuppressed {
		t.Errorf("repeat after an accepted retry: %s", deref(d.LastErrorClass))
	}
	if sent.Load() != 1 {
		t.Errorf("the tracker accepted %d, want 1", sent.Load())
	}
}

// TestConversionGateRace: many deliveries of one conversion decided at
// once by two workers (two processes' worth of state: separate in-process
// locks, one database) give exactly one send per real change.
func TestConversionGateRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := conversionRules()
	b, _ := json.Marshal(r)
	ep, _ := e.endpoint(endpointOpts{kind: "postback", url: "http://127.0.0.1:9/pb?s={status}", rules: string(b)})
	workers := []*Worker{e.worker(nil), e.worker(nil)}
	rules, _ := postback.ParseRules(b)
	var fired atomic.Int64
	var next atomic.Int64
	wave := func(status string) {
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				w := workers[i%2]
				ev, _ := uuid.NewV7()
				d := claimed{ID: next.Add(1), EventID: ev, EndpointID: ep, TimeoutMs: 1000,
					Payload: []byte(`{"transaction_id":"race","status":"` + status + `"}`)}
				for {
					s, res, done := w.dispatch.conversionGate(context.Background(), &d, rules, time.Now())
					if !done {
						fired.Add(1)
						time.Sleep(time.Millisecond) // the send
						w.dispatch.conversionSettle(s, sender.Result{Outcome: sender.OK})
						return
					}
					if res.ErrorClass != classConversionBusy {
						return
					}
					time.Sleep(time.Millisecond) // the backoff
				}
			})
		}
		wg.Wait()
	}
	for i, status := range []string{"pending", "approved", "approved", "declined"} {
		wave(status)
		want := []int64{1, 2, 2, 3}[i]
		if fired.Load() != want {
			t.Fatalf("after %s: %d sends, want %d", status, fired.Load(), want)
		}
	}
}

// BenchmarkConversionGate is what conversion state costs one delivery of
// an endpoint with fire_on "change": its decision and reservation (one
// transaction before the send) and its settlement (one after), on a real
// database. "fire" is a new status each time; "suppress" an unchanged one,
// which costs the decision's transaction alone.
func BenchmarkConversionGate(b *testing.B) {
	pool := dbtest.Pool(b)
	q := db.New(pool)
	ctx := context.Background()
	p, err := q.PartnerCreate(ctx, db.PartnerCreateParams{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	r := conversionRules()
	raw, _ := json.Marshal(r)
	rules, _ := postback.ParseRules(raw)
	ep, err := q.EndpointCreate(ctx, db.EndpointCreateParams{PartnerID: p.ID, Name: "bench", Kind: "postback", URL: "http://127.0.0.1:9/pb",
		Method: "GET", EventTypes: []string{}, Headers: json.RawMessage(`{}`), MaxAttempts: 5, TimeoutMs: 1000, MaxInFlight: 8, FailureThreshold: 10, Enabled: true})
	if err != nil {
		b.Fatal(err)
	}
	w, err := New(Config{Pool: pool, SecretKey: masterKey, Guard: loopbackGuard()})
	if err != nil {
		b.Fatal(err)
	}
	var id int64
	delivery := func(tx, status string) claimed {
		id++
		ev, _ := uuid.NewV7()
		return claimed{ID: id, EventID: ev, EndpointID: ep.ID, TimeoutMs: 1000,
			Payload: []byte(`{"transaction_id":"` + tx + `","status":"` + status + `","payout":"1.50"}`)}
	}
	b.Run("fire", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			d := delivery(fmt.Sprint("f-", i), "approved")
			s, _, done := w.dispatch.conversionGate(ctx, &d, rules, time.Now())
			if done {
				b.Fatal("not fired")
			}
			w.dispatch.conversionSettle(s, sender.Result{Outcome: sender.OK})
		}
	})
	b.Run("suppress", func(b *testing.B) {
		d := delivery("same", "approved")
		s, _, _ := w.dispatch.conversionGate(ctx, &d, rules, time.Now())
		w.dispatch.conversionSettle(s, sender.Result{Outcome: sender.OK})
		for b.Loop() {
			d := delivery("same", "approved")
			if _, res, done := w.dispatch.conversionGate(ctx, &d, rules, time.Now()); !done || res.ErrorClass != classSuppressed {
				b.Fatal("not suppressed")
			}
		}
	})
}
