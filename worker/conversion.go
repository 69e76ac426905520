package worker

// Conversions with state: a postback endpoint whose rules say fire_on
// "change" sends an event only when its conversion's mapped status differs
// from the one the tracker last accepted. See worker/architecture.md,
// "Conversions", for the rules and why the decision is taken here.

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/sender"
)

// Error classes of conversion endpoints.
const (
	// classSuppressed: the conversion's status was unchanged, or a newer
	// event had already fired; recorded delivered without a send, the
	// error saying why (the event log shows it as suppressed).
	classSuppressed = "suppressed"
	// classConversionBusy: another process was sending the same
	// conversion; nothing sent, tried again after the backoff.
	classConversionBusy = "conversion_busy"
	// classConversionState: the conversion's state could not be read or
	// written (the database); nothing sent, tried again.
	classConversionState = "conversion_state"
)

// convDecision is what one event does to its conversion.
type convDecision int

const (
	convFire       convDecision = iota // send it: the status changed
	convUnchanged                      // suppress: the tracker already has this status
	convSuperseded                     // suppress: a newer event already fired
	convBusy                           // wait: another delivery is sending this conversion
)

var convOutcome = map[convDecision]string{convUnchanged: "suppressed", convSuperseded: "superseded", convBusy: "busy"}

// decideConversion is the rule, pure: st is the conversion's state, read
// under its row lock; the delivery carries event eventID with the mapped
// status. Events are ordered by id (UUIDv7: the order they were accepted
// in), so a late older event never undoes a newer one, and a status is
// compared with what the tracker accepted, never with what was only
// tried.
func decideConversion(st db.ConversionLockRow, deliveryID int64, eventID uuid.UUID, status string, now time.Time) (convDecision, string) {
	if st.SendingDeliveryID != nil && *st.SendingDeliveryID != deliveryID {
		if st.SendingUntil != nil && st.SendingUntil.After(now) {
			return convBusy, fmt.Sprintf("delivery %d is sending %q for this conversion; tried again after it", *st.SendingDeliveryID, deref(st.SendingStatus))
		}
		// Its worker died mid-send: the reservation has lapsed and what
		// the tracker got is unknown, so it counts as not received.
	}
	if st.SendingDeliveryID == nil || *st.SendingDeliveryID != deliveryID {
		if st.NewestEventID != nil && bytes.Compare(eventID[:], st.NewestEventID[:]) < 0 {
			return convSuperseded, fmt.Sprintf("superseded: a newer event (%s) has already fired for this conversion", *st.NewestEventID)
		}
	}
	if st.Status != nil && *st.Status == status {
		from := ""
		if st.StatusEventID != nil {
			from = " from event " + st.StatusEventID.String()
		}
		return convUnchanged, fmt.Sprintf("status %q unchanged: the tracker already accepted it%s", status, from)
	}
	return convFire, ""
}

// convSend is a conversion a delivery is sending: the reservation it holds
// until conversionSettle.
type convSend struct {
	d       *claimed
	rules   *postback.Rules
	c       postback.Conversion
	partner int64
	unlock  func()
}

// decimal is what conversion_history.payout accepts.
var decimal = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// conversionGate decides whether d fires. It returns the reservation to
// settle after the send, or the result to record instead of sending (done).
// The decision and the reservation commit before any HTTP, under the
// conversion's row lock; within this process deliveries of one conversion
// also queue on an in-memory lock from here until their result is settled,
// so they wait for each other's send rather than meet a reservation.
func (dp *dispatcher) conversionGate(ctx context.Context, d *claimed, r *postback.Rules, now time.Time) (send *convSend, res sender.Result, done bool) {
	fields, err := postback.PayloadFields(d.Payload)
	if err != nil {
		return nil, failed(now, sender.Permanent, classMissingField, err.Error()), true
	}
	c, err := r.Conversion(postback.Values{EventID: d.EventID.String(), EventType: d.EventType, Payload: fields})
	if err != nil {
		return nil, failed(now, sender.Permanent, classMissingField, err.Error()), true
	}
	if c.Payout != "" && !decimal.MatchString(c.Payout) {
		c.Payout = "" // not a number: sent as it is, left out of the sums
	}
	unlock, err := dp.convLocks.lock(ctx, convRef{d.EndpointID, c.Key})
	if err != nil {
		return nil, sender.Result{ErrorClass: sender.ClassCanceled, Started: now}, true
	}
	s := &convSend{d: d, rules: r, c: c, unlock: unlock}
	var decision convDecision
	var reason string
	err = pgx.BeginFunc(ctx, dp.pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		st, err := q.ConversionLock(ctx, db.ConversionLockParams{EndpointID: d.EndpointID, ConversionKey: c.Key, Now: dp.dbNow(), KeepDays: int32(r.Days())})
		if err != nil {
			return fmt.Errorf("lock conversion: %w", err)
		}
		s.partner = st.PartnerID
		decision, reason = decideConversion(st, d.ID, d.EventID, c.Status, dp.now())
		if decision == convFire {
			until := dp.now().Add(time.Duration(d.TimeoutMs)*time.Millisecond + dp.cfg.LeaseMargin)
			return q.ConversionReserve(ctx, db.ConversionReserveParams{EndpointID: d.EndpointID, ConversionKey: c.Key,
				DeliveryID: d.ID, Status: c.Status, SendingUntil: until, EventID: d.EventID, Now: dp.dbNow(), KeepDays: int32(r.Days())})
		}
		return q.ConversionHistoryInsert(ctx, s.history(convOutcome[decision], reason, dp.dbNow()))
	})
	if err != nil {
		unlock()
		if ctx.Err() != nil {
			return nil, sender.Result{ErrorClass: sender.ClassCanceled, Started: now}, true
		}
		dp.log.Error("conversion state", "endpoint_id", d.EndpointID, "delivery_id", d.ID, "err", err)
		return nil, failed(now, sender.Transient, classConversionState, "conversion state unavailable: "+err.Error()), true
	}
	switch decision {
	case convFire:
		return s, sender.Result{}, false
	case convBusy:
		unlock()
		return nil, failed(now, sender.Transient, classConversionBusy, reason), true
	default:
		unlock()
		res := failed(now, sender.Permanent, classSuppressed, reason)
		res.Outcome = sender.OK
		return nil, res, true
	}
}

// conversionSettle records what the tracker made of s's send and ends its
// reservation: an accepted status becomes the conversion's; anything else
// leaves the conversion as the tracker last accepted it. The database is
// tried for a while (the send is done; the result is what matters); should
// it stay away, the reservation lapses at its sending_until and the status
// counts as not received, so the next event or retry sends it again.
func (dp *dispatcher) conversionSettle(s *convSend, res sender.Result) {
	defer s.unlock()
	accepted := res.Outcome == sender.OK
	outcome, reason := "sent", ""
	if !accepted {
		outcome, reason = "failed", res.ErrorClass
		if res.Error != "" {
			reason += ": " + res.Error
		}
	}
	var payout *string
	if s.c.Payout != "" {
		payout = &s.c.Payout
	}
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := pgx.BeginFunc(ctx, dp.pool, func(tx pgx.Tx) error {
			q := db.New(tx)
			if _, err := q.ConversionSettle(ctx, db.ConversionSettleParams{Accepted: accepted, ProducerStatus: s.c.Producer,
				EventID: s.d.EventID, Payout: payout, Currency: s.c.Currency, KeepDays: int32(s.rules.Days()), Now: dp.dbNow(),
				EndpointID: s.d.EndpointID, ConversionKey: s.c.Key, DeliveryID: s.d.ID}); err != nil {
				return err
			}
			return q.ConversionHistoryInsert(ctx, s.history(outcome, sender.Truncate(reason, 300), dp.dbNow()))
		})
		cancel()
		if err == nil {
			return
		}
		if attempt >= 5 || !retryable(err) {
			dp.log.Error("conversion state not recorded; its reservation lapses and the status counts as not received",
				"endpoint_id", s.d.EndpointID, "delivery_id", s.d.ID, "err", err)
			return
		}
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
	}
}

// history is one decision about s's conversion as its history row.
func (s *convSend) history(outcome, reason string, now *time.Time) db.ConversionHistoryInsertParams {
	var payout *string
	if s.c.Payout != "" {
		payout = &s.c.Payout
	}
	return db.ConversionHistoryInsertParams{EndpointID: s.d.EndpointID, PartnerID: s.partner, ConversionKey: s.c.Key,
		EventID: s.d.EventID, DeliveryID: s.d.ID, AttemptNo: s.d.AttemptCount + 1, ProducerStatus: s.c.Producer,
		Status: s.c.Status, Outcome: outcome, Reason: reason, Rejection: s.c.IsRejection(), Payout: payout,
		Currency: s.c.Currency, Now: now, KeepDays: int32(s.rules.Days())}
}

// convRef names one conversion of one endpoint.
type convRef struct {
	endpoint int64
	key      string
}

// convLocks serialises, within this process, the deliveries of one
// conversion from their decision to their settled result. Without it two
// senders of one conversion would meet the first's reservation in the
// database and the second would go back to the queue for a backoff, where
// waiting here takes as long as the first send.
type convLocks struct {
	mu sync.Mutex
	m  map[convRef]*convLock
}

type convLock struct {
	ch      chan struct{} // holds a token while the lock is held
	waiters int
}

// lock takes ref's lock, waiting for its holder or ctx; the returned
// function releases it once.
func (l *convLocks) lock(ctx context.Context, ref convRef) (func(), error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[convRef]*convLock{}
	}
	e := l.m[ref]
	if e == nil {
		e = &convLock{ch: make(chan struct{}, 1)}
		l.m[ref] = e
	}
	e.waiters++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if e.waiters--; e.waiters == 0 {
			delete(l.m, ref)
		}
		l.mu.Unlock()
	}
	select {
	case e.ch <- struct{}{}:
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-e.ch
			release()
		})
	}, nil
}
