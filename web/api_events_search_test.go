package web

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestSearchKeyExtract(t *testing.T) {
	t.Parallel()
	ks := newSearchKeySet(nil)
	cases := []struct {
		name        string
		payload     string
		names, vals []string
	}{
		{"none", `{"payout":1,"x":"click_id"}`, nil, nil},
		{"string", `{"click_id":"9f1c2e","payout":1}`, []string{"click_id"}, []string{"9f1c2e"}},
		{"configured order, several", `{"order_id":"o-1","cid":"c-1","txid":"t-1"}`, []string{"cid", "txid", "order_id"}, []string{"c-1", "t-1", "o-1"}},
		{"number as written", `{"order_id":1042,"tid":1.50}`, []string{"tid", "order_id"}, []string{"1.50", "1042"}},
		{"escaped name and value", `{"click\u005fid":"a\"b\u00e9"}`, []string{"click_id"}, []string{`a"bé`}},
		{"other types skipped", `{"cid":true,"subid":null,"tid":{"a":1},"txid":[1],"order_id":""}`, nil, nil},
		{"nested not searched", `{"meta":{"click_id":"x"}}`, nil, nil},
		{"too long skipped", `{"cid":"` + strings.Repeat("x", maxSearchValueBytes+1) + `","tid":"` + strings.Repeat("y", maxSearchValueBytes) + `"}`,
			[]string{"tid"}, []string{strings.Repeat("y", maxSearchValueBytes)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			names, vals := ks.extract([]byte(tc.payload))
			if !slices.Equal(names, tc.names) || !slices.Equal(vals, tc.vals) {
				t.Fatalf("extract = %q %q, want %q %q", names, vals, tc.names, tc.vals)
			}
		})
	}
	t.Run("configured list replaces the defaults", func(t *testing.T) {
		names, vals := newSearchKeySet([]string{"lead_id"}).extract([]byte(`{"lead_id":"L1","click_id":"c"}`))
		if !slices.Equal(names, []string{"lead_id"}) || !slices.Equal(vals, []string{"L1"}) {
			t.Fatalf("%q %q", names, vals)
		}
	})
}

// TestIngestStoresSearchKeys: the API and batch ingest store the configured
// keys' values with the event; an event without any stores none.
func TestIngestStoresSearchKeys(t *testing.T) {
	t.Parallel()
	env := newEnv(t, func(c *Config) { c.SearchKeys = []string{"click_id", "order_id"} })
	stored := func(id string) (names, vals []string) {
		t.Helper()
		if err := env.pool.QueryRow(context.Background(), "SELECT search_keys, search_values FROM events WHERE id = $1", id).Scan(&names, &vals); err != nil {
			t.Fatal(err)
		}
		return names, vals
	}
	rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion.approved",
		"payload": map[string]any{"click_id": "ck-1", "order_id": 77, "cid": "not configured"}})
	mustStatus(t, rec, http.StatusAccepted)
	names, vals := stored(decodeBody[acceptedBody](t, rec).ID)
	if !slices.Equal(names, []string{"click_id", "order_id"}) || !slices.Equal(vals, []string{"ck-1", "77"}) {
		t.Fatalf("stored %q %q", names, vals)
	}

	rec = env.do(http.MethodPost, "/api/v1/events/batch", map[string]any{"events": []any{
		map[string]any{"type": "a", "payload": map[string]any{"n": 1}},
		map[string]any{"type": "a", "payload": map[string]any{"order_id": "o-9"}},
	}})
	mustStatus(t, rec, http.StatusAccepted)
	res := decodeBody[struct {
		Results []ingestResult `json:"results"`
	}](t, rec).Results
	if names, vals := stored(res[0].ID.String()); names != nil || vals != nil {
		t.Fatalf("event without keys stored %q %q", names, vals)
	}
	if names, vals := stored(res[1].ID.String()); !slices.Equal(names, []string{"order_id"}) || !slices.Equal(vals, []string{"o-9"}) {
		t.Fatalf("stored %q %q", names, vals)
	}
}
