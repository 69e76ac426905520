package sender

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/hookline/hookline/worker/sender/sendertest"
	"github.com/hookline/hookline/worker/ssrf"
)

// okHandler answers 200 "ok" and counts requests.
func okHandler(n *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}
}

func send(t *testing.T, s *Sender, r Request) Result {
	t.Helper()
	if r.Timeout == 0 {
		r.Timeout = 5 * time.Second
	}
	return s.Send(context.Background(), r)
}

func wantOK(t *testing.T, res Result) {
	t.Helper()
	if res.Outcome != OK {
		t.Fatalf("outcome %q/%q: %s", res.Outcome, res.ErrorClass, res.Error)
	}
}

func wantFail(t *testing.T, res Result, o Outcome, class, text string) {
	t.Helper()
	if res.Outcome != o || res.ErrorClass != class || !strings.Contains(res.Error, text) {
		t.Fatalf("got %q/%q %q, want %q/%q containing %q", res.Outcome, res.ErrorClass, res.Error, o, class, text)
	}
}

func TestSendHTTPSKeepAliveAndResumption(t *testing.T) {
	ca := sendertest.NewCA(t, "test root")
	var n atomic.Int64
	var conns atomic.Int64
	var closeNext atomic.Bool
	var remotes sync.Map // the client ports seen: one per connection
	srv := sendertest.NewTLSServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if _, seen := remotes.LoadOrStore(r.RemoteAddr, true); !seen {
			conns.Add(1)
		}
		if closeNext.Swap(false) {
			w.Header().Set("Connection", "close")
		}
		io.WriteString(w, "ok")
	}), nil)
	s := newTestSender(t, Options{RootCAs: ca.Pool()})

	first := send(t, s, Request{URL: srv.URL + "/a"})
	wantOK(t, first)
	if first.TLSVersion != tls.VersionTLS13 || first.TLSResumed {
		t.Fatalf("first: TLS %x resumed %v, want a full TLS 1.3 handshake", first.TLSVersion, first.TLSResumed)
	}
	wantOK(t, send(t, s, Request{URL: srv.URL + "/b"}))
	if c := conns.Load(); c != 1 {
		t.Fatalf("%d connections for two sends, want one kept alive", c)
	}
	// The receiver closes the connection after its answer: the next send
	// dials again and resumes the session instead of a full handshake.
	closeNext.Store(true)
	wantOK(t, send(t, s, Request{URL: srv.URL + "/c"}))
	again := send(t, s, Request{URL: srv.URL + "/d"})
	wantOK(t, again)
	if c := conns.Load(); c != 2 {
		t.Fatalf("%d connections, want 2", c)
	}
	if !again.TLSResumed {
		t.Fatal("the second connection did not resume the TLS session")
	}
	if again.RemoteAddr != srv.Listener.Addr().String() || again.Proxy != "" {
		t.Fatalf("RemoteAddr %q proxy %q", again.RemoteAddr, again.Proxy)
	}

	t.Run("TLS 1.1 refused", func(t *testing.T) {
		old := sendertest.NewTLSServer(t, ca, okHandler(&n), func(c *tls.Config) {
			c.MinVersion, c.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
		})
		wantFail(t, send(t, s, Request{URL: old.URL}), Permanent, ClassTLS, "tls: ")
	})
	t.Run("SNI and verification from the URL's host, not a Host header", func(t *testing.T) {
		var sni string
		var mu sync.Mutex
		named := sendertest.NewTLSServer(t, ca, okHandler(&n), func(c *tls.Config) {
			c.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
				mu.Lock()
				sni = h.ServerName
				mu.Unlock()
				return nil, nil
			}
		})
		_, port, _ := net.SplitHostPort(named.Listener.Addr().String())
		wantOK(t, send(t, s, Request{URL: "https://localhost:" + port + "/", Header: http.Header{"Host": {"other.test"}}}))
		mu.Lock()
		defer mu.Unlock()
		if sni != "localhost" {
			t.Fatalf("SNI %q, want localhost", sni)
		}
	})
}

func TestSendCustomCA(t *testing.T) {
	partnerCA := sendertest.NewCA(t, "partner private root")
	var n atomic.Int64
	srv := sendertest.NewTLSServer(t, partnerCA, okHandler(&n), nil)
	otherCA := sendertest.NewCA(t, "operator root")
	s := newTestSender(t, Options{RootCAs: otherCA.Pool()})

	wantFail(t, send(t, s, Request{URL: srv.URL}), Permanent, ClassTLS, "unknown authority")
	cas, err := ParseCAs(partnerCA.PEM)
	if err != nil {
		t.Fatal(err)
	}
	e := &Egress{Key: "endpoint 1", Rev: 1, CAs: cas}
	res := send(t, s, Request{URL: srv.URL, Egress: e})
	wantOK(t, res)
	if n.Load() != 1 {
		t.Fatalf("%d requests", n.Load())
	}
	// In addition to the roots, not instead: a receiver under the
	// Sender's roots is still trusted by the endpoint's client.
	ours := sendertest.NewTLSServer(t, otherCA, okHandler(&n), nil)
	wantOK(t, send(t, s, Request{URL: ours.URL, Egress: e}))

	t.Run("cached per key and rev", func(t *testing.T) {
		c1, _, _ := s.clientFor(e)
		c2, _, _ := s.clientFor(&Egress{Key: "endpoint 1", Rev: 1})
		c3, _, _ := s.clientFor(&Egress{Key: "endpoint 1", Rev: 2})
		if c1 != c2 || c1 == c3 {
			t.Fatal("clients are not cached by key and rebuilt on a new rev")
		}
	})
	t.Run("bundle checks", func(t *testing.T) {
		leaf := partnerCA.Issue(t, sendertest.Leaf{CommonName: "leaf"})
		for _, in := range [][]byte{nil, []byte("junk"), leaf.KeyPEM, leaf.CertPEM} {
			if _, err := ParseCAs(in); err == nil {
				t.Fatalf("ParseCAs(%.30q) accepted", in)
			}
		}
	})
}

// onAddr starts a TLS receiver from ca on ip (a loopback address other than
// 127.0.0.1, so the guard can tell it from the proxy's).
func onAddr(t *testing.T, ip string, ca *sendertest.CA, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, sendertest.Leaf{CommonName: "receiver", DNS: []string{"partner.test"}}).TLS}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestSendThroughProxy(t *testing.T) {
	proxyAddr := sendertest.Tinyproxy(t)
	proxy, err := ParseProxy("http://" + proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	ca := sendertest.NewCA(t, "test root")
	var n atomic.Int64
	// The receiver is on 127.0.0.2, the proxy on 127.0.0.1; the guard
	// allows only the receiver's address as a destination.
	srv := onAddr(t, "127.0.0.2", ca, okHandler(&n))
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	plain := httptest.NewUnstartedServer(okHandler(&n))
	plain.Listener.Close()
	plain.Listener, _ = net.Listen("tcp", "127.0.0.2:0")
	plain.Start()
	t.Cleanup(plain.Close)
	guard := ssrf.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")})
	// partner.test resolves here only: the proxy could not resolve it, so
	// a delivery that arrives shows the proxy was given the address.
	dns := &fakeDNS{a: map[string][4]byte{"partner.test.": {127, 0, 0, 2}, "inside.test.": {10, 0, 0, 1}}}
	s := newTestSender(t, Options{Guard: guard, RootCAs: ca.Pool(), Proxy: proxy, Resolver: dns.resolver()})

	t.Run("https by name, CONNECT to the checked address", func(t *testing.T) {
		res := send(t, s, Request{URL: "https://partner.test:" + port + "/hook", Body: []byte("{}"), Method: "POST"})
		wantOK(t, res)
		if res.Proxy != "http://"+proxyAddr || res.RemoteAddr != "127.0.0.2:"+port || res.TLSVersion == 0 {
			t.Fatalf("proxy %q remote %q tls %x", res.Proxy, res.RemoteAddr, res.TLSVersion)
		}
	})
	t.Run("plain http", func(t *testing.T) {
		res := send(t, s, Request{URL: plain.URL + "/hook"})
		wantOK(t, res)
		if res.Proxy == "" || res.TLSVersion != 0 {
			t.Fatalf("proxy %q tls %x", res.Proxy, res.TLSVersion)
		}
	})
	t.Run("blocked destination never reaches the proxy", func(t *testing.T) {
		var asked atomic.Int64
		counting := tcpServer(t, func(c net.Conn) { asked.Add(1) })
		p, _ := ParseProxy("http://" + counting)
		s := newTestSender(t, Options{Guard: guard, Proxy: p, Resolver: dns.resolver()})
		wantFail(t, send(t, s, Request{URL: "https://inside.test/"}), Permanent, ClassBlocked, "blocked destination 10.0.0.1")
		wantFail(t, send(t, s, Request{URL: "http://127.0.0.1:9/"}), Permanent, ClassBlocked, "loopback")
		if asked.Load() != 0 {
			t.Fatal("the proxy was asked for a blocked destination")
		}
	})
	t.Run("the proxy's address is allowed only as a proxy", func(t *testing.T) {
		// The guard refuses 127.0.0.1 as a destination...
		wantFail(t, send(t, s, Request{URL: "http://" + proxyAddr + "/"}), Permanent, ClassBlocked, "loopback")
		// ...and as an endpoint's own proxy, unless the operator declared it.
		own := &Egress{Key: "e", Rev: 1, Proxy: proxy}
		direct := newTestSender(t, Options{Guard: guard, RootCAs: ca.Pool(), Resolver: dns.resolver()})
		wantFail(t, send(t, direct, Request{URL: srv.URL, Egress: own}), Permanent, ClassBlocked, "loopback")
		declared := newTestSender(t, Options{Guard: guard, RootCAs: ca.Pool(), Resolver: dns.resolver(), Proxies: []*url.URL{proxy}})
		wantOK(t, send(t, declared, Request{URL: srv.URL, Egress: own}))
	})
	t.Run("an endpoint goes direct", func(t *testing.T) {
		res := send(t, s, Request{URL: srv.URL, Egress: &Egress{Key: "d", Rev: 1, Direct: true}})
		wantOK(t, res)
		if res.Proxy != "" {
			t.Fatalf("proxy %q for a direct endpoint", res.Proxy)
		}
	})
	t.Run("refused by the proxy", func(t *testing.T) {
		strict := sendertest.Tinyproxy(t, "ConnectPort 1")
		p, _ := ParseProxy("http://" + strict)
		s := newTestSender(t, Options{Guard: guard, RootCAs: ca.Pool(), Proxy: p})
		wantFail(t, send(t, s, Request{URL: srv.URL}), Permanent, ClassProxy, "egress proxy "+strict+" refused the connection: HTTP 403 Forbidden")
	})
	t.Run("proxy down", func(t *testing.T) {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		down := l.Addr().String()
		l.Close()
		p, _ := ParseProxy("http://" + down)
		s := newTestSender(t, Options{Guard: guard, RootCAs: ca.Pool(), Proxy: p})
		wantFail(t, send(t, s, Request{URL: srv.URL}), Transient, ClassConnect, "egress proxy "+down+": connection refused")
	})
	t.Run("proxy slow", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		slow := tcpServer(t, func(c net.Conn) { <-release })
		p, _ := ParseProxy("http://" + slow)
		s := newTestSender(t, Options{Guard: guard, RootCAs: ca.Pool(), Proxy: p})
		wantFail(t, send(t, s, Request{URL: srv.URL, Timeout: 300 * time.Millisecond}), Transient, ClassTimeout, "at egress proxy "+slow)
	})
}

func TestParseProxy(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:3128":      "",
		"http://u:p@127.0.0.1:3128/": "",
		"https://127.0.0.1:3128":     "must start with http://",
		"http://127.0.0.1":           "must name a host and a port",
		"http://127.0.0.1:99999":     "port out of range",
		"http://127.0.0.1:3128/x":    "no path",
		"socks5://127.0.0.1:1080":    "must start with http://",
	} {
		_, err := ParseProxy(in)
		if (err == nil) != (want == "") || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("ParseProxy(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestSendMutualTLS(t *testing.T) {
	serverCA := sendertest.NewCA(t, "test root")
	clientCA := sendertest.NewCA(t, "partner client root")
	var n atomic.Int64
	var subject atomic.Value
	srv := sendertest.NewTLSServer(t, serverCA, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		subject.Store(r.TLS.PeerCertificates[0].Subject.CommonName)
		io.WriteString(w, "ok")
	}), func(c *tls.Config) {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = clientCA.Pool()
	})
	s := newTestSender(t, Options{RootCAs: serverCA.Pool()})
	cert := func(ca *sendertest.CA, l sendertest.Leaf) *tls.Certificate {
		l.Client = true
		is := ca.Issue(t, l)
		return &is.TLS
	}

	t.Run("right certificate", func(t *testing.T) {
		res := send(t, s, Request{URL: srv.URL, Egress: &Egress{Key: "right", Rev: 1, Certificate: cert(clientCA, sendertest.Leaf{CommonName: "hookline-client"})}})
		wantOK(t, res)
		if subject.Load() != "hookline-client" {
			t.Fatalf("receiver saw %v", subject.Load())
		}
		if res.ClientCert != "CN=hookline-client,O=hookline tests" || res.Credential != "" || res.TLSVersion != tls.VersionTLS13 {
			t.Fatalf("result reports certificate %q, credential %q, TLS %x", res.ClientCert, res.Credential, res.TLSVersion)
		}
	})
	t.Run("missing certificate", func(t *testing.T) {
		wantFail(t, send(t, s, Request{URL: srv.URL}), Permanent, ClassTLS, "the receiver requires a client certificate")
	})
	t.Run("wrong certificate", func(t *testing.T) {
		res := send(t, s, Request{URL: srv.URL, Egress: &Egress{Key: "wrong", Rev: 1, Certificate: cert(serverCA, sendertest.Leaf{CommonName: "stranger"})}})
		wantFail(t, res, Permanent, ClassTLS, "the receiver refused the client certificate")
		if !strings.HasPrefix(res.ClientCert, "CN=stranger") {
			t.Fatalf("a refused certificate is reported as %q", res.ClientCert)
		}
	})
	t.Run("expired certificate", func(t *testing.T) {
		old := cert(clientCA, sendertest.Leaf{CommonName: "old", NotBefore: testNow.AddDate(0, -2, 0), NotAfter: testNow.AddDate(0, 0, -1)})
		before := n.Load()
		res := send(t, s, Request{URL: srv.URL, Egress: &Egress{Key: "old", Rev: 1, Certificate: old}})
		wantFail(t, res, Permanent, ClassTLS, "the client certificate expired on "+testNow.AddDate(0, 0, -1).UTC().Format(time.DateOnly))
		if n.Load() != before {
			t.Fatal("an expired certificate was presented")
		}
	})
	t.Run("validated at save", func(t *testing.T) {
		good := clientCA.Issue(t, sendertest.Leaf{CommonName: "c", Client: true})
		other := clientCA.Issue(t, sendertest.Leaf{CommonName: "d", Client: true})
		if _, err := ClientCert(good.CertPEM, good.KeyPEM, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := ClientCert(good.CertPEM, other.KeyPEM, time.Now()); err == nil || !strings.Contains(err.Error(), "does not match") {
			t.Fatalf("mismatched key: %v", err)
		}
		if _, err := ClientCert(good.CertPEM, good.KeyPEM, time.Now().AddDate(1, 0, 0)); err == nil || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("expired: %v", err)
		}
		if _, err := ClientCert(good.KeyPEM, good.KeyPEM, time.Now()); err == nil {
			t.Fatal("a key as certificate accepted")
		}
	})
}

// tokenServer is an OAuth2 token endpoint that counts its requests and
// issues numbered tokens valid for ttl.
type tokenServer struct {
	*httptest.Server
	n    atomic.Int64
	fail atomic.Bool
}

func newTokenServer(t *testing.T, ca *sendertest.CA, ttl time.Duration) *tokenServer {
	ts := &tokenServer{}
	ts.Server = sendertest.NewTLSServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if ts.fail.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":"server_error"}`)
			return
		}
		id, secret, ok := r.BasicAuth()
		if !ok || id != "hookline" || secret != "s3cret-value" || r.FormValue("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		n := ts.n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"access_token": "token-" + string(rune('0'+n)) + "-" + r.FormValue("scope") + "-" + r.FormValue("audience"),
			"token_type":   "Bearer", "expires_in": int(ttl.Seconds()),
		})
	}), nil)
	return ts
}

func TestSendCredentials(t *testing.T) {
	ca := sendertest.NewCA(t, "test root")
	var seen sync.Map // Authorization values
	var refuse sync.Map
	srv := sendertest.NewTLSServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		seen.Store(a, true)
		if _, ok := refuse.Load(a); ok {
			http.Error(w, "revoked", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, "ok")
	}), nil)
	s := newTestSender(t, Options{RootCAs: ca.Pool()})

	t.Run("basic", func(t *testing.T) {
		res := send(t, s, Request{URL: srv.URL, Egress: &Egress{Key: "b", Rev: 1, Auth: Basic("partner", "pw")}})
		wantOK(t, res)
		if _, ok := seen.Load("Basic cGFydG5lcjpwdw=="); !ok {
			t.Fatal("no basic credentials arrived")
		}
		if res.Credential != "basic" || res.ClientCert != "" {
			t.Fatalf("result reports credential %q, certificate %q", res.Credential, res.ClientCert)
		}
	})
	tokens := newTokenServer(t, ca, time.Hour)
	cfg := clientcredentials.Config{
		ClientID: "hookline", ClientSecret: "s3cret-value", TokenURL: tokens.URL + "/token",
		Scopes: []string{"postbacks"}, EndpointParams: url.Values{"audience": {"receiver"}},
	}
	now := time.Now()
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	auth := OAuth2(cfg, func() time.Time { return *clock.Load() })
	e := &Egress{Key: "o", Rev: 1, Auth: auth}

	t.Run("one token for a burst", func(t *testing.T) {
		var wg sync.WaitGroup
		var failed atomic.Int64
		for range 64 {
			wg.Go(func() {
				if res := s.Send(context.Background(), Request{URL: srv.URL, Timeout: 5 * time.Second, Egress: e}); res.Outcome != OK {
					failed.Add(1)
					t.Errorf("%q/%q %s", res.Outcome, res.ErrorClass, res.Error)
				}
			})
		}
		wg.Wait()
		if n := tokens.n.Load(); n != 1 {
			t.Fatalf("%d token requests for 64 deliveries, want 1", n)
		}
		if _, ok := seen.Load("Bearer token-1-postbacks-receiver"); !ok {
			t.Fatal("the token did not arrive")
		}
	})
	t.Run("renewed shortly before expiry", func(t *testing.T) {
		later := now.Add(time.Hour - 10*time.Second)
		clock.Store(&later)
		wantOK(t, send(t, s, Request{URL: srv.URL, Egress: e}))
		if n := tokens.n.Load(); n != 2 {
			t.Fatalf("%d token requests, want 2", n)
		}
		clock.Store(&now) // tokens' expiries are from the real clock
	})
	t.Run("refreshed once on 401", func(t *testing.T) {
		refuse.Store("Bearer token-2-postbacks-receiver", true)
		wantOK(t, send(t, s, Request{URL: srv.URL, Egress: e}))
		if n := tokens.n.Load(); n != 3 {
			t.Fatalf("%d token requests, want 3", n)
		}
		// A receiver that refuses every token: one refresh, then the 401
		// is the answer.
		refuse.Store("Bearer token-3-postbacks-receiver", true)
		refuse.Store("Bearer token-4-postbacks-receiver", true)
		wantFail(t, send(t, s, Request{URL: srv.URL, Egress: e}), Permanent, ClassHTTPStatus, "HTTP 401")
		if n := tokens.n.Load(); n != 4 {
			t.Fatalf("%d token requests, want 4", n)
		}
	})
	t.Run("token endpoint failing", func(t *testing.T) {
		tokens.fail.Store(true)
		defer tokens.fail.Store(false)
		bad := &Egress{Key: "o2", Rev: 1, Auth: OAuth2(cfg, nil)}
		wantFail(t, send(t, s, Request{URL: srv.URL, Egress: bad}), Transient, ClassToken, "oauth2 token endpoint: HTTP 500 Internal Server Error (server_error)")
		wrong := cfg
		wrong.ClientSecret = "nope"
		res := send(t, s, Request{URL: srv.URL, Egress: &Egress{Key: "o3", Rev: 1, Auth: OAuth2(wrong, nil)}})
		if strings.Contains(res.Error, "nope") || strings.Contains(res.Error, "s3cret") {
			t.Fatalf("error leaks the secret: %s", res.Error)
		}
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		down := l.Addr().String()
		l.Close()
		gone := cfg
		gone.TokenURL = "https://" + down + "/token"
		wantFail(t, send(t, s, Request{URL: srv.URL, Egress: &Egress{Key: "o4", Rev: 1, Auth: OAuth2(gone, nil)}}), Transient, ClassToken, "oauth2 token endpoint: connection refused")
		blocked := cfg
		blocked.TokenURL = "https://10.0.0.1/token"
		// A token URL the guard refuses is a setting to fix, as a refused
		// receiver is.
		wantFail(t, send(t, s, Request{URL: srv.URL, Egress: &Egress{Key: "o5", Rev: 1, Auth: OAuth2(blocked, nil)}}), Permanent, ClassBlocked, "blocked destination 10.0.0.1")
	})
}
