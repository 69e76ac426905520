// Package mail owns how hookline sends email: the SMTP settings
// (HOOKLINE_SMTP_*), the MIME message a notification becomes (plain text
// and HTML as multipart/alternative), and one submission to the operator's
// SMTP server over TLS, with its failure classified like an HTTP attempt's
// so the delivery engine can retry it, break on it and explain it.
package mail

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"os"
	"strings"
	"time"
)

// Config is where and as whom hookline submits mail. The server is the
// operator's own relay, so it is dialled as configured and not through the
// SSRF guard (like HOOKLINE_EGRESS_PROXY): no partner chooses it.
type Config struct {
	// Addr is host:port of the submission server; Host its name, which
	// its certificate must match.
	Addr, Host string
	// ImplicitTLS: smtps:// (TLS from the first byte, port 465 by
	// default). Otherwise smtp:// with STARTTLS required (port 587): a
	// server that does not offer it is a failure, never a plain-text send.
	ImplicitTLS bool
	// Username and Password authenticate with AUTH PLAIN (over TLS only);
	// none when Username is empty.
	Username, Password string
	// From is the sender address, as the From header shows it.
	From string
	// RootCAs replaces the system roots for the server's certificate
	// (HOOKLINE_SMTP_CA_FILE, tests and private relays); nil: the system's.
	RootCAs *x509.CertPool
	// Timeout bounds one submission (default 30 s); the delivery's own
	// timeout bounds it too.
	Timeout time.Duration
}

// FromEnv reads HOOKLINE_SMTP_URL, HOOKLINE_SMTP_FROM and
// HOOKLINE_SMTP_CA_FILE, every problem by the variable's name; nil when
// HOOKLINE_SMTP_URL is unset (email channels then fail their deliveries
// with a clear error until it is set).
func FromEnv(getenv func(string) string) (*Config, []error) {
	raw := strings.TrimSpace(getenv("HOOKLINE_SMTP_URL"))
	from := strings.TrimSpace(getenv("HOOKLINE_SMTP_FROM"))
	caFile := strings.TrimSpace(getenv("HOOKLINE_SMTP_CA_FILE"))
	var errs []error
	if raw == "" {
		for name, v := range map[string]string{"HOOKLINE_SMTP_FROM": from, "HOOKLINE_SMTP_CA_FILE": caFile} {
			if v != "" {
				errs = append(errs, fmt.Errorf("%s is set but HOOKLINE_SMTP_URL is not: set the SMTP server too, or unset %s", name, name))
			}
		}
		return nil, errs
	}
	c, err := ParseURL(raw)
	if err != nil {
		// The URL may carry a password: name the variable, not its value.
		errs = append(errs, fmt.Errorf("HOOKLINE_SMTP_URL: %w", err))
		c = &Config{}
	}
	if from == "" {
		errs = append(errs, errors.New("HOOKLINE_SMTP_FROM is required with HOOKLINE_SMTP_URL (the sender address, such as hookline <hooks@acme.test>)"))
	} else if a, err := mail.ParseAddress(from); err != nil {
		errs = append(errs, fmt.Errorf("HOOKLINE_SMTP_FROM %q: want an email address such as hookline <hooks@acme.test>", from))
	} else {
		c.From = a.String()
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		pool := x509.NewCertPool()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("HOOKLINE_SMTP_CA_FILE: %w", err))
		case !pool.AppendCertsFromPEM(pem):
			errs = append(errs, fmt.Errorf("HOOKLINE_SMTP_CA_FILE %q: no PEM certificate in it", caFile))
		default:
			c.RootCAs = pool
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// ParseURL reads smtp://user:pass@host:587 (STARTTLS required) or
// smtps://user:pass@host:465 (implicit TLS). Its errors never quote the
// URL, which may hold a password.
func ParseURL(raw string) (*Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("want smtp://user:password@host:587 (STARTTLS) or smtps://user:password@host:465 (implicit TLS)")
	}
	c := &Config{}
	port := ""
	switch u.Scheme {
	case "smtp":
		port = "587"
	case "smtps":
		c.ImplicitTLS, port = true, "465"
	default:
		return nil, fmt.Errorf("scheme %q: want smtp:// (STARTTLS, which is then required) or smtps:// (implicit TLS)", u.Scheme)
	}
	c.Host = u.Hostname()
	if c.Host == "" {
		return nil, errors.New("no host: want smtp://user:password@host:587")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("want no path, query or fragment after host:port")
	}
	if p := u.Port(); p != "" {
		port = p
	}
	c.Addr = net.JoinHostPort(c.Host, port)
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
		if c.Username == "" {
			return nil, errors.New("a password without a user name")
		}
	}
	return c, nil
}
