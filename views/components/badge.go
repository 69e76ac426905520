package components

import (
	"strconv"
	"strings"
	"time"
)

// BreakerData is the view model of BreakerBadge: an endpoint's circuit
// breaker state (DESIGN §6) and the operator switches that override it.
type BreakerData struct {
	State          string // closed | open | half_open
	Paused         bool   // paused by an operator
	Enabled        bool   // false: disabled (e.g. after a 410), nothing is sent
	DisabledReason string
	NextProbe      *time.Time // when an open breaker lets its probe through
	Now            time.Time
	// Budget is where the endpoint stands against its failure budget,
	// shown beside the badge by BudgetProgress.
	Budget BudgetData
}

// badgeView is what every badge renders: a tone, a short text, the value
// tests and scripts key on, and a longer explanation for the tooltip.
type badgeView struct {
	Tone  string
	Text  string
	State string
	Title string
}

// breakerView decides what an endpoint's badge says. Disabled wins over
// paused, and paused over the breaker state: they explain why nothing is sent
// regardless of what the breaker would allow.
func breakerView(b BreakerData) badgeView {
	switch {
	case !b.Enabled:
		title := "Disabled: nothing is sent to this endpoint"
		if b.DisabledReason != "" {
			title += " (" + b.DisabledReason + ")"
		}
		return badgeView{ToneMuted, "disabled", "disabled", title}
	case b.Paused:
		return badgeView{ToneMuted, "paused", "paused", "Paused by an operator: deliveries wait until it is resumed"}
	}
	switch b.State {
	case "closed":
		return badgeView{ToneOK, "closed", "closed", "Circuit closed: delivering normally"}
	case "half_open":
		return badgeView{ToneWarn, "half-open · probing", "half_open", "Circuit half-open: one probe decides whether deliveries resume"}
	case "open":
		text, title := "open", "Circuit open: deliveries are held, not attempted"
		if b.NextProbe != nil {
			when := Until(*b.NextProbe, b.Now)
			if when == "now" {
				text += " · probe due"
			} else {
				text += " · next probe " + when
			}
			title += "; next probe at " + Timestamp(*b.NextProbe)
		}
		return badgeView{ToneCritical, text, "open", title}
	case "":
		return badgeView{ToneMuted, "no data", "unknown", "No breaker state recorded yet"}
	}
	return badgeView{ToneMuted, strings.ReplaceAll(b.State, "_", "-"), b.State, "Breaker state " + b.State}
}

// latencyFlagBadges are the badges of the latency flags
// (worker/latency.Flag).
var latencyFlagBadges = map[string]badgeView{
	"ok":       {ToneOK, "ok", "ok", "P95 at or under 2 s"},
	"slow":     {ToneWarn, "slow", "slow", "P95 over 2 s: slower than it should be"},
	"critical": {ToneCritical, "critical", "critical", "P95 over 5 s: the breaker trips sooner"},
	"":         {ToneMuted, "no data", "unknown", "Not enough attempts to judge latency"},
}

// latencyFlagView maps a latency flag to a badge; an unknown one shows as
// it is.
func latencyFlagView(flag string) badgeView {
	return tableBadge(latencyFlagBadges, flag, flag)
}

// deliveryStatusBadges are the badges of the delivery statuses (DESIGN §2).
var deliveryStatusBadges = map[string]badgeView{
	"delivered":  {ToneOK, "delivered", "delivered", "Delivered"},
	"pending":    {ToneInfo, "pending", "pending", "Waiting for its next attempt"},
	"in_flight":  {ToneInfo, "in flight", "in_flight", "Being sent now"},
	"failed":     {ToneWarn, "failed · retrying", "failed", "The last attempt failed; it will be retried"},
	"dead":       {ToneCritical, "dead", "dead", "Out of attempts: a dead letter, can be replayed"},
	"skipped":    {ToneMuted, "skipped", "skipped", "Not sent: a value the endpoint's value map lacks (unmapped: skip)"},
	"suppressed": {ToneMuted, "suppressed", "suppressed", "Not sent: the conversion's status had not changed, or a newer event had already fired (fire_on: change)"},
}

// deliveryStatusView maps a delivery status to a badge; an unknown one
// shows as it is, its underscores as spaces.
func deliveryStatusView(status string) badgeView {
	return tableBadge(deliveryStatusBadges, status, strings.ReplaceAll(status, "_", " "))
}

// tableBadge is key's badge in table, or a muted one reading text.
func tableBadge(table map[string]badgeView, key, text string) badgeView {
	if v, ok := table[key]; ok {
		return v
	}
	return badgeView{ToneMuted, text, key, ""}
}

// httpStatusView colours a response status code; 0 means no response
// (timeout, connection refused, SSRF refusal).
func httpStatusView(code int) badgeView {
	s := strconv.Itoa(code)
	switch {
	case code <= 0:
		return badgeView{ToneCritical, "no response", "0", "No HTTP response"}
	case code < 300:
		return badgeView{ToneOK, s, s, "HTTP " + s}
	case code < 400:
		return badgeView{ToneInfo, s, s, "HTTP " + s}
	case code < 500:
		return badgeView{ToneWarn, s, s, "HTTP " + s}
	}
	return badgeView{ToneCritical, s, s, "HTTP " + s}
}
