// Package notify owns what an operator notification is: the kinds a
// channel can subscribe to, the rate limit that keeps a flapping endpoint
// from flooding a channel, and the text and JSON a notification carries.
// It is pure: the worker reads the outbox (the notifications table),
// applies Limiter, and hands the documents Compose builds to its own
// delivery engine.
package notify

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Kind is what happened.
type Kind string

// The kinds a channel can subscribe to.
const (
	BreakerOpened    Kind = "breaker.opened"
	BreakerClosed    Kind = "breaker.closed"
	EndpointWarned   Kind = "endpoint.warned"
	EndpointDisabled Kind = "endpoint.disabled"
	EndpointEnabled  Kind = "endpoint.enabled"
	AlertFired       Kind = "alert.fired"
	AlertResolved    Kind = "alert.resolved"
	DeadLetterNew    Kind = "dead_letters.new_cluster"
	// BreakerHeldOpen: the breaker has stayed open longer than the
	// worker's threshold (HeldOpenAfter), once per opening.
	BreakerHeldOpen Kind = "breaker.held_open"
	// CertificateExpiring: the endpoint's client certificate expires
	// within 30 or 7 days (the subject), once per certificate and horizon.
	CertificateExpiring Kind = "certificate.expiring"
	// Test is a channel's test notification; it is sent whatever the
	// channel subscribes to and is never rate-limited.
	Test Kind = "test"
)

// Kinds lists the subscribable kinds, in the order forms show them, with
// a label each.
var Kinds = []struct {
	Kind  Kind
	Label string
}{
	{BreakerOpened, "Breaker opened"},
	{BreakerClosed, "Breaker closed"},
	{EndpointWarned, "Endpoint warned (50/70/90 % of its failure budget)"},
	{EndpointDisabled, "Endpoint disabled"},
	{EndpointEnabled, "Endpoint re-enabled"},
	{AlertFired, "Pipeline alert fired"},
	{AlertResolved, "Pipeline alert resolved"},
	{DeadLetterNew, "New dead-letter cluster"},
	{BreakerHeldOpen, "Breaker open for longer than 30 min"},
	{CertificateExpiring, "Client certificate expiring (30 and 7 days ahead)"},
}

// PartnerKinds are what a partner's own contacts hear about its
// endpoints: what the partner can act on by fixing its server or
// certificate.
var PartnerKinds = []string{string(EndpointWarned), string(EndpointDisabled), string(EndpointEnabled),
	string(BreakerHeldOpen), string(CertificateExpiring)}

// ParseKinds validates a channel's kind list: known kinds, at least one,
// duplicates dropped, in catalogue order.
func ParseKinds(in []string) ([]string, error) {
	want := map[string]bool{}
	for _, k := range in {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if !Known(Kind(k)) {
			return nil, fmt.Errorf("unknown kind %q", k)
		}
		want[k] = true
	}
	if len(want) == 0 {
		return nil, errors.New("choose at least one kind")
	}
	out := make([]string, 0, len(want))
	for _, k := range Kinds {
		if want[string(k.Kind)] {
			out = append(out, string(k.Kind))
		}
	}
	return out, nil
}

// Known reports whether k is a subscribable kind.
func Known(k Kind) bool {
	return slices.ContainsFunc(Kinds, func(e struct {
		Kind  Kind
		Label string
	}) bool {
		return e.Kind == k
	})
}

// Window is the rate limit: at most one notification per endpoint, kind
// and subject in this time.
const Window = 15 * time.Minute

// Limiter decides, for one endpoint, kind and subject, which of its
// pending notifications go out now. Rows held back inside the window are
// not lost: once the window has passed, the newest one goes out and says
// how many it stands for ("opened 4 times in the last 15 min"), and the
// others are suppressed.
type Limiter struct {
	Window time.Duration
}

// Decision is what to do with one key's pending rows.
type Decision struct {
	Send     int64   // the row to send now; 0 to wait
	Repeats  int     // how many other rows Send summarises
	Suppress []int64 // rows folded into Send
	// Wait is when to look again (zero when Send is set or nothing waits).
	Wait time.Time
}

// Decide takes the key's pending row ids, oldest first, and when one was
// last sent (zero: never).
func (l Limiter) Decide(pending []int64, lastSent, now time.Time) Decision {
	if len(pending) == 0 {
		return Decision{}
	}
	if !lastSent.IsZero() && now.Sub(lastSent) < l.Window {
		return Decision{Wait: lastSent.Add(l.Window)}
	}
	last := len(pending) - 1
	return Decision{Send: pending[last], Repeats: last, Suppress: slices.Clone(pending[:last])}
}

// Message is one notification, with what the outbox row and its endpoint
// say.
type Message struct {
	Kind         Kind
	Subject      string // the warning level, the alert's name
	EndpointID   int64
	Endpoint     string
	Partner      string
	Figures      map[string]any
	Repeats      int // other occurrences this one summarises (rate limit)
	OccurredAt   time.Time
	DashboardURL string // the page to look at; empty without a public URL
}

// HeldOpenAfter is how long a breaker stays open before BreakerHeldOpen.
const HeldOpenAfter = 30 * time.Minute

// Text is the one-paragraph message: what happened, to which endpoint and
// partner, the figures, and a link.
func Text(m Message) string {
	b := parts(m)
	if b.link != "" {
		return b.text + " " + b.link
	}
	return b.text
}

// composed is a message's text (what happened, the figures, the
// summary of repeats) apart from its link, for the styles that show the
// link on its own.
type composed struct {
	sentence, figures, repeats string
	text, link                 string
	rows                       []figureRow
}

func parts(m Message) composed {
	var b strings.Builder
	who := fmt.Sprintf("endpoint %q of partner %q", m.Endpoint, m.Partner)
	switch m.Kind {
	case BreakerOpened:
		fmt.Fprintf(&b, "Breaker opened for %s: deliveries are held until a probe succeeds.", who)
	case BreakerClosed:
		fmt.Fprintf(&b, "Breaker closed for %s: deliveries flow again.", who)
	case EndpointWarned:
		fmt.Fprintf(&b, "Warning: %s has used %s %% of its failure budget.", who, m.Subject)
	case EndpointDisabled:
		fmt.Fprintf(&b, "Disabled: %s. New deliveries are kept queued until it is re-enabled.", who)
	case EndpointEnabled:
		fmt.Fprintf(&b, "Re-enabled: %s; its queued deliveries are being sent.", who)
	case AlertFired:
		fmt.Fprintf(&b, "Pipeline alert %s fired.", m.Subject)
	case AlertResolved:
		fmt.Fprintf(&b, "Pipeline alert %s resolved.", m.Subject)
	case DeadLetterNew:
		fmt.Fprintf(&b, "New dead-letter cluster on %s (%s).", who, m.Subject)
	case BreakerHeldOpen:
		fmt.Fprintf(&b, "Breaker still open for %s: deliveries have been held for over %s; the receiver keeps failing.", who, fmtWindow(HeldOpenAfter))
	case CertificateExpiring:
		fmt.Fprintf(&b, "The client certificate of %s expires within %s days: upload a new one before it does.", who, m.Subject)
	case Test:
		b.WriteString("Test notification from hookline: this channel works.")
	default:
		fmt.Fprintf(&b, "%s: %s.", m.Kind, who)
	}
	c := composed{sentence: b.String(), link: m.DashboardURL}
	if len(m.Figures) > 0 {
		keys := make([]string, 0, len(m.Figures))
		for k := range m.Figures {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		list := make([]string, 0, len(keys))
		for _, k := range keys {
			row := figureRow{strings.ReplaceAll(k, "_", " "), fmt.Sprint(m.Figures[k])}
			c.rows = append(c.rows, row)
			list = append(list, row.Name+": "+row.Value)
		}
		c.figures = strings.Join(list, "; ") + "."
		b.WriteString(" " + c.figures)
	}
	if m.Repeats > 0 {
		c.repeats = fmt.Sprintf("%d more like this since the last notification, summarised; at most one per %s.",
			m.Repeats, fmtWindow(Window))
		b.WriteString(" (" + c.repeats + ")")
	}
	c.text = b.String()
	return c
}

func fmtWindow(d time.Duration) string {
	return fmt.Sprintf("%d min", int(d/time.Minute))
}

// Document is the JSON body a webhook channel receives.
type Document struct {
	Kind       Kind           `json:"kind"`
	Subject    string         `json:"subject,omitempty"`
	Text       string         `json:"text"`
	Endpoint   *EndpointRef   `json:"endpoint,omitempty"`
	Figures    map[string]any `json:"figures,omitempty"`
	Repeats    int            `json:"repeats"`
	OccurredAt time.Time      `json:"occurred_at"`
	URL        string         `json:"url,omitempty"`
}

// EndpointRef names the endpoint a notification is about.
type EndpointRef struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Partner string `json:"partner"`
}

// Compose is the body for a channel of the given style: "chat" gets the
// common incoming-webhook shape {"text": ...}; "webhook" the Document.
func Compose(style string, m Message) any {
	text := Text(m)
	switch style {
	case "chat":
		return map[string]string{"text": text}
	case "email":
		return ComposeEmail(m)
	}
	d := Document{Kind: m.Kind, Subject: m.Subject, Text: text, Figures: m.Figures, Repeats: m.Repeats,
		OccurredAt: m.OccurredAt.UTC(), URL: m.DashboardURL}
	if m.EndpointID != 0 {
		d.Endpoint = &EndpointRef{ID: m.EndpointID, Name: m.Endpoint, Partner: m.Partner}
	}
	return d
}

// Link is the dashboard page for a notification, under base (the public
// URL, no trailing slash); empty when base is.
func Link(base string, k Kind, endpointID int64) string {
	if base == "" {
		return ""
	}
	base = strings.TrimRight(base, "/")
	switch {
	case k == DeadLetterNew:
		return base + "/dead-letters"
	case endpointID != 0:
		return fmt.Sprintf("%s/endpoints/%d", base, endpointID)
	case k == AlertFired || k == AlertResolved:
		return base + "/"
	}
	return base + "/"
}
