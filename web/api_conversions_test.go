package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/web/account"
)

type conversionPageJSON struct {
	Data []struct {
		EndpointID     int64   `json:"endpoint_id"`
		PartnerID      int64   `json:"partner_id"`
		Key            string  `json:"key"`
		Status         *string `json:"status"`
		ProducerStatus *string `json:"producer_status"`
		Payout         *string `json:"payout"`
	} `json:"data"`
	NextCursor *string             `json:"next_cursor"`
	Days       []conversionDayJSON `json:"days"`
}

// conversionFixture is two partners, each with a Keitaro-style endpoint
// that fires on a change, and conversions delivered through a worker:
// Alpha's T1 pending → approved → approved (suppressed), T2 approved →
// declined; Beta's B1 approved.
func conversionFixture(t *testing.T) (env *testEnv, alpha, beta, epA, epB int64) {
	env = newEnv(t, allowLoopback, allowPartnerLoopback)
	tracker := newHookReceiver(t, http.StatusOK, 0, "OK")
	alpha, beta = env.createPartner("Alpha"), env.createPartner("Beta")
	ep := func(partner int64, name string) int64 {
		return env.createEndpoint(map[string]any{"partner_id": partner, "name": name, "kind": "postback", "method": "GET",
			"url":          tracker.URL + "/postback?subid={click_id}&status={status}&payout={payout}&return=OK",
			"value_maps":   map[string]any{"status": map[string]string{"approved": "sale", "pending": "lead", "declined": "rejected"}},
			"payout_share": 50, "success_body_contains": "OK",
			"conversion_key": "transaction_id", "conversion_status": "status", "fire_on": "change"}).ID
	}
	epA, epB = ep(alpha, "alpha-keitaro"), ep(beta, "beta-keitaro")
	env.startWorker()
	n := 0
	post := func(partner int64, tx, status string) {
		n++
		rec := env.do(http.MethodPost, "/api/v1/events", map[string]any{"type": "conversion", "partner_id": partner,
			"payload": map[string]any{"click_id": "c-" + tx, "transaction_id": tx, "status": status, "payout": 10, "currency": "EUR"}})
		mustStatus(t, rec, http.StatusAccepted)
		env.waitDB("the event delivered", 20*time.Second, "SELECT count(*) = $1 FROM deliveries WHERE status = 'delivered'", n)
	}
	post(alpha, "T1", "pending")
	post(alpha, "T1", "approved")
	post(alpha, "T1", "approved")
	post(alpha, "T2", "approved")
	post(alpha, "T2", "declined")
	post(beta, "B1", "approved")
	return env, alpha, beta, epA, epB
}

func TestAPIConversions(t *testing.T) {
	t.Parallel()
	env, alpha, beta, epA, _ := conversionFixture(t)

	t.Run("list and days", func(t *testing.T) {
		rec := env.do(http.MethodGet, "/api/v1/conversions?partner_id="+itoa64(alpha), nil)
		mustStatus(t, rec, http.StatusOK)
		p := decodeBody[conversionPageJSON](t, rec)
		got := map[string]string{}
		for _, c := range p.Data {
			got[c.Key] = *c.Status + " " + *c.ProducerStatus + " " + *c.Payout
		}
		if len(got) != 2 || got["T1"] != "sale approved 5.00" || got["T2"] != "rejected declined 5.00" {
			t.Errorf("conversions %v", got)
		}
		if len(p.Days) != 1 {
			t.Fatalf("days %+v", p.Days)
		}
		d := p.Days[0]
		// Fired: T1 lead, T1 sale, T2 sale, T2 rejected; suppressed: T1's
		// repeat; payout: three non-rejections at 50 % of 10 EUR.
		if d.Fired != 4 || d.Suppressed != 1 || d.Rejected != 1 || d.Failed != 0 || len(d.Payout) != 1 ||
			d.Payout[0].Currency != "EUR" || d.Payout[0].Amount != "15.00" {
			t.Errorf("day %+v", d)
		}
	})
	t.Run("keyset pages", func(t *testing.T) {
		rec := env.do(http.MethodGet, "/api/v1/conversions?limit=1", nil)
		p := decodeBody[conversionPageJSON](t, rec)
		seen := map[string]bool{}
		for pages := 0; ; pages++ {
			if len(p.Data) != 1 || pages > 5 {
				t.Fatalf("page of %d", len(p.Data))
			}
			seen[p.Data[0].Key] = true
			if p.NextCursor == nil {
				break
			}
			p = decodeBody[conversionPageJSON](t, env.do(http.MethodGet, "/api/v1/conversions?limit=1&cursor="+url.QueryEscape(*p.NextCursor), nil))
		}
		if len(seen) != 3 {
			t.Errorf("pages held %v", seen)
		}
	})
	t.Run("status filter", func(t *testing.T) {
		p := decodeBody[conversionPageJSON](t, env.do(http.MethodGet, "/api/v1/conversions?status=rejected", nil))
		if len(p.Data) != 1 || p.Data[0].Key != "T2" {
			t.Errorf("rejected: %+v", p.Data)
		}
	})
	t.Run("bad input names the field", func(t *testing.T) {
		mustError(t, env.do(http.MethodGet, "/api/v1/conversions?from=yesterday", nil), http.StatusUnprocessableEntity, "from")
		mustError(t, env.do(http.MethodGet, "/api/v1/conversions?from=2026-05-02&to=2026-05-01", nil), http.StatusUnprocessableEntity, "to")
		mustError(t, env.do(http.MethodGet, "/api/v1/conversions/history?key=T1", nil), http.StatusUnprocessableEntity, "endpoint_id")
	})
	t.Run("history", func(t *testing.T) {
		rec := env.do(http.MethodGet, "/api/v1/conversions/history?endpoint_id="+itoa64(epA)+"&key=T1", nil)
		mustStatus(t, rec, http.StatusOK)
		h := decodeBody[struct {
			Data []conversionStepJSON `json:"data"`
		}](t, rec)
		var steps []string
		for _, s := range h.Data {
			steps = append(steps, s.Status+" "+s.Outcome)
		}
		if strings.Join(steps, ", ") != "lead sent, sale sent, sale suppressed" {
			t.Errorf("history %v", steps)
		}
	})
	t.Run("a key bound to a partner sees its own", func(t *testing.T) {
		betaKey := env.withKey(account.ScopeRead, beta)
		p := decodeBody[conversionPageJSON](t, betaKey.do(http.MethodGet, "/api/v1/conversions?partner_id="+itoa64(alpha), nil))
		if len(p.Data) != 1 || p.Data[0].Key != "B1" || len(p.Days) != 1 || p.Days[0].PartnerID != beta {
			t.Errorf("beta's key read %+v", p)
		}
		mustStatus(t, betaKey.do(http.MethodGet, "/api/v1/conversions/history?endpoint_id="+itoa64(epA)+"&key=T1", nil), http.StatusNotFound)
	})
}

// TestConversionsPages: the dashboard shows every partner's conversions
// and a history; the portal shows the signed-in partner's only, and
// another partner's history is not found.
func TestConversionsPages(t *testing.T) {
	t.Parallel()
	env, alpha, _, epA, epB := conversionFixture(t)
	base := env.server()
	op := env.signIn(base, "viewer@hookline.test", "viewer")
	res, doc := op.get("/conversions")
	if res.StatusCode != http.StatusOK || testid(doc, "conversion-row").Length() != 3 || testid(doc, "conversion-day").Length() != 2 {
		t.Fatalf("dashboard: %d, %d rows, %d days", res.StatusCode, testid(doc, "conversion-row").Length(), testid(doc, "conversion-day").Length())
	}
	res, doc = op.get("/conversions/history?endpoint_id=" + itoa64(epA) + "&key=T1")
	if res.StatusCode != http.StatusOK || doc.Find(`[data-testid=conversion-step][data-outcome=suppressed]`).Length() != 1 {
		t.Fatalf("history: %d", res.StatusCode)
	}
	// The repeated approval's event page: suppressed, with the reason.
	var repeat string
	if err := env.pool.QueryRow(t.Context(), "SELECT event_id::text FROM conversion_history WHERE outcome = 'suppressed'").Scan(&repeat); err != nil {
		t.Fatal(err)
	}
	_, doc = op.get("/events/" + repeat)
	d := testid(doc, "delivery")
	if s := strings.TrimSpace(d.Find(`[data-testid=delivery-status]`).First().Text()); s != "suppressed" ||
		!strings.Contains(d.Find(`[data-testid=attempt]`).Text(), `status "sale" unchanged`) {
		t.Errorf("event page of the repeat: %q (%s)", s, d.Text())
	}
	portal := env.portalSignIn(base, alpha, "Alpha")
	res, doc = portal.get("/portal/conversions")
	body := doc.Text()
	if res.StatusCode != http.StatusOK || testid(doc, "conversion-row").Length() != 2 || strings.Contains(body, "B1") || strings.Contains(body, "Beta") {
		t.Fatalf("portal: %d, %d rows", res.StatusCode, testid(doc, "conversion-row").Length())
	}
	// Beta's conversion, asked for by endpoint, partner filter or history.
	if _, doc = portal.get("/portal/conversions?endpoint_id=" + itoa64(epB)); testid(doc, "conversion-row").Length() != 0 {
		t.Errorf("portal shows another partner's endpoint's conversions")
	}
	if res, _ = portal.get("/portal/conversions/history?endpoint_id=" + itoa64(epB) + "&key=B1"); res.StatusCode != http.StatusNotFound {
		t.Errorf("another partner's history: %d", res.StatusCode)
	}
}
