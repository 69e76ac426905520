// Reachability: whether a receiver accepts a TCP connection again, asked
// the way a send would dial it, and which failed attempts say that it did
// not (the failures such a check can see end).

package sender

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"time"
)

// The messages of the connect failures TransportFailure recognises. They
// are what classifyError stores with the attempt, so the attempt's record
// alone tells why it failed.
const (
	msgRefused         = "connection refused"
	msgReset           = "connection reset by peer"
	msgHostUnreachable = "host unreachable"
	msgNetUnreachable  = "network unreachable"
	// whileConnecting ends the message of a timeout that struck before
	// the TCP connection was made (a dial timeout: the host is down or a
	// firewall drops the packets), as opposed to a receiver that took the
	// request and did not answer in time.
	whileConnecting = " while connecting"
)

// TransportFailure reports whether an attempt that failed with errorClass
// and errorText (Result.ErrorClass and Result.Error, as stored with the
// attempt) failed in the transport, without an answer from the receiver's
// server: the connection was refused or reset, the host or network was
// unreachable, or the dial timed out. A check that the receiver accepts a
// TCP connection again (Reachable) can see such an outage end; it cannot
// see a 5xx, a timeout of the response, or anything at an egress proxy end
// (those messages differ), where only a real request can tell.
func TransportFailure(errorClass, errorText string) bool {
	switch errorClass {
	case ClassConnect:
		switch errorText {
		case msgRefused, msgReset, msgHostUnreachable, msgNetUnreachable:
			return true
		}
	case ClassTimeout:
		return strings.HasPrefix(errorText, "timeout after ") && strings.HasSuffix(errorText, whileConnecting)
	}
	return false
}

// connecting reports whether err is a failure of the TCP dial itself
// (a direct one: a proxy's is a ProxyError).
func connecting(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// ErrViaProxy is Reachable's answer for a request that leaves through an
// egress proxy: the connection would be to the proxy, which says nothing
// about the receiver behind it.
var ErrViaProxy = errors.New("sent through an egress proxy: a connection to the proxy says nothing about the receiver")

// ErrNoHost is Reachable's answer for a URL whose host is not a plain name
// or address (a postback template with a macro in its host): there is
// nothing to dial until an event fills it in.
var ErrNoHost = errors.New("the URL names no host to dial")

// Direct reports whether requests with egress settings e (nil: none) leave
// without a proxy, as client.dial would send them.
func (s *Sender) Direct(e *Egress) bool {
	switch {
	case e != nil && e.Direct:
		return true
	case e != nil && e.Proxy != nil:
		return false
	}
	return s.proxy == nil
}

// Reachable reports whether the receiver of rawURL accepts a TCP
// connection now: nil when it did. It resolves and dials the host and port
// a send to rawURL would, with the same dialer and so the same SSRF guard
// (an address the guard refuses is refused here too), within timeout.
//
// The connection is closed at once and nothing is sent over it: not a
// request, which would be a delivery the partner did not ask for and the
// attempts table would not know of, and not a TLS handshake, which would
// cost the partner's server a key exchange per check and tell nothing a
// connection does not (a certificate problem is the probe's to find, and
// it fails the same way every time). What it costs the partner is one TCP
// handshake, the load balancers' usual health check.
//
// A request sent through an egress proxy is not checked (ErrViaProxy).
func (s *Sender) Reachable(ctx context.Context, rawURL string, e *Egress, timeout time.Duration) error {
	if !s.Direct(e) {
		return ErrViaProxy
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !plainHost(u.Hostname()) {
		return ErrNoHost
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := s.client.dialer.DialContext(ctx, "tcp", dialAddr(u))
	if err != nil {
		return err
	}
	conn.Close()
	return nil
}

// plainHost reports whether h is a host name or an IP address, nothing a
// resolver would be asked about that no send would dial.
func plainHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, c := range h {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_', c == ':':
		default:
			return false
		}
	}
	return true
}
