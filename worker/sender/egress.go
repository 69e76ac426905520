package sender

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// Egress is what an endpoint changes about how its requests leave: the
// proxy, the roots its receiver's certificate is checked against, the
// client certificate it presents, and the credentials it sends. A Request
// without one goes out through the Sender's shared client, as before; one
// with one through a client of its own, built once per Key and Rev and
// kept (Sender.clientFor), since a client holds the endpoint's keep-alive
// connections, TLS sessions and token.
//
// TLS verification is always on: there is no setting to skip it.
type Egress struct {
	// Key names the client in the Sender's cache (the endpoint); "" builds
	// a client for this one send and closes it after (a test fire of an
	// unsaved form).
	Key string
	// Rev changes whenever anything below does; a new Rev replaces the
	// cached client, closing the old one's idle connections.
	Rev int64

	// Direct: no proxy, even when the Sender has a default one.
	Direct bool
	// Proxy, when set, replaces the Sender's default proxy. Unless it is
	// one of Options.Proxies, its address is judged by the guard like any
	// destination's.
	Proxy *url.URL
	// CAs, when set, are trusted in addition to the Sender's roots (the
	// system's): a partner moving to a private CA keeps working with
	// either certificate during the move.
	CAs []*x509.Certificate
	// Certificate is the client certificate for mutual TLS.
	Certificate *tls.Certificate
	// Auth, when set, sets the Authorization header of each request.
	Auth Authorizer
}

// Uses summarises what e changes, for the event log and the endpoint page:
// never a value.
func (e *Egress) Uses(defaultProxy *url.URL) Uses {
	u := Uses{Proxy: Redacted(defaultProxy)}
	if e == nil {
		return u
	}
	switch {
	case e.Direct:
		u.Proxy = ""
	case e.Proxy != nil:
		u.Proxy = Redacted(e.Proxy)
	}
	u.CustomCA = len(e.CAs) > 0
	if e.Certificate != nil && e.Certificate.Leaf != nil {
		u.ClientCert = e.Certificate.Leaf.Subject.String()
	}
	if e.Auth != nil {
		u.Credential = e.Auth.Kind()
	}
	return u
}

// Uses is what an endpoint's egress settings amount to, fit to show.
type Uses struct {
	Proxy      string // "http://host:port", "" when direct
	CustomCA   bool
	ClientCert string // the certificate's subject
	Credential string // "basic", "oauth2", "" for none
}

// client is one fasthttp client with the settings its connections are
// made with.
type client struct {
	s      *Sender
	fc     *fasthttp.Client
	dialer net.Dialer // guarded: for direct connections
	proxy  *url.URL   // nil: direct
	// proxyTrusted: the proxy is one the operator declared, dialled
	// without the guard ("allowed only as a proxy").
	proxyTrusted bool
	tls          *tls.Config // template; ServerName set per host
	auth         Authorizer
	rev          int64
	cert         *x509.Certificate // the client certificate's leaf, for its expiry
	certSubject  string            // cert's subject, as Result.ClientCert reports it

	hc *http.Client // for the token endpoint, when auth is set
}

// newClient builds a client for e (nil: the Sender's shared one).
func (s *Sender) newClient(e *Egress) (*client, error) {
	c := &client{s: s, proxy: s.proxy, proxyTrusted: true}
	c.dialer = net.Dialer{KeepAlive: 30 * time.Second, Control: s.guard.Control, Resolver: s.resolver}
	c.tls = &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		RootCAs:    s.roots,
		// One cache per client: a session resumed under another
		// endpoint's client certificate would present that identity.
		ClientSessionCache: tls.NewLRUClientSessionCache(0),
	}
	if e != nil {
		c.rev, c.auth = e.Rev, e.Auth
		switch {
		case e.Direct:
			c.proxy = nil
		case e.Proxy != nil:
			c.proxy, c.proxyTrusted = e.Proxy, s.trustedProxy(e.Proxy)
		}
		if len(e.CAs) > 0 {
			c.tls.RootCAs = s.rootsWith(e.CAs)
		}
		if e.Certificate != nil {
			cert := *e.Certificate
			if cert.Leaf == nil && len(cert.Certificate) > 0 {
				leaf, err := x509.ParseCertificate(cert.Certificate[0])
				if err != nil {
					return nil, errors.New("client certificate: " + err.Error())
				}
				cert.Leaf = leaf
			}
			c.cert, c.certSubject = cert.Leaf, cert.Leaf.Subject.String()
			// Presented whenever the receiver asks, even when its list of
			// acceptable CAs does not name the issuer (crypto/tls would
			// then send none): the receiver's refusal says more than
			// "certificate required".
			c.tls.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				return &cert, nil
			}
		}
	}
	if c.auth != nil {
		c.hc = c.newHTTPClient()
	}
	c.fc = s.fasthttpClient(func(hc *fasthttp.HostClient) {
		var conf *tls.Config
		if hc.IsTLS {
			conf = c.tls.Clone()
			// SNI and verification are for the URL's host (fasthttp's
			// Addr), never a custom Host header.
			host, _, err := net.SplitHostPort(hc.Addr)
			if err != nil {
				host = hc.Addr
			}
			conf.ServerName = strings.Trim(host, "[]")
		}
		hc.DialTimeout = func(addr string, timeout time.Duration) (net.Conn, error) {
			return c.dial(addr, timeout, conf)
		}
	})
	return c, nil
}

// rootsWith is the Sender's roots plus extra.
func (s *Sender) rootsWith(extra []*x509.Certificate) *x509.CertPool {
	base := s.roots
	if base == nil {
		var err error
		if base, err = x509.SystemCertPool(); err != nil {
			base = x509.NewCertPool()
		}
	}
	pool := base.Clone()
	for _, c := range extra {
		pool.AddCert(c)
	}
	return pool
}

func (s *Sender) trustedProxy(u *url.URL) bool {
	for _, p := range s.proxies {
		if strings.EqualFold(p.Host, u.Host) {
			return true
		}
	}
	return false
}

// clientFor is the cached client for e, built when missing or when e.Rev
// moved on. The second result is a client to close after the send (one
// built for an uncached Egress).
func (s *Sender) clientFor(e *Egress) (*client, bool, error) {
	if e.Key == "" {
		c, err := s.newClient(e)
		return c, true, err
	}
	if v, ok := s.clients.Load(e.Key); ok {
		if c := v.(*client); c.rev == e.Rev {
			return c, false, nil
		}
	}
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	if v, ok := s.clients.Load(e.Key); ok {
		c := v.(*client)
		if c.rev == e.Rev {
			return c, false, nil
		}
		// Sends in progress on the old client finish normally.
		defer c.closeIdle()
	}
	c, err := s.newClient(e)
	if err != nil {
		return nil, false, err
	}
	s.clients.Store(e.Key, c)
	return c, false, nil
}

// Forget drops the cached client of key (a deleted endpoint).
func (s *Sender) Forget(key string) {
	if v, ok := s.clients.LoadAndDelete(key); ok {
		v.(*client).closeIdle()
	}
}

// closeIdle closes the client's idle connections, the token endpoint's
// included.
func (c *client) closeIdle() {
	c.fc.CloseIdleConnections()
	if c.hc != nil {
		c.hc.CloseIdleConnections()
	}
}

// ParseCAs parses a PEM bundle of CA certificates for Egress.CAs.
func ParseCAs(pem []byte) ([]*x509.Certificate, error) {
	certs, err := parseCerts(pem)
	if err != nil {
		return nil, err
	}
	for _, c := range certs {
		if !c.IsCA {
			return nil, errors.New("certificate " + c.Subject.String() + " is not a CA certificate")
		}
	}
	return certs, nil
}
