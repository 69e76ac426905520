package web

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// fakeWorker is a LocalWorker that records what an ingest names to it.
type fakeWorker struct {
	mu         sync.Mutex
	everything bool
	woken      [][]int64
}

func (f *fakeWorker) ClaimsEverything() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.everything
}

func (f *fakeWorker) WakeFor(ids ...int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.woken = append(f.woken, slices.Clone(ids))
}

func (f *fakeWorker) takeWoken() [][]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.woken
	f.woken = nil
	return w
}

// TestIngestWakesLocalWorker: with a worker in the process, an ingest
// names the endpoints it queued for to it once committed, each once. While
// that worker claims everything, the ingest sends no NOTIFY (no other
// replica could claim); otherwise it sends one as without a local worker.
// An ingest that queues nothing wakes nobody.
func TestIngestWakesLocalWorker(t *testing.T) {
	t.Parallel()
	local := &fakeWorker{everything: true}
	env := newEnv(t, func(c *Config) { c.Worker = local })
	pid := env.createPartner("Acme")
	a := env.createEndpoint(map[string]any{"partner_id": pid, "name": "a", "kind": "webhook",
		"url": "https://hooks.acme.invalid/a", "event_types": []string{"conversion"}})
	b := env.createEndpoint(map[string]any{"partner_id": pid, "name": "b", "kind": "webhook",
		"url": "https://hooks.acme.invalid/b", "event_types": []string{"conversion"}})
	env.createEndpoint(map[string]any{"partner_id": pid, "name": "c", "kind": "webhook",
		"url": "https://hooks.acme.invalid/c", "event_types": []string{"refund"}})

	listener, err := pgx.ConnectConfig(context.Background(), env.pool.Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close(context.Background()) })
	if _, err := listener.Exec(context.Background(), "LISTEN hookline_deliveries"); err != nil {
		t.Fatal(err)
	}
	notified := func() bool {
		wait, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := listener.WaitForNotification(wait)
		return err == nil
	}
	events := []eventInput{
		{Type: "conversion", Payload: json.RawMessage(`{"n":1}`)},
		{Type: "conversion", Payload: json.RawMessage(`{"n":2}`)},
	}
	want := []int64{a.ID, b.ID}
	for _, everything := range []bool{true, false} {
		local.mu.Lock()
		local.everything = everything
		local.mu.Unlock()
		if _, err := env.srv.ingest(context.Background(), apiPrincipal{}, events); err != nil {
			t.Fatal(err)
		}
		woken := local.takeWoken()
		if len(woken) != 1 {
			t.Fatalf("claims everything %v: the local worker was woken %d times, want once", everything, len(woken))
		}
		got := slices.Sorted(slices.Values(woken[0]))
		if !slices.Equal(got, want) {
			t.Fatalf("claims everything %v: woken for %v, want each endpoint queued for once: %v", everything, got, want)
		}
		if n := notified(); n == everything {
			t.Fatalf("claims everything %v: a NOTIFY sent: %v", everything, n)
		}
	}

	if _, err := env.srv.ingest(context.Background(), apiPrincipal{}, []eventInput{{Type: "unsubscribed", Payload: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if woken := local.takeWoken(); len(woken) != 0 {
		t.Fatalf("an ingest that queued nothing woke the local worker for %v", woken)
	}
}
