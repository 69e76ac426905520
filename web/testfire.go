package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hookline/hookline/views/endpoint"
	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/signing"
	"github.com/hookline/hookline/worker/ssrf"
)

// testEventType marks test fires; receivers can ignore it.
const testEventType = "hookline.test"

// testFire sends one sample event to a (saved or not yet saved) endpoint
// configuration with the one-shot sender, exactly as a delivery would be
// sent, and describes everything: the request, the answer, and the SSRF
// guard's verdict on every address the host resolves to. Nothing is queued.
func (s *Server) testFire(ctx context.Context, cfg endpointConfig, keys [][]byte) endpoint.TestResult {
	now := s.now()
	id, _ := uuid.NewV7()
	sample := postback.SampleValues(id.String(), now)
	req := sender.Request{Method: cfg.Method, Header: http.Header{}, Timeout: time.Duration(cfg.TimeoutMs) * time.Millisecond,
		SuccessBodyContains: cfg.SuccessBodyContains}
	for name, v := range cfg.Headers {
		req.Header.Set(name, v)
	}
	var res endpoint.TestResult
	switch cfg.Kind {
	case "postback":
		sample.EventType = testEventType
		sample.Payload["test"] = json.RawMessage("true")
		t, err := postback.Parse(cfg.URL)
		if err != nil {
			res.Outcome, res.Class, res.Error = "permanent", "invalid_request", err.Error()
			res.Verdicts = s.verdicts(ctx, cfg.URL)
			return res
		}
		u, err := t.Render(sample)
		if err != nil {
			// Nothing is sent, but where it would go is known: the
			// template's host.
			res.Outcome, res.Class, res.Error = "permanent", "missing_field", err.Error()
			res.Verdicts = s.verdicts(ctx, cfg.URL)
			return res
		}
		req.URL = u
	default:
		body := map[string]any{"test": true, "message": "hookline test event: safe to ignore", "sent_at": now.UTC().Format(time.RFC3339)}
		for k, v := range sample.Payload {
			body[k] = v
		}
		b, _ := json.Marshal(body)
		req.URL, req.Body = cfg.URL, b
		req.Header.Set("Content-Type", "application/json")
		if len(keys) == 0 { // an unsaved endpoint: sign with a throwaway key to show the headers
			keys = [][]byte{[]byte("hookline-test-fire-unsaved-key-0")}
		}
		signing.Headers(req.Header, keys, id.String(), now, b)
	}
	res.Request = requestText(req, s.cfg.Version)
	res.Verdicts = s.verdicts(ctx, req.URL)
	r := s.send.Send(ctx, req)
	res.Outcome, res.Class, res.StatusCode = string(r.Outcome), r.ErrorClass, r.StatusCode
	res.DurationMs = float64(r.Duration) / float64(time.Millisecond)
	res.Error, res.Excerpt, res.RemoteAddr = r.Error, r.Excerpt, r.RemoteAddr
	return res
}

// verdicts resolves the URL's host and asks the guard about every address.
// The sender checks again at dial time; this is the explanation.
func (s *Server) verdicts(ctx context.Context, raw string) []endpoint.Verdict {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	host := u.Hostname()
	if err := s.guard.CheckHost(host); err != nil {
		return []endpoint.Verdict{{Addr: host, Allowed: false, Reason: reasonOf(err)}}
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		addrs, err = net.DefaultResolver.LookupNetIP(rctx, "ip", host)
		if err != nil {
			return []endpoint.Verdict{{Addr: host, Allowed: false, Reason: "does not resolve: " + err.Error()}}
		}
	}
	out := make([]endpoint.Verdict, 0, len(addrs))
	for _, a := range addrs {
		v := endpoint.Verdict{Addr: a.String(), Allowed: true}
		if err := s.guard.Check(a); err != nil {
			v.Allowed, v.Reason = false, reasonOf(err)
		}
		out = append(out, v)
	}
	return out
}

func reasonOf(err error) string {
	var be *ssrf.BlockedError
	if errors.As(err, &be) {
		return be.Reason
	}
	return err.Error()
}

// requestText renders the request as sent, for the test fire panel.
func requestText(r sender.Request, version string) string {
	var b strings.Builder
	method := r.Method
	if method == "" {
		method = "GET"
	}
	fmt.Fprintf(&b, "%s %s\n", method, r.URL)
	h := r.Header.Clone()
	h.Set("User-Agent", "hookline/"+version)
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(h[k], ", "))
	}
	if len(r.Body) > 0 {
		fmt.Fprintf(&b, "\n%s\n", r.Body)
	}
	return b.String()
}
