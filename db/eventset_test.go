package db_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
)

// TestEventInsertSet: one statement stores every event with its own
// payload bytes, idempotency key, partner and slice of search keys; a key
// used before, or earlier in the same set, inserts nothing.
func TestEventInsertSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	q := db.New(pool)
	p, err := q.PartnerCreate(ctx, db.PartnerCreateParams{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	key := func(s string) *string { return &s }
	insert := func(events []db.NewEvent) []uuid.UUID {
		t.Helper()
		var got []uuid.UUID
		var ierr error
		q.EventInsertSet(ctx, db.EventSet(events)).Query(func(_ int, ids []uuid.UUID, err error) { got, ierr = ids, err })
		if ierr != nil {
			t.Fatal(ierr)
		}
		return got
	}
	a, b, c, d, e := uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()
	got := insert([]db.NewEvent{
		{ID: a, Type: "order.created", Payload: []byte(`{"click_id": "c1",  "n": 1}`), IdempotencyKey: key("k1"), PartnerID: &p.ID,
			SearchKeys: []string{"click_id"}, SearchValues: []string{"c1"}},
		{ID: b, Type: "order.paid", Payload: []byte(`{}`)},
		{ID: c, Type: "order.created", Payload: []byte(`{"click_id":"c3","transaction_id":"t3"}`), IdempotencyKey: key("k1")},
		{ID: d, Type: "refund", Payload: []byte(`{"click_id":"c4","transaction_id":"t4"}`),
			SearchKeys: []string{"click_id", "transaction_id"}, SearchValues: []string{"c4", "t4"}},
	})
	if want := []uuid.UUID{a, b, d}; !slices.Equal(got, want) {
		t.Fatalf("inserted %v, want %v (the repeated key inserts nothing)", got, want)
	}
	if got := insert([]db.NewEvent{{ID: e, Type: "x", Payload: []byte(`{}`), IdempotencyKey: key("k1")}}); len(got) != 0 {
		t.Fatalf("a key used before inserted %v", got)
	}
	for _, w := range []struct {
		id           uuid.UUID
		typ, payload string
		key          *string
		partner      *int64
		keys, values []string
	}{
		{a, "order.created", `{"click_id": "c1",  "n": 1}`, key("k1"), &p.ID, []string{"click_id"}, []string{"c1"}},
		{b, "order.paid", `{}`, nil, nil, nil, nil},
		{d, "refund", `{"click_id":"c4","transaction_id":"t4"}`, nil, nil, []string{"click_id", "transaction_id"}, []string{"c4", "t4"}},
	} {
		ev, err := q.EventGet(ctx, w.id)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != w.typ || string(ev.Payload) != w.payload || !samePtr(ev.IdempotencyKey, w.key) || !samePtr(ev.PartnerID, w.partner) ||
			!slices.Equal(ev.SearchKeys, w.keys) || !slices.Equal(ev.SearchValues, w.values) {
			t.Errorf("event %s stored as %s %s key %v partner %v search %q=%q", w.id, ev.Type, ev.Payload,
				ev.IdempotencyKey, ev.PartnerID, ev.SearchKeys, ev.SearchValues)
		}
	}
}

func samePtr[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
