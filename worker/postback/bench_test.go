package postback

import (
	"testing"
	"time"
)

// benchPayload is a typical conversion: a handful of scalar fields and one
// nested object the template does not use.
const benchPayload = `{"click_id":"abc 123&x=1","payout":12.50,"transaction_id":"tx_0001","status":"approved","currency":"USD","user":{"country":"DE","id":42}}`

// BenchmarkRender measures the send path of a plain template (no nested
// path, default, map or share): the worker renders one per delivery.
func BenchmarkRender(b *testing.B) {
	tmpl := mustParse(b, "https://t.test/POSTBACK-KEY/postback?subid={click_id}&status={status}&payout={payout}&tid={transaction_id}&return=OK")
	fields, err := PayloadFields([]byte(benchPayload))
	if err != nil {
		b.Fatal(err)
	}
	v := Values{EventID: "01890a5d-ac96-774b-bcce-b302099a8057", EventType: "conversion", Timestamp: time.Unix(1_760_000_000, 0), Attempt: 1, Payload: fields}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.Render(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPayloadAndRender adds decoding the payload, as the request
// builder does for every postback.
func BenchmarkPayloadAndRender(b *testing.B) {
	tmpl := mustParse(b, "https://t.test/POSTBACK-KEY/postback?subid={click_id}&status={status}&payout={payout}&tid={transaction_id}&return=OK")
	payload := []byte(benchPayload)
	b.ReportAllocs()
	for b.Loop() {
		fields, err := PayloadFields(payload)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tmpl.Render(Values{EventID: "e", EventType: "conversion", Timestamp: time.Unix(1_760_000_000, 0), Attempt: 1, Payload: fields}); err != nil {
			b.Fatal(err)
		}
	}
}
