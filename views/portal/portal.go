// Package portal renders the partner portal: its own page shell (the
// operator's product name, the partner's name, sign out), the partner's
// endpoints with their health, one endpoint with its actions (test event,
// pause, secret rotation, dead-letter replay, edit), the partner's event log
// and one event. It reuses the dashboard's components and view models; every
// link and form points under /portal/.
package portal

import (
	"strconv"
	"time"

	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/views/endpoint"
	"github.com/hookline/hookline/views/endpointform"
	"github.com/hookline/hookline/views/endpoints"
	"github.com/hookline/hookline/views/event"
	"github.com/hookline/hookline/views/layout"
)

// Navigation keys.
const (
	NavEndpoints = "endpoints"
	NavEvents    = "events"
	// NavConversions: conversions of endpoints that fire on a change.
	NavConversions = "conversions"
)

// Element ids of swappable fragments, shared with hx-target.
const (
	HealthID     = "portal-health"
	SecretsID    = "portal-secrets"
	TestResultID = "portal-test-result"
	DeadID       = "portal-dead"
	EditFormID   = "portal-edit-form"
	FormTestID   = "portal-form-test"
)

// Meta is what the portal shell needs to know about a page.
type Meta struct {
	Product string // the operator's product name (HOOKLINE_PORTAL_TITLE)
	Title   string
	Partner string // "" when signed out: no navigation
	CSRF    string
	Nav     string
	Flashes []layout.Flash
	Version string
	// CanManage: the operator allows this partner to create endpoints,
	// disable and enable them and change their event types.
	CanManage bool
}

func documentTitle(m Meta) string {
	if m.Title == "" {
		return m.Product
	}
	return m.Title + " · " + m.Product
}

// Home is /portal/: the partner's endpoints.
type Home struct {
	Rows []endpoints.Row
	Now  time.Time
}

// Endpoint is /portal/endpoints/{id}.
type Endpoint struct {
	ID         int64
	Name       string
	Kind       string
	Host       string
	URL        string // the partner's own URL or template
	Method     string
	Headers    []string // custom header names; values are never shown
	EventTypes []string
	Health     endpoint.Health
	Chart      components.ChartData
	Secrets    Secrets
	Dead       Dead
	Egress     endpoint.Egress // set by the operator; shown without values
	// Manage is the event types and disable / enable panel; nil unless the
	// operator allows this partner to manage its endpoints.
	Manage *Manage
}

// Secrets is the signing secrets panel; NewSecret is set once, right after
// a rotation.
type Secrets struct {
	EndpointID int64
	Kind       string
	List       []endpoint.Secret
	Now        time.Time
	NewSecret  string
	OldUntil   *time.Time
	CSRF       string
}

// Dead is the dead-letter panel: clusters and the newest dead letters,
// each replayable.
type Dead struct {
	EndpointID int64
	Clusters   []Cluster
	Recent     []DeadLetter
	Replayed   int  // after a replay: how many were queued again
	DidReplay  bool // a replay just ran
	CSRF       string
	Since      string // the "since" field as typed
	Error      string
}

// Cluster is the endpoint's dead letters with one error class and status.
type Cluster struct {
	Key          string
	ErrorClass   string
	StatusCode   int
	Count        int64
	FirstDeadAt  time.Time
	LastDeadAt   time.Time
	PrimaryError string
}

// DeadLetter is one dead delivery.
type DeadLetter struct {
	DeliveryID int64
	EventID    string
	EventType  string
	Attempts   int32
	DeadAt     time.Time
	Class      string
	StatusCode int
}

// Events is /portal/events.
type Events struct {
	Q       string
	Rows    []EventRow
	NextURL string
	Keys    []string // the search keys (click_id, ...)
}

// EventRow is one event of the log with the partner's deliveries of it.
type EventRow struct {
	ID         string
	Type       string
	CreatedAt  time.Time
	SearchKeys [][2]string
	Deliveries []Chip
}

// Chip is one delivery's status in the log.
type Chip struct {
	Endpoint string
	Status   string
}

// Event is /portal/events/{id}: the event and the partner's deliveries.
type Event struct {
	ID        string
	Type      string
	CreatedAt time.Time
	// Payload is the event body as a webhook carries it; "" when the
	// partner gets the event only as postbacks (which carry only the
	// template's values, not the producer's whole payload).
	Payload    string
	SearchKeys [][2]string
	Deliveries []event.Delivery
	CSRF       string
	Now        time.Time
}

// Edit is the endpoint form of the portal: URL or template and custom
// headers, validated like the operator's form.
type Edit struct {
	EndpointID int64
	Name       string
	Kind       string
	URL        string
	Headers    string
	Errors     map[string]string
	Preview    endpointform.Preview
	CSRF       string
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func endpointURL(id int64, verb string) string {
	u := "/portal/endpoints/" + itoa(id)
	if verb != "" {
		u += "/" + verb
	}
	return u
}

func eventURL(id string) string { return "/portal/events/" + id }

func errorList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range []string{"url", "headers", "method"} {
		if v, ok := m[k]; ok {
			out = append(out, k+": "+v)
		}
	}
	for k, v := range m {
		if k != "url" && k != "headers" && k != "method" {
			out = append(out, k+": "+v)
		}
	}
	return out
}

func secretState(s endpoint.Secret, now time.Time) (string, string) {
	switch {
	case s.ExpiresAt == nil:
		return components.ToneOK, "current"
	case s.ExpiresAt.After(now):
		return components.ToneWarn, "still signing until " + components.Timestamp(*s.ExpiresAt)
	}
	return components.ToneMuted, "expired " + components.Timestamp(*s.ExpiresAt)
}

func secretActive(s endpoint.Secret, now time.Time) bool {
	return s.ExpiresAt != nil && s.ExpiresAt.After(now)
}

// verifySnippet shows how to check a webhook's signature with the new
// secret (Standard Webhooks: any official library accepts hookline's
// requests).
func verifySnippet(secret string) string {
	return `# Python: pip install standardwebhooks
from standardwebhooks.webhooks import Webhook
wh = Webhook("` + secret + `")
payload = wh.verify(request_body, request_headers)  # raises if invalid

// Node.js: npm install standardwebhooks
import { Webhook } from "standardwebhooks";
const wh = new Webhook("` + secret + `");
const payload = wh.verify(rawBody, headers); // throws if invalid

// By hand: base64(HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{body}"))
// with key = base64-decode(the secret without "whsec_"), compared with each
// "v1,<signature>" in the webhook-signature header.`
}

func attemptsText(d event.Delivery) string {
	return strconv.Itoa(int(d.AttemptCount)) + " of " + strconv.Itoa(int(d.MaxAttempts)) + " attempts"
}
