package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/mail"
	"strings"
	"time"

	hmail "github.com/hookline/hookline/worker/mail"
	"github.com/hookline/hookline/worker/notify"
	"github.com/hookline/hookline/worker/sender"
)

// kindEmail is an email channel's endpoint: its URL is
// mailto:<recipients>, its payload a notify.Email, and it is sent over
// SMTP. It rides the same delivery rows as every webhook, so the claim,
// backoff, breaker, attempt log and dead letters are the ones webhooks
// have; only the send differs.
const kindEmail = "email"

// deliverEmail submits one email delivery to the operator's SMTP server
// (Config.Mail) and records it as an attempt: an accepted message is
// delivered, a 5xx refusal of the message or its recipients is permanent,
// and everything else (the server down or slow, a wrong password, TLS) is
// transient and retried with the endpoint's backoff.
func (dp *dispatcher) deliverEmail(ctx context.Context, d claimed) outcome {
	o := outcome{d: d}
	now := dp.now()
	to, err := mailtoRecipients(d.URL)
	var body notify.Email
	if err == nil {
		err = json.Unmarshal(d.Payload, &body)
	}
	if err != nil {
		o.res = failed(now, sender.Permanent, sender.ClassInvalidRequest, "email delivery: "+err.Error())
		o.finished = dp.now()
		return o
	}
	var from string
	if dp.cfg.Mail != nil {
		from = dp.cfg.Mail.From
	}
	msg, err := hmail.Message{From: from, To: to, Subject: body.Subject, Text: body.Text, HTML: body.HTML,
		Date: now, MessageID: d.EventID.String() + "@" + messageIDDomain(from)}.Bytes()
	if err != nil {
		o.res = failed(now, sender.Permanent, sender.ClassInvalidRequest, "email delivery: "+err.Error())
		o.finished = dp.now()
		return o
	}
	timeout := time.Duration(d.TimeoutMs) * time.Millisecond
	sctx, cancel := context.WithTimeout(ctx, max(timeout, 10*time.Second))
	defer cancel()
	start := time.Now()
	r := hmail.Send(sctx, dp.cfg.Mail, to, msg)
	o.res = sender.Result{Outcome: sender.OK, Started: now, Duration: time.Since(start), TLSVersion: r.TLSVersion,
		RemoteAddr: mailAddr(dp.cfg.Mail)}
	switch {
	case r.Err == nil:
		o.res.Excerpt = fmt.Sprintf("%d message accepted for %d recipient(s)", r.Code, len(to))
	case r.Class == hmail.ClassNotConfigured:
		o.res = failed(now, sender.Transient, r.Class, r.Err.Error())
	default:
		o.res.Outcome, o.res.ErrorClass = sender.Transient, r.Class
		if r.Permanent {
			o.res.Outcome = sender.Permanent
		}
		o.res.Error = sender.Truncate("smtp: "+r.Err.Error(), sender.MaxError)
	}
	if ctx.Err() != nil && r.Err != nil {
		o.res.Outcome, o.res.ErrorClass = sender.Transient, sender.ClassCanceled
	}
	o.finished = dp.now()
	return o
}

// mailtoRecipients reads the addresses of an email channel's endpoint URL
// (mailto:a@b.test,c@d.test), as the channel's form stored them.
func mailtoRecipients(u string) ([]string, error) {
	rest, ok := strings.CutPrefix(u, "mailto:")
	if !ok {
		return nil, fmt.Errorf("URL %q is not mailto:", u)
	}
	return hmail.ParseRecipients(strings.Split(rest, ","))
}

// messageIDDomain is the sender address's domain, the right side of every
// Message-ID hookline writes.
func messageIDDomain(from string) string {
	if a, err := mail.ParseAddress(from); err == nil {
		if i := strings.LastIndexByte(a.Address, '@'); i >= 0 {
			return a.Address[i+1:]
		}
	}
	return "hookline.invalid"
}

func mailAddr(c *hmail.Config) string {
	if c == nil {
		return ""
	}
	return c.Addr
}
