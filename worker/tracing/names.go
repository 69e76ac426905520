package tracing

import "go.opentelemetry.io/otel/attribute"

// hookline's spans, in the order one event meets them
// (worker/architecture.md, "Traces"). The ingest request's span is named
// for its route, as HTTP server spans are: "POST /api/v1/events" or
// "POST /api/v1/events/batch".
const (
	// SpanFanOut: the ingest transaction that stores the events and
	// queues their deliveries; a child of the ingest request's span.
	SpanFanOut = "hookline.fanout"
	// SpanClaim: one claim of due deliveries by a worker (a root span,
	// linked to the traces of the events it claimed).
	SpanClaim = "hookline.claim"
	// SpanAttempt: one delivery attempt, a client span whose parent is the
	// ingest request's span of the event, stored with the event.
	SpanAttempt = "hookline.attempt"
	// SpanComplete: one completion batch recording attempts (a root span,
	// linked to the attempts it records).
	SpanComplete = "hookline.complete"
)

// Attributes of hookline's spans beside the semantic conventions' own
// (http.request.method, http.route, http.response.status_code,
// error.type).
const (
	EventID    = attribute.Key("hookline.event.id")
	EventType  = attribute.Key("hookline.event.type")
	DeliveryID = attribute.Key("hookline.delivery.id")
	EndpointID = attribute.Key("hookline.endpoint.id")
	PartnerID  = attribute.Key("hookline.partner.id")
	Attempt    = attribute.Key("hookline.attempt")          // 1 for the first attempt
	Outcome    = attribute.Key("hookline.outcome")          // ok, transient, permanent or gone
	DurationMs = attribute.Key("hookline.duration_ms")      // the attempt as the sender timed it
	Events     = attribute.Key("hookline.events")           // events stored (fan-out)
	Rejected   = attribute.Key("hookline.rejected")         // events refused (ingest)
	Deliveries = attribute.Key("hookline.deliveries")       // deliveries queued (fan-out) or claimed
	Asked      = attribute.Key("hookline.claim.asked")      // rows a claim had room for
	Everywhere = attribute.Key("hookline.claim.everywhere") // it looked at every endpoint, not only those a wake-up named
	Results    = attribute.Key("hookline.results")          // results in a completion batch
	Try        = attribute.Key("hookline.complete.try")     // 1, or a retry after the database failed
	StatusCode = attribute.Key("http.response.status_code")
	ErrorType  = attribute.Key("error.type")
	HTTPMethod = attribute.Key("http.request.method")
	HTTPRoute  = attribute.Key("http.route")
)

// MaxLinks bounds the links of a batch span (a claim or a completion):
// the SDK's default limit, beyond which it drops them anyway.
const MaxLinks = 128
