// Package endpoint renders one endpoint's page: its latency chart, breaker
// and controls, recent attempts, configuration, signing secrets with
// rotation, and the test fire.
package endpoint

import (
	"net/url"
	"strconv"
	"time"

	"github.com/hookline/hookline/views/components"
)

// Fragment ids swapped by htmx.
const (
	HealthID     = "endpoint-health"
	AttemptsID   = "endpoint-attempts"
	SecretsID    = "endpoint-secrets"
	TestResultID = "test-result"
	// Sections the page's own navigation links to.
	LatencyID  = "endpoint-latency"
	TestFireID = "endpoint-test"
	ConfigID   = "endpoint-config"
)

// PageData is the whole endpoint page.
type PageData struct {
	Config     Config
	Health     Health
	Chart      components.ChartData
	Attempts   Attempts
	Secrets    Secrets
	CanOperate bool
	Signed     SignedPostback // a signed postback's verification help
	Egress     Egress         // how its requests leave
}

// Config is what the endpoint is.
type Config struct {
	ID                  int64
	Name, Partner       string
	PartnerID           int64
	Kind, Method        string
	URL                 string // the webhook URL, or the postback template (macros, no values)
	Host                string
	EventTypes          []string
	HeaderNames         []string // names only: values may be credentials
	MaxAttempts         int32
	RetryWindow         string // worst-case time spent retrying, from the backoff
	TimeoutMs           int32
	Rate                string // "20 /s, burst 20" or "unlimited"
	MaxInFlight         int32
	FailureThreshold    int32
	SuccessBodyContains string
	Enabled             bool
	DisabledReason      string
	CreatedAt           time.Time
}

// Health is the live panel: breaker, latency figures and queue.
type Health struct {
	EndpointID    int64
	Breaker       components.BreakerData
	Latency       string
	P50, P95, P99 *float64
	RecentP95     *float64
	Samples       int64
	SuccessRate   *float64
	Failures      int32
	Threshold     int32
	Cooldown      time.Duration
	LastSuccess   time.Time
	LastFailure   time.Time
	PausedUntil   *time.Time // a partner's Retry-After
	Queue, Dead   int64
	Now           time.Time
	CanOperate    bool
}

// Attempts is the attempt log: one page, newest first, of every attempt or
// of the failures only.
type Attempts struct {
	EndpointID int64
	List       []Attempt
	AttemptFilter
	// Before is the cursor this page starts after ("" for the newest);
	// Older is the cursor of the next page back ("" when there is none).
	Before, Older string
}

// AttemptFilter chooses which attempts the log shows.
type AttemptFilter struct {
	FailuresOnly bool
	StatusCode   int    // 0: any
	Window       string // "" (every attempt kept), or one of AttemptWindows
}

// AttemptWindows are the time ranges the attempt log offers, newest back.
var AttemptWindows = []string{"1h", "24h", "7d"}

// Filtered reports whether anything narrows the log.
func (f AttemptFilter) Filtered() bool {
	return f.FailuresOnly || f.StatusCode != 0 || f.Window != ""
}

// AttemptsURL is the endpoint page showing an attempt log page under
// filter f, starting after the cursor before ("" for the newest). Plain
// links to it work without JavaScript; htmx swaps the log.
func AttemptsURL(endpointID int64, f AttemptFilter, before string) string {
	v := url.Values{}
	if f.FailuresOnly {
		v.Set("attempts", "failed")
	}
	if f.StatusCode != 0 {
		v.Set("status_code", strconv.Itoa(f.StatusCode))
	}
	if f.Window != "" {
		v.Set("window", f.Window)
	}
	if before != "" {
		v.Set("before", before)
	}
	u := "/endpoints/" + idStr(endpointID)
	if len(v) > 0 {
		u += "?" + v.Encode()
	}
	return u
}

// EventLogURL is the event log filtered to this endpoint (and to its
// dead or retrying deliveries when only failures are shown).
func (a Attempts) EventLogURL() string {
	return "/events?endpoint_id=" + idStr(a.EndpointID)
}

// EventURL is an attempt's event page, opened at its delivery.
func (at Attempt) EventURL() string {
	return "/events/" + at.EventID + "#delivery-" + idStr(at.DeliveryID)
}

// Attempt is one row of the attempt log.
type Attempt struct {
	At         time.Time
	DeliveryID int64
	EventID    string
	AttemptNo  int32
	Outcome    string
	StatusCode int
	Class      string
	DurationMs float64
	Error      string
	Excerpt    string
}

// Secrets is the secrets panel; NewSecret is set once, right after a rotation.
type Secrets struct {
	EndpointID int64
	List       []Secret
	NewSecret  string
	OldUntil   *time.Time
	Now        time.Time
	CanOperate bool
}

// Secret is a signing secret's metadata: never its value.
type Secret struct {
	ID        int64
	CreatedAt time.Time
	ExpiresAt *time.Time
}

// TestResult is what a test fire shows.
type TestResult struct {
	Request    string // method, URL, headers and body as sent
	Outcome    string
	Class      string
	StatusCode int
	DurationMs float64
	Error      string
	Excerpt    string
	// ExcerptHidden: the answer came from an address that is not public
	// and is not shown (the partner portal).
	ExcerptHidden bool
	RemoteAddr    string
	Verdicts      []Verdict
	// Left is how the request left (proxy, TLS, client certificate,
	// credential kind); nil when nothing was sent.
	Left *TestEgress
}

// TestEgress is how a test fire left: never a key or a value.
type TestEgress struct {
	Proxy      string // "direct", the proxy's URL, or "egress proxy" in the portal
	TLS        string // "TLS 1.3, session resumed", "plain HTTP"
	ClientCert string // the subject offered, "" for none
	Credential string // none | basic | oauth2
}

// Verdict is the SSRF guard's decision on one resolved address.
type Verdict struct {
	Addr    string
	Allowed bool
	Reason  string
}

func idStr(id int64) string { return strconv.FormatInt(id, 10) }

func statusCodeValue(code int) string {
	if code == 0 {
		return ""
	}
	return strconv.Itoa(code)
}

func action(id int64, verb string) string { return "/endpoints/" + idStr(id) + "/" + verb }

func outcomeTone(o string) string {
	switch o {
	case "ok":
		return components.ToneOK
	case "transient":
		return components.ToneWarn
	}
	return components.ToneCritical
}

func secretState(s Secret, now time.Time) (string, string) {
	switch {
	case s.ExpiresAt == nil:
		return components.ToneOK, "current"
	case s.ExpiresAt.After(now):
		return components.ToneWarn, "signing until " + components.Timestamp(*s.ExpiresAt)
	}
	return components.ToneMuted, "expired " + components.Timestamp(*s.ExpiresAt)
}
