package web

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hookline/hookline/db/dbtest"
)

// TestIngestTwoRoundTrips: storing events takes two round trips however
// many events and filters there are: BEGIN, the filters' read and the
// inserts in one batch, the fan-out, NOTIFY and COMMIT in another. Each
// round trip is a wake-up of another process, most of an event's wait on
// a busy machine. The filters read in the transaction still apply: an
// event the filter rejects gets no delivery from its endpoint.
func TestIngestTwoRoundTrips(t *testing.T) {
	t.Parallel()
	pool, trips := dbtest.CountedPool(t, dbtest.URL(t))
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
	statements, batches := trips.Counts()
	results, err := env.srv.ingest(context.Background(), apiPrincipal{}, events)
	if err != nil {
		t.Fatal(err)
	}
	s, b := trips.Counts()
	if s, b := s-statements, b-batches; s != 0 || b != 2 {
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
