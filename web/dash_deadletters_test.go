package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDeadLettersPayoutCurrency: the payout at risk names its currency when
// the events carry one, and says it is a raw sum when they do not or when
// they mix currencies.
func TestDeadLettersPayoutCurrency(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Clickwave")
	ep := func(name string) int64 {
		return env.createEndpoint(map[string]any{"partner_id": pid, "name": name, "kind": "webhook", "url": "https://" + name + ".invalid/in"}).ID
	}
	usd, plain, mixed, huge := ep("usd"), ep("plain"), ep("mixed"), ep("huge")
	seed := func(endpointID int64, payloads ...string) {
		t.Helper()
		for _, p := range payloads {
			var id string
			if err := env.pool.QueryRow(context.Background(), "INSERT INTO events (id, type, payload) VALUES (gen_random_uuid(), 'conversion.approved', $1) RETURNING id", p).Scan(&id); err != nil {
				t.Fatal(err)
			}
			if _, err := env.pool.Exec(context.Background(), `INSERT INTO deliveries (event_id, endpoint_id, status, attempt_count, max_attempts, dead_at, last_error, last_error_class, last_status_code)
				VALUES ($1, $2, 'dead', 1, 1, $3, 'HTTP 500', 'http_status', 500)`, id, endpointID, time.Now().Add(-time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
	}
	seed(usd, `{"payout":10,"currency":"USD"}`, `{"payout":"2.5","currency":"USD"}`)
	seed(plain, `{"payout":4}`, `{"payout":1.25}`)
	seed(mixed, `{"payout":3,"currency":"EUR"}`, `{"payout":2,"currency":"USD"}`, `{"payout":1}`)
	// A payout string no sum can hold is left out rather than failing the
	// page: digits past numeric's range, and a sum past float8's.
	seed(huge, `{"payout":"`+strings.Repeat("9", 140000)+`"}`, `{"payout":"`+strings.Repeat("9", 300)+`"}`, `{"payout":"7"}`)

	op := env.signIn(base, "ops@example.com", "operator")
	res, doc := op.get("/dead-letters")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("dead letters page: %d", res.StatusCode)
	}
	payout := func(endpointID int64) string {
		cell := doc.Find(fmt.Sprintf(`[data-testid=cluster-row][data-cluster^="%d:"] [data-testid=payout-at-risk]`, endpointID))
		return strings.Join(strings.Fields(cell.Text()), " ")
	}
	for _, tc := range []struct {
		endpoint int64
		want     string
	}{
		{usd, "12.50 USD"},
		{plain, "5.25 raw sum: the events name no currency"},
		{mixed, "6.00 raw sum of mixed currencies (EUR, USD, and none)"},
		{huge, "7.00 raw sum: the events name no currency"},
	} {
		if got := payout(tc.endpoint); got != tc.want {
			t.Errorf("endpoint %d: payout at risk %q, want %q", tc.endpoint, got, tc.want)
		}
	}
}
