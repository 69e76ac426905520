// Package event renders one event's page: its payload, and for every
// delivery the endpoint, status, attempts as a timeline, the exact request
// hookline sends (redacted) with "copy as curl", and a resend button.
package event

import (
	"strconv"
	"time"

	"github.com/hookline/hookline/views/components"
)

// PageData is /events/{id}.
type PageData struct {
	ID             string
	Type           string
	CreatedAt      time.Time
	IdempotencyKey string
	Partner        string // the partner the event was addressed to, "" for all
	Payload        string // pretty-printed JSON
	SearchKeys     [][2]string
	Deliveries     []Delivery
	// Filtered are the endpoints that take this event's type but whose
	// payload filter, as it reads now, rejects it: they got no delivery.
	Filtered   []FilteredEndpoint
	CanOperate bool
	CSRF       string
	Now        time.Time
}

// FilteredEndpoint is an endpoint whose payload filter rejects the event.
type FilteredEndpoint struct {
	ID      int64
	Name    string
	Partner string
	Filter  string
}

// Delivery is one endpoint's delivery of the event.
type Delivery struct {
	ID            int64
	EndpointID    int64
	Endpoint      string
	PartnerID     int64
	Partner       string
	Status        string
	AttemptCount  int32
	MaxAttempts   int32
	NextAttemptAt *time.Time // pending or awaiting retry only
	Attempts      []Attempt
	// Request is the request as hookline sends it, redacted (custom
	// header values masked); Curl the same as a curl command. RequestNote
	// says which attempt it shows, or why none can be built.
	Request     string
	Curl        string
	RequestNote string
}

// Attempt is one attempt of a delivery.
type Attempt struct {
	No         int32
	At         time.Time
	DurationMs float64
	Outcome    string
	StatusCode int
	Class      string
	Error      string
	Excerpt    string
	// Egress is how the attempt left; nil when it never did (or was
	// recorded before attempts kept it).
	Egress *AttemptEgress
}

// AttemptEgress is how one attempt left: never a key or a value.
type AttemptEgress struct {
	Proxy      string // "direct", the proxy's URL, or "egress proxy" in the portal
	TLSVersion string // "TLS 1.3"; "" for plain HTTP
	Resumed    bool
	ClientCert string // the client certificate's subject, "" for none
	Credential string // none | basic | oauth2
}

// TLS is the attempt's TLS as the log shows it.
func (e AttemptEgress) TLS() string {
	switch {
	case e.TLSVersion == "":
		return "plain HTTP"
	case e.Resumed:
		return e.TLSVersion + ", session resumed"
	}
	return e.TLSVersion + ", full handshake"
}

// CurlID is the element id of a delivery's curl command.
func CurlID(id int64) string { return components.FragmentID("curl", itoa(id)) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func strconvAttempts(d Delivery) string {
	return strconv.Itoa(int(d.AttemptCount)) + " of " + strconv.Itoa(int(d.MaxAttempts)) + " attempts"
}
