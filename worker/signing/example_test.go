package signing_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/hookline/hookline/worker/signing"
)

// Signing and verifying the example message from the Standard Webhooks
// specification.
func Example() {
	key, err := signing.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		panic(err)
	}
	body := []byte(`{"test": 2432232314}`)
	sentAt := time.Unix(1614265330, 0)

	h := http.Header{}
	signing.Headers(h, [][]byte{key}, "msg_p5jXN8AQM9LWM0D4loKWxJek", sentAt, body)
	fmt.Println(h.Get("webhook-timestamp"))
	fmt.Println(h.Get("webhook-signature"))

	// A receiver holding the same secret accepts it within the tolerance...
	fmt.Println(signing.Verify(key, h, body, sentAt.Add(time.Minute), 0))
	// ...and rejects a body changed in transit.
	fmt.Println(signing.Verify(key, h, []byte(`{"test": 1}`), sentAt.Add(time.Minute), 0))

	// Output:
	// 1614265330
	// v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
	// <nil>
	// no matching signature
}
