package sender

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hookline/hookline/worker/ssrf"
)

// connAddr is the remote address of a connection the sender dialled,
// with what an attempt reports about the connection: it is computed once
// at dial time, so an attempt on a kept-alive connection reads it without
// formatting or classifying anything. fasthttp hands it back through
// Response.RemoteAddr.
type connAddr struct {
	ip    netip.AddrPort // the destination's checked address
	str   string         // ip as text
	class ssrf.Class
	// proxy is the egress proxy as Result.Proxy has it (http://host:port),
	// "" when direct: made once per connection, not per attempt.
	proxy string
	tls   uint16 // negotiated TLS version, 0 for plain HTTP
	// resumed: the TLS handshake resumed an earlier session.
	resumed bool
	// tlsErr is the connection's first TLS error after the handshake: a
	// receiver's alert (TLS 1.3 refuses a client certificate only after
	// the client's handshake is done), which fasthttp reports as a closed
	// connection.
	tlsErr atomic.Pointer[error]
}

func (a *connAddr) Network() string { return "tcp" }
func (a *connAddr) String() string  { return a.str }

// tlsConn is a connection whose TLS handshake the sender made itself
// (fasthttp leaves a connection with a Handshake method alone), so that its
// version and resumption are known to connAddr.
type tlsConn struct {
	*tls.Conn
	addr *connAddr
}

func (c *tlsConn) RemoteAddr() net.Addr { return c.addr }

func (c *tlsConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && err != io.EOF && isTLS(err) {
		c.addr.tlsErr.CompareAndSwap(nil, &err)
	}
	return n, err
}

// ProxyError is a failure at the egress proxy: it could not be reached
// (Err), or it answered the CONNECT with something other than 200
// (Status). Its text names the proxy and never the destination's name.
type ProxyError struct {
	Proxy  string // host:port
	Status int
	Err    error
}

func (e *ProxyError) Error() string {
	if e.Status != 0 {
		return "egress proxy " + e.Proxy + " refused the connection: " + statusText(e.Status)
	}
	return "egress proxy " + e.Proxy + ": " + e.Err.Error()
}

func (e *ProxyError) Unwrap() error { return e.Err }

// dial opens a connection to addr (host:port as fasthttp asks for it) for
// client c, through c's proxy when it has one, and makes the TLS handshake
// itself when tlsConf is set.
func (c *client) dial(addr string, timeout time.Duration, tlsConf *tls.Config) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var (
		raw net.Conn
		ca  *connAddr
		err error
	)
	if c.proxy == nil {
		d := c.dialer
		raw, err = d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		ap, _ := netip.ParseAddrPort(raw.RemoteAddr().String())
		ca = &connAddr{ip: netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())}
	} else if raw, ca, err = c.dialProxy(ctx, addr); err != nil {
		return nil, err
	}
	ca.str = ca.ip.String()
	ca.class = c.s.guard.Classify(ca.ip.Addr())
	tc := &conn{Conn: raw, addr: addr, s: c.s, remote: ca}
	c.s.track(tc)
	if tlsConf == nil {
		return tc, nil
	}
	t := tls.Client(tc, tlsConf)
	if err := t.HandshakeContext(ctx); err != nil {
		t.Close()
		if ctx.Err() != nil {
			return nil, errTLSTimeout
		}
		return nil, err
	}
	st := t.ConnectionState()
	ca.tls, ca.resumed = st.Version, st.DidResume
	return &tlsConn{Conn: t, addr: ca}, nil
}

// errTLSTimeout is a handshake cut off by the request's deadline.
var errTLSTimeout = timeoutError("tls handshake timed out")

type timeoutError string

func (e timeoutError) Error() string   { return string(e) }
func (e timeoutError) Timeout() bool   { return true }
func (e timeoutError) Temporary() bool { return true }

// dialProxy connects to addr through the HTTP proxy with CONNECT. The
// guard decides on the destination, never the proxy: the name is resolved
// here and checked like any dialled address, and the proxy is asked for
// the checked address, so it cannot resolve the name to somewhere else.
// The proxy's own address is not judged: it is the operator's (or an
// endpoint's, when an operator-declared proxy: see Options.Proxies), and
// it is only ever asked to CONNECT.
//
// Plain-HTTP destinations go through CONNECT too, not an absolute-form
// request: fasthttp writes only origin-form request lines, and a tunnel
// keeps the proxy from reading or rewriting what it carries.
func (c *client) dialProxy(ctx context.Context, addr string) (net.Conn, *connAddr, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, &ssrf.BlockedError{Host: addr, Reason: "not a host:port address"}
	}
	pn, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, nil, &ssrf.BlockedError{Host: addr, Reason: "not a host:port address"}
	}
	ip, err := c.resolve(ctx, host)
	if err != nil {
		return nil, nil, err
	}
	dest := netip.AddrPortFrom(ip, uint16(pn))
	proxyAddr := c.proxy.Host
	d := net.Dialer{KeepAlive: 30 * time.Second, Resolver: c.s.resolver}
	if !c.proxyTrusted {
		d.Control = c.s.guard.Control
	}
	raw, err := d.DialContext(ctx, "tcp", proxyAddr)
	if err != nil {
		var blocked *ssrf.BlockedError
		if errors.As(err, &blocked) {
			return nil, nil, err
		}
		return nil, nil, &ProxyError{Proxy: proxyAddr, Err: err}
	}
	if dl, ok := ctx.Deadline(); ok {
		raw.SetDeadline(dl)
	}
	target := dest.String()
	msg := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if u := c.proxy.User; u != nil {
		pw, _ := u.Password()
		msg += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw)) + "\r\n"
	}
	msg += "User-Agent: " + c.s.userAgent + "\r\n\r\n"
	if _, err := raw.Write([]byte(msg)); err != nil {
		raw.Close()
		return nil, nil, proxyFailure(ctx, proxyAddr, err)
	}
	br := bufio.NewReaderSize(raw, 1024)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		raw.Close()
		return nil, nil, proxyFailure(ctx, proxyAddr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw.Close()
		return nil, nil, &ProxyError{Proxy: proxyAddr, Status: resp.StatusCode}
	}
	if br.Buffered() > 0 {
		// Nothing may come before the client speaks; a proxy that sends
		// bytes anyway is not one to trust with the exchange.
		raw.Close()
		return nil, nil, &ProxyError{Proxy: proxyAddr, Err: errors.New("unexpected data after the CONNECT answer")}
	}
	raw.SetDeadline(time.Time{})
	return raw, &connAddr{ip: dest, proxy: "http://" + proxyAddr}, nil
}

// proxyFailure wraps an exchange error with the proxy; a deadline is a
// timeout of the attempt, as any other.
func proxyFailure(ctx context.Context, proxy string, err error) error {
	if ctx.Err() != nil {
		return &ProxyError{Proxy: proxy, Err: timeoutError("no answer to CONNECT in time")}
	}
	return &ProxyError{Proxy: proxy, Err: err}
}

// resolve is the destination's address: a literal, or the first address
// the name resolves to that the guard allows. When none is, the first
// refusal is the answer.
func (c *client) resolve(ctx context.Context, host string) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		return ip, c.s.guard.Check(ip)
	}
	r := c.s.resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.Addr{}, err
	}
	var first error
	for _, ip := range ips {
		ip = ip.Unmap()
		err := c.s.guard.Check(ip)
		if err == nil {
			return ip, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	return netip.Addr{}, first
}

// ParseProxy checks an egress proxy URL: http://host:port, optionally with
// user:password for Proxy-Authorization, nothing else.
func ParseProxy(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	switch {
	case u.Scheme != "http":
		return nil, errors.New("must start with http:// (the proxy is asked to CONNECT; TLS to the destination runs inside)")
	case u.Hostname() == "" || u.Port() == "":
		return nil, errors.New("must name a host and a port")
	case !validPort(u.Port()):
		return nil, errors.New("port out of range")
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
		return nil, errors.New("must have no path, query or fragment")
	}
	return &url.URL{Scheme: "http", Host: u.Host, User: u.User}, nil
}

// Redacted is a proxy URL fit to show: its host and port only.
func Redacted(proxy *url.URL) string {
	if proxy == nil {
		return ""
	}
	return fmt.Sprintf("http://%s", proxy.Host)
}
