package breaker

import "time"

// EarlyProbeGap divides the cooldown of a breaker whose last probe failed
// into the least time from that probe before a reachability check may call
// the next one early (ReachCheckDue): a quarter of the cooldown.
//
// A partner whose address accepts TCP connections and whose exchange then
// fails in the transport (a load balancer with no backend that resets, a
// server that crashes on every request) passes every check and fails every
// probe. Without the gap it would get a probe per check interval; with it
// the early probes of such a partner come 5 s, 150 s, 300 s, 600 s and
// then every 900 s after it opened, against the cooldown's 300 s, 600 s,
// 1,200 s, 2,400 s and 3,600 s. A partner that comes back after a failed
// probe waits at most the gap instead of the whole cooldown.
const EarlyProbeGap = 4

// ReachCheckDue reports whether, at now, the endpoint's owner should check
// whether the partner of an endpoint whose breaker is h accepts a TCP
// connection again, so that its probe is sent as soon as it does instead
// of one cooldown after the breaker opened (DESIGN §6).
//
// transport says the endpoint's latest attempt failed in the transport
// (connection refused or reset, host unreachable, dial timeout:
// sender.TransportFailure), direct that its requests leave without an
// egress proxy. Only then can a connection tell anything: a partner whose
// server answered 5xx or took the request and timed out accepts
// connections throughout, and through a proxy the connection would be to
// the proxy. Those breakers keep the cooldown's schedule.
//
// It is false while the breaker is not Open (closed, or half open with its
// probe in flight), Paused (no automatic probe at all), once the cooldown's
// own probe is due (StartProbe takes it), and within EarlyProbeGap of a
// failed probe.
func (p Policy) ReachCheckDue(h Health, transport, direct bool, now time.Time) bool {
	h = p.normalize(h)
	if h.Paused || h.State != Open || !transport || !direct {
		return false
	}
	if p.ProbeDue(h, now) {
		return false
	}
	if h.Cooldown > p.BaseCooldown && now.Before(h.OpenedAt.Add(h.Cooldown/EarlyProbeGap)) {
		return false
	}
	return true
}
