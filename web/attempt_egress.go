package web

// How each attempt left (DESIGN §17: proxy, TLS, client certificate,
// credential kind), as the API, the event log and the portal show it:
// never a key, a password or a token, and to a partner never the
// operator's proxy address.

import (
	"context"
	"crypto/tls"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/endpoint"
	"github.com/hookline/hookline/views/event"
	"github.com/hookline/hookline/worker/egress"
	"github.com/hookline/hookline/worker/sender"
)

// proxyHidden stands for the operator's proxy address where a partner
// reads an attempt: that it went through one is theirs to know (it is the
// source address they allow-list), where the proxy lives is not.
const proxyHidden = "egress proxy"

// attemptEgressJSON is an attempt's "egress" object in the API.
type attemptEgressJSON struct {
	// Proxy: "direct", the proxy's http://host:port, or proxyHidden for a
	// key bound to a partner.
	Proxy      string  `json:"proxy"`
	TLSVersion *string `json:"tls_version"` // "TLS 1.3"; null for plain HTTP
	TLSResumed *bool   `json:"tls_resumed"` // null for plain HTTP
	// ClientCertSubject: the client certificate offered, null for none.
	ClientCertSubject *string `json:"client_cert_subject"`
	Credential        string  `json:"credential"` // none | basic | oauth2
}

// attemptEgressCols are the columns migration 00038 added to
// delivery_attempts, as every query of them returns them.
type attemptEgressCols struct {
	proxy, tlsVersion       *string
	tlsResumed              *bool
	certSubject, credential *string
}

// json is the attempt's egress object, nil when it never left (or was
// recorded before attempts kept it). partner hides the proxy's address.
func (a attemptEgressCols) json(partner bool) *attemptEgressJSON {
	if a.proxy == nil {
		return nil
	}
	out := &attemptEgressJSON{Proxy: *a.proxy, TLSVersion: a.tlsVersion, TLSResumed: a.tlsResumed,
		ClientCertSubject: a.certSubject, Credential: "none"}
	if partner && out.Proxy != proxyDirectName {
		out.Proxy = proxyHidden
	}
	if a.credential != nil {
		out.Credential = *a.credential
	}
	return out
}

// view is the attempt's egress line in the event log, nil as for json.
func (a attemptEgressCols) view(partner bool) *event.AttemptEgress {
	j := a.json(partner)
	if j == nil {
		return nil
	}
	return &event.AttemptEgress{Proxy: j.Proxy, TLSVersion: deref(j.TLSVersion), Resumed: deref(j.TLSResumed),
		ClientCert: deref(j.ClientCertSubject), Credential: j.Credential}
}

// proxyDirectName is delivery_attempts.egress_proxy of a direct attempt.
const proxyDirectName = "direct"

// attemptEgressOf is a stored attempt's egress columns.
func attemptEgressOf(a db.DeliveryAttempt) attemptEgressCols {
	return attemptEgressCols{a.EgressProxy, a.TlsVersion, a.TlsResumed, a.ClientCertSubject, a.Credential}
}

// testEgress is how a test fire left, as its result shows it: nil when
// nothing reached the network.
func testEgress(r sender.Result, portal bool) *endpoint.TestEgress {
	if r.RemoteAddr == "" && r.Proxy == "" {
		return nil
	}
	cols := attemptEgressCols{proxy: &r.Proxy, certSubject: &r.ClientCert, credential: &r.Credential}
	if r.Proxy == "" {
		direct := proxyDirectName
		cols.proxy = &direct
	}
	if r.Credential == "" {
		cols.credential = nil
	}
	if r.TLSVersion != 0 {
		v := tls.VersionName(r.TLSVersion)
		cols.tlsVersion, cols.tlsResumed = &v, &r.TLSResumed
	}
	v := cols.view(portal)
	return &endpoint.TestEgress{Proxy: v.Proxy, TLS: v.TLS(), ClientCert: v.ClientCert, Credential: v.Credential}
}

// fireEgress is a saved endpoint's egress for a test fire, built as the
// worker builds it (and cached by the server's sender per egress_rev, so
// an OAuth2 token serves several test fires). To another URL than the
// saved one it leaves without the client certificate and the credential:
// a stored credential goes only to its saved URL (DESIGN §16).
func (s *Server) fireEgress(ctx context.Context, id int64, savedURL bool) (*sender.Egress, error) {
	e, err := s.q.EndpointGet(ctx, id)
	if err != nil {
		return nil, missing(err, "endpoint")
	}
	row, err := s.endpointEgress(ctx, id)
	if err != nil || row == nil {
		return nil, err
	}
	eg, err := egress.Build(*row, e.EgressRev, s.box, s.now)
	if err != nil {
		return nil, conflict("", "the endpoint's egress settings cannot be used ("+err.Error()+"): set them again")
	}
	if eg != nil && !savedURL && (eg.Certificate != nil || eg.Auth != nil) {
		other := *eg
		other.Key, other.Certificate, other.Auth = "", nil, nil
		eg = &other
	}
	return eg, nil
}
