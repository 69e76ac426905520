package web

import (
	"fmt"
	"math"
	"time"
)

// diagnosis explains a dead-letter cluster the way the article reads dead
// letters, and says what to do about it.
type diagnosis struct {
	Pattern string `json:"pattern"` // gone | credentials | rate_limited | outage_burst | trickle | payload | blocked | tls | proxy | token | egress_settings | rejected_by_tracker | client_error | failing
	Summary string `json:"summary"`
	Action  string `json:"action"`
}

// Burst and trickle thresholds: 20+ in one hour holding most of the cluster
// is an outage the retries did not outlast; a few per hour over several
// hours is an intermittent failure exhausting the retries.
const (
	burstMinInHour    = 20
	trickleMinHours   = 3
	trickleMaxPerHour = 3
)

// classDiagnoses are the error classes that name their cause by
// themselves, whatever the timing of the cluster.
var classDiagnoses = map[string]diagnosis{
	"missing_field":       {Pattern: "payload", Summary: "The events lack a field the postback template needs, so nothing was sent.", Action: "Fix the producer to include the field, or the template to stop using it, then replay this cluster."},
	"blocked_destination": {Pattern: "blocked", Summary: "The endpoint's host resolves to an address the SSRF guard refuses (private, loopback or metadata).", Action: "Correct the URL; for on-premise receivers, allow the network with HOOKLINE_ALLOW_NETWORKS. Then replay."},
	"tls":                 {Pattern: "tls", Summary: "The TLS handshake failed: the receiver's certificate is not trusted (expired, wrong name, or from a private CA), or the receiver refused our client certificate (missing, expired, or not from a CA it accepts). The attempt's error says which.", Action: "For a private CA, add the partner's CA bundle to the endpoint; for mutual TLS, upload the client certificate the partner issued (its expiry shows on the endpoint page). Then replay this cluster."},
	"proxy":               {Pattern: "proxy", Summary: "The egress proxy refused to connect to the receiver (its answer is in the attempt's error: 403 is its access rules, 407 wants credentials).", Action: "Allow the receiver's address and port in the proxy's rules (for plain HTTP receivers, CONNECT to their port), or choose another proxy or direct for the endpoint; then replay."},
	"oauth2_token":        {Pattern: "token", Summary: "No OAuth2 token could be had from the partner's token endpoint, so nothing was sent (the attempt's error has the endpoint's status and error code, e.g. invalid_client).", Action: "Check the endpoint's token URL, client id, secret, scopes and audience with the partner; once a token is issued, replay this cluster."},
	"egress_settings":     {Pattern: "egress_settings", Summary: "The endpoint's stored egress settings (client key or credentials) could not be opened, so nothing was sent: they were sealed under another HOOKLINE_SECRET_KEY, or are corrupt.", Action: "Enter the client certificate or the credentials again on the endpoint, then replay this cluster."},
	"body_mismatch":       {Pattern: "rejected_by_tracker", Summary: "The tracker answered 2xx without the expected success text (trackers answer 200 with \"duplicate\" or \"error\").", Action: "Read a response excerpt on the endpoint page: duplicates need no action; errors need the postback parameters fixed before a replay."},
}

// diagnose classifies one cluster. Status-code patterns come first (they
// name the cause); timing patterns apply to everything else.
func diagnose(c cluster, windowHours int) diagnosis {
	switch {
	case c.StatusCode == 410 || c.ErrorClass == "gone":
		d := diagnosis{Pattern: "gone",
			Summary: "The partner answered 410 Gone: the URL no longer exists, and hookline disabled the endpoint.",
			Action:  "Get the new URL from the partner, update and re-enable the endpoint, then replay this cluster."}
		if c.EndpointOn {
			d.Action = "The endpoint was re-enabled; replay this cluster if the URL is fixed."
		}
		return d
	case c.StatusCode == 401 || c.StatusCode == 403:
		return diagnosis{Pattern: "credentials",
			Summary: fmt.Sprintf("The partner refused our requests with %d: it probably rotated its credentials and the endpoint's configuration was not updated.", c.StatusCode),
			Action:  "Fix the endpoint's credentials (custom headers or the secret the partner verifies) with the partner, then replay this cluster."}
	case c.StatusCode == 429:
		return diagnosis{Pattern: "rate_limited",
			Summary: "The partner answered 429 Too Many Requests: we send faster than it accepts.",
			Action:  "Lower the endpoint's rate limit (rate_per_sec, burst) to the partner's quota, then replay this cluster; replays respect the limit."}
	}
	if d, ok := classDiagnoses[c.ErrorClass]; ok {
		return d
	}
	noRetries := c.maxAttempts == 1
	if c.MaxInOneHour >= burstMinInHour && c.MaxInOneHour*2 >= c.Count {
		d := diagnosis{Pattern: "outage_burst",
			Summary: fmt.Sprintf("%d dead letters within one hour: the endpoint was down longer than the retry window (%s).", c.MaxInOneHour, attemptsEach(c.AvgAttempts)),
			Action:  "Replay this cluster once the endpoint is healthy again (its breaker closed); if outages this long are normal for the partner, raise max_attempts."}
		if noRetries {
			d.Summary = fmt.Sprintf("%d dead letters within one hour: the endpoint was down, and with a single attempt per delivery (max_attempts 1) nothing was retried.", c.MaxInOneHour)
			d.Action = "Replay this cluster once the endpoint is healthy again (its breaker closed); raise max_attempts so that short outages are retried instead of dropped."
		}
		return d
	}
	if c.HoursWithDead >= trickleMinHours && c.Count <= c.HoursWithDead*trickleMaxPerHour {
		span := spanText(c.LastDeadAt.Sub(c.FirstDeadAt))
		d := diagnosis{Pattern: "trickle",
			Summary: fmt.Sprintf("A few dead letters spread over %s: the endpoint works most of the time but fails intermittently, and the retries run out.", span),
			Action:  "Raise max_attempts for this endpoint, or lower its timeout if the failures are timeouts; then replay this cluster."}
		if noRetries {
			d.Summary = fmt.Sprintf("A few dead letters spread over %s: the endpoint works most of the time but fails now and then, and with a single attempt per delivery (max_attempts 1) every failure is final.", span)
		}
		return d
	}
	if c.StatusCode >= 400 && c.StatusCode < 500 {
		return diagnosis{Pattern: "client_error",
			Summary: fmt.Sprintf("The partner rejected the requests with %d.", c.StatusCode),
			Action:  "Read a response excerpt on the endpoint page, fix the configuration or the payload with the partner, then replay."}
	}
	d := diagnosis{Pattern: "failing",
		Summary: fmt.Sprintf("The endpoint kept failing (%s) until the retries ran out.", describeFailure(c)),
		Action:  "Check the endpoint's health; replay this cluster once it answers again."}
	if noRetries {
		d.Summary = fmt.Sprintf("The endpoint failed (%s) on the only attempt it allows (max_attempts 1): nothing was retried.", describeFailure(c))
		d.Action = "Check the endpoint's health; replay this cluster once it answers again, and raise max_attempts if these failures are passing."
	}
	return d
}

// spanText reads a time span in whole hours, or days past two of them.
func spanText(d time.Duration) string {
	h := int(d.Round(time.Hour).Hours())
	switch {
	case h >= 48:
		return fmt.Sprintf("%d days", int(math.Round(d.Hours()/24)))
	case h <= 1:
		return "about an hour"
	}
	return fmt.Sprintf("%d hours", h)
}

// attemptsEach reads an average attempt count: "1 attempt each", "5
// attempts each", "4.5 attempts each on average".
func attemptsEach(avg float64) string {
	switch {
	case avg == 1:
		return "1 attempt each"
	case avg == math.Trunc(avg):
		return fmt.Sprintf("%.0f attempts each", avg)
	}
	return fmt.Sprintf("%.1f attempts each on average", avg)
}

func describeFailure(c cluster) string {
	switch {
	case c.StatusCode >= 500:
		return fmt.Sprintf("HTTP %d", c.StatusCode)
	case c.ErrorClass == "timeout":
		return "timeouts"
	case c.ErrorClass == "connect":
		return "connections refused or reset"
	case c.ErrorClass == "dns":
		return "DNS failures"
	case c.ErrorClass == "tls":
		return "TLS errors"
	case c.ErrorClass != "":
		return c.ErrorClass
	}
	return "errors"
}
