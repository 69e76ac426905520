package sender

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/hookline/hookline/worker/ssrf"
)

// verdict is what an HTTP answer means for the delivery.
type verdict struct {
	outcome    Outcome
	class      string // "" when OK
	retryAfter bool   // the answer's Retry-After is honoured
}

// classify maps a receiver's status code to DESIGN §4. bodyMatched is
// whether the body held the endpoint's success text (true when none is
// set); it matters only for a 2xx.
func classify(code int, bodyMatched bool) verdict {
	switch {
	case code >= 200 && code < 300:
		if !bodyMatched {
			return verdict{outcome: Permanent, class: ClassBodyMismatch}
		}
		return verdict{outcome: OK}
	case code >= 300 && code < 400:
		return verdict{outcome: Permanent, class: ClassRedirect}
	case code == http.StatusGone:
		return verdict{outcome: Gone, class: ClassHTTPStatus}
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly:
		return verdict{outcome: Transient, class: ClassHTTPStatus}
	case code == http.StatusTooManyRequests, code == http.StatusServiceUnavailable:
		return verdict{outcome: Transient, class: ClassHTTPStatus, retryAfter: true}
	case code >= 500 && code < 600:
		return verdict{outcome: Transient, class: ClassHTTPStatus}
	default:
		// Other 4xx, and anything outside the registry (101, 6xx...):
		// repeating the same request will not change the answer.
		return verdict{outcome: Permanent, class: ClassHTTPStatus}
	}
}

// classifyError maps a failed exchange to DESIGN §4. Messages are built
// from known parts rather than taken from err.Error(), which may quote the
// address or the URL; what does come from an error is redacted again by
// the caller.
func classifyError(res *Result, err error, parent context.Context, timeout time.Duration) {
	var (
		blocked *ssrf.BlockedError
		dnsErr  *net.DNSError
		proxy   *ProxyError
		token   *TokenError
	)
	switch {
	case parent.Err() != nil:
		// The caller gave up (shutdown, or the dashboard request went
		// away), not the receiver: retry, and do not blame the endpoint.
		fail(res, Transient, ClassCanceled, "canceled before the attempt completed")
	case errors.As(err, &blocked):
		fail(res, Permanent, ClassBlocked, blocked.Error())
	case errors.As(err, &token):
		// The token endpoint is the partner's too: its outage is one like
		// the receiver's, retried with backoff and counted by the breaker.
		fail(res, Transient, ClassToken, token.message())
	case errors.As(err, &proxy) && proxy.Status != 0:
		// The proxy answered the CONNECT with a refusal: a 4xx (403: its
		// rules do not allow the destination; 407: it wants credentials)
		// is its configuration and will not change by retrying; a 5xx is
		// the proxy failing to reach the destination, or itself.
		o := Permanent
		if proxy.Status >= 500 {
			o = Transient
		}
		fail(res, o, ClassProxy, proxy.Error())
	case isTimeout(err):
		// Every deadline of the exchange (dial, handshake, write, read)
		// is the request's own.
		msg := "timeout after " + timeout.String()
		if errors.As(err, &proxy) {
			msg += " (at egress proxy " + proxy.Proxy + ")"
		} else if connecting(err) {
			msg += whileConnecting
		}
		fail(res, Transient, ClassTimeout, msg)
	case errors.As(err, &dnsErr):
		// All DNS failures are transient, "no such host" included. A name
		// that does not resolve is at least as often a record being
		// (re)created, a lapsed negative cache or a broken split-horizon
		// setup as a dead domain; a dead domain costs a few cheap attempts
		// and then opens the breaker, while a permanent verdict would kill
		// every delivery of a brief DNS incident and need a manual replay.
		fail(res, Transient, ClassDNS, dnsMessage(dnsErr))
	case isTLS(err):
		// Certificate and protocol problems need a fix on one side or the
		// other; retrying the same handshake will fail the same way.
		fail(res, Permanent, ClassTLS, tlsMessage(err))
	case errors.As(err, &proxy):
		// The proxy is down or unreachable: transient, and the breaker
		// opens as for a receiver that is.
		fail(res, Transient, ClassConnect, "egress proxy "+proxy.Proxy+": "+connectMessage(proxy.Err))
	default:
		fail(res, Transient, ClassConnect, connectMessage(err))
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		errors.Is(err, fasthttp.ErrTLSHandshakeTimeout) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout()
}

func dnsMessage(e *net.DNSError) string {
	switch {
	case e.IsNotFound:
		return "dns: no such host " + sanitize(e.Name, 100)
	case e.IsTimeout:
		return "dns: lookup timed out for " + sanitize(e.Name, 100)
	default:
		return "dns: lookup failed for " + sanitize(e.Name, 100) + ": " + sanitize(e.Err, 60)
	}
}

func isTLS(err error) bool {
	var (
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		record  tls.RecordHeaderError
		alert   tls.AlertError
		ech     *tls.ECHRejectionError
		op      *net.OpError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &host),
		errors.As(err, &invalid), errors.As(err, &record), errors.As(err, &alert),
		errors.As(err, &ech):
		return true
	case errors.As(err, &op) && op.Op == "remote error":
		// An alert from the server ("remote error: tls: handshake
		// failure"): crypto/tls does not export that type.
		return true
	}
	// Local handshake failures are plain errors prefixed "tls: ".
	return strings.HasPrefix(innermost(err), "tls: ")
}

func tlsMessage(err error) string {
	var record tls.RecordHeaderError
	msg := innermost(err)
	if errors.As(err, &record) {
		return "tls: the server did not answer with TLS"
	}
	var op *net.OpError
	remote := strings.HasPrefix(msg, "remote error: ") || errors.As(err, &op) && op.Op == "remote error"
	msg = strings.TrimPrefix(msg, "remote error: ")
	if !strings.HasPrefix(msg, "tls: ") {
		msg = "tls: " + msg
	}
	if remote {
		// The receiver's alert: name what it means for the client
		// certificate, the commonest reason a partner refuses a handshake
		// that our side accepted.
		switch strings.TrimPrefix(msg, "tls: ") {
		case "certificate required":
			msg = "tls: the receiver requires a client certificate (" + msg + ")"
		case "bad certificate", "unknown certificate authority", "expired certificate",
			"certificate revoked", "unsupported certificate", "certificate unknown", "access denied":
			msg = "tls: the receiver refused the client certificate (" + msg + ")"
		}
	}
	return sanitize(msg, MaxError)
}

func connectMessage(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return msgRefused
	case errors.Is(err, syscall.ECONNRESET):
		return msgReset
	case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return "connection closed while sending the request"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return msgHostUnreachable
	case errors.Is(err, syscall.ENETUNREACH):
		return msgNetUnreachable
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, fasthttp.ErrConnectionClosed):
		return "connection closed before the response"
	case errors.As(err, new(*fasthttp.ErrSmallBuffer)):
		return "response headers larger than " + strconv.Itoa(maxResponseHeader>>10) + " KiB"
	case strings.HasPrefix(err.Error(), "error when reading response headers"):
		// fasthttp's words for an answer that is not HTTP/1.x.
		return "invalid response headers"
	}
	return message(err)
}

// message is the cleaned text of an error of no known kind.
func message(err error) string {
	return sanitize(strings.TrimPrefix(innermost(err), "fasthttp: "), MaxError)
}

// innermost is the message of the error a *net.OpError wraps ("dial tcp
// 1.2.3.4:443: " says nothing the attempt's record does not).
func innermost(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err
	}
	return err.Error()
}

// redactor removes what must never be stored or shown (DESIGN §2, §12)
// from Result.Error and Result.Excerpt: the URL's query and each of its
// values (postback click ids, transaction ids, payouts, which trackers like
// to echo back: "duplicate txid ..."), a custom Host header, and the
// caller's further values (Request.Redact). It is the one redactor of
// response text; postback.Redact is the one for URLs.
type redactor struct {
	query  string
	host   string
	values []string
}

// minRedacted is the shortest query value redacted on its own: shorter
// ones ("1", "ok") are not identifying and would blot out the text.
const minRedacted = 3

func (r redactor) redact(msg string) string {
	if msg == "" {
		return msg
	}
	msg = replace(msg, r.query)
	msg = replace(msg, r.host)
	for _, v := range r.values {
		msg = replace(msg, v)
	}
	for q := r.query; q != ""; {
		var part string
		part, q, _ = strings.Cut(q, "&")
		_, v, _ := strings.Cut(part, "=")
		msg = replace(msg, v)
		if strings.ContainsAny(v, "%+") {
			if u, err := url.QueryUnescape(v); err == nil && utf8.ValidString(u) {
				msg = replace(msg, u)
			}
		}
	}
	return msg
}

// replace blots out secret; "…" is no longer than any secret it replaces,
// so a capped text stays within its cap.
func replace(msg, secret string) string {
	if len(secret) < minRedacted || !strings.Contains(msg, secret) {
		return msg
	}
	return strings.ReplaceAll(msg, secret, "…")
}

// urlErrorDetail explains a URL that did not parse. url.Parse quotes at
// most a bad escape, character or port, never the query, which it does not
// validate; the wrapper that quotes the whole URL is dropped.
func urlErrorDetail(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ": " + sanitize(ue.Err.Error(), 80)
	}
	return ""
}

// sanitize makes a short one-line message of untrusted text.
func sanitize(s string, limit int) string {
	return Truncate(clean([]byte(s), limit, false), limit)
}

// excerpt keeps the start of a response body for the attempt log and the
// dashboard: at most MaxExcerpt bytes of valid UTF-8, keeping newlines and
// tabs for readability.
func excerpt(body []byte) string {
	return clean(body, MaxExcerpt, true)
}

// clean returns at most limit bytes of valid UTF-8 from b with control and
// bidirectional formatting characters removed (the latter could make an
// excerpt render as something it is not) and each run of invalid bytes
// replaced by one U+FFFD.
func clean(b []byte, limit int, keepLines bool) string {
	if len(b) > limit+utf8.UTFMax {
		b = b[:limit+utf8.UTFMax]
	}
	plain := true
	for _, c := range b {
		if c < 0x20 || c >= 0x7f {
			if !keepLines || (c != '\n' && c != '\t') {
				plain = false
				break
			}
		}
	}
	if plain {
		return string(b[:min(len(b), limit)])
	}

	var sb strings.Builder
	sb.Grow(min(len(b), limit))
	lastInvalid := false
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 && !utf8.FullRune(b[i:]) {
			// A rune cut by the read cap, not a bad byte.
			break
		}
		i += size
		if r == utf8.RuneError && size <= 1 {
			if lastInvalid {
				continue
			}
			lastInvalid = true
			if sb.Len()+3 > limit {
				break
			}
			sb.WriteRune(utf8.RuneError)
			continue
		}
		lastInvalid = false
		if keepLines && (r == '\n' || r == '\t') {
			// kept
		} else if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) ||
			r == '\u2028' || r == '\u2029' || r == '\ufeff' {
			continue
		}
		if sb.Len()+size > limit {
			break
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// Truncate cuts s to at most n bytes without splitting a rune.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
