// Package request builds the one HTTP request an event becomes for an
// endpoint: method, URL (a postback template rendered with the event's
// values), headers (custom headers, then hookline's own, so they cannot be
// overridden, with the Standard Webhooks signature), and body. The worker,
// the dashboard's test fire and the event log all build through Build, so
// what an operator is shown is what a receiver gets. It also renders the
// request for people: the exact text, a redacted view and "copy as curl".
//
// It is pure: no database, no network, and the attempt's time is an input.
package request

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/signing"
)

// Endpoint kinds.
const (
	KindWebhook  = "webhook"
	KindPostback = "postback"
)

// Endpoint is what Build needs of an endpoint's settings.
type Endpoint struct {
	Kind string // KindWebhook (the default) or KindPostback
	// URL is the webhook URL, or the postback URL template.
	URL string
	// Template is URL parsed, for callers that cache parsed templates;
	// Build parses URL in MacroStyle when it is nil.
	Template *postback.Template
	// MacroStyle is how a postback template writes its macros; "" means
	// braces.
	MacroStyle postback.Style
	// SignatureParam, when set on a postback, signs its URL: see Build.
	SignatureParam string
	// Rules are a postback's value maps and payout share; nil for none.
	Rules *postback.Rules
	// BodyTemplate and BodyFormat make a postback's body (a POST postback);
	// Body is them parsed, for callers that cache it (Build parses them
	// when it is nil). BodySignature "webhook" signs the body with
	// Standard Webhooks headers.
	BodyTemplate, BodyFormat, BodySignature string
	Body                                    *postback.Body
	Method                                  string      // "" means GET
	Header                                  http.Header // opened custom headers; never modified
	TimeoutMs                               int32
	SuccessBodyContains                     string
}

// Event is the event being delivered, and which attempt this is.
type Event struct {
	ID      string // sent as webhook-id, and the {event_id} macro
	Type    string
	Payload json.RawMessage // the exact stored JSON bytes: a webhook's body
	Attempt int             // 1 for the first attempt
}

// Request is a built request: what the sender sends (with the payload
// values rendered into a postback URL in Redact, since trackers echo them
// back in their answers), plus what is needed to show it safely.
type Request struct {
	sender.Request
	// template is the postback template the URL was rendered from: the
	// redacted view shows it, since only it knows which parts are values.
	template *postback.Template
	// signatureParam and signedAt describe a signed postback's added
	// parameters, for the redacted view.
	signatureParam string
	signedAt       int64
	// body is a postback's body template: the redacted view shows it in
	// place of the values.
	body *postback.Body
}

// Build builds the request for ev's attempt at time now. keys are the
// endpoint's active signing keys, newest first. They sign a webhook with
// Standard Webhooks headers (every key of a rotation overlap signs). A
// postback is signed only when ep.SignatureParam is set: see SignPostback
// for the scheme and for which key signs. A postback whose template does
// not parse or whose payload lacks a macro's field is an error (a
// *postback.MissingFieldError for the latter, a *postback.UnmappedError
// for a value ep.Rules may not send): nothing can be sent. A postback with
// a body template (a POST postback) carries the body rendered with the same
// values and rules, signed with Standard Webhooks headers when
// ep.BodySignature is BodySignatureWebhook.
func Build(ep Endpoint, keys [][]byte, ev Event, now time.Time) (Request, error) {
	r := Request{Request: sender.Request{
		Method:              ep.Method,
		Header:              ep.Header.Clone(),
		Timeout:             time.Duration(ep.TimeoutMs) * time.Millisecond,
		SuccessBodyContains: ep.SuccessBodyContains,
	}}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	for name := range r.Header {
		if signing.Reserved(name) { // refused at save time too
			delete(r.Header, name)
		}
	}
	switch ep.Kind {
	case KindPostback:
		t := ep.Template
		if t == nil {
			style := ep.MacroStyle
			if style == "" {
				style = postback.StyleBraces
			}
			var err error
			if t, err = postback.ParseStyle(ep.URL, style); err != nil {
				return Request{}, fmt.Errorf("postback template: %w", err)
			}
		}
		fields, err := postback.PayloadFields(ev.Payload)
		if err != nil {
			return Request{}, fmt.Errorf("payload: %w", err)
		}
		values := postback.Values{
			EventID:   ev.ID,
			EventType: ev.Type,
			Timestamp: now,
			Attempt:   ev.Attempt,
			Payload:   fields,
		}
		u, err := t.RenderRules(values, ep.Rules)
		if err != nil {
			return Request{}, err
		}
		r.URL = u
		r.template = t
		if ep.SignatureParam != "" {
			if len(keys) == 0 {
				return Request{}, errors.New("signed postback: the endpoint has no active signing secret")
			}
			if r.URL, err = SignPostback(u, ep.SignatureParam, keys[len(keys)-1], now); err != nil {
				return Request{}, err
			}
			r.signatureParam, r.signedAt = ep.SignatureParam, now.Unix()
		}
		macros := t.Macros()
		if r.body, err = postbackBody(ep); err != nil {
			return Request{}, err
		}
		if r.body != nil {
			if r.Body, err = r.body.Render(values, ep.Rules); err != nil {
				return Request{}, err
			}
			r.Header.Set("Content-Type", r.body.ContentType())
			if ep.BodySignature == BodySignatureWebhook {
				if len(keys) == 0 {
					return Request{}, errors.New("signed postback body: the endpoint has no active signing secret")
				}
				signing.Headers(r.Header, keys, ev.ID, now, r.Body)
			}
			macros = append(macros, r.body.Macros()...)
		}
		for _, m := range macros {
			if raw, ok := fields[m]; ok {
				if v := strings.Trim(string(raw), `"`); len(v) >= 3 {
					r.Redact = append(r.Redact, v)
				}
			}
		}
	default:
		r.URL = ep.URL
		r.Body = ev.Payload
		r.Header.Set("Content-Type", "application/json")
		signing.Headers(r.Header, keys, ev.ID, now, ev.Payload)
	}
	return r, nil
}

// BodySignatureWebhook signs a postback's body as a webhook's.
const BodySignatureWebhook = "webhook"

// postbackBody is ep's body template parsed, nil for none.
func postbackBody(ep Endpoint) (*postback.Body, error) {
	if ep.Body != nil || ep.BodyTemplate == "" {
		return ep.Body, nil
	}
	style := ep.MacroStyle
	if style == "" {
		style = postback.StyleBraces
	}
	b, err := postback.ParseBody(ep.BodyTemplate, ep.BodyFormat, style)
	if err != nil {
		return nil, fmt.Errorf("postback body template: %w", err)
	}
	return b, nil
}
