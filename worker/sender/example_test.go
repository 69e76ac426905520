package sender_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
)

func Example() {
	// A tracker on loopback that confirms conversions with "OK".
	tracker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "OK")
	}))
	defer tracker.Close()

	// The demo and tests open loopback with HOOKLINE_ALLOW_NETWORKS.
	allow, err := ssrf.ParseAllowList("127.0.0.0/8")
	if err != nil {
		panic(err)
	}
	s, err := sender.New(sender.Options{Guard: ssrf.New(allow), UserAgent: "hookline/1.0.0"})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	res := s.Send(context.Background(), sender.Request{
		Method:              "GET",
		URL:                 tracker.URL + "/postback?cid=abc123&payout=12.50",
		Timeout:             5 * time.Second,
		SuccessBodyContains: "OK",
	})
	fmt.Println(res.Outcome, res.StatusCode, res.Excerpt)

	// Without the allow list the same tracker is a loopback address,
	// refused when dialled.
	strict, err := sender.New(sender.Options{Guard: ssrf.New(nil)})
	if err != nil {
		panic(err)
	}
	defer strict.Close()
	res = strict.Send(context.Background(), sender.Request{URL: tracker.URL, Timeout: 5 * time.Second})
	fmt.Println(res.Outcome, res.ErrorClass)
	fmt.Println(res.Error)

	// Output:
	// ok 200 OK
	// permanent blocked_destination
	// blocked destination 127.0.0.1 (loopback): allowed only when HOOKLINE_ALLOW_NETWORKS includes it (e.g. 127.0.0.0/8)
}
