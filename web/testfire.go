package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/views/endpoint"
	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/request"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
)

// testEventType marks test fires; receivers can ignore it.
const testEventType = "hookline.test"

// fireOpts says how a test fire is dialled and shown.
type fireOpts struct {
	// partner dials through the partner guard: the URL was typed or last
	// set by a partner (see destination.go).
	partner bool
	// portal shows the result to a partner: custom header values masked
	// in the request, refusals without the operator's configuration hints,
	// and no response body from an address that is not public.
	portal bool
	// egress is the saved endpoint's way out (fireEgress), nil for none
	// or an unsaved endpoint.
	egress *sender.Egress
}

// testFire sends one sample event to a (saved or not yet saved) endpoint
// configuration with the one-shot sender, exactly as a delivery would be
// sent, and describes everything: the request, the answer, and the SSRF
// guard's verdict on every address the host resolves to. Nothing is queued.
func (s *Server) testFire(ctx context.Context, cfg endpointConfig, keys [][]byte, o fireOpts) endpoint.TestResult {
	now := s.now()
	id, _ := uuid.NewV7()
	var res endpoint.TestResult
	rules, _ := postback.ParseRules(cfg.Rules) // validated with cfg
	req, err := testFireRequest(cfg, keys, testFireEvent(cfg.Kind, id.String(), now, rules), now)
	if err != nil {
		// Nothing is sent, but where it would go is known: the template's
		// host.
		res.Outcome, res.Class, res.Error = string(sender.Permanent), "missing_field", err.Error()
		var terr templateError
		var unmapped *postback.UnmappedError
		switch {
		case errors.As(err, &terr):
			res.Class = sender.ClassInvalidRequest
		case errors.As(err, &unmapped):
			res.Class = classSkipped
		}
		res.Verdicts = s.verdicts(ctx, cfg.URL, o)
		return res
	}
	if o.portal {
		res.Request = req.Redacted("hookline/" + s.cfg.Version).String()
	} else {
		res.Request = req.Exact("hookline/" + s.cfg.Version).String()
	}
	res.Verdicts = s.verdicts(ctx, req.URL, o)
	send := s.send
	if o.partner {
		send = s.partnerSend
	}
	req.Request.Egress = o.egress
	r := send.Send(ctx, req.Request)
	res.Outcome, res.Class, res.StatusCode = string(r.Outcome), r.ErrorClass, r.StatusCode
	res.Left = testEgress(r, o.portal)
	res.DurationMs = float64(r.Duration) / float64(time.Millisecond)
	res.Error, res.Excerpt, res.RemoteAddr = r.Error, r.Excerpt, r.RemoteAddr
	if o.portal && r.RemoteClass != ssrf.ClassPublic {
		hidePrivateAnswer(&res)
	}
	return res
}

// hidePrivateAnswer keeps what a receiver said out of a portal test fire
// whose connection went to an address that is not public (one an operator
// opened with HOOKLINE_PARTNER_ALLOW_NETWORKS for an on-premise receiver,
// or, for a URL the operator set, with HOOKLINE_ALLOW_NETWORKS): status and
// latency say whether the receiver works; its body, or where it redirects,
// could be anything inside the network. No connection, no answer to hide.
func hidePrivateAnswer(res *endpoint.TestResult) {
	if res.RemoteAddr == "" {
		return
	}
	res.Excerpt, res.ExcerptHidden = "", true
	if res.Class == sender.ClassRedirect {
		if i := strings.Index(res.Error, " (to "); i >= 0 {
			res.Error = res.Error[:i]
		}
	}
}

// testFireEvent is the sample event a test fire sends: the postback
// presets' sample values (in the words the endpoint's value maps expect),
// marked as a test.
func testFireEvent(kind, id string, now time.Time, rules *postback.Rules) request.Event {
	sample := rules.Sample(postback.SampleValues(id, now))
	var payload []byte
	if kind == request.KindPostback {
		sample.Payload["test"] = json.RawMessage("true")
		payload, _ = json.Marshal(sample.Payload)
	} else {
		body := map[string]any{"test": true, "message": "hookline test event: safe to ignore", "sent_at": now.UTC().Format(time.RFC3339)}
		for k, v := range sample.Payload {
			body[k] = v
		}
		payload, _ = json.Marshal(body)
	}
	return request.Event{ID: id, Type: testEventType, Payload: payload, Attempt: sample.Attempt}
}

// templateError is a postback template that does not parse: an invalid
// request rather than a missing field.
type templateError struct{ err error }

func (e templateError) Error() string { return e.err.Error() }
func (e templateError) Unwrap() error { return e.err }

// testFireRequest builds the request a test fire sends for a (saved or not
// yet saved) endpoint configuration, with the builder the worker uses.
func testFireRequest(cfg endpointConfig, keys [][]byte, ev request.Event, now time.Time) (request.Request, error) {
	ep := request.Endpoint{
		Kind:                cfg.Kind,
		URL:                 cfg.URL,
		Method:              cfg.Method,
		Header:              http.Header{},
		TimeoutMs:           cfg.TimeoutMs,
		SuccessBodyContains: cfg.SuccessBodyContains,
	}
	for name, v := range cfg.Headers {
		ep.Header.Set(name, v)
	}
	if cfg.Kind == request.KindPostback {
		style := cfg.MacroStyle
		if style == "" {
			style = postback.StyleBraces
		}
		t, err := postback.ParseStyle(cfg.URL, style)
		if err != nil {
			return request.Request{}, templateError{err}
		}
		ep.Template, ep.MacroStyle, ep.SignatureParam = t, style, cfg.SignatureParam
		if ep.Rules, err = postback.ParseRules(cfg.Rules); err != nil {
			return request.Request{}, templateError{err}
		}
		ep.BodyTemplate, ep.BodyFormat, ep.BodySignature = cfg.Body.Template, cfg.Body.Format, cfg.Body.Signature
		if cfg.Body.Template != "" {
			if ep.Body, err = postback.ParseBody(cfg.Body.Template, cfg.Body.Format, style); err != nil {
				return request.Request{}, templateError{err}
			}
		}
	}
	if len(keys) == 0 && (cfg.Kind != request.KindPostback || cfg.SignatureParam != "" || cfg.Body.Signature != "") {
		// An unsaved endpoint: sign with a throwaway key to show the
		// signature's place.
		keys = [][]byte{[]byte("hookline-test-fire-unsaved-key-0")}
	}
	return request.Build(ep, keys, ev, now)
}

// verdicts resolves the URL's host and asks the guard that will dial it
// about every address. The sender checks again at dial time; this is the
// explanation.
func (s *Server) verdicts(ctx context.Context, raw string, o fireOpts) []endpoint.Verdict {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	guard, reason := s.guard, reasonOf
	if o.partner {
		guard = s.partnerGuard
	}
	if o.portal {
		reason = partnerReasonOf
	}
	host := u.Hostname()
	if err := guard.CheckHost(host); err != nil {
		return []endpoint.Verdict{{Addr: host, Allowed: false, Reason: reason(err)}}
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		addrs, err = s.resolver.LookupNetIP(rctx, "ip", host)
		if err != nil {
			return []endpoint.Verdict{{Addr: host, Allowed: false, Reason: "does not resolve: " + err.Error()}}
		}
	}
	out := make([]endpoint.Verdict, 0, len(addrs))
	for _, a := range addrs {
		v := endpoint.Verdict{Addr: a.String(), Allowed: true}
		if err := guard.Check(a); err != nil {
			v.Allowed, v.Reason = false, reason(err)
		}
		out = append(out, v)
	}
	return out
}

func reasonOf(err error) string {
	var be *ssrf.BlockedError
	if errors.As(err, &be) {
		if h := be.Hint(); h != "" {
			return be.Reason + ": " + h
		}
		return be.Reason
	}
	return err.Error()
}
