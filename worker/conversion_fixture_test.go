package worker

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/hookline/hookline/worker/postback"
)

// operatorEndpoint sets up a postback endpoint the way an operator would
// from preset id: the preset's template with its placeholder host replaced
// by base (the receiver's URL and a path prefix), extra appended to the
// query, the preset's macro style and success text, and rules with the
// preset's value maps under any the operator adds (an operator's map for a
// field replaces the preset's).
func (e *env) operatorEndpoint(base, id string, rules postback.Rules, extra string) int64 {
	e.t.Helper()
	p, ok := postback.PresetByID(id)
	if !ok {
		e.t.Fatalf("no preset %q", id)
	}
	vm := maps.Clone(p.ValueMaps)
	if vm == nil {
		vm = map[string]map[string]string{}
	}
	maps.Copy(vm, rules.ValueMaps)
	rules.ValueMaps = vm
	b, err := json.Marshal(rules)
	if err != nil {
		e.t.Fatal(err)
	}
	tmpl := strings.Replace(p.Template, "https://YOUR-DOMAIN.example/POSTBACK-KEY", base+"/KEY", 1)
	tmpl = strings.Replace(tmpl, "https://YOUR-DOMAIN.example", base, 1) + extra
	style := ""
	if p.MacroStyle() == postback.StyleHash {
		style = string(postback.StyleHash)
	}
	ep, _ := e.endpoint(endpointOpts{kind: "postback", url: tmpl, macroStyle: style, successBodyContains: p.SuccessBodyContains, rules: string(b), maxInFlight: 32})
	return ep
}

// conversionWaves sends n conversions through pending → approved →
// approved (again) → declined, each step a batch of events fanned out to
// the endpoints endpoints, and waits for every delivery of a step to
// finish before the next.
func (e *env) conversionWaves(n, endpoints int) {
	e.t.Helper()
	done := 0
	for _, status := range []string{"pending", "approved", "approved", "declined"} {
		payloads := make([]string, n)
		for i := range payloads {
			payloads[i] = fmt.Sprintf(`{"click_id":"click-%d","transaction_id":"tx-%d","status":%q,"payout":"7.50","amount":"30.00","currency":"USD"}`, i, i, status)
		}
		for i := 0; i < n; i += 250 {
			e.conversionEvents(payloads[i:min(i+250, n)])
		}
		done += endpoints * n
		deadline := time.Now().Add(3 * time.Minute)
		for e.count("SELECT count(*) FROM deliveries WHERE status IN ('delivered', 'dead')") < done {
			if time.Now().After(deadline) {
				e.t.Fatalf("the %s wave did not finish: %d of %d", status, e.count("SELECT count(*) FROM deliveries WHERE status IN ('delivered', 'dead')"), done)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if dead := e.count("SELECT count(*) FROM deliveries WHERE status = 'dead'"); dead != 0 {
		e.t.Fatalf("%d dead deliveries: %s", dead, e.deliveryStates())
	}
}
