package secretbox

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/textproto"
	"strconv"
	"strings"
)

// Custom request headers often carry a partner's credentials
// ("Authorization: Bearer …"), so their values are sealed like signing
// secrets. The stored JSON object keeps the header names readable (pages
// list them without the key); each value becomes SealedPrefix followed by
// base64(nonce || ciphertext || tag), bound to the endpoint and the
// canonical header name.

// SealedPrefix marks a sealed header value.
const SealedPrefix = "sealed:v1:"

// SealHeaders returns the stored form of an endpoint's custom headers.
func (b *Box) SealHeaders(endpointID int64, plain map[string]string) (json.RawMessage, error) {
	out := make(map[string]string, len(plain))
	for name, value := range plain {
		sealed, err := b.seal(headerAD(endpointID, name), []byte(value))
		if err != nil {
			return nil, err
		}
		out[name] = SealedPrefix + base64.RawStdEncoding.EncodeToString(sealed)
	}
	return json.Marshal(out)
}

// OpenHeaders returns an endpoint's custom headers in plain text. Values
// stored before headers were sealed pass through as they are (see
// Plaintext).
func (b *Box) OpenHeaders(endpointID int64, stored json.RawMessage) (map[string]string, error) {
	m, err := headerMap(stored)
	if err != nil {
		return nil, err
	}
	for name, value := range m {
		rest, ok := strings.CutPrefix(value, SealedPrefix)
		if !ok {
			continue
		}
		sealed, err := base64.RawStdEncoding.DecodeString(rest)
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", name, ErrDecrypt)
		}
		plain, err := b.open(headerAD(endpointID, name), sealed)
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", name, err)
		}
		m[name] = string(plain)
	}
	return m, nil
}

// HeaderNames lists the names of stored headers, which need no key.
func HeaderNames(stored json.RawMessage) ([]string, error) {
	m, err := headerMap(stored)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	return names, nil
}

// Plaintext reports whether stored headers hold a value that is not
// sealed (written before values were sealed).
func Plaintext(stored json.RawMessage) (bool, error) {
	m, err := headerMap(stored)
	if err != nil {
		return false, err
	}
	for _, value := range m {
		if !strings.HasPrefix(value, SealedPrefix) {
			return true, nil
		}
	}
	return false, nil
}

func headerMap(stored json.RawMessage) (map[string]string, error) {
	m := map[string]string{}
	if len(stored) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(stored, &m); err != nil {
		return nil, fmt.Errorf("stored headers: %w", err)
	}
	return m, nil
}

func headerAD(endpointID int64, name string) []byte {
	ad := strconv.AppendInt([]byte("hookline endpoint header "), endpointID, 10)
	return append(append(ad, ' '), textproto.CanonicalMIMEHeaderKey(name)...)
}
