// Package mailtest runs a real SMTP server (github.com/emersion/go-smtp)
// on loopback for tests: STARTTLS or implicit TLS with a certificate from
// a test CA, AUTH PLAIN, and every message it takes recorded with its
// envelope and whether it arrived over TLS.
package mailtest

import (
	"crypto/tls"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/hookline/hookline/worker/mail"
	"github.com/hookline/hookline/worker/sender/sendertest"
)

// Options shape a server.
type Options struct {
	ImplicitTLS bool // smtps: TLS from the first byte; otherwise STARTTLS
	NoStartTLS  bool // offer no STARTTLS (a server hookline must refuse)
	User, Pass  string
	// RejectRcpt answers 550 to these recipients.
	RejectRcpt []string
}

// Received is one message the server took.
type Received struct {
	From       string
	To         []string
	Data       []byte
	TLS        bool // the session was encrypted when the message arrived
	TLSVersion uint16
	User       string // who authenticated
}

// Server is a running test SMTP server.
type Server struct {
	CA   *sendertest.CA
	Addr string
	opts Options
	srv  *smtp.Server
	ln   net.Listener

	mu       sync.Mutex
	received []Received
	authFail int
	arrived  chan struct{}
}

// Start starts a server on 127.0.0.1, stopped at the end of the test.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	s := &Server{CA: sendertest.NewCA(t, "hookline test SMTP CA"), opts: o, arrived: make(chan struct{}, 100)}
	cert := s.CA.Issue(t, sendertest.Leaf{CommonName: "smtp.test", DNS: []string{"smtp.test"}})
	tc := &tls.Config{Certificates: []tls.Certificate{cert.TLS}, MinVersion: tls.VersionTLS12}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &session{s: s, c: c}, nil }))
	s.srv.Domain = "smtp.test"
	s.srv.ReadTimeout, s.srv.WriteTimeout = 10*time.Second, 10*time.Second
	s.srv.ErrorLog = discard{}
	if !o.NoStartTLS || o.ImplicitTLS {
		s.srv.TLSConfig = tc
	}
	var err error
	if o.ImplicitTLS {
		s.ln, err = tls.Listen("tcp", "127.0.0.1:0", tc)
	} else {
		s.ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = s.ln.Addr().String()
	done := make(chan struct{})
	go func() { defer close(done); _ = s.srv.Serve(s.ln) }()
	t.Cleanup(func() { s.Stop(); <-done })
	return s
}

// Config is a client config for this server with the given password.
func (s *Server) Config(pass string) *mail.Config {
	host, _, _ := net.SplitHostPort(s.Addr)
	return &mail.Config{Addr: s.Addr, Host: host, ImplicitTLS: s.opts.ImplicitTLS, Username: s.opts.User, Password: pass,
		From: `"hookline" <hooks@hookline.test>`, RootCAs: s.CA.Pool(), Timeout: 10 * time.Second}
}

// Stop closes the server (a server down).
func (s *Server) Stop() {
	s.srv.Close()
	// Serve may not have registered the listener yet: close it here too.
	s.ln.Close()
}

// Received is every message taken so far.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// AuthFailures counts refused logins.
func (s *Server) AuthFailures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authFail
}

// Wait waits for the n-th message.
func (s *Server) Wait(t testing.TB, n int) []Received {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if r := s.Received(); len(r) >= n {
			return r
		}
		select {
		case <-s.arrived:
		case <-deadline:
			t.Fatalf("SMTP server got %d messages, want %d", len(s.Received()), n)
		}
	}
}

type session struct {
	s    *Server
	c    *smtp.Conn
	user string
	from string
	to   []string
}

func (x *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (x *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != x.s.opts.User || pass != x.s.opts.Pass {
			x.s.mu.Lock()
			x.s.authFail++
			x.s.mu.Unlock()
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "authentication failed"}
		}
		x.user = user
		return nil
	}), nil
}

func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	if x.s.opts.User != "" && x.user == "" {
		return smtp.ErrAuthRequired
	}
	x.from = from
	return nil
}

func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	for _, r := range x.s.opts.RejectRcpt {
		if r == to {
			return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
		}
	}
	x.to = append(x.to, to)
	return nil
}

func (x *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	st, ok := x.c.TLSConnectionState()
	x.s.mu.Lock()
	x.s.received = append(x.s.received, Received{From: x.from, To: x.to, Data: b, TLS: ok, TLSVersion: st.Version, User: x.user})
	x.s.mu.Unlock()
	select {
	case x.s.arrived <- struct{}{}:
	default:
	}
	return nil
}

func (x *session) Reset()        { x.from, x.to = "", nil }
func (x *session) Logout() error { return nil }

type discard struct{}

func (discard) Printf(string, ...any) {}
func (discard) Println(...any)        {}
