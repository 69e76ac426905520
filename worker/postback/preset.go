package postback

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Preset is a starting point for the onboarding form: a tracker's usual
// postback URL with hookline macros already in place.
type Preset struct {
	ID       string // stable identifier used by forms, e.g. "voluum"
	Name     string // display name, e.g. "Voluum"
	Template string // a template that passes Parse; its host must be replaced
	Method   string // HTTP method trackers expect for postbacks
	// SuccessBodyContains, when set, is the text the tracker's answer must
	// contain to count as success. Trackers answer 200 even when they drop a
	// postback, so a 2xx alone proves little when a marker is available.
	SuccessBodyContains string
	Help                string  // what to replace and what the tracker expects
	Params              []Param // the tracker's parameters, in template order
	// Style is how Template writes its macros; "" means StyleBraces.
	Style Style
	// ValueMaps turn the producer's words (approved, pending, declined,
	// hold, rebill) into the tracker's; the form fills its rows with them.
	// None for trackers that take no status in a postback (Voluum,
	// Everflow, CAKE: their status changes are calls of their own).
	ValueMaps map[string]map[string]string
}

// MacroStyle is the preset's macro style.
func (p Preset) MacroStyle() Style {
	if p.Style == "" {
		return StyleBraces
	}
	return p.Style
}

// MissingParams warns about each required parameter of the preset that t
// does not set to a value: a postback without it is dropped by the tracker.
func (p Preset) MissingParams(t *Template) []Warning {
	have := t.QueryParams()
	var out []Warning
	for _, par := range p.Params {
		if par.Required && !have[par.Name] {
			out = append(out, Warning{Code: WarnPresetParam, Pos: -1,
				Msg: fmt.Sprintf("%s requires the %q parameter, which the template does not set: %s", p.Name, par.Name, par.Help)})
		}
	}
	return out
}

// ParamWarnings is MissingParams plus a warning for each required
// parameter whose macro has a default: the tracker needs the real value,
// and a default would send a stand-in instead of failing the delivery
// where it can be seen and replayed.
func (p Preset) ParamWarnings(t *Template) []Warning {
	out := p.MissingParams(t)
	defaulted := t.queryDefaults()
	for _, par := range p.Params {
		if par.Required && defaulted[par.Name] {
			out = append(out, Warning{Code: WarnPresetDefault, Pos: -1,
				Msg: fmt.Sprintf("%s requires a real %q, but its macro has a default, which would be sent when the payload lacks the field; remove the default so such a delivery fails as missing_field", p.Name, par.Name)})
		}
	}
	return out
}

// Param explains one query parameter of a preset.
type Param struct {
	Name  string // the tracker's parameter name, e.g. "cid"
	Macro string // the macro filling it, without braces; "" when the value is written in the template
	Help  string
	// Required parameters must be in the template with a value; saving
	// without one warns.
	Required bool
}

// presetHost is a reserved example domain (RFC 2606), so a preset saved
// unchanged sends nowhere real and the form can spot it.
const presetHost = "YOUR-DOMAIN.example"

// Presets returns the tracker presets in the order the form shows them. Each
// call returns fresh values, so callers may modify them.
// One literal per tracker, alike in shape on purpose: each is read against its tracker's documentation.
func Presets() []Preset {
	return []Preset{
		{
			ID:       "voluum",
			Name:     "Voluum",
			Template: "https://" + presetHost + "/postback?cid={click_id}&payout={payout}&txid={transaction_id}",
			Method:   "GET",
			Help: "Replace " + presetHost + " with your Voluum tracking domain (Settings → Domains). " +
				"Voluum records one conversion per click id; a repeated cid counts again only with a new txid, " +
				"so send a transaction id that is unique per conversion and the same on every retry.",
			Params: []Param{
				{Name: "cid", Macro: "click_id", Help: "Voluum's click id, captured from the {clickid} token on your landing page. Required.", Required: true},
				{Name: "payout", Macro: "payout", Help: "Revenue for this conversion. Leave it out to use the payout set on the Voluum offer."},
				{Name: "txid", Macro: "transaction_id", Help: "Your unique conversion id. A repeated cid counts as a new conversion only when txid is new."},
			},
		},
		{
			ID:       "binom",
			Name:     "Binom",
			Template: "https://" + presetHost + "/click.php?cnv_id={click_id}&payout={payout}&cnv_status={status}",
			Method:   "GET",
			Help: "Replace " + presetHost + " with your Binom tracker domain, keeping any sub-folder your tracker lives in. " +
				"Binom 2 installations may show a different path under Tracking links; copy the path from there.",
			Params: []Param{
				{Name: "cnv_id", Macro: "click_id", Help: "Binom's click id, captured from the {clickid} token in your offer URL. Required.", Required: true},
				{Name: "payout", Macro: "payout", Help: "Revenue for this conversion; Binom ignores it when the offer has a fixed payout."},
				{Name: "cnv_status", Macro: "status", Help: "Free-form conversion status shown in Binom reports, e.g. approved or rejected."},
			},
			// cnv_status is free text in Binom; these are the words its
			// reports and examples use.
			ValueMaps: map[string]map[string]string{"status": {"approved": "approved", "pending": "pending", "hold": "hold", "declined": "rejected"}},
		},
		{
			ID:       "keitaro",
			Name:     "Keitaro",
			Template: "https://" + presetHost + "/POSTBACK-KEY/postback?subid={click_id}&status={status}&payout={payout}&tid={transaction_id}&return=OK",
			Method:   "GET",
			// return=OK asks Keitaro to answer with exactly this text.
			SuccessBodyContains: "OK",
			Help: "Replace " + presetHost + "/POSTBACK-KEY with the postback URL from Keitaro (Maintenance → Postback URL). " +
				"Keitaro statuses are lead, sale and rejected: send status in those words, or add lead_status=, sale_status= " +
				"or rejected_status= to map your own.",
			Params: []Param{
				{Name: "subid", Macro: "click_id", Help: "Keitaro's click subid, captured from the {subid} token. Required.", Required: true},
				{Name: "status", Macro: "status", Help: "lead (payout not confirmed), sale (confirmed) or rejected (cancelled). Keitaro assumes sale when absent."},
				{Name: "payout", Macro: "payout", Help: "Revenue for this conversion."},
				{Name: "tid", Macro: "transaction_id", Help: "Transaction id; a new tid on a known subid records an additional sale (rebill)."},
				{Name: "return", Help: "Text Keitaro answers with; hookline checks the answer contains it."},
			},
			// Keitaro's statuses (Maintenance → Postback URL help): lead,
			// sale, rejected, and rebill for a repeated sale.
			ValueMaps: map[string]map[string]string{"status": {"approved": "sale", "pending": "lead", "hold": "lead", "declined": "rejected", "rebill": "rebill"}},
		},
		{
			ID:       "everflow",
			Name:     "Everflow",
			Template: "https://" + presetHost + "/?nid=NETWORK-ID&transaction_id={click_id}&amount={amount}",
			Method:   "GET",
			Help: "Replace " + presetHost + " with your Everflow tracking domain and NETWORK-ID with your network id " +
				"(Control Center → Platform Configurations). Everflow's transaction_id is its click id, " +
				"appended to your landing page URL, not your order number.",
			Params: []Param{
				{Name: "nid", Help: "Your Everflow network id, written into the template. Required.", Required: true},
				{Name: "transaction_id", Macro: "click_id", Help: "Everflow's click identifier from your landing page URL. Required.", Required: true},
				{Name: "amount", Macro: "amount", Help: "Sale amount, used for revenue-share payouts."},
			},
		},
		{
			ID:       "affise",
			Name:     "Affise",
			Template: "https://" + presetHost + "/postback?clickid={click_id}&action_id={transaction_id}&status={status}&sum={payout}",
			Method:   "GET",
			Help: "Replace " + presetHost + " with your Affise postback domain. Affise statuses are numbers: " +
				"1 approved, 2 pending, 3 declined, 5 hold; send status as one of them.",
			Params: []Param{
				{Name: "clickid", Macro: "click_id", Help: "Affise click id, captured from the {clickid} macro. Required.", Required: true},
				{Name: "action_id", Macro: "transaction_id", Help: "Your unique conversion id, which lets Affise drop duplicates."},
				{Name: "status", Macro: "status", Help: "1 approved, 2 pending, 3 declined, 5 hold."},
				{Name: "sum", Macro: "payout", Help: "Conversion revenue."},
			},
			// Affise's postback statuses are codes: 1 approved, 2 pending,
			// 3 declined, 5 hold (its postback documentation).
			ValueMaps: map[string]map[string]string{"status": {"approved": "1", "pending": "2", "declined": "3", "hold": "5"}},
		},
		{
			ID:       "cake",
			Name:     "CAKE (#token#)",
			Template: "https://" + presetHost + "/p.ashx?r=#click_id#&t=#transaction_id#",
			Method:   "GET",
			Style:    StyleHash,
			Help: "Replace " + presetHost + " with your CAKE tracking domain; add o= (offer id) and e= (event id) " +
				"if your network asks for them. CAKE and the networks built on it write tokens between hashes: " +
				"#name# takes the payload's top-level field name, so #s2# needs an s2 field; " +
				"#event_id#, #event_type#, #timestamp# and #attempt# are filled by hookline.",
			Params: []Param{
				{Name: "r", Macro: "click_id", Help: "CAKE's request (session) id, passed to you in s2 of the offer link. Required.", Required: true},
				{Name: "t", Macro: "transaction_id", Help: "Your unique conversion id."},
			},
		},
		{
			// TUNE (formerly HasOffers) server postback: aff_lsr on the
			// network's tracking domain (NETWORK.go2cloud.org) with
			// transaction_id (TUNE's click id, required), amount, adv_sub
			// (the advertiser's order id, which TUNE can deduplicate on),
			// goal_id, security_token and status, whose values are
			// approved, pending and rejected. TUNE's help ("Receiving
			// Conversions via Postback URL") confirms aff_lsr,
			// transaction_id, GET and the answers "success=true;" and
			// "success=false; err_msg=…;" (e.g. Duplicate conversion); a
			// status parameter on aff_lsr is not confirmed there, only
			// that TUNE's conversion statuses are these words.
			ID:                  "tune",
			Name:                "TUNE (HasOffers)",
			Template:            "https://" + presetHost + "/aff_lsr?transaction_id={click_id}&amount={payout}&adv_sub={transaction_id}&status={status}",
			Method:              "GET",
			SuccessBodyContains: "success=true",
			Help: "Replace " + presetHost + " with your network's tracking domain (NETWORK.go2cloud.org or your own). " +
				"Add offer_id= and goal_id= if the offer tracks several goals, and security_token= if the network requires one. " +
				"status is approved, pending or rejected. TUNE answers success=true when it records the conversion.",
			Params: []Param{
				{Name: "transaction_id", Macro: "click_id", Help: "TUNE's transaction (click) id, passed to your landing page in {transaction_id}. Required.", Required: true},
				{Name: "amount", Macro: "payout", Help: "Sale amount, for revenue-share payouts."},
				{Name: "adv_sub", Macro: "transaction_id", Help: "Your order id (advertiser sub id): TUNE can refuse a second conversion with the same adv_sub."},
				{Name: "status", Macro: "status", Help: "approved, pending or rejected."},
			},
			// TUNE's conversion statuses: approved, pending, rejected.
			ValueMaps: map[string]map[string]string{"status": {"approved": "approved", "pending": "pending", "hold": "pending", "declined": "rejected"}},
		},
		{
			// RedTrack postback: /postback on the tracking domain with
			// clickid, sum (revenue) and type (the conversion type, e.g.
			// a custom event). RedTrack's help confirms clickid, type
			// (case-sensitive, set up in the account) and the statuses
			// approved, pending, declined and other; the names sum and
			// status for revenue and status are not confirmed there.
			ID:       "redtrack",
			Name:     "RedTrack",
			Template: "https://" + presetHost + "/postback?clickid={click_id}&sum={payout}&type={event_type}",
			Method:   "GET",
			Help: "Replace " + presetHost + " with your RedTrack tracking domain. type names a conversion type " +
				"set up in RedTrack (Settings → Conversion types); leave it out to record the default one.",
			Params: []Param{
				{Name: "clickid", Macro: "click_id", Help: "RedTrack's click id, captured from the {clickid} macro. Required.", Required: true},
				{Name: "sum", Macro: "payout", Help: "Conversion revenue."},
				{Name: "type", Macro: "event_type", Help: "Conversion type as set up in RedTrack."},
			},
			// The producer's event type, mapped to RedTrack's conversion
			// type names; unmapped types are sent as they are.
			ValueMaps: map[string]map[string]string{"event_type": {"conversion.approved": "Purchase", "conversion.pending": "Lead"}},
		},
		{
			ID:       "custom",
			Name:     "Custom",
			Template: "https://" + presetHost + "/postback?click_id={click_id}&payout={payout}&transaction_id={transaction_id}&status={status}",
			Method:   "GET",
			Help: "Any tracker that takes a GET URL. Rename the parameters to the ones your tracker documents; " +
				"{name} takes the payload's top-level field name, and {event_id}, {event_type}, {timestamp} " +
				"and {attempt} are filled by hookline.",
			Params: []Param{
				{Name: "click_id", Macro: "click_id", Help: "The tracker's click id."},
				{Name: "payout", Macro: "payout", Help: "Revenue for this conversion."},
				{Name: "transaction_id", Macro: "transaction_id", Help: "Your unique conversion id."},
				{Name: "status", Macro: "status", Help: "Conversion status in the tracker's vocabulary."},
			},
		},
	}
}

// PresetByID returns the preset with the given ID.
func PresetByID(id string) (Preset, bool) {
	for _, p := range Presets() {
		if p.ID == id {
			return p, true
		}
	}
	return Preset{}, false
}

// SampleValues returns plausible conversion values for the form preview and
// test fires. The click id deliberately holds a space, "&" and "=" so a
// preview shows the encoding at work. The status is "sale", a word Keitaro
// accepts (lead, sale, rejected) and Binom shows as it is.
//
// With rules, use Sample: it speaks the producer's words where a value map
// expects them.
func SampleValues(eventID string, now time.Time) Values {
	return Values{
		EventID:   eventID,
		EventType: "conversion.approved",
		Timestamp: now,
		Attempt:   1,
		Payload: map[string]json.RawMessage{
			"click_id":       json.RawMessage(`"abc 123&x=1"`),
			"payout":         json.RawMessage(`12.5`),
			"transaction_id": json.RawMessage(`"tx_0001"`),
			"status":         json.RawMessage(`"sale"`),
			"currency":       json.RawMessage(`"USD"`),
			"amount":         json.RawMessage(`49.90`),
			"sum":            json.RawMessage(`12.5`),
			"user":           json.RawMessage(`{"country":"DE","id":"u_42"}`),
		},
	}
}

// Sample adapts sample values to rules r: each mapped payload field whose
// sample value the map does not know takes one the map does ("approved"
// when it can), so a preview and a test fire show a mapped value.
func (r *Rules) Sample(v Values) Values {
	if r == nil || len(r.ValueMaps) == 0 {
		return v
	}
	payload := make(map[string]json.RawMessage, len(v.Payload)+len(r.ValueMaps))
	maps.Copy(payload, v.Payload)
	for _, field := range r.MapFields() {
		if IsBuiltin(field) {
			continue
		}
		m := r.ValueMaps[field]
		if cur, err := (Values{Payload: payload}).lookup(field); err == nil {
			if _, ok := m[cur]; ok {
				continue
			}
		}
		pick := "approved"
		if _, ok := m[pick]; !ok {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			pick = keys[0]
		}
		b, _ := json.Marshal(pick)
		payload[field] = b
	}
	v.Payload = payload
	return v
}
