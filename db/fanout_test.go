package db_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
)

// TestFanOut: one statement queues every event's deliveries, each event to
// the endpoints that subscribe to its type (exactly, by prefix, or to all
// types), of its partner when it names one, of active partners only, minus
// the endpoints its payload filter excludes; a second fan-out of the same
// events queues nothing.
func TestFanOut(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	q := db.New(pool)
	partner := func(name string) int64 {
		p, err := q.PartnerCreate(ctx, db.PartnerCreateParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	endpoint := func(partnerID int64, name string, types ...string) int64 {
		var id int64
		if err := pool.QueryRow(ctx, `INSERT INTO endpoints (partner_id, name, kind, url, event_types)
			VALUES ($1, $2, 'webhook', 'http://127.0.0.1:1/', $3) RETURNING id`, partnerID, name, append([]string{}, types...)).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	p1, p2, gone := partner("one"), partner("two"), partner("archived")
	all := endpoint(p1, "all")
	orders := endpoint(p1, "orders", "order.created")
	prefix := endpoint(p2, "prefix", "order.*")
	refunds := endpoint(p2, "refunds", "refund.created")
	archived := endpoint(gone, "archived")
	if _, err := pool.Exec(ctx, "UPDATE partners SET archived_at = now() WHERE id = $1", gone); err != nil {
		t.Fatal(err)
	}

	order, refund, mine := uuid.New(), uuid.New(), uuid.New()
	events := []db.FanOutEvent{
		{ID: order, Type: "order.created", Excluded: []int64{prefix}},
		{ID: refund, Type: "refund.created"},
		{ID: mine, Type: "order.created", PartnerID: &p2},
	}
	for _, e := range events {
		if _, err := pool.Exec(ctx, "INSERT INTO events (id, type, payload) VALUES ($1, $2, '{}')", e.ID, e.Type); err != nil {
			t.Fatal(err)
		}
	}
	fanOut := func() []string {
		t.Helper()
		var got []string
		var ferr error
		q.DeliveryFanOut(ctx, db.FanOut(events)).Query(func(_ int, rows []db.DeliveryFanOutRow, err error) {
			ferr = err
			for _, r := range rows {
				got = append(got, fmt.Sprintf("%s→%d %s", r.EventID, r.EndpointID, r.Status))
			}
		})
		if ferr != nil {
			t.Fatal(ferr)
		}
		return got
	}
	want := []string{
		fmt.Sprintf("%s→%d pending", order, all),
		fmt.Sprintf("%s→%d pending", order, orders),
		fmt.Sprintf("%s→%d pending", refund, all),
		fmt.Sprintf("%s→%d pending", refund, refunds),
		fmt.Sprintf("%s→%d pending", mine, prefix),
	}
	if got := fanOut(); !slices.Equal(got, want) {
		t.Fatalf("fan-out, in event then endpoint order:\n got %q\nwant %q", got, want)
	}
	if got := fanOut(); len(got) != 0 {
		t.Fatalf("a second fan-out queued %q", got)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM deliveries WHERE endpoint_id = $1", archived).Scan(&n); err != nil || n != 0 {
		t.Fatalf("archived partner's endpoint got %d deliveries (%v)", n, err)
	}
}
