// Package signing owns how hookline signs outbound webhooks: the Standard
// Webhooks v1 secret format ("whsec_" + base64 key), the webhook-id /
// webhook-timestamp / webhook-signature headers, the receiver-side Verify used
// by our tests and shown in the receiver docs, and the rules for which
// custom header names an endpoint may set.
//
// It is a pure leaf package: no database, no clock and no global randomness.
// Callers pass the random source and the times explicitly, so signing is
// deterministic under test.
package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix marks a Standard Webhooks signing secret; the rest of the
// secret is the standard, padded base64 encoding of the HMAC key.
const SecretPrefix = "whsec_"

// Header names defined by Standard Webhooks v1. They are written in the
// spec's lower-case form; http.Header canonicalises them on Set and Get.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// DefaultTolerance is the clock skew Verify accepts when given a zero
// tolerance. Five minutes is the value the spec and the official libraries
// use: long enough for skewed clocks and slow queues, short enough to make a
// captured request useless for replay soon after.
const DefaultTolerance = 5 * time.Minute

const (
	// secretBytes is the size of keys hookline generates: the full block size
	// of SHA-256, the strongest key HMAC-SHA256 makes use of.
	secretBytes = 32
	// minSecretBytes is the spec's lower bound for a signing key. Shorter
	// keys are refused rather than silently accepted from an import.
	minSecretBytes = 24
	// signatureVersion tags symmetric HMAC-SHA256 signatures.
	signatureVersion = "v1"
)

// Errors returned by ParseSecret and Verify. They are wrapped with detail, so
// compare with errors.Is.
var (
	ErrSecretPrefix        = errors.New("secret does not start with " + SecretPrefix)
	ErrSecretEncoding      = errors.New("secret is not valid base64")
	ErrSecretTooShort      = errors.New("secret is too short")
	ErrMissingHeader       = errors.New("missing header")
	ErrBadTimestamp        = errors.New("invalid webhook-timestamp")
	ErrTimestampTooOld     = errors.New("webhook-timestamp is too old")
	ErrTimestampTooNew     = errors.New("webhook-timestamp is too far in the future")
	ErrNoMatchingSignature = errors.New("no matching signature")
)

// NewSecret returns a new signing secret: SecretPrefix followed by the
// standard padded base64 encoding of 32 bytes read from r. Production passes
// crypto/rand.Reader; tests pass a fixed reader.
func NewSecret(r io.Reader) (string, error) {
	key := make([]byte, secretBytes)
	if _, err := io.ReadFull(r, key); err != nil {
		return "", fmt.Errorf("read random bytes for secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// ParseSecret decodes a "whsec_..." secret into its HMAC key bytes.
func ParseSecret(s string) ([]byte, error) {
	encoded, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, ErrSecretPrefix
	}
	key, err := base64.StdEncoding.Strict().DecodeString(encoded)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSecretEncoding, err)
	}
	if len(key) < minSecretBytes {
		return nil, fmt.Errorf("%w: %d bytes, need at least %d", ErrSecretTooShort, len(key), minSecretBytes)
	}
	return key, nil
}

// Sign returns the webhook-signature header value: one "v1,<base64 MAC>"
// entry per key, space-separated, in the order given. During a rotation
// overlap callers pass the newest key first, so receivers that check only the
// first entry still see the current secret. With no keys it returns "".
func Sign(keys [][]byte, id string, ts time.Time, body []byte) string {
	var b strings.Builder
	for i, key := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(signatureVersion)
		b.WriteByte(',')
		b.WriteString(base64.StdEncoding.EncodeToString(mac(key, id, ts.Unix(), body)))
	}
	return b.String()
}

// Headers sets webhook-id, webhook-timestamp (unix seconds of ts) and
// webhook-signature on h. The same ts must be used for the header and the
// signature, which is why both are produced here rather than by the caller.
func Headers(h http.Header, keys [][]byte, id string, ts time.Time, body []byte) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, Sign(keys, id, ts, body))
}

// Verify checks a received webhook the way a receiver should: all three
// headers present, webhook-timestamp within tolerance of now (a zero or
// negative tolerance means DefaultTolerance), and at least one v1 entry in
// webhook-signature matching the HMAC of the body under key. Entries of other
// versions are skipped, as the spec requires, so a future asymmetric
// signature next to ours does not break receivers.
func Verify(key []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id := h.Get(HeaderID)
	rawTS := h.Get(HeaderTimestamp)
	sigs := h.Get(HeaderSignature)
	for _, hv := range [...]struct{ name, value string }{
		{HeaderID, id},
		{HeaderTimestamp, rawTS},
		{HeaderSignature, sigs},
	} {
		if hv.value == "" {
			return fmt.Errorf("%w: %s", ErrMissingHeader, hv.name)
		}
	}

	// Only plain decimal digits: ParseInt alone would accept "+123", which
	// another receiver might read differently from us.
	if strings.TrimLeft(rawTS, "0123456789") != "" {
		return fmt.Errorf("%w: %q is not unix seconds", ErrBadTimestamp, rawTS)
	}
	unix, err := strconv.ParseInt(rawTS, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not unix seconds", ErrBadTimestamp, rawTS)
	}

	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	// Compare in whole seconds: the header has no sub-second part, and the
	// official libraries truncate "now" the same way.
	skew := time.Duration(now.Unix()-unix) * time.Second
	if skew > tolerance {
		return fmt.Errorf("%w: %s older than now", ErrTimestampTooOld, skew)
	}
	if -skew > tolerance {
		return fmt.Errorf("%w: %s ahead of now", ErrTimestampTooNew, -skew)
	}

	want := mac(key, id, unix, body)
	for _, entry := range strings.Fields(sigs) {
		version, encoded, ok := strings.Cut(entry, ",")
		if !ok || version != signatureVersion {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			continue
		}
		// hmac.Equal is constant-time, so response timing does not reveal
		// how many leading bytes of a forged signature were right.
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrNoMatchingSignature
}

// mac computes HMAC-SHA256(key, id "." unix "." body), the signed content
// defined by Standard Webhooks.
func mac(key []byte, id string, unix int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	io.WriteString(m, id)
	io.WriteString(m, ".")
	io.WriteString(m, strconv.FormatInt(unix, 10))
	io.WriteString(m, ".")
	m.Write(body)
	return m.Sum(nil)
}
