package bench

// Imports alike sendertest/tls.go's: that CA takes a testing.TB, which the hookline binary must not link.
import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hookline/hookline/worker/sender"
)

// receiverTLS is what a receiver speaking TLS holds: a CA made for the run
// (no file, no system store: the endpoints trust it through their CA
// bundle, as a partner behind a private CA is set up), its certificate for
// 127.0.0.1, and the handshakes it has made, so that a run shows TLS was
// used and how often a session was resumed rather than negotiated whole.
type receiverTLS struct {
	caPEM  []byte
	cas    []*x509.Certificate
	config *tls.Config
	// handshakes counts every completed handshake; resumed those that
	// resumed a session (an abbreviated handshake: no certificate sent or
	// checked).
	handshakes, resumed atomic.Int64
}

// newReceiverTLS makes a CA and a certificate for 127.0.0.1 signed by it.
// ECDSA P-256, as most public CAs issue today; TLS 1.2 at least, as
// hookline's sender asks, and session tickets on (Go's default), as a
// partner's server has them.
func newReceiverTLS() (*receiverTLS, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "hookline bench CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	t := &receiverTLS{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), cas: []*x509.Certificate{ca}}
	t.config = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER, caDER}, PrivateKey: key}},
		NextProtos:   []string{"http/1.1"},
		// Called for every handshake, resumed ones included.
		VerifyConnection: func(cs tls.ConnectionState) error {
			t.handshakes.Add(1)
			if cs.DidResume {
				t.resumed.Add(1)
			}
			return nil
		},
	}
	return t, nil
}

// handshakeCount is a receiver's handshakes so far, full and resumed.
type handshakeCount struct{ all, resumed int64 }

func (t *receiverTLS) count() handshakeCount {
	if t == nil {
		return handshakeCount{}
	}
	return handshakeCount{t.handshakes.Load(), t.resumed.Load()}
}

func (c handshakeCount) since(before handshakeCount) handshakeCount {
	return handshakeCount{c.all - before.all, c.resumed - before.resumed}
}

// serveReceiver serves h on ln as r, over TLS when t is set; with
// closeEach every answer asks the sender to close the connection, so each
// request opens a connection of its own (and, over TLS, makes a handshake
// of its own, resumed when the sender kept the session).
func serveReceiver(r *receiver, ln net.Listener, h http.Handler, t *receiverTLS, closeEach bool) {
	if closeEach {
		next := h
		h = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Connection", "close")
			next.ServeHTTP(w, req)
		})
	}
	r.url = "http://" + ln.Addr().String()
	r.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if t != nil {
		r.url = "https://" + ln.Addr().String()
		r.tls = t
		ln = tls.NewListener(ln, t.config)
	}
	go r.srv.Serve(ln)
}

// egress is what a request to r needs to trust it: the run's CA, as an
// endpoint's CA bundle gives it (nil for plain HTTP). The raw phase sends
// with it; the worker builds the same from each endpoint's stored bundle.
func (r *receiver) egress() *sender.Egress {
	if r.tls == nil {
		return nil
	}
	return &sender.Egress{Key: "bench receiver", Rev: 1, CAs: r.tls.cas}
}
