package worker

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestFailureBudgetSpanHoldsDisable: with an injected clock, an endpoint
// whose budget is 2 failed deliveries over at least 1 h is warned but not
// disabled by two quick failures; a failure an hour after the first
// disables it; a success in between would have reset the streak.
func TestFailureBudgetSpanHoldsDisable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.setHandler(respond(http.StatusBadRequest)) // permanent: each delivery dies at its first attempt
	epID, _ := e.endpoint(endpointOpts{url: rcv.URL})
	if _, err := e.pool.Exec(context.Background(), `UPDATE endpoints SET disable_after_failures = 2, disable_after_hours = 1 WHERE id = $1`, epID); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now = clk.Now; c.Rand = fixedRand(0) })
	e.run(w)
	enabled := func() bool {
		return e.count(`SELECT count(*) FROM endpoints WHERE id = $1 AND enabled`, epID) == 1
	}

	e.events(1, "order.created", `{}`)
	e.waitFor("first dead", func() bool { return e.health(epID).FailedDeliveries == 1 })
	e.events(1, "order.created", `{}`)
	e.waitFor("second dead", func() bool { return e.health(epID).FailedDeliveries == 2 })
	if !enabled() {
		t.Fatal("two failures a moment apart disabled an endpoint whose budget needs them to span 1 h")
	}
	if n := e.count(`SELECT count(*) FROM notifications WHERE kind = 'endpoint.warned' AND endpoint_id = $1`, epID); n != 2 {
		t.Fatalf("%d warnings, want 2 (50 %% and 90 %%)", n)
	}

	clk.Advance(time.Hour)
	e.events(1, "order.created", `{}`)
	e.waitFor("disabled", func() bool { return !enabled() })
	if n := e.count(`SELECT count(*) FROM notifications WHERE kind = 'endpoint.disabled' AND subject = 'failure_budget' AND endpoint_id = $1`, epID); n != 1 {
		t.Fatalf("%d disable notifications, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM endpoints WHERE id = $1 AND disabled_cause = 'failure_budget' AND disabled_at = $2`, epID, clk.Now()); n != 1 {
		t.Fatal("disabled_at is not the (injected) time of the disabling completion")
	}
}

// TestSuccessResetsFailureBudget: a delivered delivery ends the streak.
func TestSuccessResetsFailureBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	rcv.setHandler(respond(http.StatusBadRequest))
	epID, _ := e.endpoint(endpointOpts{url: rcv.URL})
	e.run(e.worker(nil))
	e.events(1, "order.created", `{}`)
	e.waitFor("a failure", func() bool { return e.health(epID).FailedDeliveries == 1 })
	rcv.setHandler(respond(http.StatusOK))
	e.events(1, "order.created", `{}`)
	e.waitFor("reset by a success", func() bool {
		h := e.health(epID)
		return h.FailedDeliveries == 0 && h.FirstFailedAt == nil && h.BudgetWarned == 0
	})
}
