package request_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hookline/hookline/worker/request"
)

// Building a postback and showing it in the event log: the click id and
// the tracker's API key never appear in the redacted view or its curl.
func Example() {
	ep := request.Endpoint{
		Kind:   request.KindPostback,
		URL:    "https://tracker.test/postback?cid={click_id}&payout={payout}&key=tracker-api-key",
		Header: http.Header{"X-Tracker-Token": {"tok-123456"}},
	}
	ev := request.Event{
		ID:      "0190e4a2-0000-7000-8000-000000000001",
		Type:    "conversion.approved",
		Payload: json.RawMessage(`{"click_id":"abc123","payout":12.5}`),
		Attempt: 1,
	}
	r, err := request.Build(ep, nil, ev, time.Unix(1772366400, 0))
	if err != nil {
		panic(err)
	}
	fmt.Println(r.URL)
	v := r.Redacted("hookline/1.0")
	fmt.Print(v)
	fmt.Println(v.Curl())
	// Output:
	// https://tracker.test/postback?cid=abc123&payout=12.5&key=tracker-api-key
	// GET https://tracker.test/postback?cid=***&payout=***&key=***
	// User-Agent: hookline/1.0
	// X-Tracker-Token: ********
	// curl 'https://tracker.test/postback?cid=***&payout=***&key=***' \
	//   -H 'User-Agent: hookline/1.0' \
	//   -H 'X-Tracker-Token: ********'
}

// A signed postback: ts and the signature are appended to the rendered URL;
// the signature is the hex HMAC-SHA256 of everything before "&sig=".
func ExampleSignPostback() {
	key := []byte("0123456789abcdef0123456789abcdef") // a secret's raw bytes
	u, err := request.SignPostback("https://tracker.test/pb?cid=abc", "sig", key, time.Unix(1760000000, 0))
	if err != nil {
		panic(err)
	}
	fmt.Println(u[:strings.LastIndex(u, "=")+1] + "…")
	// Output:
	// https://tracker.test/pb?cid=abc&ts=1760000000&sig=…
}
