package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/db/secretbox"
	"github.com/hookline/hookline/worker/signing"
	"github.com/hookline/hookline/worker/ssrf"
)

var masterKey = bytes.Repeat([]byte{9}, 32)

// clock is an injectable clock that tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

// newClock starts a minute ahead of the real clock: ingest stamps
// next_attempt_at with the database's now(), which must be "past" for the
// worker's injected clock.
func newClock() *clock { return &clock{t: time.Now().UTC().Add(time.Minute).Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixedRand makes backoff deterministic: always the given fraction of the cap.
type fixedRand float64

func (f fixedRand) Float64() float64 { return float64(f) }

// receiver is a loopback HTTP server that records what it receives.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []received
	count    atomic.Int64
	handler  atomic.Value // http.HandlerFunc answering after recording
}

type received struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
	At     time.Time
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.setHandler(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.requests = append(r.requests, received{req.Method, req.URL.String(), req.Header.Clone(), body, time.Now()})
		r.mu.Unlock()
		r.count.Add(1)
		r.handler.Load().(http.HandlerFunc)(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) setHandler(h http.HandlerFunc) { r.handler.Store(h) }

func (r *receiver) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.requests...)
}

func respond(code int, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
	}
}

func loopbackGuard() *ssrf.Guard {
	return ssrf.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")})
}

// env is a fresh database with helpers to create partners, endpoints and
// events the way the API does.
type env struct {
	t    *testing.T
	pool *pgxpool.Pool
	q    *db.Queries
	box  *secretbox.Box
	pid  int64
	n    atomic.Int64
}

func newEnv(t *testing.T) *env {
	t.Helper()
	pool := dbtest.Pool(t)
	box, _ := secretbox.New(masterKey, nil)
	e := &env{t: t, pool: pool, q: db.New(pool), box: box}
	p, err := e.q.PartnerCreate(context.Background(), db.PartnerCreateParams{Name: "Partner"})
	if err != nil {
		t.Fatal(err)
	}
	e.pid = p.ID
	return e
}

type endpointOpts struct {
	kind, url, method   string
	maxAttempts         int32
	timeoutMs           int32
	threshold           int32
	maxInFlight         int32
	rate                *float64
	burst               *int32
	successBodyContains string
	macroStyle          string // "" is braces
	signatureParam      string
	rules               string // postback_rules JSON; "" for none
	// A POST postback's body: template, format, and "webhook" to sign it.
	bodyTemplate, bodyFormat, bodySignature string
}

// endpoint creates an endpoint with its health row and secret; it returns
// the endpoint id and the secret.
func (e *env) endpoint(o endpointOpts) (int64, string) {
	e.t.Helper()
	ctx := context.Background()
	if o.kind == "" {
		o.kind = "webhook"
	}
	if o.method == "" {
		o.method = map[string]string{"webhook": "POST", "postback": "GET"}[o.kind]
	}
	setDefault(&o.maxAttempts, 5)
	setDefault(&o.timeoutMs, 5000)
	setDefault(&o.threshold, 10)
	setDefault(&o.maxInFlight, 8)
	secret, _ := signing.NewSecret(rand.Reader)
	var id int64
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		q := e.q.WithTx(tx)
		ep, err := q.EndpointCreate(ctx, db.EndpointCreateParams{
			PartnerID: e.pid, Name: fmt.Sprintf("ep-%d", e.n.Add(1)), Kind: o.kind, URL: o.url, Method: o.method,
			EventTypes: []string{}, Headers: json.RawMessage(`{}`), MaxAttempts: o.maxAttempts,
			TimeoutMs: o.timeoutMs, RatePerSec: o.rate, Burst: o.burst, MaxInFlight: o.maxInFlight,
			FailureThreshold: o.threshold, SuccessBodyContains: o.successBodyContains, Enabled: true,
			SignatureParam: o.signatureParam,
		})
		if err != nil {
			return err
		}
		id = ep.ID
		if o.macroStyle != "" {
			if _, err := tx.Exec(ctx, "UPDATE endpoints SET macro_style = $2 WHERE id = $1", id, o.macroStyle); err != nil {
				return err
			}
		}
		if o.bodyTemplate != "" {
			if _, err := tx.Exec(ctx, "UPDATE endpoints SET body_template = $2, body_format = $3, body_signature = $4 WHERE id = $1",
				id, o.bodyTemplate, o.bodyFormat, o.bodySignature); err != nil {
				return err
			}
		}
		if o.rules != "" {
			if _, err := tx.Exec(ctx, "UPDATE endpoints SET postback_rules = $2 WHERE id = $1", id, o.rules); err != nil {
				return err
			}
		}
		headers, err := e.box.SealHeaders(id, map[string]string{"X-Custom": "yes"})
		if err != nil {
			return err
		}
		if _, err := q.EndpointSetHeaders(ctx, db.EndpointSetHeadersParams{ID: id, Headers: headers}); err != nil {
			return err
		}
		if err := q.EndpointHealthCreate(ctx, id); err != nil {
			return err
		}
		sealed, _ := e.box.Seal(id, []byte(secret))
		_, err = q.EndpointSecretCreate(ctx, db.EndpointSecretCreateParams{EndpointID: id, Ciphertext: sealed})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return id, secret
}

// events stores n events of a type with the given payload and fans them out,
// like POST /api/v1/events/batch.
func (e *env) events(n int, typ string, payload string) []uuid.UUID {
	e.t.Helper()
	return e.eventsAt(n, typ, payload, time.Time{})
}

// eventsAt is events with ids made at a time (a UUIDv7's first 48 bits),
// as if created then; the zero time is now.
func (e *env) eventsAt(n int, typ string, payload string, at time.Time) []uuid.UUID {
	e.t.Helper()
	ctx := context.Background()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i], _ = uuid.NewV7()
		if !at.IsZero() {
			then := UUIDAt(at)
			copy(ids[i][:6], then[:6])
		}
	}
	// A worker making the events' partitions as the batch goes in refuses
	// it once (it went to the default partition); ingest stores it again,
	// and so does this.
	var err error
	for range 3 {
		if err = e.insertEvents(ctx, ids, typ, payload); !db.RoutedToDefault(err) {
			break
		}
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return ids
}

// insertEvents stores events with these ids and fans them out, in one
// transaction, the way ingest does.
func (e *env) insertEvents(ctx context.Context, ids []uuid.UUID, typ, payload string) error {
	n := len(ids)
	return pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		q := e.q.WithTx(tx)
		ev := make([]db.EventInsertBatchParams, n)
		fan := make([]db.FanOutEvent, n)
		for i := range ids {
			ev[i] = db.EventInsertBatchParams{ID: ids[i], Type: typ, Payload: []byte(payload)}
			fan[i] = db.FanOutEvent{ID: ids[i], Type: typ}
		}
		var err error
		q.EventInsertBatch(ctx, ev).QueryRow(func(_ int, _ uuid.UUID, e error) {
			if e != nil && err == nil {
				err = e
			}
		})
		if err != nil {
			return err
		}
		q.DeliveryFanOut(ctx, db.FanOut(fan, true)).Query(func(_ int, _ []db.DeliveryFanOutRow, e error) {
			if e != nil && err == nil {
				err = e
			}
		})
		if err != nil {
			return err
		}
		return q.EventNotify(ctx, db.NotifyQueueLimit)
	})
}

// worker builds a Worker on the env's database.
func (e *env) worker(mod func(*Config)) *Worker {
	e.t.Helper()
	cfg := Config{
		Pool:          e.pool,
		SecretKey:     masterKey,
		Guard:         loopbackGuard(),
		UserAgent:     "hookline/test",
		PollInterval:  20 * time.Millisecond,
		ShutdownGrace: 5 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	w, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

// run starts w and returns a stop function that cancels it and waits for
// Run to return (failing the test if it errs).
func (e *env) run(w *Worker) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					e.t.Errorf("worker Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				e.t.Error("worker did not stop within 30 s")
			}
		})
	}
	e.t.Cleanup(stop)
	return stop
}

// waitFor polls cond until it holds or the deadline passes. It waits on
// real asynchronous work (HTTP, the database), not on simulated time.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s; deliveries:\n%s", what, e.deliveryStates())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// deliveryStates lists every delivery's state, for a failure message that
// says why the awaited send never happened.
func (e *env) deliveryStates() string {
	rows, err := e.pool.Query(context.Background(), `
		SELECT id, status, attempt_count, next_attempt_at, lease_expires_at,
		       coalesce(last_error_class, ''), coalesce(last_error, '')
		FROM deliveries ORDER BY id`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id int64
		var attempts int32
		var status, class, msg string
		var next time.Time
		var lease *time.Time
		if err := rows.Scan(&id, &status, &attempts, &next, &lease, &class, &msg); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "  %d %s attempts=%d next=%s lease=%v %s %s\n", id, status, attempts, next.Format(time.RFC3339Nano), lease, class, msg)
	}
	return b.String()
}

// claimsNothing waits until each worker has completed two claim passes
// after the call, the second of them begun after the call, and fails the
// test if any of them (or a breaker probe) took a delivery. It is how a test
// proves that nothing is due: the worker looked, under the current clock,
// and found nothing, which a sleep cannot show on a slow machine.
func (e *env) claimsNothing(what string, workers ...*Worker) {
	e.t.Helper()
	rows := make([]int64, len(workers))
	passes := make([]int64, len(workers))
	for i, w := range workers {
		rows[i], passes[i] = w.claims.claimedRows.Load(), w.claims.claimPasses.Load()
	}
	for i, w := range workers {
		e.waitFor(what+": two claim passes", func() bool { return w.claims.claimPasses.Load() >= passes[i]+2 })
	}
	for i, w := range workers {
		if n := w.claims.claimedRows.Load() - rows[i]; n != 0 {
			e.t.Fatalf("%s: a worker claimed %d deliveries", what, n)
		}
	}
}

// sole starts w's liveness session the way Run does (without running it)
// and waits until it owns every shard, so the test can call w.claim; kill
// ends the session as a process death would.
func (e *env) sole(w *Worker) (kill func()) {
	e.t.Helper()
	kill = e.alive(w)
	e.waitFor("the worker's shards", func() bool { return w.live.own.claimable().count() == shardCount })
	return kill
}

// spanWorker is a worker on a test clock that keeps delivered work for
// retention, and the span of the partitions it makes for it.
func (e *env) spanWorker(retention time.Duration) (*Worker, *clock, time.Duration) {
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now = clk.Now; c.Retention.Delivered = retention })
	return w, clk, deliveredPartitionSpan(retention)
}

// owning waits until the workers, running, have divided the shards among
// them as the assignment over exactly these workers says: each claims its
// own share and no other. (Each shard claimable by exactly one of them is
// not enough: a worker that has not yet seen another start still claims
// that one's share, and the split is about to change.)
func (e *env) owning(workers ...*Worker) {
	e.t.Helper()
	e.waitFor("the shards divided among the workers", func() bool {
		for i, w := range workers {
			others := make([]string, 0, len(workers)-1)
			for j, o := range workers {
				if j != i {
					others = append(others, o.cfg.WorkerID)
				}
			}
			if w.live.own.claimable() != assignShards(w.cfg.WorkerID, others) {
				return false
			}
		}
		return true
	})
}

// inThisDatabase limits a read of pg_locks to the test's own database: the
// view is cluster-wide, and other tests hold the same advisory keys in
// databases of their own on the same server.
const inThisDatabase = "database = (SELECT oid FROM pg_database WHERE datname = current_database())"

func (e *env) count(query string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// deliveryTo is the delivery of an event to one endpoint.
func (e *env) deliveryTo(eventID uuid.UUID, endpointID int64) db.Delivery {
	e.t.Helper()
	rows, err := e.q.DeliveryListByEvent(context.Background(), eventID)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range rows {
		if r.EndpointID == endpointID {
			return db.Delivery{ID: r.ID, EventID: r.EventID, EndpointID: r.EndpointID, Status: r.Status,
				AttemptCount: r.AttemptCount, LastError: r.LastError, LastErrorClass: r.LastErrorClass}
		}
	}
	e.t.Fatalf("no delivery of %s to endpoint %d", eventID, endpointID)
	return db.Delivery{}
}

func (e *env) delivery(eventID uuid.UUID) db.Delivery {
	e.t.Helper()
	rows, err := e.q.DeliveryListByEvent(context.Background(), eventID)
	if err != nil || len(rows) == 0 {
		e.t.Fatalf("deliveries of %s: %v (%d rows)", eventID, err, len(rows))
	}
	r := rows[0]
	return db.Delivery{ID: r.ID, EventID: r.EventID, EndpointID: r.EndpointID, Status: r.Status,
		AttemptCount: r.AttemptCount, MaxAttempts: r.MaxAttempts, NextAttemptAt: r.NextAttemptAt,
		LeaseExpiresAt: r.LeaseExpiresAt, LastError: r.LastError, LastErrorClass: r.LastErrorClass,
		LastStatusCode: r.LastStatusCode, DeadAt: r.DeadAt, DeliveredAt: r.DeliveredAt}
}

func (e *env) health(endpointID int64) db.EndpointHealth {
	e.t.Helper()
	r, err := e.q.EndpointGetWithHealth(context.Background(), endpointID)
	if err != nil {
		e.t.Fatal(err)
	}
	return r.EndpointHealth
}

// ssrfDefault is the production guard: no allow-list, loopback refused.
func ssrfDefault() *ssrf.Guard { return ssrf.New(nil) }

func dbClaimProbes(w *Worker) db.DeliveryClaimProbesParams {
	return db.DeliveryClaimProbesParams{Now: w.dbNow(), LeaseMarginMs: int32(w.cfg.LeaseMargin / time.Millisecond), WorkerID: w.cfg.WorkerID}
}

// rotate gives an endpoint a new secret, the others expiring after overlap
// (what POST /api/v1/endpoints/{id}/secrets/rotate does).
func (e *env) rotate(endpointID int64, overlap time.Duration) string {
	e.t.Helper()
	ctx := context.Background()
	secret, _ := signing.NewSecret(rand.Reader)
	sealed, _ := e.box.Seal(endpointID, []byte(secret))
	s, err := e.q.EndpointSecretCreate(ctx, db.EndpointSecretCreateParams{EndpointID: endpointID, Ciphertext: sealed})
	if err != nil {
		e.t.Fatal(err)
	}
	until := time.Now().Add(overlap)
	if err := e.q.EndpointSecretExpireCurrent(ctx, db.EndpointSecretExpireCurrentParams{EndpointID: endpointID, KeepID: s.ID, ExpiresAt: &until}); err != nil {
		e.t.Fatal(err)
	}
	return secret
}

// uuids is the ids a query returns, in its order.
func (e *env) uuids(query string, args ...any) []uuid.UUID {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), query, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		e.t.Fatal(err)
	}
	return ids
}
