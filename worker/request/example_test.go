package request_test

import (
	"encoding/json"
	"fmt"
	"net/http"
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
