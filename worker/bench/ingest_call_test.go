package bench

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/db/migrations"
	"github.com/hookline/hookline/worker/filter"
	"github.com/hookline/hookline/worker/secretbox"
)

// BenchmarkIngestCall times one ingest call as the steady-rate bench makes
// it: 10 events, each to one of 10 endpoints (-spread), on one connection,
// one call after another. At this size the call's time is its round trips
// and its commit rather than the rows.
//
//	go test -run '^$' -bench IngestCall -benchtime 3000x ./worker/bench/
func BenchmarkIngestCall(b *testing.B) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbtest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if err := migrations.Up(ctx, pool); err != nil {
		b.Fatal(err)
	}
	box, _ := secretbox.New(make([]byte, 32), nil)
	o := Options{Deliveries: 10, Endpoints: 10, Spread: true}
	o.defaults()
	if err := seed(ctx, pool, box, &receiver{url: "http://127.0.0.1:9"}, o); err != nil {
		b.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	payload := makePayload(o.PayloadBytes)
	var cache filter.Cache
	for b.Loop() {
		if _, err := ingest(ctx, conn, &cache, 10, payload, eventType); err != nil {
			b.Fatal(err)
		}
	}
}
