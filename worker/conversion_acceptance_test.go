package worker

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
)

// countingTrackers are fake Keitaro, Affise and Binom servers that parse a
// postback the way each documents it and keep, per conversion, the
// statuses they recorded, in order:
//
//   - Keitaro (Maintenance → Postback URL): GET …/postback with subid (the
//     click, required), status lead, sale, rejected or rebill, payout and
//     tid; it answers with the text of return= (hookline checks for OK).
//   - Affise (postback integration): GET /postback with clickid (required),
//     action_id (the conversion, which Affise deduplicates on), status 1
//     approved, 2 pending, 3 declined, 5 hold, and sum.
//   - Binom: GET /click.php with cnv_id (required), payout and cnv_status,
//     a free word shown in its reports.
//
// A postback missing a required parameter or with a status word the
// tracker does not know is answered 400 and not counted.
type countingTrackers struct {
	mu      sync.Mutex
	keitaro map[string][]string // tid → statuses
	affise  map[string][]string // action_id → statuses
	binom   map[string][]string // cnv_id → statuses
	refused int
}

func newCountingTrackers() *countingTrackers {
	return &countingTrackers{keitaro: map[string][]string{}, affise: map[string][]string{}, binom: map[string][]string{}}
}

func (f *countingTrackers) handler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	refuse := func(why string) {
		f.refused++
		http.Error(w, why, http.StatusBadRequest)
	}
	switch r.URL.Path {
	case "/KEY/postback":
		if q.Get("subid") == "" || !slices.Contains([]string{"lead", "sale", "rejected", "rebill"}, q.Get("status")) {
			refuse("subid and a known status are required")
			return
		}
		key := q.Get("tid")
		if key == "" {
			key = q.Get("subid")
		}
		f.keitaro[key] = append(f.keitaro[key], q.Get("status"))
		_, _ = w.Write([]byte(q.Get("return")))
	case "/postback":
		if q.Get("clickid") == "" || !slices.Contains([]string{"1", "2", "3", "5"}, q.Get("status")) {
			refuse("clickid and a status code are required")
			return
		}
		f.affise[q.Get("action_id")] = append(f.affise[q.Get("action_id")], q.Get("status"))
		_, _ = w.Write([]byte(`{"status":1}`))
	case "/click.php":
		if q.Get("cnv_id") == "" {
			refuse("cnv_id is required")
			return
		}
		f.binom[q.Get("cnv_id")] = append(f.binom[q.Get("cnv_id")], q.Get("cnv_status"))
		_, _ = w.Write([]byte("ok"))
	default:
		http.NotFound(w, r)
	}
}

// conversionEvents stores one conversion event per id, each with its own
// payload, and fans them out, the way ingest does.
func (e *env) conversionEvents(payloads []string) {
	e.t.Helper()
	ctx := context.Background()
	ids := make([]uuid.UUID, len(payloads))
	for i := range ids {
		ids[i], _ = uuid.NewV7()
	}
	// As in eventsAt: a batch that met a new partition being made is
	// stored again.
	var err error
	for range 3 {
		if err = e.storeConversionEvents(ctx, ids, payloads); !db.RoutedToDefault(err) {
			break
		}
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) storeConversionEvents(ctx context.Context, ids []uuid.UUID, payloads []string) error {
	return pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		q := e.q.WithTx(tx)
		ev := make([]db.EventInsertBatchParams, len(payloads))
		fan := make([]db.FanOutEvent, len(payloads))
		for i, p := range payloads {
			id := ids[i]
			ev[i] = db.EventInsertBatchParams{ID: id, Type: "conversion", Payload: []byte(p)}
			fan[i] = db.FanOutEvent{ID: id, Type: "conversion"}
		}
		var err error
		q.EventInsertBatch(ctx, ev).QueryRow(func(_ int, _ uuid.UUID, e error) { err = cmpErr(err, e) })
		if err != nil {
			return err
		}
		q.DeliveryFanOut(ctx, db.FanOut(fan, true)).Query(func(_ int, _ []db.DeliveryFanOutRow, e error) { err = cmpErr(err, e) })
		if err != nil {
			return err
		}
		return q.EventNotify(ctx, db.NotifyQueueLimit)
	})
}

func cmpErr(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

// TestConversionAcceptance: 1,000 conversions go pending → approved →
// approved (again) → rejected, each step a batch of events, through a
// running worker to three trackers with their presets' value maps. Each
// tracker records exactly three statuses per conversion, in its own words
// and in order: the repeated approval is suppressed for all 3,000
// deliveries, and the rejection after the approval fires the reversal.
func TestConversionAcceptance(t *testing.T) {
	t.Parallel()
	const n = 1000
	e := newEnv(t)
	rcv := newReceiver(t)
	trackers := newCountingTrackers()
	rcv.setHandler(trackers.handler)
	for _, id := range []string{"keitaro", "affise", "binom"} {
		e.operatorEndpoint(rcv.URL, id, conversionRules(), "")
	}
	e.run(e.worker(nil))
	e.conversionWaves(n, 3)
	trackers.mu.Lock()
	defer trackers.mu.Unlock()
	if trackers.refused != 0 {
		t.Errorf("the trackers refused %d postbacks", trackers.refused)
	}
	for name, tr := range map[string]struct {
		got  map[string][]string
		want []string
	}{
		"keitaro": {trackers.keitaro, []string{"lead", "sale", "rejected"}},
		"affise":  {trackers.affise, []string{"2", "1", "3"}},
		"binom":   {trackers.binom, []string{"pending", "approved", "rejected"}},
	} {
		if len(tr.got) != n {
			t.Errorf("%s counted %d conversions, want %d", name, len(tr.got), n)
		}
		wrong := 0
		for key, seq := range tr.got {
			if !slices.Equal(seq, tr.want) {
				if wrong++; wrong <= 3 {
					t.Errorf("%s: conversion %s went %v, want %v", name, key, seq, tr.want)
				}
			}
		}
		if wrong > 0 {
			t.Errorf("%s: %d of %d conversions counted wrongly", name, wrong, n)
		}
	}
	if s := e.count("SELECT count(*) FROM deliveries WHERE last_error_class = 'suppressed'"); s != 3*n {
		t.Errorf("%d suppressed deliveries, want %d", s, 3*n)
	}
	if s := e.count("SELECT count(*) FROM conversion_history WHERE outcome = 'sent' AND rejection"); s != 3*n {
		t.Errorf("%d reversals in the history, want %d", s, 3*n)
	}
}
