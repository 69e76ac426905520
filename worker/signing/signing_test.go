package signing

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The example from the Standard Webhooks specification.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specUnix      = 1614265330
	specBody      = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func mustParseSecret(t *testing.T, s string) []byte {
	t.Helper()
	key, err := ParseSecret(s)
	if err != nil {
		t.Fatalf("ParseSecret(%q): %v", s, err)
	}
	return key
}

// fixedKey returns a deterministic 32-byte key distinct per seed.
func fixedKey(seed byte) []byte {
	return bytes.Repeat([]byte{seed}, 32)
}

func TestSignSpecVector(t *testing.T) {
	key := mustParseSecret(t, specSecret)
	got := Sign([][]byte{key}, specID, time.Unix(specUnix, 0), []byte(specBody))
	if got != specSignature {
		t.Fatalf("Sign = %q, want %q", got, specSignature)
	}
}

func TestSignMultipleKeysKeepsOrder(t *testing.T) {
	newKey, oldKey := fixedKey(1), fixedKey(2)
	ts := time.Unix(specUnix, 0)
	body := []byte(specBody)

	both := Sign([][]byte{newKey, oldKey}, specID, ts, body)
	onlyNew := Sign([][]byte{newKey}, specID, ts, body)
	onlyOld := Sign([][]byte{oldKey}, specID, ts, body)

	if want := onlyNew + " " + onlyOld; both != want {
		t.Fatalf("Sign(new, old) = %q, want %q (newest first, one space)", both, want)
	}
	if onlyNew == onlyOld {
		t.Fatal("different keys produced the same signature")
	}
	if got := Sign(nil, specID, ts, body); got != "" {
		t.Fatalf("Sign with no keys = %q, want empty", got)
	}
}

func TestNewSecret(t *testing.T) {
	t.Run("round trips through ParseSecret", func(t *testing.T) {
		random := bytes.NewReader(bytes.Repeat([]byte{0xAB}, 64))
		secret, err := NewSecret(random)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(secret, SecretPrefix) {
			t.Fatalf("secret %q lacks prefix %q", secret, SecretPrefix)
		}
		key := mustParseSecret(t, secret)
		if !bytes.Equal(key, bytes.Repeat([]byte{0xAB}, 32)) {
			t.Fatalf("key = %x, want 32 bytes of 0xab", key)
		}
	})
	t.Run("short random source is an error", func(t *testing.T) {
		_, err := NewSecret(bytes.NewReader(make([]byte, 10)))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
		}
	})
}

func TestParseSecret(t *testing.T) {
	tests := []struct {
		name    string
		secret  string
		wantErr error
		wantLen int
	}{
		{name: "spec secret", secret: specSecret, wantLen: 24},
		{name: "32 byte secret", secret: "whsec_" + strings.Repeat("A", 43) + "=", wantLen: 32},
		{name: "missing prefix", secret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", wantErr: ErrSecretPrefix},
		{name: "wrong prefix case", secret: "WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", wantErr: ErrSecretPrefix},
		{name: "bad base64", secret: "whsec_not*base64!", wantErr: ErrSecretEncoding},
		{name: "url-safe alphabet is not standard base64", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La_-Sw", wantErr: ErrSecretEncoding},
		{name: "missing padding", secret: "whsec_" + strings.Repeat("A", 43), wantErr: ErrSecretEncoding},
		{name: "too short", secret: "whsec_c2hvcnQ=", wantErr: ErrSecretTooShort},
		{name: "empty key", secret: "whsec_", wantErr: ErrSecretTooShort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := ParseSecret(tt.secret)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(key) != tt.wantLen {
				t.Fatalf("len(key) = %d, want %d", len(key), tt.wantLen)
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	key := mustParseSecret(t, specSecret)
	h := http.Header{}
	Headers(h, [][]byte{key}, specID, time.Unix(specUnix, 0), []byte(specBody))

	want := map[string]string{
		"webhook-id":        specID,
		"webhook-timestamp": "1614265330",
		"webhook-signature": specSignature,
	}
	for name, value := range want {
		if got := h.Get(name); got != value {
			t.Errorf("%s = %q, want %q", name, got, value)
		}
	}
	if len(h) != len(want) {
		t.Errorf("Headers set %d headers, want %d: %v", len(h), len(want), h)
	}
}

func TestVerify(t *testing.T) {
	newKey, oldKey, otherKey := fixedKey(1), fixedKey(2), fixedKey(3)
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"type":"conversion","payout":12.5}`)

	signed := func(keys [][]byte, ts time.Time) http.Header {
		h := http.Header{}
		Headers(h, keys, "evt_1", ts, body)
		return h
	}
	without := func(name string) http.Header {
		h := signed([][]byte{newKey}, now)
		h.Del(name)
		return h
	}
	withSignature := func(value string) http.Header {
		h := signed([][]byte{newKey}, now)
		h.Set(HeaderSignature, value)
		return h
	}
	withTimestamp := func(value string) http.Header {
		h := signed([][]byte{newKey}, now)
		h.Set(HeaderTimestamp, value)
		return h
	}
	goodSig := Sign([][]byte{newKey}, "evt_1", now, body)

	tests := []struct {
		name      string
		key       []byte
		header    http.Header
		body      []byte
		tolerance time.Duration
		wantErr   error
	}{
		{name: "valid single signature", key: newKey, header: signed([][]byte{newKey}, now)},
		{name: "rotation: new key matches first entry", key: newKey, header: signed([][]byte{newKey, oldKey}, now)},
		{name: "rotation: old key matches second entry", key: oldKey, header: signed([][]byte{newKey, oldKey}, now)},
		{name: "unrelated key", key: otherKey, header: signed([][]byte{newKey, oldKey}, now), wantErr: ErrNoMatchingSignature},
		{name: "tampered body", key: newKey, header: signed([][]byte{newKey}, now), body: []byte(`{"type":"conversion","payout":99}`), wantErr: ErrNoMatchingSignature},
		{name: "tampered id", key: newKey, header: func() http.Header {
			h := signed([][]byte{newKey}, now)
			h.Set(HeaderID, "evt_2")
			return h
		}(), wantErr: ErrNoMatchingSignature},
		{name: "timestamp changed after signing", key: newKey, header: withTimestamp("1700000001"), wantErr: ErrNoMatchingSignature},
		{name: "missing webhook-id", key: newKey, header: without(HeaderID), wantErr: ErrMissingHeader},
		{name: "missing webhook-timestamp", key: newKey, header: without(HeaderTimestamp), wantErr: ErrMissingHeader},
		{name: "missing webhook-signature", key: newKey, header: without(HeaderSignature), wantErr: ErrMissingHeader},
		{name: "non-numeric timestamp", key: newKey, header: withTimestamp("yesterday"), wantErr: ErrBadTimestamp},
		{name: "signed timestamp", key: newKey, header: withTimestamp("+1700000000"), wantErr: ErrBadTimestamp},
		{name: "fractional timestamp", key: newKey, header: withTimestamp("1700000000.5"), wantErr: ErrBadTimestamp},
		{name: "too old", key: newKey, header: signed([][]byte{newKey}, now.Add(-5*time.Minute-time.Second)), wantErr: ErrTimestampTooOld},
		{name: "too new", key: newKey, header: signed([][]byte{newKey}, now.Add(5*time.Minute+time.Second)), wantErr: ErrTimestampTooNew},
		{name: "old edge of default tolerance", key: newKey, header: signed([][]byte{newKey}, now.Add(-5*time.Minute))},
		{name: "new edge of default tolerance", key: newKey, header: signed([][]byte{newKey}, now.Add(5*time.Minute))},
		{name: "custom tolerance rejects", key: newKey, header: signed([][]byte{newKey}, now.Add(-2*time.Minute)), tolerance: time.Minute, wantErr: ErrTimestampTooOld},
		{name: "custom tolerance accepts", key: newKey, header: signed([][]byte{newKey}, now.Add(-9*time.Minute)), tolerance: 10 * time.Minute},
		{name: "other versions are skipped", key: newKey, header: withSignature("v1a,AAAA " + goodSig)},
		{name: "only other versions", key: newKey, header: withSignature("v2," + strings.TrimPrefix(goodSig, "v1,")), wantErr: ErrNoMatchingSignature},
		{name: "malformed entries are skipped", key: newKey, header: withSignature("garbage v1,!!! " + goodSig)},
		{name: "extra spaces between entries", key: newKey, header: withSignature("v1,AAAA   " + goodSig)},
		{name: "truncated signature", key: newKey, header: withSignature(goodSig[:len(goodSig)-4]), wantErr: ErrNoMatchingSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := body
			if tt.body != nil {
				b = tt.body
			}
			err := Verify(tt.key, tt.header, b, now, tt.tolerance)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestVerifySpecVector(t *testing.T) {
	h := http.Header{}
	h.Set("webhook-id", specID)
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", specSignature)
	now := time.Unix(specUnix+30, 0)
	if err := Verify(mustParseSecret(t, specSecret), h, []byte(specBody), now, 0); err != nil {
		t.Fatalf("Verify(spec example): %v", err)
	}
}

func TestReserved(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"webhook-id", true},
		{"Webhook-Timestamp", true},
		{"WEBHOOK-SIGNATURE", true},
		{"Content-Type", true},
		{"content-length", true},
		{"Content-Encoding", true},
		{"User-Agent", true},
		{"Host", true},
		{"Expect", true},
		{"Connection", true},
		{"Keep-Alive", true},
		{"Proxy-Connection", true},
		{"Proxy-Authorization", true},
		{"Proxy-Authenticate", true},
		{"TE", true},
		{"Trailer", true},
		{"Transfer-Encoding", true},
		{"Upgrade", true},
		{"Authorization", false},
		{"X-Api-Key", false},
		{"X-Webhook-Source", false},
		{"Webhook-Version", false},
		{"Accept", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Reserved(tt.name); got != tt.want {
				t.Fatalf("Reserved(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestValidHeaderName(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  bool
	}{
		{"simple", "X-Api-Key", true},
		{"all tchar symbols", "!#$%&'*+-.^_`|~", true},
		{"digits", "X-1", true},
		{"empty", "", false},
		{"space inside", "X Api", false},
		{"leading space", " X-Api", false},
		{"colon", "X-Api:", false},
		{"pseudo header", ":authority", false},
		{"CRLF injection", "X-A\r\nHost", false},
		{"tab", "X\tA", false},
		{"parentheses", "X(A)", false},
		{"slash", "X/A", false},
		{"quote", `X"A`, false},
		{"non-ASCII", "X-Über", false},
		{"DEL", "X\x7f", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidHeaderName(tt.input); got != tt.want {
				t.Fatalf("ValidHeaderName(%q) = %v, want %v", tt.input, got, tt.want)
			}
		})
	}
}
