// Package components owns the dashboard's reusable view pieces: formatting of
// latencies, counts and times; server-rendered SVG sparklines and the latency
// chart; badges for breaker state, latency flags and delivery status; tiles,
// alerts, empty states, form fields and the copy box used to show a secret
// once. Every component takes plain values or a view-model struct and carries
// a data-testid, so page packages can be tested with goquery.
package components

import "strings"

// Tones are the semantic colours shared by badges, tiles, alerts and
// sparklines. Each maps to a CSS modifier class, e.g. "badge-warn".
const (
	ToneOK       = "ok"       // green: healthy, delivered
	ToneWarn     = "warn"     // amber: slow, half-open, retrying
	ToneCritical = "critical" // red: critical, open, dead
	ToneInfo     = "info"     // blue: neutral information
	ToneMuted    = "muted"    // grey: paused, disabled, no data
)

// Latency thresholds of DESIGN §7, in milliseconds. They mirror
// worker/latency.SlowP95 and CriticalP95 (a test keeps them equal) and are
// drawn as dashed guides on charts.
const (
	SlowMs     = 2000.0
	CriticalMs = 5000.0
)

// Link is a labelled URL, used by alerts, empty states and breadcrumbs.
type Link struct {
	Label string
	Href  string
}

// toneOr returns tone when it is one of the known tones, and def otherwise,
// so an unknown value never produces an unstyled class.
func toneOr(tone, def string) string {
	switch tone {
	case ToneOK, ToneWarn, ToneCritical, ToneInfo, ToneMuted:
		return tone
	}
	return def
}

// FragmentID builds a stable, valid HTML id from parts, for fragments that
// htmx swaps: the same helper renders the element's id and the hx-target that
// points at it. Parts are lower-cased and joined with "-"; any run of
// characters other than ASCII letters, digits, "-" and "_" becomes one "-",
// so the id is also a plain CSS selector. An id never starts with a digit.
//
//	FragmentID("endpoint-row", "42") == "endpoint-row-42"
func FragmentID(parts ...string) string {
	var b strings.Builder
	pendingDash := false
	for _, p := range parts {
		for _, r := range strings.ToLower(p) {
			ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' || r == '-'
			if !ok || r == '-' {
				pendingDash = b.Len() > 0
				continue
			}
			if pendingDash {
				b.WriteByte('-')
				pendingDash = false
			}
			b.WriteRune(r)
		}
		pendingDash = b.Len() > 0
	}
	id := b.String()
	if id == "" || (id[0] >= '0' && id[0] <= '9') || id[0] == '_' {
		id = "id-" + id
	}
	return strings.TrimSuffix(id, "-")
}

// Target returns the hx-target selector for a FragmentID.
func Target(id string) string { return "#" + id }
