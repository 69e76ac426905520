package postback_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/hookline/hookline/worker/postback"
)

// Lint a template at save time, render it for one attempt, and log it
// without leaking conversion data.
func Example() {
	tmpl, err := postback.Parse("https://t.example/pb?cid={click_id}&payout={payout}&tx={transaction_id}&n={attempt}")
	if err != nil {
		panic(err)
	}

	fields, err := postback.PayloadFields([]byte(`{"click_id":"abc 123&x=1","payout":12.50,"transaction_id":"T-9"}`))
	if err != nil {
		panic(err)
	}
	url, err := tmpl.Render(postback.Values{
		EventID:   "01890a5d-ac96-774b-bcce-b302099a8057",
		EventType: "conversion.approved",
		Timestamp: time.Unix(1760000000, 0),
		Attempt:   2,
		Payload:   fields,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(url)
	fmt.Println(tmpl.Redacted())

	// A payload without the field is a permanent failure with a clear reason.
	_, err = tmpl.Render(postback.Values{Attempt: 1, Payload: nil})
	var missing *postback.MissingFieldError
	fmt.Println(errors.As(err, &missing), err)

	// Output:
	// https://t.example/pb?cid=abc%20123%26x%3D1&payout=12.50&tx=T-9&n=2
	// https://t.example/pb?cid=***&payout=***&tx=***&n=***
	// true payload has no field "click_id" required by the postback template
}

// Lint errors point at the problem for the form to show.
func ExampleParse() {
	for _, tmpl := range []string{
		"https://t.example/pb?cid={click_id",
		"https://{sub}.t.example/pb",
		"https://t.example/pb?cid={click id}",
	} {
		_, err := postback.Parse(tmpl)
		var lint *postback.LintError
		if errors.As(err, &lint) {
			fmt.Printf("%d: %s\n", lint.Pos, lint.Msg)
		}
	}
	// Output:
	// 25: unclosed "{" at position 25; write a literal "{" as %7B
	// 8: macro "{sub}" at position 8 is in the URL host; the scheme, host and port must be written out so event data cannot choose where postbacks are sent
	// 25: macro "{click id}" has an invalid name; names start with a letter or "_" and contain only letters, digits, "_", "." and "-"
}

// A CAKE-style template keeps its #token# macros with the hash style; the
// same template in the braces style parses but warns, since its tokens would
// be sent as written (here, as a URL fragment that is never sent at all).
func ExampleParseStyle() {
	const cake = "https://t.example/p.ashx?r=#s2#&t=#transaction_id#"
	tmpl, err := postback.ParseStyle(cake, postback.StyleHash)
	if err != nil {
		panic(err)
	}
	fields, _ := postback.PayloadFields([]byte(`{"s2":"clk 1","transaction_id":"T-9"}`))
	url, _ := tmpl.Render(postback.Values{EventID: "e1", EventType: "conversion", Timestamp: time.Unix(1, 0), Attempt: 1, Payload: fields})
	fmt.Println(url)

	braces, _ := postback.Parse(cake)
	for _, w := range braces.Warnings() {
		fmt.Println(w.Code, w.Pos)
	}
	// Output:
	// https://t.example/p.ashx?r=clk%201&t=T-9
	// foreign_token 27
	// foreign_token 34
}

// Nested paths, defaults and an endpoint's rules: the producer says
// "approved" with a full payout in yen; the tracker wants "sale" and the
// partner's 70 % share, in whole yen.
func ExampleTemplate_RenderRules() {
	tmpl, err := postback.Parse("https://t.example/pb?subid={click_id}&status={status}&payout={payout}&geo={user.country}&sub2={sub2|}")
	if err != nil {
		panic(err)
	}
	fields, _ := postback.PayloadFields([]byte(`{"click_id":"c1","status":"approved","payout":1501,"currency":"JPY","user":{"country":"JP"}}`))
	rules := &postback.Rules{
		ValueMaps:     map[string]map[string]string{"status": {"approved": "sale", "pending": "lead", "declined": "rejected"}},
		Unmapped:      postback.UnmappedSkip,
		PayoutShareBP: 7000, // 70 %
	}
	v := postback.Values{EventID: "e1", EventType: "conversion", Timestamp: time.Unix(1760000000, 0), Attempt: 1, Payload: fields}
	url, err := tmpl.RenderRules(v, rules)
	fmt.Println(url, err)

	// A status the map does not know is skipped, not sent.
	v.Payload, _ = postback.PayloadFields([]byte(`{"click_id":"c1","status":"chargeback","payout":1}`))
	_, err = tmpl.RenderRules(v, rules)
	var unmapped *postback.UnmappedError
	fmt.Println(errors.As(err, &unmapped) && unmapped.Skip(), err)

	// Output:
	// https://t.example/pb?subid=c1&status=sale&payout=1051&geo=JP&sub2= <nil>
	// true value "chargeback" of "status" is not in the endpoint's value map (unmapped: skip)
}
