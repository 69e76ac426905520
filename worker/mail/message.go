package mail

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"time"
)

// Message is one email: the same facts as plain text and as HTML.
type Message struct {
	From    string   // an address as mail.ParseAddress reads it
	To      []string // bare addresses
	Subject string
	Text    string
	HTML    string
	Date    time.Time
	// MessageID without the angle brackets (id@domain). A retried
	// delivery keeps it, so a message the server took but whose answer was
	// lost is recognised as the same one by mail clients.
	MessageID string
}

// MaxRecipients bounds a channel's recipients.
const MaxRecipients = 20

// ParseRecipients validates a list of bare addresses (a@b.test), dropping
// blanks and repeats (case-insensitively), keeping the order.
func ParseRecipients(in []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		a, err := mail.ParseAddress(s)
		if err != nil || a.Name != "" || a.Address != s || !strings.Contains(a.Address[strings.LastIndexByte(a.Address, '@')+1:], ".") {
			return nil, fmt.Errorf("%q is not an email address such as ops@acme.test", s)
		}
		if k := strings.ToLower(s); !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("give at least one email address")
	}
	if len(out) > MaxRecipients {
		return nil, fmt.Errorf("at most %d addresses", MaxRecipients)
	}
	return out, nil
}

// Bytes is the message as submitted: RFC 5322 headers and a
// multipart/alternative body (text first, HTML preferred by clients that
// show it), each part quoted-printable UTF-8. Written with the standard
// library's mime packages: no MIME library is served here besides one that
// brings its own SMTP client, and these are maintained with Go.
func (m Message) Bytes() ([]byte, error) {
	if len(m.To) == 0 {
		return nil, errors.New("no recipient")
	}
	var b bytes.Buffer
	body := multipart.NewWriter(nil)
	boundary := body.Boundary()
	h := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	h("From", m.From)
	h("To", strings.Join(m.To, ", "))
	// Names in a subject come from operators and partners: a line break
	// there would start a header of their choosing.
	h("Subject", mime.QEncoding.Encode("utf-8", oneLine(m.Subject)))
	h("Date", m.Date.Format(time.RFC1123Z))
	h("Message-ID", "<"+m.MessageID+">")
	h("MIME-Version", "1.0")
	// RFC 3834: machine-written, so out-of-office replies stay away.
	h("Auto-Submitted", "auto-generated")
	h("Content-Type", mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": boundary}))
	b.WriteString("\r\n")
	w := multipart.NewWriter(&b)
	if err := w.SetBoundary(boundary); err != nil {
		return nil, err
	}
	for _, p := range []struct{ typ, text string }{{"text/plain", m.Text}, {"text/html", m.HTML}} {
		pw, err := w.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {p.typ + "; charset=utf-8"},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, err
		}
		qp := quotedprintable.NewWriter(pw)
		if _, err := qp.Write([]byte(crlf(p.text))); err != nil {
			return nil, err
		}
		if err := qp.Close(); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// crlf makes every line break CRLF, as the text parts' canonical form.
func crlf(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}
