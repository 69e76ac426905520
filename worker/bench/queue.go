package bench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/egress"
	"github.com/hookline/hookline/worker/filter"
	"github.com/hookline/hookline/worker/signing"
)

// benchFilter is the filter Options.Filter puts on endpoint i: four
// conditions of the common kinds (equality, numeric comparison, list
// membership, inequality) that every bench payload passes. Each endpoint's
// differs (the last condition names it), so none is evaluated once for
// several endpoints: the worst case for fan-out.
func benchFilter(i int) string {
	return fmt.Sprintf(`{"type": "conversion.approved", "payout": {"$gte": 1}, "currency": {"$in": ["USD", "EUR", "BRL"]}, "click_id": {"$ne": "ep%d"}}`, i)
}

// The settings of every endpoint the drain seeds (seed, and seedMany for
// -scale): 5 attempts, a 15 s timeout, a breaker at 10 failures, and room
// in flight for twice the worker's concurrency spread over the endpoints
// (at least 8).
const (
	seedMaxAttempts      = 5
	seedTimeoutMs        = 15000
	seedFailureThreshold = 10
)

func seedMaxInFlight(concurrency, endpoints int) int {
	return max(8, 2*concurrency/endpoints)
}

// seed creates the partner and endpoints (all subscribed to every type).
func seed(ctx context.Context, pool *pgxpool.Pool, box *secretbox.Box, rcv *receiver, o Options) error {
	if _, err := pool.Exec(ctx, "TRUNCATE partners, endpoints, endpoint_secrets, endpoint_health, events, deliveries, delivery_attempts, latency_histograms, dead_letter_tallies, dead_letter_tally_changes RESTART IDENTITY CASCADE"); err != nil {
		return err
	}
	q := db.New(pool)
	p, err := q.PartnerCreate(ctx, db.PartnerCreateParams{Name: "bench"})
	if err != nil {
		return err
	}
	for i := range o.Endpoints {
		var flt []byte
		if o.Filter {
			flt = []byte(benchFilter(i))
		}
		types := []string{}
		if o.Spread {
			types = []string{eventType(i)}
		}
		e, err := q.EndpointCreate(ctx, db.EndpointCreateParams{
			Filter:    flt,
			PartnerID: p.ID, Name: fmt.Sprint("ep", i), Kind: "webhook", URL: fmt.Sprintf("%s/ep%d", rcv.url, i),
			Method: "POST", EventTypes: types, Headers: json.RawMessage(`{}`), MaxAttempts: seedMaxAttempts, TimeoutMs: seedTimeoutMs,
			MaxInFlight: int32(seedMaxInFlight(o.Concurrency, o.Endpoints)), FailureThreshold: seedFailureThreshold, Enabled: true,
		})
		if err != nil {
			return err
		}
		if err := q.EndpointHealthCreate(ctx, e.ID); err != nil {
			return err
		}
		if rcv.tls != nil {
			// What POST /api/v1/endpoints stores for an egress object
			// with a ca_bundle and nothing else.
			if _, err := q.EndpointEgressSet(ctx, db.EndpointEgressSetParams{
				EndpointID: e.ID, CaBundle: string(rcv.tls.caPEM), AuthKind: egress.AuthNone, OauthScopes: []string{},
			}); err != nil {
				return err
			}
		}
		secret, _ := signing.NewSecret(rand.Reader)
		sealed, _ := box.Seal(e.ID, []byte(secret))
		if _, err := q.EndpointSecretCreate(ctx, db.EndpointSecretCreateParams{EndpointID: e.ID, Ciphertext: sealed}); err != nil {
			return err
		}
	}
	return nil
}

// queue stores events and fans them out with the ingest path's statements
// and its filter evaluation (web's storeEvents), in batches of 1000 events
// like POST /api/v1/events/batch.
func queue(ctx context.Context, pool *pgxpool.Pool, o Options, payload []byte) (Phase, error) {
	events := o.Deliveries / o.Endpoints
	start := time.Now()
	var cache filter.Cache
	for done := 0; done < events; done += 1000 {
		n := min(1000, events-done)
		err := withConn(ctx, pool, func(conn *pgxpool.Conn) error {
			_, err := ingest(ctx, conn, &cache, n, payload, nil, nil)
			return err
		})
		if err != nil {
			return Phase{}, err
		}
	}
	d := time.Since(start)
	// Fresh statistics, as autovacuum would have by the time a real queue
	// builds up.
	_, err := pool.Exec(ctx, "ANALYZE deliveries; ANALYZE events; ANALYZE endpoints; ANALYZE endpoint_health")
	return Phase{Count: o.Deliveries, Duration: d}, err
}

// ingest stores n events and their fan-out on conn in one transaction the
// way POST /api/v1/events/batch does (web's storeEvents): BEGIN, the
// endpoints' filters and the insert batch in one round trip, the fan-out
// batch, NOTIFY and COMMIT in another (db.TxPipeline). It returns the
// events' ids once committed.
//
// typeOf names the i-th event's type; nil gives every event the one type
// all endpoints of a fan-out bench take. local is the worker of the same
// process, as hookline serve's ingest has it (web.Config.Worker), or nil:
// once committed it is woken for the endpoints queued for, and while it
// claims from every shard the fan-out sends no NOTIFY.
func ingest(ctx context.Context, conn *pgxpool.Conn, cache *filter.Cache, n int, payload []byte, typeOf func(i int) string, local localWorker) ([]uuid.UUID, error) {
	ids := make([]uuid.UUID, n)
	types := make([]string, n)
	ev := make([]db.NewEvent, n)
	for i := range n {
		ids[i], _ = uuid.NewV7()
		types[i] = "conversion.approved"
		if typeOf != nil {
			types[i] = typeOf(i)
		}
		ev[i] = db.NewEvent{ID: ids[i], Type: types[i], Payload: payload}
	}
	tx := db.NewTxPipeline(conn)
	qt := db.New(tx)
	var rows []db.EndpointFiltersRow
	tx.EndpointFiltersWithNextBatch(&rows)
	var berr error
	qt.EventInsertSet(ctx, db.EventSet(ev)).Query(func(_ int, _ []uuid.UUID, err error) { berr = errors.Join(berr, err) })
	if berr = errors.Join(berr, tx.Err()); berr != nil {
		tx.Rollback(ctx)
		return nil, berr
	}
	filters := make([]filter.Endpoint, len(rows))
	for i, r := range rows {
		f, err := cache.Compile(r.Filter)
		if err != nil {
			tx.Rollback(ctx)
			return nil, err
		}
		filters[i] = filter.Endpoint{ID: r.ID, Filter: f}
	}
	fan := make([]db.FanOutEvent, n)
	for i := range n {
		fan[i] = db.FanOutEvent{ID: ids[i], Type: types[i], Excluded: filter.Rejecting(filters, payload)}
	}
	tx.CommitWithNextBatch()
	notify := local == nil || !local.ClaimsEverything()
	var queuedFor []int64
	seen := map[int64]bool{}
	qt.DeliveryFanOut(ctx, db.FanOut(fan, notify)).Query(func(_ int, rows []db.DeliveryFanOutRow, err error) {
		berr = errors.Join(berr, err)
		for _, r := range rows {
			if !seen[r.EndpointID] {
				seen[r.EndpointID] = true
				queuedFor = append(queuedFor, r.EndpointID)
			}
		}
	})
	if berr = errors.Join(berr, tx.Err()); berr != nil || !tx.Committed() {
		tx.Rollback(ctx)
		return nil, errors.Join(berr, tx.Commit(ctx))
	}
	if local != nil && len(queuedFor) > 0 {
		local.WakeFor(queuedFor...)
	}
	return ids, nil
}

// localWorker is web.LocalWorker: the worker an in-process ingest wakes.
type localWorker interface {
	ClaimsEverything() bool
	WakeFor(endpointIDs ...int64)
}

// withConn runs fn on a connection of pool's.
func withConn(ctx context.Context, pool *pgxpool.Pool, fn func(*pgxpool.Conn) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return fn(conn)
}

// eventType is the event type endpoint i alone takes in a spread bench.
func eventType(i int) string { return "conversion." + strconv.Itoa(i) }

// ingestBatch stores n events and their fan-out in one transaction with
// the statements POST /api/v1/events/batch runs (web's storeEvents: the
// insert batch, the endpoints' filters, the fan-out batch, the wake-up of
// local or the NOTIFY).
func ingestBatch(ctx context.Context, pool *pgxpool.Pool, cache *filter.Cache, n int, payload []byte, typeOf func(int) string, local localWorker) ([]uuid.UUID, error) {
	if typeOf != nil { // the types taken once: a batch stored again keeps its own
		types := make([]string, n)
		for i := range types {
			types[i] = typeOf(i)
		}
		typeOf = func(i int) string { return types[i] }
	}
	var ids []uuid.UUID
	err := withConn(ctx, pool, func(conn *pgxpool.Conn) error {
		var err error
		for range 3 { // as storeEvents, again when a partition of events was made meanwhile
			if ids, err = ingest(ctx, conn, cache, n, payload, typeOf, local); !db.RoutedToDefault(err) {
				break
			}
		}
		return err
	})
	return ids, err
}
