package request

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// TimestampParam is the query parameter a signed postback's time travels in.
const TimestampParam = "ts"

// SignPostback signs a rendered postback URL (GET postbacks carry no
// headers a tracker could check, so the signature travels in the query):
//
//	base   = the URL as requested: scheme://host[:port]/path?query
//	signed = base + ("&" or, without a query, "?") + "ts=" + unix seconds
//	sent   = signed + "&" + param + "=" + hex(HMAC-SHA256(key, signed))
//
// The MAC is lowercase hex of HMAC-SHA256 over the bytes of signed, that is
// the full URL up to, not including, "&<param>=". The key is the signing
// secret's raw bytes: the base64 text after "whsec_" decoded (32 bytes),
// the same key a webhook's Standard Webhooks signature uses. A receiver
// rebuilds the URL it published (its scheme and host) with the request's
// path and query, cuts at the last "&<param>=", recomputes the MAC, compares
// in constant time, and refuses a ts too far from its clock.
//
// base is the URL as the HTTP client requests it (its path as escaped on
// the wire, "/" for an empty path, no empty port), so what is signed is
// what arrives. A URL
// with user info or a fragment cannot be signed: neither reaches the
// receiver's request line (the endpoint form refuses both).
//
// During a rotation overlap a URL carries one signature only, so Build
// signs with the oldest active key: the new secret takes over when the
// overlap ends, which leaves the partner the whole overlap to install it
// (and to accept either while it switches). A rotation without overlap
// switches at once, as it must when a secret leaked.
func SignPostback(rawURL, param string, key []byte, now time.Time) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("signed postback: %w", err)
	}
	if u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return "", errors.New("signed postback: a URL with user info or a fragment cannot be signed")
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	// The client drops an empty port ("host:"), so the signature does too.
	signed := u.Scheme + "://" + strings.TrimSuffix(u.Host, ":") + path + "?"
	if u.RawQuery != "" {
		signed += u.RawQuery + "&"
	}
	signed += TimestampParam + "=" + strconv.FormatInt(now.Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signed))
	return signed + "&" + param + "=" + hex.EncodeToString(mac.Sum(nil)), nil
}
