package request

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/hookline/hookline/worker/postback"
)

// FuzzSignedURLIsRequested: what a signed postback signs is what the HTTP
// client requests. Rebuilt from the request the client makes (scheme, host
// and request URI), the signed URL is byte for byte the URL Build returned,
// so a receiver that rebuilds it the same way checks the same bytes.
func FuzzSignedURLIsRequested(f *testing.F) {
	for _, seed := range []struct{ tmpl, value string }{
		{"https://t.test/pb?cid={click_id}&payout={payout}", "abc 123&x=1"},
		{"https://t.test", "x"},
		{"https://t.test/a%2Fb/{v}?", "ü/?"},
		{"http://[::1]:8080/p;x=1/{v}?a=b&&c", "{}"},
		{"https://t.test/{v}/!$'()*+,;=:@[]", "v"},
	} {
		f.Add(seed.tmpl, seed.value)
	}
	f.Fuzz(func(t *testing.T, tmpl, value string) {
		tp, err := postback.Parse(tmpl)
		if err != nil {
			return
		}
		raw, _ := json.Marshal(value)
		payload := map[string]json.RawMessage{}
		for _, m := range tp.Macros() {
			payload[m] = raw
		}
		body, _ := json.Marshal(payload)
		r, err := Build(Endpoint{Kind: KindPostback, URL: tmpl, Template: tp, SignatureParam: "sig"}, [][]byte{key1},
			Event{ID: "e", Type: "t", Payload: body, Attempt: 1}, at)
		if err != nil {
			return // user info or a fragment: refused, never sent
		}
		req, err := http.NewRequest(http.MethodGet, r.URL, nil)
		if err != nil {
			t.Fatalf("signed URL %q does not make a request: %v", r.URL, err)
		}
		if got := req.URL.Scheme + "://" + req.URL.Host + req.URL.RequestURI(); got != r.URL {
			t.Fatalf("requested %q, signed %q", got, r.URL)
		}
	})
}
