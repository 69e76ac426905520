// Building the HTTP request of one attempt from a Request, and reading
// the parts of an answer that matter (status text, redirects, Retry-After).

package sender

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http/httpguts"
)

// buildRequest fills req from r and returns the parsed URL, or explains,
// without echoing the URL, why it cannot be built.
// The URL is checked with net/url, as everywhere else in hookline, and the
// request line is its RequestURI: what is stored is what is sent.
func (s *Sender) buildRequest(req *fasthttp.Request, r Request) (*url.URL, string) {
	method := r.Method
	switch method {
	case "":
		method = http.MethodGet
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return nil, "unsupported method " + strconv.Quote(Truncate(method, 20))
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return nil, "invalid URL" + urlErrorDetail(err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		if u.Scheme == "" {
			return nil, "invalid URL: missing scheme"
		}
		return nil, "invalid URL: unsupported scheme " + strconv.Quote(Truncate(u.Scheme, 20))
	case u.Host == "" || u.Hostname() == "":
		return nil, "invalid URL: missing host"
	case !validPort(u.Port()):
		// url.Parse checks only that the port is digits.
		return nil, "invalid URL: port out of range"
	}
	req.Header.DisableNormalizing()
	req.Header.SetNoDefaultContentType(true)
	req.Header.SetMethod(method)
	uri := req.URI()
	uri.DisablePathNormalizing = true
	uri.SetScheme(u.Scheme)
	uri.SetHost(u.Host)
	uri.SetPath(u.EscapedPath())
	uri.SetQueryString(u.RawQuery)

	for k, vs := range r.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, "invalid header field name " + strconv.Quote(Truncate(k, 40))
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, "invalid header field value for " + strconv.Quote(Truncate(k, 40))
			}
		}
		switch http.CanonicalHeaderKey(k) {
		case "User-Agent", "Content-Length", "Connection", "Transfer-Encoding":
			// The User-Agent is always ours (DESIGN §3); the framing is
			// the client's.
			continue
		case "Host":
			if len(vs) > 0 && vs[0] != "" {
				if !httpguts.ValidHostHeader(vs[0]) {
					return nil, "invalid Host header"
				}
				req.UseHostHeader = true
				req.Header.SetHost(vs[0])
			}
			continue
		}
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("User-Agent", s.userAgent)
	if user := u.User; user != nil && len(r.Header["Authorization"]) == 0 {
		// net/http's client turns URL credentials into Basic auth; so
		// does the sender.
		pw, _ := user.Password()
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user.Username()+":"+pw)))
	}
	if len(r.Body) > 0 {
		req.SetBodyRaw(r.Body)
	}
	return u, ""
}

func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n <= 65535
}

// statusText renders "HTTP 503 Service Unavailable" from the registry, not
// from the receiver's reason phrase, which it controls.
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return "HTTP " + strconv.Itoa(code) + " " + t
	}
	return "HTTP " + strconv.Itoa(code)
}

// redirectMessage names where the receiver redirects to (the commonest
// cause is http:// configured where https:// is served) without the target's
// query, which may carry the very values that must not be logged.
func redirectMessage(code int, base *url.URL, location []byte) string {
	msg := statusText(code) + ": redirect not followed"
	if len(location) == 0 {
		return msg
	}
	loc, err := base.Parse(string(location))
	if err != nil {
		return msg
	}
	target := loc.Scheme + "://" + loc.Host + loc.EscapedPath()
	return msg + " (to " + sanitize(target, 120) + ")"
}

// parseRetryAfter reads delta-seconds or an HTTP date relative to now.
// Anything unparseable or in the past means no hint.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil {
		if secs > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		return time.Duration(secs) * time.Second
	} else if errors.Is(err, strconv.ErrRange) {
		return maxRetryAfter
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	d := t.Sub(now)
	if d <= 0 {
		return 0
	}
	return min(d.Round(time.Second), maxRetryAfter)
}
