package demo

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/hookline/hookline/worker/simulate"
)

func startReceivers(t *testing.T) *simulate.Server {
	t.Helper()
	s, err := simulate.Start(Receivers(DefaultRate), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSeed(t *testing.T) {
	ctx := context.Background()
	api := newFakeAPI(t)
	recv := startReceivers(t)
	o := Options{BaseURL: api.URL, APIKey: api.key, Receivers: recv}

	ids, err := Seed(ctx, o)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("creates every partner and endpoint", func(t *testing.T) {
		if len(api.partners) != 6 {
			t.Errorf("%d partners, want 6", len(api.partners))
		}
		want := []string{AcmeOrders, AcmeInvoices, ClickwaveKeitaro, ClickwaveVoluum, LegacyCRM, PartnerAuth, BurstyAPI, FlakyBinom, FlakyS2S}
		if len(ids) != len(want) || len(api.endpoints) != len(want) {
			t.Fatalf("ids %v and %d endpoints, want %d of each", ids, len(api.endpoints), len(want))
		}
		for i, k := range want {
			if ids[k] != int64(i+1) {
				t.Errorf("ids[%s] = %d, want %d", k, ids[k], i+1)
			}
		}
	})

	byKey := func(k string) map[string]any { return api.endpoints[ids[k]-1] }
	num := func(v any) int64 {
		n, _ := v.(json.Number).Int64()
		return n
	}

	t.Run("each endpoint points at its own loopback receiver", func(t *testing.T) {
		for k := range ids {
			u := byKey(k)["url"].(string)
			if !strings.HasPrefix(u, recv.URL(k)) {
				t.Errorf("%s: url %q, want it under %s", k, u, recv.URL(k))
			}
			if p, err := url.Parse(u); err != nil || p.Hostname() != "127.0.0.1" {
				t.Errorf("%s: url %q is not on 127.0.0.1", k, u)
			}
		}
	})

	t.Run("postbacks follow the tracker presets", func(t *testing.T) {
		for k, want := range map[string][]string{
			ClickwaveKeitaro: {"subid={click_id}", "status={status}", "payout={payout}", "tid={transaction_id}", "return=OK"},
			ClickwaveVoluum:  {"cid={click_id}", "payout={payout}", "txid={transaction_id}"},
			FlakyBinom:       {"cnv_id={click_id}", "cnv_status={status}"},
			FlakyS2S:         {"click_id={click_id}", "transaction_id={transaction_id}"},
		} {
			e := byKey(k)
			u := e["url"].(string)
			for _, w := range want {
				if !strings.Contains(u, w) {
					t.Errorf("%s: url %q lacks %q", k, u, w)
				}
			}
			if strings.Contains(u, "YOUR-DOMAIN") || strings.Contains(u, "POSTBACK-KEY") {
				t.Errorf("%s: url %q keeps a preset placeholder", k, u)
			}
			if e["kind"] != "postback" {
				t.Errorf("%s: kind %v", k, e["kind"])
			}
		}
		for _, k := range []string{ClickwaveKeitaro, ClickwaveVoluum} {
			if got := byKey(k)["success_body_contains"]; got != "OK" {
				t.Errorf("%s: success_body_contains %v, want OK", k, got)
			}
		}
	})

	t.Run("failure settings", func(t *testing.T) {
		if e := byKey(LegacyCRM); num(e["max_attempts"]) != 2 || num(e["failure_threshold"]) != 10 {
			t.Errorf("LegacyCRM: max_attempts %v, failure_threshold %v; want 2 and 10", e["max_attempts"], e["failure_threshold"])
		}
		if _, ok := byKey(BurstyAPI)["rate_per_sec"]; ok {
			t.Error("BurstyAPI has a rate_per_sec: its 429s would not happen")
		}
		if e := byKey(FlakyBinom); num(e["max_attempts"]) != 3 || num(e["timeout_ms"]) != flakyTimeoutMs {
			t.Errorf("binom: max_attempts %v, timeout_ms %v", e["max_attempts"], e["timeout_ms"])
		}
		if e := byKey(FlakyS2S); num(e["max_attempts"]) != 1 {
			t.Errorf("s2s: max_attempts %v, want 1", e["max_attempts"])
		}
		h := byKey(PartnerAuth)["headers"].(map[string]any)
		if h["Authorization"] != "Bearer "+partnerAuthRevokedToken {
			t.Errorf("PartnerAuth headers %v, want the revoked token", h)
		}
	})

	t.Run("run again: reuses everything and moves endpoints to the new receivers", func(t *testing.T) {
		recv2 := startReceivers(t) // another port, as on every run
		o2 := o
		o2.Receivers = recv2
		before := len(api.called())
		again, err := Seed(ctx, o2)
		if err != nil {
			t.Fatal(err)
		}
		for k, id := range ids {
			if again[k] != id {
				t.Errorf("%s: id %d, first run %d", k, again[k], id)
			}
			if u := byKey(k)["url"].(string); !strings.HasPrefix(u, recv2.URL(k)) {
				t.Errorf("%s: url %q not moved to %s", k, u, recv2.URL(k))
			}
		}
		if len(api.partners) != 6 || len(api.endpoints) != 9 {
			t.Errorf("%d partners, %d endpoints after a second run", len(api.partners), len(api.endpoints))
		}
		patches := 0
		for _, c := range api.called()[before:] {
			if strings.HasPrefix(c, "PATCH ") {
				patches++
			}
		}
		if patches != 9 {
			t.Errorf("%d PATCH requests, want one per endpoint", patches)
		}
		// Same receivers a third time: nothing to change.
		before = len(api.called())
		if _, err := Seed(ctx, o2); err != nil {
			t.Fatal(err)
		}
		for _, c := range api.called()[before:] {
			if strings.HasPrefix(c, "PATCH ") {
				t.Errorf("unneeded %s", c)
			}
		}
	})
}

func TestSeedErrors(t *testing.T) {
	ctx := context.Background()
	recv := startReceivers(t)

	t.Run("a wrong key is a clear error", func(t *testing.T) {
		api := newFakeAPI(t)
		_, err := Seed(ctx, Options{BaseURL: api.URL, APIKey: "hk_wrong", Receivers: recv})
		if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Acme Shop") {
			t.Errorf("err = %v, want a 401 naming the partner", err)
		}
	})
	t.Run("a blocked loopback URL says how to allow it", func(t *testing.T) {
		api := newFakeAPI(t)
		api.blockEndpoints = true
		_, err := Seed(ctx, Options{BaseURL: api.URL, APIKey: api.key, Receivers: recv})
		if err == nil || !strings.Contains(err.Error(), "HOOKLINE_ALLOW_NETWORKS=127.0.0.0/8") {
			t.Errorf("err = %v, want the HOOKLINE_ALLOW_NETWORKS hint", err)
		}
	})
	t.Run("receivers that are not the demo's", func(t *testing.T) {
		api := newFakeAPI(t)
		other, err := simulate.Start([]simulate.Behavior{simulate.Fast()}, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		_, err = Seed(ctx, Options{BaseURL: api.URL, APIKey: api.key, Receivers: other})
		if err == nil || !strings.Contains(err.Error(), "not running") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("missing options", func(t *testing.T) {
		for _, o := range []Options{
			{APIKey: "k", Receivers: recv},
			{BaseURL: "http://127.0.0.1:1", Receivers: recv},
			{BaseURL: "http://127.0.0.1:1", APIKey: "k"},
		} {
			if _, err := Seed(ctx, o); err == nil {
				t.Errorf("Seed(%+v) succeeded", o)
			}
		}
	})
}
