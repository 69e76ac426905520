package signing

import "strings"

// Reserved reports whether name is a header that endpoint owners may not set
// as a custom header, compared case-insensitively. hookline owns these:
//
//   - the Standard Webhooks headers, because a custom value would break or
//     forge the signature receivers check;
//   - content-type, content-length, content-encoding and user-agent, because
//     the body is the exact stored JSON and receivers identify us by agent;
//   - host and expect, which would redirect the request or change how the
//     transport sends it;
//   - hop-by-hop headers (RFC 9110 §7.6.1 and the legacy ones proxies still
//     honour), which describe one connection and are not ours to hand over.
func Reserved(name string) bool {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case HeaderID, HeaderTimestamp, HeaderSignature,
		"content-type", "content-length", "content-encoding", "user-agent",
		"host", "expect",
		"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
		"proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade":
		return true
	}
	return false
}

// ValidHeaderName reports whether name is a valid RFC 9110 field name: a
// non-empty token of visible ASCII characters other than delimiters. Anything
// else would either be refused by the HTTP client at send time or, worse,
// smuggle a second header into the request.
func ValidHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return false
		}
	}
	return true
}

// isTokenChar reports whether c is an RFC 9110 tchar.
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
