package sender

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"time"
)

// parseCerts reads every CERTIFICATE block of a PEM bundle; anything else
// in it (a private key pasted by mistake) is refused rather than skipped.
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, errors.New("PEM holds a " + strings.ToLower(b.Type) + " block; only certificates belong here")
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, errors.New("a certificate does not parse")
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}

// ClientCert checks a client certificate and its key (both PEM) at time
// now: the key must match the certificate, which must be valid now. The
// certificate may be followed by its intermediates.
func ClientCert(certPEM, keyPEM []byte, now time.Time) (*tls.Certificate, error) {
	if _, err := parseCerts(certPEM); err != nil {
		return nil, errors.New("certificate: " + err.Error())
	}
	if b, _ := pem.Decode(keyPEM); b == nil || !strings.HasSuffix(b.Type, "PRIVATE KEY") {
		return nil, errors.New("key: no PEM private key found")
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		if strings.Contains(err.Error(), "does not match") {
			return nil, errors.New("key: the private key does not match the certificate")
		}
		return nil, errors.New("key: the private key does not parse")
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, errors.New("certificate: does not parse")
		}
		cert.Leaf = leaf
	}
	switch {
	case now.After(leaf.NotAfter):
		return nil, errors.New("certificate: expired on " + leaf.NotAfter.UTC().Format(time.DateOnly))
	case now.Before(leaf.NotBefore):
		return nil, errors.New("certificate: not valid before " + leaf.NotBefore.UTC().Format(time.DateOnly))
	}
	return &cert, nil
}
