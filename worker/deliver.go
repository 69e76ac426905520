package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/singleflight"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/mail"
	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/request"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/signing"
)

// Error classes the worker adds to the sender's.
const (
	classMissingField = "missing_field" // the payload lacks a field the postback template needs
	classSigning      = "signing"       // no usable signing secret
	classLeaseExpired = "lease_expired" // the worker sending it died
	// classUnmapped: a postback value the endpoint's map lacks, under
	// unmapped "skip" (recorded delivered, nothing sent) or "fail" (dead).
	classUnmapped = "unmapped_value"
)

// outcome is the result of one attempt of a claimed delivery.
type outcome struct {
	d        claimed
	res      sender.Result
	finished time.Time
	dead     bool // the delivery is dead after this attempt (set by flush)
	// leased: the delivery was claimed with a lease (a breaker probe), not
	// by reading; its completion is fenced by the lease.
	leased bool
	span   trace.SpanContext // the attempt's span; empty with traces off
}

// ended is when the attempt ended, as its attempt row has it: its start
// plus its duration, both the sender's. The delivery's delivered_at or
// dead_at is this, so a delivered row alone gives its last attempt's start
// (delivered_at less last_response_ms) exactly; finished, read after the
// send returned, can be later by however long the goroutine waited for a
// thread. An attempt without a start (none was made) ended when finished.
func (o *outcome) ended() time.Time {
	if o.res.Started.IsZero() {
		return o.finished
	}
	return o.res.Started.Add(o.res.Duration)
}

// sent reports whether the attempt touched the network, so its duration is
// a real latency sample.
func (o *outcome) sent() bool {
	switch o.res.ErrorClass {
	case sender.ClassBlocked, sender.ClassInvalidRequest, sender.ClassCanceled, classMissingField, classSigning, classEgress,
		sender.ClassToken, classUnmapped, mail.ClassNotConfigured, classSuppressed, classConversionBusy, classConversionState:
		return false
	}
	return true
}

// deliver builds the request for one delivery and sends it.
func (dp *dispatcher) deliver(ctx context.Context, d claimed) outcome {
	if d.Kind == kindEmail {
		return dp.deliverEmail(ctx, d)
	}
	o := outcome{d: d}
	now := dp.now()
	custom, err := dp.customHeaders(d.EndpointID, d.Headers)
	if err != nil {
		dp.log.Error("custom headers unreadable", "endpoint_id", d.EndpointID, "err", err)
		o.res = failed(now, sender.Permanent, sender.ClassInvalidRequest, "stored custom headers cannot be read (corrupt, or sealed under another HOOKLINE_SECRET_KEY)")
		o.finished = dp.now()
		return o
	}
	ep := request.Endpoint{
		Kind:                d.Kind,
		URL:                 d.URL,
		Method:              d.Method,
		Header:              custom,
		TimeoutMs:           d.TimeoutMs,
		SuccessBodyContains: d.SuccessBodyContains,
	}
	var keys [][]byte
	if d.Kind == request.KindPostback {
		ep.MacroStyle, ep.SignatureParam = postback.Style(d.MacroStyle), d.SignatureParam
		ep.Template, _ = dp.template(d.URL, ep.MacroStyle) // nil when it does not parse: Build says why
		ep.BodyTemplate, ep.BodyFormat, ep.BodySignature = d.BodyTemplate, d.BodyFormat, d.BodySignature
		ep.Body = dp.body(d.BodyTemplate, d.BodyFormat, ep.MacroStyle) // nil when none or it does not parse: Build says why
		if ep.Rules, err = dp.rules(d.PostbackRules); err != nil {
			o.res = failed(now, sender.Permanent, sender.ClassInvalidRequest, err.Error())
			o.finished = dp.now()
			return o
		}
	}
	if d.Kind != request.KindPostback || d.SignatureParam != "" || d.BodySignature != "" {
		keys, err = dp.signingKeys(ctx, d.EndpointID, d.SecretVersion, now)
		if err != nil {
			dp.log.Error("signing keys unavailable", "endpoint_id", d.EndpointID, "err", err)
			o.res = failed(now, sender.Transient, classSigning, "signing secret unavailable: "+err.Error())
			o.finished = dp.now()
			return o
		}
	}
	req, err := request.Build(ep, keys, request.Event{
		ID:      d.EventID.String(),
		Type:    d.EventType,
		Payload: d.Payload,
		Attempt: int(d.AttemptCount) + 1,
	}, now)
	if err != nil {
		class := sender.ClassInvalidRequest
		var missing *postback.MissingFieldError
		if errors.As(err, &missing) {
			class = classMissingField
		}
		o.res = failed(now, sender.Permanent, class, err.Error())
		if c, skip := unmapped(err); c != "" {
			o.res = failed(now, sender.Permanent, c, err.Error())
			if skip {
				o.res.Outcome = sender.OK
			}
		}
		o.finished = dp.now()
		return o
	}
	var conv *convSend
	if ep.Rules.Stateful() { // fire_on "change": worker/conversion.go
		var done bool
		if conv, o.res, done = dp.conversionGate(ctx, &d, ep.Rules, now); done {
			o.finished = dp.now()
			return o
		}
	}
	if d.SendTraceparent {
		dp.traceHeader(ctx, req.Header)
	}
	if req.Egress, err = dp.egressFor(ctx, d.EndpointID, d.EgressRev); err != nil {
		dp.log.Error("egress settings unavailable", "endpoint_id", d.EndpointID, "err", err)
		o.finished = dp.now()
		egressFailed(&o, err)
	} else {
		o.res = dp.senderFor(d.PartnerURL).Send(ctx, req.Request)
		o.finished = dp.now()
	}
	if conv != nil {
		dp.conversionSettle(conv, o.res)
	}
	return o
}

func failed(now time.Time, oc sender.Outcome, class, msg string) sender.Result {
	return sender.Result{Outcome: oc, ErrorClass: class, Error: sender.Truncate(msg, sender.MaxError), Started: now}
}

// customHeaders opens and parses an endpoint's stored headers once per
// stored value (it changes only when the endpoint is edited), keeping one
// entry per endpoint; callers clone the result before adding hookline's own
// headers, which therefore cannot be overridden (validation also refuses
// them at save time).
func (dp *dispatcher) customHeaders(endpointID int64, stored json.RawMessage) (http.Header, error) {
	if len(stored) == 0 || string(stored) == "{}" {
		return nil, nil
	}
	if v, ok := dp.headers.Load(endpointID); ok {
		if e := v.(headerEntry); e.stored == string(stored) {
			return e.header, nil
		}
	}
	m, err := dp.box.OpenHeaders(endpointID, stored)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	for k, v := range m {
		if !signing.Reserved(k) {
			h.Set(k, v)
		}
	}
	dp.headers.Store(endpointID, headerEntry{stored: string(stored), header: h})
	return h, nil
}

// headerEntry is an endpoint's opened custom headers and the stored value
// they came from.
type headerEntry struct {
	stored string
	header http.Header // never modified
}

// template parses a postback template once per text and style.
func (dp *dispatcher) template(s string, style postback.Style) (*postback.Template, error) {
	key := string(style) + " " + s
	if t, ok := dp.tmpls.Load(key); ok {
		return t.(*postback.Template), nil
	}
	t, err := postback.ParseStyle(s, style)
	if err != nil {
		return nil, err
	}
	dp.tmpls.Store(key, t)
	return t, nil
}

// secretCache holds each endpoint's decrypted signing keys. An entry is
// valid while no newer secret exists (the claim returns the newest secret's
// id as a version); expired keys are filtered at use, so an overlap ends on
// time without a reload.
type secretCache struct {
	mu     sync.Mutex
	m      map[int64]secretEntry
	flight singleflight.Group
}

type secretEntry struct {
	version int64
	keys    []signingKey
}

type signingKey struct {
	key     []byte
	expires *time.Time
}

// signingKeys returns the keys that sign now, newest first.
func (dp *dispatcher) signingKeys(ctx context.Context, endpointID, version int64, now time.Time) ([][]byte, error) {
	dp.secrets.mu.Lock()
	e, ok := dp.secrets.m[endpointID]
	dp.secrets.mu.Unlock()
	if !ok || e.version != version {
		v, err, _ := dp.secrets.flight.Do(fmt.Sprint(endpointID, "/", version), func() (any, error) {
			return dp.loadSecrets(ctx, endpointID, version, now)
		})
		if err != nil {
			return nil, err
		}
		e = v.(secretEntry)
	}
	keys := make([][]byte, 0, len(e.keys))
	for _, k := range e.keys {
		if k.expires == nil || k.expires.After(now) {
			keys = append(keys, k.key)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("the endpoint has no active signing secret; rotate one")
	}
	return keys, nil
}

func (dp *dispatcher) loadSecrets(ctx context.Context, endpointID, version int64, now time.Time) (secretEntry, error) {
	rows, err := dp.q.EndpointSecretsForSigning(ctx, db.EndpointSecretsForSigningParams{EndpointID: endpointID, Now: &now})
	if err != nil {
		return secretEntry{}, err
	}
	e := secretEntry{version: version}
	for _, r := range rows {
		plain, err := dp.box.Open(endpointID, r.Ciphertext)
		if err != nil {
			return secretEntry{}, err
		}
		key, err := signing.ParseSecret(string(plain))
		if err != nil {
			return secretEntry{}, err
		}
		e.keys = append(e.keys, signingKey{key: key, expires: r.ExpiresAt})
	}
	dp.secrets.mu.Lock()
	if dp.secrets.m == nil {
		dp.secrets.m = map[int64]secretEntry{}
	}
	dp.secrets.m[endpointID] = e
	dp.secrets.mu.Unlock()
	return e, nil
}
