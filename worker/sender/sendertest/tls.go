package sendertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// CA is a certificate authority made for one test run, so that receivers
// in tests speak TLS with certificates the sender verifies, as real
// partners' do, without any test trusting more than its own root.
type CA struct {
	Cert *x509.Certificate
	PEM  []byte // the root certificate, PEM
	key  *ecdsa.PrivateKey
}

// NewCA makes a root valid from an hour ago for a year.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"hookline tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Pool is a pool holding only the root.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Leaf describes a certificate to issue.
type Leaf struct {
	CommonName string
	// Client: a client certificate (mutual TLS); otherwise a server
	// certificate for 127.0.0.1, 127.0.0.2, ::1, localhost and the names
	// in DNS.
	Client    bool
	DNS       []string
	NotBefore time.Time // zero: an hour ago
	NotAfter  time.Time // zero: in 30 days
}

// Issued is an issued certificate with its key, as PEM and ready to use.
type Issued struct {
	CertPEM, KeyPEM []byte
	TLS             tls.Certificate
}

// Issue signs a certificate for l.
func (ca *CA) Issue(t testing.TB, l Leaf) Issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if l.NotBefore.IsZero() {
		l.NotBefore = time.Now().Add(-time.Hour)
	}
	if l.NotAfter.IsZero() {
		l.NotAfter = time.Now().Add(30 * 24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: l.CommonName, Organization: []string{"hookline tests"}},
		NotBefore:    l.NotBefore,
		NotAfter:     l.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if l.Client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2), net.IPv6loopback}
		tmpl.DNSNames = append([]string{"localhost"}, l.DNS...)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	is := Issued{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	}
	if is.TLS, err = tls.X509KeyPair(is.CertPEM, is.KeyPEM); err != nil {
		t.Fatal(err)
	}
	return is
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// NewTLSServer starts a loopback receiver speaking TLS with a certificate
// from ca. configure, when set, adjusts its TLS settings (client
// certificates, versions) before it starts.
func NewTLSServer(t testing.TB, ca *CA, h http.Handler, configure func(*tls.Config)) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{ca.Issue(t, Leaf{CommonName: "receiver"}).TLS},
		MinVersion:   tls.VersionTLS12,
	}
	if configure != nil {
		configure(srv.TLS)
	}
	// Refused handshakes are what many tests are about; the sender's
	// result says what happened.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}
