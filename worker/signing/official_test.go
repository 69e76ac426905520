package signing

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/signing/verifytest"
)

// TestOfficialVerifier proves that receivers using the official Standard
// Webhooks library accept what Headers produces, including the two-signature
// header sent during a secret rotation. Our own Verify could share a
// misreading of the spec with Sign; an independent implementation cannot.
func TestOfficialVerifier(t *testing.T) {
	node := verifytest.Require(t)

	newSecret := secretFrom(t, 0x11)
	oldSecret := secretFrom(t, 0x22)
	otherSecret := secretFrom(t, 0x33)
	// The official verifier checks against the real clock with a 5 minute
	// tolerance, so these requests must be signed "now".
	now := time.Now()
	body := `{"type":"conversion.approved","data":{"click_id":"abc 123","payout":12.50,"city":"São Paulo"}}`

	headersFor := func(secrets []string, id, body string) map[string]string {
		keys := make([][]byte, len(secrets))
		for i, s := range secrets {
			keys[i] = mustParseSecret(t, s)
		}
		h := http.Header{}
		Headers(h, keys, id, now, []byte(body))
		return map[string]string{
			"webhook-id":        h.Get(HeaderID),
			"webhook-timestamp": h.Get(HeaderTimestamp),
			"webhook-signature": h.Get(HeaderSignature),
		}
	}
	rotation := headersFor([]string{newSecret, oldSecret}, "evt_rotation", body)

	cases := []struct {
		name   string
		input  verifytest.Case
		accept bool
	}{
		{
			name:   "single secret",
			input:  verifytest.Case{Secret: newSecret, Headers: headersFor([]string{newSecret}, "evt_single", body), Body: body},
			accept: true,
		},
		{
			name:   "rotation overlap, receiver holds the new secret",
			input:  verifytest.Case{Secret: newSecret, Headers: rotation, Body: body},
			accept: true,
		},
		{
			name:   "rotation overlap, receiver still holds the old secret",
			input:  verifytest.Case{Secret: oldSecret, Headers: rotation, Body: body},
			accept: true,
		},
		{
			name:   "tampered body",
			input:  verifytest.Case{Secret: newSecret, Headers: headersFor([]string{newSecret}, "evt_tampered", body), Body: strings.Replace(body, "12.50", "99.00", 1)},
			accept: false,
		},
		{
			name:   "signed with an unrelated secret",
			input:  verifytest.Case{Secret: newSecret, Headers: headersFor([]string{otherSecret}, "evt_unrelated", body), Body: body},
			accept: false,
		},
	}

	inputs := make([]verifytest.Case, len(cases))
	for i, c := range cases {
		inputs[i] = c.input
	}
	results := verifytest.Run(t, node, inputs)

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := results[i]
			if got.Accepted != c.accept {
				t.Fatalf("official verifier accepted = %v (error %q), want %v", got.Accepted, got.Error, c.accept)
			}
			if !c.accept && got.Error == "" {
				t.Fatal("rejection carried no error message")
			}
		})
	}
}

// secretFrom builds a deterministic secret so failures are reproducible.
func secretFrom(t *testing.T, seed byte) string {
	t.Helper()
	s, err := NewSecret(bytes.NewReader(bytes.Repeat([]byte{seed}, secretBytes)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
