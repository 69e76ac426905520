package signing

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// verifierDir holds the pinned official JavaScript verifier (package.json and
// package-lock.json); its node_modules is installed by CI, never committed.
const verifierDir = "testdata/verify"

// verifierCase is one input line for verify.mjs.
type verifierCase struct {
	Secret  string            `json:"secret"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// verifierResult is verify.mjs's answer for one case.
type verifierResult struct {
	Accepted bool   `json:"accepted"`
	Error    string `json:"error"`
}

// TestOfficialVerifier proves that receivers using the official Standard
// Webhooks library accept what Headers produces, including the two-signature
// header sent during a secret rotation. Our own Verify could share a
// misreading of the spec with Sign; an independent implementation cannot.
func TestOfficialVerifier(t *testing.T) {
	node := requireOfficialVerifier(t)

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
		input  verifierCase
		accept bool
	}{
		{
			name:   "single secret",
			input:  verifierCase{Secret: newSecret, Headers: headersFor([]string{newSecret}, "evt_single", body), Body: body},
			accept: true,
		},
		{
			name:   "rotation overlap, receiver holds the new secret",
			input:  verifierCase{Secret: newSecret, Headers: rotation, Body: body},
			accept: true,
		},
		{
			name:   "rotation overlap, receiver still holds the old secret",
			input:  verifierCase{Secret: oldSecret, Headers: rotation, Body: body},
			accept: true,
		},
		{
			name:   "tampered body",
			input:  verifierCase{Secret: newSecret, Headers: headersFor([]string{newSecret}, "evt_tampered", body), Body: strings.Replace(body, "12.50", "99.00", 1)},
			accept: false,
		},
		{
			name:   "signed with an unrelated secret",
			input:  verifierCase{Secret: newSecret, Headers: headersFor([]string{otherSecret}, "evt_unrelated", body), Body: body},
			accept: false,
		},
	}

	inputs := make([]verifierCase, len(cases))
	for i, c := range cases {
		inputs[i] = c.input
	}
	results := runOfficialVerifier(t, node, inputs)

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

// requireOfficialVerifier returns the path of node, skipping the test on a
// developer machine without the verifier installed. In CI a missing verifier
// fails the test: a silent skip there would hide a broken install step.
func requireOfficialVerifier(t *testing.T) string {
	t.Helper()
	const hint = "run `npm ci --prefix worker/signing/testdata/verify` from the repository root"

	problem := ""
	node, err := exec.LookPath("node")
	if err != nil {
		problem = "node is not on PATH (install Node.js 18 or later)"
	} else if _, err := os.Stat(filepath.Join(verifierDir, "node_modules", "standardwebhooks", "package.json")); err != nil {
		problem = "the official verifier is not installed in " + verifierDir + "/node_modules"
	}
	if problem == "" {
		return node
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; %s (CI must run the official verifier test, not skip it)", problem, hint)
	}
	t.Skipf("%s; %s", problem, hint)
	return ""
}

func runOfficialVerifier(t *testing.T, node string, cases []verifierCase) []verifierResult {
	t.Helper()
	input, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	cmd := exec.CommandContext(ctx, node, "verify.mjs")
	cmd.Dir = verifierDir
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node verify.mjs: %v\nstderr:\n%s", err, stderr.String())
	}

	var results []verifierResult
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("decode verify.mjs output %q: %v", out, err)
	}
	if len(results) != len(cases) {
		t.Fatalf("verify.mjs returned %d results for %d cases", len(results), len(cases))
	}
	return results
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
