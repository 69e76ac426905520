package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/sender"
)

// TestDeadWithoutAttemptCountsAsFailure: postbacks that die because the
// event lacks a field the template needs are never sent, so the latency
// histograms (where the figures come from) never see them. They are
// failures all the same: in the overview's failed attempts, the stats API,
// the endpoints table's success rate and the endpoint page's success rate
// and last failure.
func TestDeadWithoutAttemptCountsAsFailure(t *testing.T) {
	t.Parallel()
	env := newEnv(t, allowLoopback)
	base := env.server()
	rcv := newHookReceiver(t, http.StatusOK, 0, "OK")
	pid := env.createPartner("Clickwave")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "keitaro", "kind": "postback", "method": "GET",
		"url": rcv.URL + "/pb?subid={click_id}", "success_body_contains": "OK"}).ID
	w := env.startWorker()
	for i := range 3 {
		env.postEvent("conversion.approved", map[string]any{"click_id": fmt.Sprintf("c-%d", i)})
	}
	env.postEvent("conversion.approved", map[string]any{"payout": 3}) // no click_id
	env.waitDB("three delivered and one dead for its missing field", 15*time.Second, `
		SELECT count(*) FILTER (WHERE status = 'delivered') = 3
		   AND count(*) FILTER (WHERE status = 'dead' AND last_error_class = 'missing_field') = 1
		FROM deliveries WHERE endpoint_id = $1`, ep)
	// The cached 24 h figures come from the histograms: wait for the three
	// sent attempts to reach them.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err := w.RefreshNow(context.Background()); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := env.pool.QueryRow(context.Background(), `SELECT sample_count FROM endpoint_health WHERE endpoint_id = $1`, ep).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d latency samples cached, want 3", n)
		}
		time.Sleep(50 * time.Millisecond)
	}

	t.Run("stats API", func(t *testing.T) {
		rec := env.do(http.MethodGet, "/api/v1/stats", nil)
		mustStatus(t, rec, http.StatusOK)
		if st := decodeBody[pipelineStats](t, rec); st.FailedLastHour != 1 || st.Dead != 1 {
			t.Fatalf("failed_last_hour %d, dead %d; want 1 and 1", st.FailedLastHour, st.Dead)
		}
	})
	t.Run("endpoints API", func(t *testing.T) {
		for _, path := range []string{fmt.Sprintf("/api/v1/endpoints/%d", ep), "/api/v1/endpoints"} {
			rec := env.do(http.MethodGet, path, nil)
			mustStatus(t, rec, http.StatusOK)
			var one struct {
				Health struct {
					LastFailureAt *time.Time `json:"last_failure_at"`
				} `json:"health"`
			}
			var list struct {
				Endpoints []json.RawMessage `json:"endpoints"`
			}
			body := rec.Body.Bytes()
			if path == "/api/v1/endpoints" {
				if err := json.Unmarshal(body, &list); err != nil || len(list.Endpoints) != 1 {
					t.Fatalf("list: %v, %d endpoints", err, len(list.Endpoints))
				}
				body = list.Endpoints[0]
			}
			if err := json.Unmarshal(body, &one); err != nil {
				t.Fatal(err)
			}
			if one.Health.LastFailureAt == nil {
				t.Fatalf("%s: last_failure_at is null, want the dead delivery's time", path)
			}
		}
	})
	op := env.signIn(base, "ops@example.com", "operator")
	t.Run("overview", func(t *testing.T) {
		_, doc := op.get("/")
		if got := strings.TrimSpace(doc.Find("#tile-failed [data-testid=tile-value]").Text()); got != "1" {
			t.Fatalf("failed attempts tile %q, want 1", got)
		}
	})
	t.Run("endpoints table", func(t *testing.T) {
		_, doc := op.get("/endpoints")
		got := strings.TrimSpace(doc.Find(fmt.Sprintf(`[data-testid=endpoint-row][data-endpoint-id="%d"] [data-testid=success-rate]`, ep)).Text())
		if !strings.HasPrefix(got, "75.0 %") {
			t.Fatalf("success rate %q, want 75.0 %% (3 of 4)", got)
		}
	})
	t.Run("endpoint page", func(t *testing.T) {
		_, doc := op.get(fmt.Sprintf("/endpoints/%d", ep))
		if got := strings.Join(strings.Fields(testid(doc, "attempts-24h").Text()), " "); got != "4 · 75.0 % ok" {
			t.Fatalf("attempts (24 h) %q, want 4 · 75.0 %% ok", got)
		}
		if n := testid(doc, "last-failure").Find("[data-testid=reltime]").Length(); n != 1 {
			t.Fatalf("last failure: %q, want a time", testid(doc, "last-failure").Text())
		}
	})
}

// TestUnsentDeadClasses: every error class the worker records for an
// attempt that never reached the partner counts as an unsent failure (the
// query writes the list out for its partial index), and a sent one does
// not.
func TestUnsentDeadClasses(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	pid := env.createPartner("Clickwave")
	ep := env.createEndpoint(map[string]any{"partner_id": pid, "name": "hook", "kind": "webhook", "url": "https://hook.invalid/in"}).ID
	unsent := []string{"missing_field", sender.ClassBlocked, sender.ClassInvalidRequest, "signing", sender.ClassCanceled, "lease_expired"}
	for _, class := range append(unsent, "http_status") {
		var id string
		if err := env.pool.QueryRow(context.Background(), "INSERT INTO events (id, type, payload) VALUES (gen_random_uuid(), 'order.created', '{}') RETURNING id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		env.exec(`INSERT INTO deliveries (event_id, endpoint_id, status, attempt_count, max_attempts, dead_at, last_error_class)
			VALUES ($1, $2, 'dead', 1, 1, now() - interval '1 minute', $3)`, id, ep, class)
	}
	now := time.Now()
	got, err := env.srv.unsentDead(context.Background(), now.Add(-time.Hour), now.Add(-time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[ep].Dead != int64(len(unsent)) {
		t.Fatalf("%d unsent dead deliveries counted, want %d (one per class %v)", got[ep].Dead, len(unsent), unsent)
	}
}
