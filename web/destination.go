package web

// Destinations partners choose. A URL a partner types in the portal is
// judged by the partner guard (HOOKLINE_PARTNER_ALLOW_NETWORKS, public
// addresses only by default), never by the operator's allow list, which
// typically opens loopback or a private range for the operator's own
// receivers (and hookline's own /metrics). endpoints.url_set_by records who
// set an endpoint's URL, so that the worker, and every later test fire,
// dials it through the same guard. A stored credential (a custom header
// value, shown masked) goes only to the URL it was saved with.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/ssrf"
)

// Who set an endpoint's URL (endpoints.url_set_by).
const (
	urlSetByOperator = "operator"
	urlSetByPartner  = "partner"
)

// partnerOnly ends every refusal of a partner's destination.
const partnerOnly = "partners may only use public addresses"

// partnerBlockedMessage words a partner guard's refusal for the partner,
// who cannot change the configuration: what the destination is, not how
// an operator would open it.
func partnerBlockedMessage(be *ssrf.BlockedError) string {
	if be.Addr.IsValid() {
		return fmt.Sprintf("resolves to a private address (%s, %s); %s", be.Addr.WithZone(""), be.Reason, partnerOnly)
	}
	return fmt.Sprintf("names a host that is not public (%s); %s", be.Reason, partnerOnly)
}

// partnerReasonOf is reasonOf for the portal: the refusal's reason without
// the hint naming the operator's configuration.
func partnerReasonOf(err error) string {
	var be *ssrf.BlockedError
	if errors.As(err, &be) {
		return be.Reason
	}
	return err.Error()
}

// destinationHost is the host a webhook URL or a postback template sends
// to ("" when it has none; validation says why).
func destinationHost(kind, raw string) string {
	if kind == "postback" {
		return postbackHost(raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// checkPartnerURL is the save-time check of a URL a partner enters, beyond
// validateEndpoint's (which judges a literal address or a name with the
// partner guard): a name is looked up, and refused when any of its
// addresses is one the partner guard refuses. A name that does not resolve
// now passes; the worker's dial-time check, with the same guard, is the
// boundary either way (a name can resolve elsewhere tomorrow). It returns
// the url field's message, or "".
func (s *Server) checkPartnerURL(ctx context.Context, kind, raw string) string {
	host := destinationHost(kind, strings.TrimSpace(raw))
	if host == "" {
		return ""
	}
	if err := s.partnerGuard.CheckHost(host); err != nil {
		return blockedMessage(err)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return "" // a literal address: CheckHost judged it
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	addrs, err := s.resolver.LookupNetIP(rctx, "ip", host)
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if err := s.partnerGuard.Check(a); err != nil {
			return blockedMessage(err)
		}
	}
	return ""
}

// maskedToOtherURL refuses a test fire that keeps stored header values
// (sends maskedValue back for them) to a URL other than the one cur was
// saved with: custom header values are the partner's credentials, and
// whoever can type a URL (an operator, a partner's session) must not be
// able to have hookline send them anywhere else. The value typed again is
// the caller's own to send. It returns the headers field's problem, or nil.
//
// The signing secret is not refused the same way: a test fire to another
// URL may be signed with the endpoint's own keys. The signature (an
// HMAC-SHA256) does not reveal the key, and what it signs is a test event
// hookline composes; whoever can start this test fire can already have the
// same kind of signed test event sent to the saved URL, so signing it for
// another URL gives nothing new. A signed postback's signature also covers
// the scheme and host, so it does not verify for the saved URL's host.
func maskedToOtherURL(cur db.Endpoint, rawURL string, headers map[string]string) *fieldError {
	if strings.TrimSpace(rawURL) == cur.URL {
		return nil
	}
	var kept []string
	for name, v := range headers {
		if v == maskedValue {
			kept = append(kept, name)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	sort.Strings(kept)
	return &fieldError{"headers", fmt.Sprintf("%q: type the value again: the stored value is sent only to the saved URL", kept[0])}
}

// urlGuard is the guard a URL is checked with on an edit: the partner
// guard when a partner changes it, the operator's otherwise (an operator
// edit, or a partner edit that leaves the URL as it is).
func (s *Server) urlGuard(cur db.Endpoint, newURL, by string) *ssrf.Guard {
	if by == urlSetByPartner && strings.TrimSpace(newURL) != cur.URL {
		return s.partnerGuard
	}
	return s.guard
}

// urlSetBy is who set the URL after an edit by by: the editor when the URL
// changes, or nil to keep the stored value. An operator edit that leaves a
// partner's URL as it is keeps it the partner's, so that changing a
// timeout does not quietly put a partner's URL under the operator's allow
// list.
func urlSetBy(cur db.Endpoint, newURL, by string) *string {
	if newURL == cur.URL {
		return nil
	}
	return emptyNil(by)
}
