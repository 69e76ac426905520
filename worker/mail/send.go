package mail

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"os"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Failure classes of a submission, beside the HTTP sender's timeout,
// connect, dns and tls.
const (
	// ClassAuth: the server refused the credentials (535 and kin). The
	// operator's setting is wrong; retried, so a fixed password still
	// delivers, and recorded like any failure once attempts run out.
	ClassAuth = "smtp_auth"
	// ClassTemporary: a 4xx answer (greylisting, a full queue).
	ClassTemporary = "smtp_temporary"
	// ClassRejected: a 5xx answer to the envelope or the message (no such
	// mailbox, policy): sending it again would be refused again.
	ClassRejected = "smtp_rejected"
	// ClassNotConfigured: HOOKLINE_SMTP_URL is not set on this worker.
	ClassNotConfigured = "smtp_not_configured"
	// ClassProtocol: the server broke off or answered what SMTP does not.
	ClassProtocol = "smtp_protocol"
)

// Result is one submission's outcome.
type Result struct {
	// Code is the server's last reply code (250 when taken), 0 when none
	// arrived.
	Code int
	// TLSVersion is the connection's TLS version (always set when the
	// server was reached: mail never leaves in clear text).
	TLSVersion uint16
	Err        error
	// Permanent: sending the same message again will fail the same way.
	Permanent bool
	Class     string
}

// Send submits msg to the recipients through the configured server over
// TLS, authenticating when a user is set. The whole exchange ends by ctx's
// deadline or the config's Timeout, whichever is first. A nil config
// fails with ClassNotConfigured.
func Send(ctx context.Context, c *Config, to []string, msg []byte) Result {
	if c == nil {
		return Result{Err: errors.New("email channels need HOOKLINE_SMTP_URL and HOOKLINE_SMTP_FROM on the worker"), Class: ClassNotConfigured}
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var r Result
	r.Err = submit(ctx, c, to, msg, &r)
	if r.Err == nil {
		r.Code = 250
		return r
	}
	if ctx.Err() != nil && !isSMTP(r.Err) {
		r.Err = fmt.Errorf("no answer within %s: %w", timeout, r.Err)
	}
	r.Class, r.Permanent = classify(ctx, r.Err, &r.Code)
	return r
}

func submit(ctx context.Context, c *Config, to []string, msg []byte, r *Result) error {
	from, err := mail.ParseAddress(c.From)
	if err != nil {
		return fmt.Errorf("HOOKLINE_SMTP_FROM: %w", err)
	}
	tc := &tls.Config{ServerName: c.Host, RootCAs: c.RootCAs, MinVersion: tls.VersionTLS12}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.Addr)
	if err != nil {
		return err
	}
	// The client sets a deadline per command; ctx bounds the whole.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	var cl *smtp.Client
	if c.ImplicitTLS {
		t := tls.Client(conn, tc)
		if err := t.HandshakeContext(ctx); err != nil {
			conn.Close()
			return err
		}
		cl = smtp.NewClient(t)
	} else {
		// STARTTLS is required: a server (or a man in the middle) that
		// does not offer it gets no message.
		if cl, err = smtp.NewClientStartTLS(conn, tc); err != nil {
			if strings.Contains(err.Error(), "doesn't support STARTTLS") {
				return errNoStartTLS
			}
			return err
		}
	}
	defer cl.Close()
	// The STARTTLS handshake runs with the next command: the version is
	// known once one has been answered.
	defer func() {
		if st, ok := cl.TLSConnectionState(); ok {
			r.TLSVersion = st.Version
		}
	}()
	if c.Username != "" {
		if ok, _ := cl.Extension("AUTH"); !ok {
			return &smtp.SMTPError{Code: 530, Message: "the server offers no AUTH, but HOOKLINE_SMTP_URL has a user"}
		}
		if err := cl.Auth(sasl.NewPlainClient("", c.Username, c.Password)); err != nil {
			return err
		}
	}
	if err := cl.SendMail(from.Address, to, bytes.NewReader(msg)); err != nil {
		return err
	}
	_ = cl.Quit() // the message is taken; a lost QUIT answer changes nothing
	return nil
}

var errNoStartTLS = errors.New("the server does not offer STARTTLS, which smtp:// requires (use smtps:// for implicit TLS)")

func isSMTP(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se)
}

// classify names a failure and says whether it is permanent. Only a
// server's 5xx answer to the message or its recipients is: everything
// else (the server down, slow, refusing the password, TLS) is the
// operator's side and may be fixed before the retries run out.
func classify(ctx context.Context, err error, code *int) (string, bool) {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		*code = se.Code
		switch {
		case se.Code == 530 || se.Code == 534 || se.Code == 535 || se.Code == 538 || se.Code == 454 && strings.Contains(strings.ToLower(se.Message), "auth"):
			return ClassAuth, false
		case se.Code >= 400 && se.Code < 500:
			return ClassTemporary, false
		case se.Code >= 500:
			return ClassRejected, true
		}
		return ClassProtocol, false
	}
	var (
		ne   net.Error
		dnse *net.DNSError
		oe   *net.OpError
		rec  tls.RecordHeaderError
		cve  *tls.CertificateVerificationError
	)
	switch {
	case errors.Is(err, errNoStartTLS), errors.As(err, &rec), errors.As(err, &cve), strings.HasPrefix(err.Error(), "tls:"):
		return "tls", false
	case errors.As(err, &dnse):
		return "dns", false
	case ctx.Err() != nil, errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout", false
	case errors.As(err, &oe) && oe.Op == "dial":
		return "connect", false
	}
	return ClassProtocol, false
}
