package worker

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
)

// TestPartnerURLDialledWithPartnerGuard: a delivery to an endpoint whose
// URL a partner set goes through the partner guard, even where the
// operator's allow list opens the address (a name the partner saved while
// it resolved to a public address may resolve to loopback later): the
// receiver sees nothing and the attempt is classed blocked_destination.
// The same receiver behind an operator-set URL is delivered to, and a
// partner allow list that opens loopback lets the partner's through.
func TestPartnerURLDialledWithPartnerGuard(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	opID, _ := e.endpoint(endpointOpts{url: rcv.URL + "/operator"})
	partnerID, _ := e.endpoint(endpointOpts{url: rcv.URL + "/partner"})
	if _, err := e.pool.Exec(context.Background(), "UPDATE endpoints SET url_set_by = 'partner' WHERE id = $1", partnerID); err != nil {
		t.Fatal(err)
	}
	status := func(endpointID int64) (string, string) {
		var st, class string
		if err := e.pool.QueryRow(context.Background(),
			"SELECT status, coalesce(last_error_class, '') FROM deliveries WHERE endpoint_id = $1", endpointID).Scan(&st, &class); err != nil {
			t.Fatal(err)
		}
		return st, class
	}

	e.events(1, "order.created", `{"n":1}`)
	stop := e.run(e.worker(nil)) // operator guard opens loopback; partner guard left at its default
	e.waitFor("both deliveries settled", func() bool {
		op, _ := status(opID)
		p, _ := status(partnerID)
		return op == "delivered" && p == "dead"
	})
	stop()
	if _, class := status(partnerID); class != sender.ClassBlocked {
		t.Fatalf("partner-set URL: class %q, want %s", class, sender.ClassBlocked)
	}
	got := rcv.all()
	if len(got) != 1 || got[0].URL != "/operator" {
		t.Fatalf("receiver got %d requests (%v), want only the operator-set endpoint's", len(got), got)
	}
	var msg string
	if err := e.pool.QueryRow(context.Background(), "SELECT last_error FROM deliveries WHERE endpoint_id = $1", partnerID).Scan(&msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, ssrf.PartnerVariable) {
		t.Fatalf("the refusal %q does not name %s", msg, ssrf.PartnerVariable)
	}

	t.Run("partner allow list opens it", func(t *testing.T) {
		e.events(1, "order.created", `{"n":2}`)
		e.run(e.worker(func(c *Config) {
			c.PartnerGuard = ssrf.NewPartner([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
		}))
		e.waitFor("the partner-set URL delivered", func() bool {
			return e.count("SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status = 'delivered'", partnerID) == 1
		})
	})
}
