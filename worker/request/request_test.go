package request

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/signing"
	"github.com/hookline/hookline/worker/signing/verifytest"
)

var (
	at   = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	key1 = []byte("0123456789abcdef0123456789abcdef")
	key2 = []byte("fedcba9876543210fedcba9876543210")
)

const payload = `{"click_id":"clk-secret-77","payout":12.5,"tx":"tx_0001"}`

func event() Event {
	return Event{ID: "0190e4a2-0000-7000-8000-000000000001", Type: "conversion.approved", Payload: json.RawMessage(payload), Attempt: 3}
}

func TestBuild(t *testing.T) {
	custom := http.Header{"X-Api-Key": {"k-very-secret"}}
	cases := []struct {
		name    string
		ep      Endpoint
		keys    [][]byte
		method  string
		url     string
		header  map[string]string // exact values
		body    string
		values  []string
		wantErr string
	}{
		{
			name:   "webhook: stored bytes as body, signed by every key, custom headers kept",
			ep:     Endpoint{URL: "https://hooks.test/in", Method: "POST", Header: custom, TimeoutMs: 2500},
			keys:   [][]byte{key1, key2},
			method: "POST", url: "https://hooks.test/in", body: payload,
			header: map[string]string{
				"Content-Type":      "application/json",
				"X-Api-Key":         "k-very-secret",
				"Webhook-Id":        event().ID,
				"Webhook-Timestamp": "1772366400",
				"Webhook-Signature": signing.Sign([][]byte{key1, key2}, event().ID, at, []byte(payload)),
			},
		},
		{
			name: "webhook: custom headers cannot override hookline's own",
			ep: Endpoint{URL: "https://hooks.test/in", Method: "POST", Header: http.Header{
				"Content-Type": {"text/plain"}, "Webhook-Id": {"forged"}, "Host": {"evil.test"}, "X-Ok": {"1"}}},
			keys:   [][]byte{key1},
			method: "POST", url: "https://hooks.test/in", body: payload,
			header: map[string]string{"Content-Type": "application/json", "Webhook-Id": event().ID, "Host": "", "X-Ok": "1"},
		},
		{
			name:   "postback: macros rendered and encoded, attempt and time are the inputs, nothing signed",
			ep:     Endpoint{Kind: KindPostback, URL: "https://t.test/pb?cid={click_id}&p={payout}&n={attempt}&ts={timestamp}&e={event_id}", Header: custom},
			method: "", url: "https://t.test/pb?cid=clk-secret-77&p=12.5&n=3&ts=1772366400&e=" + event().ID,
			header: map[string]string{"X-Api-Key": "k-very-secret", "Webhook-Signature": "", "Content-Type": ""},
			values: []string{"clk-secret-77", "12.5"},
		},
		{
			name:    "postback: a missing field is an error",
			ep:      Endpoint{Kind: KindPostback, URL: "https://t.test/pb?cid={clickid}"},
			wantErr: "clickid",
		},
		{
			name:    "postback: a template that does not parse",
			ep:      Endpoint{Kind: KindPostback, URL: "https://t.test/pb?cid={click_id"},
			wantErr: "postback template: ",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := c.ep.Header.Clone()
			r, err := Build(c.ep, c.keys, event(), at)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Method != c.method || r.URL != c.url || string(r.Body) != c.body {
				t.Errorf("got %q %q body %q, want %q %q body %q", r.Method, r.URL, r.Body, c.method, c.url, c.body)
			}
			for name, want := range c.header {
				if got := r.Header.Get(name); got != want {
					t.Errorf("header %s = %q, want %q", name, got, want)
				}
			}
			if strings.Join(r.Redact, ",") != strings.Join(c.values, ",") {
				t.Errorf("redact = %q, want %q", r.Redact, c.values)
			}
			if len(before) != len(c.ep.Header) {
				t.Error("Build modified the endpoint's header map")
			}
		})
	}
}

func TestBuildMissingFieldIsTyped(t *testing.T) {
	_, err := Build(Endpoint{Kind: KindPostback, URL: "https://t.test/pb?cid={nope}"}, nil, event(), at)
	var missing *postback.MissingFieldError
	if !errors.As(err, &missing) {
		t.Fatalf("err = %v, want a *postback.MissingFieldError", err)
	}
}

func TestBuildUsesTheGivenTemplate(t *testing.T) {
	tmpl, err := postback.Parse("https://t.test/pb?cid={click_id}")
	if err != nil {
		t.Fatal(err)
	}
	// URL is ignored when a parsed template is given (the worker caches them).
	r, err := Build(Endpoint{Kind: KindPostback, URL: "not used", Template: tmpl}, nil, event(), at)
	if err != nil || r.URL != "https://t.test/pb?cid=clk-secret-77" {
		t.Fatalf("got %q, %v", r.URL, err)
	}
}

func TestRedacted(t *testing.T) {
	const ua = "hookline/test"
	secretHeader := http.Header{"X-Api-Key": {"k-very-secret"}, "Authorization": {"Bearer tok-very-secret"}}
	cases := []struct {
		name   string
		ep     Endpoint
		url    string
		hidden []string
	}{
		{
			name:   "postback: the template's values and macro segments hidden",
			ep:     Endpoint{Kind: KindPostback, URL: "https://t.test/pb/{tx}?cid={click_id}&key=literal-api-key", Header: secretHeader},
			url:    "https://t.test/pb/***?cid=***&key=***",
			hidden: []string{"clk-secret-77", "tx_0001", "literal-api-key", "k-very-secret", "tok-very-secret"},
		},
		{
			name:   "webhook: query values and user info hidden, custom header values masked",
			ep:     Endpoint{URL: "https://user:pw-secret@hooks.test/in?token=tok-in-url", Method: "POST", Header: secretHeader},
			url:    "https://***@hooks.test/in?token=***",
			hidden: []string{"pw-secret", "tok-in-url", "k-very-secret", "tok-very-secret"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Build(c.ep, [][]byte{key1}, event(), at)
			if err != nil {
				t.Fatal(err)
			}
			v := r.Redacted(ua)
			if v.URL != c.url {
				t.Errorf("URL = %q, want %q", v.URL, c.url)
			}
			for _, name := range []string{"X-Api-Key", "Authorization"} {
				if got := v.Header.Get(name); got != Mask {
					t.Errorf("%s = %q, want the mask", name, got)
				}
			}
			if v.Header.Get("User-Agent") != ua {
				t.Errorf("User-Agent = %q", v.Header.Get("User-Agent"))
			}
			for _, text := range []string{v.String(), v.Curl()} {
				for _, h := range append(c.hidden, string(key1)) {
					if strings.Contains(text, h) {
						t.Errorf("redacted view shows %q:\n%s", h, text)
					}
				}
			}
			// The exact view still shows everything, and the redaction did
			// not touch the request being sent.
			if e := r.Exact(ua); e.Header.Get("X-Api-Key") != "k-very-secret" || r.Header.Get("X-Api-Key") != "k-very-secret" {
				t.Error("exact view or request lost a custom header value")
			}
		})
	}
}

func TestViewText(t *testing.T) {
	v := View{Method: "POST", URL: "https://hooks.test/in", Header: http.Header{"B": {"2"}, "A": {"1", "x"}}, Body: []byte(`{"a":1}`)}
	want := "POST https://hooks.test/in\nA: 1, x\nB: 2\n\n{\"a\":1}\n"
	if got := v.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	v = View{Method: "GET", URL: "https://t.test/pb?a=1", Header: http.Header{}}
	if got := v.String(); got != "GET https://t.test/pb?a=1\n" {
		t.Errorf("String() = %q", got)
	}
}

func TestCurl(t *testing.T) {
	cases := []struct {
		name string
		v    View
		want string
	}{
		{
			name: "GET without body",
			v:    View{Method: "GET", URL: "https://t.test/pb?cid=***", Header: http.Header{"User-Agent": {"hookline/1"}}},
			want: "curl 'https://t.test/pb?cid=***' \\\n  -H 'User-Agent: hookline/1'",
		},
		{
			name: "POST with a body holding a single quote",
			v:    View{Method: "POST", URL: "https://hooks.test/in", Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"name":"O'Brien"}`)},
			want: "curl -X POST 'https://hooks.test/in' \\\n  -H 'Content-Type: application/json' \\\n  --data-binary '{\"name\":\"O'\\''Brien\"}'",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.v.Curl(); got != c.want {
				t.Errorf("Curl() =\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// TestOfficialVerifierAcceptsBuild proves a built webhook verifies with the
// official Standard Webhooks library, custom headers and all.
func TestOfficialVerifierAcceptsBuild(t *testing.T) {
	node := verifytest.Require(t)
	secret, err := signing.NewSecret(strings.NewReader(strings.Repeat("k", 64)))
	if err != nil {
		t.Fatal(err)
	}
	key, err := signing.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(Endpoint{URL: "https://hooks.test/in", Method: "POST", Header: http.Header{"X-Api-Key": {"k"}}}, [][]byte{key}, event(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	headers := map[string]string{}
	for _, name := range []string{signing.HeaderID, signing.HeaderTimestamp, signing.HeaderSignature} {
		headers[name] = r.Header.Get(name)
	}
	res := verifytest.Run(t, node, []verifytest.Case{{Secret: secret, Headers: headers, Body: string(r.Body)}})
	if !res[0].Accepted {
		t.Fatalf("official verifier rejected the built request: %s", res[0].Error)
	}
}

// TestBuildPostbackBody: a POST postback carries its body rendered with
// the rules, its content type, Standard Webhooks headers over the exact
// body when asked, and the redacted view shows the template, not values.
func TestBuildPostbackBody(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ep := Endpoint{Kind: KindPostback, URL: "https://t.test/pb?cid={click_id}", Method: "POST",
		BodyTemplate: `{"cid": "{click_id}", "s": "{status}"}`, BodyFormat: "json", BodySignature: BodySignatureWebhook,
		Rules: &postback.Rules{ValueMaps: map[string]map[string]string{"status": {"approved": "sale"}}}}
	now := time.Unix(1_760_000_000, 0)
	r, err := Build(ep, [][]byte{key}, Event{ID: "e1", Type: "conversion", Payload: []byte(`{"click_id":"c 1","status":"approved"}`), Attempt: 1}, now)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Body) != `{"cid": "c 1", "s": "sale"}` || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("body %s, content type %q", r.Body, r.Header.Get("Content-Type"))
	}
	if err := signing.Verify(key, r.Header, r.Body, now, time.Minute); err != nil {
		t.Fatalf("body signature: %v", err)
	}
	red := r.Redacted("hookline/test")
	if string(red.Body) != ep.BodyTemplate || strings.Contains(red.String(), "c 1") {
		t.Fatalf("redacted view leaks values: %s", red.String())
	}
	if _, err := Build(ep, nil, Event{ID: "e1", Type: "t", Payload: []byte(`{"click_id":"c","status":"approved"}`), Attempt: 1}, now); err == nil {
		t.Fatal("a signed body without keys built")
	}
	ep.BodyTemplate = `{"cid": {click_id`
	if _, err := Build(ep, [][]byte{key}, Event{ID: "e1", Type: "t", Payload: []byte(`{"click_id":"c"}`), Attempt: 1}, now); err == nil || !strings.Contains(err.Error(), "body template") {
		t.Fatalf("an invalid body template: %v", err)
	}
}
