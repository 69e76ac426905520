package request

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/signing"
)

// Mask stands for a custom header value in a redacted view (the endpoint
// API and form show stored values the same way).
const Mask = "********"

// View is a request rendered for people.
type View struct {
	Method string
	URL    string
	Header http.Header // includes User-Agent, as the sender sets it
	Body   []byte
}

// Exact is the request as sent, custom header values and URL included: for
// the operator who just typed them (the test fire panel).
func (r Request) Exact(userAgent string) View {
	return r.view(userAgent, r.URL, false)
}

// Redacted is the request fit to keep and show to anyone who may read the
// event log: custom header values are Mask, and the URL is redacted as logs
// redact it (postback.Redact: every query value, user info, and a postback
// template's macro path segments hidden; a signed postback shows its ts and
// hides its signature). No signing secret is ever part of a Request; the
// signature header stays, since receivers see it anyway and it expires with
// the timestamp's tolerance.
func (r Request) Redacted(userAgent string) View {
	u := postback.Redact(r.URL)
	if r.template != nil {
		u = r.template.Redacted()
		if r.signatureParam != "" {
			// The time is no secret and helps to match a receiver's log;
			// the signature is hidden like every other query value.
			sep := "&"
			if !strings.Contains(u, "?") {
				sep = "?"
			}
			u += sep + TimestampParam + "=" + strconv.FormatInt(r.signedAt, 10) + "&" + r.signatureParam + "=***"
		}
	}
	v := r.view(userAgent, u, true)
	if r.body != nil {
		v.Body = []byte(r.body.Redacted())
	}
	return v
}

func (r Request) view(userAgent, url string, mask bool) View {
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	h := make(http.Header, len(r.Header)+1)
	for k, v := range r.Header {
		if mask && !signing.Reserved(k) { // not hookline's own: a custom header
			v = []string{Mask}
		}
		h[k] = append([]string(nil), v...)
	}
	h.Set("User-Agent", userAgent)
	return View{Method: method, URL: url, Header: h, Body: r.Body}
}

func (v View) names() []string {
	names := make([]string, 0, len(v.Header))
	for k := range v.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// String renders the view as HTTP-like text: the request line, headers
// sorted by name, a blank line and the body.
func (v View) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", v.Method, v.URL)
	for _, k := range v.names() {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(v.Header[k], ", "))
	}
	if len(v.Body) > 0 {
		fmt.Fprintf(&b, "\n%s\n", v.Body)
	}
	return b.String()
}

// Curl renders the view as a POSIX shell curl command. curl does not follow
// redirects by default, like the sender.
func (v View) Curl() string {
	var b strings.Builder
	b.WriteString("curl")
	if v.Method != http.MethodGet {
		b.WriteString(" -X " + v.Method)
	}
	b.WriteString(" " + shellQuote(v.URL))
	for _, k := range v.names() {
		for _, val := range v.Header[k] {
			b.WriteString(" \\\n  -H " + shellQuote(k+": "+val))
		}
	}
	if len(v.Body) > 0 {
		b.WriteString(" \\\n  --data-binary " + shellQuote(string(v.Body)))
	}
	return b.String()
}

// shellQuote single-quotes s for a POSIX shell: nothing inside single
// quotes is special except the quote itself, written as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
