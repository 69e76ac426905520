package web

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/dbtest"
)

// roundTrips counts what a pool's connections send: each statement sent on
// its own, and each batch (however many statements it carries), is a round
// trip to PostgreSQL.
type roundTrips struct{ statements, batches atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.statements.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.batches.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// TestIngestTwoRoundTrips: storing events takes two round trips however
// many events and filters there are: BEGIN, the filters' read and the
// inserts in one batch, the fan-out, NOTIFY and COMMIT in another. Each
// round trip is a wake-up of another process, most of an event's wait on
// a busy machine. The filters read in the transaction still apply: an
// event the filter rejects gets no delivery from its endpoint.
func TestIngestTwoRoundTrips(t *testing.T) {
	cfg, err := pgxpool.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	trips := &roundTrips{}
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	env := newEnvWithPool(t, pool)
	pid := env.createPartner("Acme")
	approved := env.createEndpoint(map[string]any{"partner_id": pid, "name": "approved only", "kind": "webhook",
		"url": "https://hooks.acme.invalid/approved", "filter": map[string]any{"status": "approved"}})
	all := env.createEndpoint(map[string]any{"partner_id": pid, "name": "everything", "kind": "webhook",
		"url": "https://hooks.acme.invalid/all"})

	events := []eventInput{
		{Type: "conversion", Payload: json.RawMessage(`{"status":"approved"}`)},
		{Type: "conversion", Payload: json.RawMessage(`{"status":"rejected"}`)},
		{Type: "conversion", Payload: json.RawMessage(`{"status":"approved"}`)},
	}
	statements, batches := trips.statements.Load(), trips.batches.Load()
	results, err := env.srv.ingest(context.Background(), events)
	if err != nil {
		t.Fatal(err)
	}
	if s, b := trips.statements.Load()-statements, trips.batches.Load()-batches; s != 0 || b != 2 {
		t.Fatalf("ingest of %d events took %d statements and %d batches, want 0 and 2", len(events), s, b)
	}
	for i, r := range results {
		if r.Status != ingestAccepted {
			t.Fatalf("event %d: %+v", i, r)
		}
	}
	if n := deliveryCount(t, env, approved.ID); n != 2 {
		t.Fatalf("the filtered endpoint has %d deliveries, want the 2 approved events", n)
	}
	if n := deliveryCount(t, env, all.ID); n != 3 {
		t.Fatalf("the endpoint without a filter has %d deliveries, want 3", n)
	}
}
