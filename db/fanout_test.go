package db_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
)

// TestFanOut: one statement queues every event's deliveries, each event to
// the endpoints that subscribe to its type (exactly, by prefix, or to all
// types), of its partner when it names one, of active partners only, minus
// the endpoints its payload filter excludes, and wakes the workers with a
// NOTIFY naming those endpoints; a second fan-out of the same events
// queues nothing and wakes nobody.
func TestFanOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	listener := listen(t, pool)
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
		q.DeliveryFanOut(ctx, db.FanOut(events, true)).Query(func(_ int, rows []db.DeliveryFanOutRow, err error) {
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
	woken := []int64{all, orders, prefix, refunds}
	slices.SortFunc(woken, func(a, b int64) int { return strings.Compare(strconv.FormatInt(a, 10), strconv.FormatInt(b, 10)) })
	if got, want := notification(t, listener), joinIDs(woken); got == nil || *got != want {
		t.Fatalf("wake-up payload %v, want each endpoint queued for once: %q", got, want)
	}
	if got := fanOut(); len(got) != 0 {
		t.Fatalf("a second fan-out queued %q", got)
	}
	if got := notification(t, listener); got != nil {
		t.Fatalf("a fan-out that queued nothing notified %q", *got)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM deliveries WHERE endpoint_id = $1", archived).Scan(&n); err != nil || n != 0 {
		t.Fatalf("archived partner's endpoint got %d deliveries (%v)", n, err)
	}
}

// TestFanOutWithoutNotify: a fan-out whose caller wakes the worker in
// process (notify false) queues the same deliveries and sends no NOTIFY;
// the same fan-out with notify does.
func TestFanOutWithoutNotify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	listener := listen(t, pool)
	var endpoint int64
	if err := pool.QueryRow(ctx, `WITH p AS (INSERT INTO partners (name) VALUES ('one') RETURNING id)
		INSERT INTO endpoints (partner_id, name, kind, url) SELECT id, 'e', 'webhook', 'http://127.0.0.1:1/' FROM p
		RETURNING id`).Scan(&endpoint); err != nil {
		t.Fatal(err)
	}
	for _, notify := range []bool{false, true} {
		id := uuid.New()
		if _, err := pool.Exec(ctx, "INSERT INTO events (id, type, payload) VALUES ($1, 't', '{}')", id); err != nil {
			t.Fatal(err)
		}
		var got []int64
		var ferr error
		db.New(pool).DeliveryFanOut(ctx, db.FanOut([]db.FanOutEvent{{ID: id, Type: "t"}}, notify)).
			Query(func(_ int, rows []db.DeliveryFanOutRow, err error) {
				ferr = err
				for _, r := range rows {
					got = append(got, r.EndpointID)
				}
			})
		if ferr != nil || !slices.Equal(got, []int64{endpoint}) {
			t.Fatalf("notify %v: fan-out queued for %v (%v), want [%d]", notify, got, ferr, endpoint)
		}
		n := notification(t, listener)
		switch {
		case !notify && n != nil:
			t.Fatalf("a fan-out without notify sent a wake-up %q", *n)
		case notify && (n == nil || *n != joinIDs([]int64{endpoint})):
			t.Fatalf("a fan-out with notify sent wake-up %v, want %q", n, joinIDs([]int64{endpoint}))
		}
	}
}

// TestFanOutWakesEverywhereOver500: a fan-out that queues for more than
// 500 endpoints wakes the workers with an empty payload, "look
// everywhere", rather than a list longer than a claim takes.
func TestFanOutWakesEverywhereOver500(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	listener := listen(t, pool)
	if _, err := pool.Exec(ctx, `INSERT INTO partners (name) VALUES ('many');
		INSERT INTO endpoints (partner_id, name, kind, url)
		SELECT p.id, 'e' || i, 'webhook', 'http://127.0.0.1:1/' FROM partners p, generate_series(1, 501) i`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		endpoints int
		want      func(payload string) bool
	}{
		{500, func(p string) bool { return strings.Count(p, ",") == 499 }},
		{501, func(p string) bool { return p == "" }},
	} {
		// Every endpoint takes every type; the first fan-out's event is
		// filtered out of one of them.
		var excluded []int64
		if c.endpoints == 500 {
			var last int64
			if err := pool.QueryRow(ctx, "SELECT max(id) FROM endpoints").Scan(&last); err != nil {
				t.Fatal(err)
			}
			excluded = []int64{last}
		}
		var n int
		var ferr error
		db.New(pool).DeliveryFanOut(ctx, db.FanOut([]db.FanOutEvent{{ID: uuid.New(), Type: "t", Excluded: excluded}}, true)).
			Query(func(_ int, rows []db.DeliveryFanOutRow, err error) { n, ferr = len(rows), err })
		if ferr != nil || n != c.endpoints {
			t.Fatalf("fan-out queued %d (%v), want %d", n, ferr, c.endpoints)
		}
		if got := notification(t, listener); got == nil || !c.want(*got) {
			t.Errorf("%d endpoints: wake-up payload %v", c.endpoints, got)
		}
	}
}

// notification is the payload of the next wake-up the listener receives
// within a second, or nil.
func notification(t *testing.T, listener *pgxpool.Conn) *string {
	t.Helper()
	wait, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, err := listener.Conn().WaitForNotification(wait)
	if err != nil {
		return nil
	}
	return &n.Payload
}

// joinIDs is ids as a wake-up names them: "12,7,40".
func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ",")
}
