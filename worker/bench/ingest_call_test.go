package bench

import (
	"context"
	"testing"

	"github.com/hookline/hookline/worker/filter"
)

// BenchmarkIngestCall times one ingest call as the steady-rate bench makes
// it: 10 events, each to one of 10 endpoints (-spread), on one connection,
// one call after another. At this size the call's time is its round trips
// and its commit rather than the rows.
//
//	go test -run '^$' -bench IngestCall -benchtime 3000x ./worker/bench/
func BenchmarkIngestCall(b *testing.B) {
	ctx := context.Background()
	o := Options{Deliveries: 10, Endpoints: 10, Spread: true}
	pool := seededPool(b, &o)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	payload := makePayload(o.PayloadBytes)
	var cache filter.Cache
	for b.Loop() {
		if _, err := ingest(ctx, conn, &cache, 10, payload, eventType, nil); err != nil {
			b.Fatal(err)
		}
	}
}
