package ssrf

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// CheckHost is the save-time check on a URL's host, as url.URL.Host (with
// or without a port) or url.URL.Hostname() returns it. It gives the form a
// clear error early; it is not the security boundary, because a name that
// passes here is checked again on its resolved address by Control.
//
//   - Literal addresses are checked with Check, including the legacy numeric
//     forms that browsers and inet_aton accept (2130706433, 0x7f.1, 127.1,
//     0177.0.0.1) and bracketed IPv6 ([::ffff:127.0.0.1]).
//   - "localhost" and "*.localhost" always mean loopback (RFC 6761), so they
//     pass exactly when the allow list opens loopback.
//   - Cloud metadata names (metadata.google.internal, ...) are refused.
//   - Single-label names and internal-only suffixes (.internal, .local,
//     .home.arpa, ...) are refused unless the allow list is non-empty: an
//     operator who opens private ranges reaches internal hosts by name on
//     purpose, and only their resolved address can be judged.
//   - Any other name passes.
func (g *Guard) CheckHost(host string) error {
	err := g.checkHost(host)
	var be *BlockedError
	if errors.As(err, &be) {
		be.Variable = g.allowVariable()
	}
	return err
}

func (g *Guard) checkHost(host string) error {
	h, ok := stripPort(host)
	if !ok {
		return &BlockedError{Host: host, Reason: "malformed host"}
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return g.Check(ip)
	}
	if strings.ContainsAny(h, "[]:%") {
		return &BlockedError{Host: host, Reason: "malformed host"}
	}
	name, ok := normalizeName(h)
	if !ok {
		return &BlockedError{Host: host, Reason: "malformed host name"}
	}
	if ip, numeric, ok := parseLegacyIPv4(name); numeric {
		if !ok {
			// Browsers and the WHATWG URL parser reject a host whose
			// last label is a number but which is not a valid address;
			// a resolver might still do something surprising with it.
			return &BlockedError{Host: host, Reason: "malformed numeric address"}
		}
		return g.Check(ip)
	}
	if r := g.nameReason(name); r != "" {
		return &BlockedError{Host: name, Reason: r}
	}
	return nil
}

// stripPort removes brackets and an optional ":port" from a URL host.
func stripPort(host string) (string, bool) {
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return "", false
		}
		switch rest := host[end+1:]; {
		case rest == "":
		case rest[0] == ':' && validPort(rest[1:]):
		default:
			return "", false
		}
		return host[1:end], true
	}
	// A bare IPv6 address has several colons; only a single colon can
	// introduce a port.
	if strings.Count(host, ":") == 1 {
		i := strings.IndexByte(host, ':')
		if !validPort(host[i+1:]) {
			return "", false
		}
		return host[:i], true
	}
	return host, true
}

func validPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n <= 65535
}

// normalizeName lower-cases the name, maps Unicode through IDNA exactly as
// net/http does before dialling (so "１２７．０．０．１" is seen as the
// address it becomes), and drops one trailing root dot.
func normalizeName(h string) (string, bool) {
	if h == "" {
		return "", false
	}
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 {
			a, err := idna.Lookup.ToASCII(h)
			if err != nil {
				return "", false
			}
			h = a
			break
		}
	}
	h = strings.ToLower(h)
	h = strings.TrimSuffix(h, ".")
	if h == "" || strings.HasPrefix(h, ".") || strings.Contains(h, "..") {
		return "", false
	}
	return h, true
}

// parseLegacyIPv4 follows the WHATWG URL host parser: a name whose last
// label is numeric (decimal, 0x-hex or 0-octal) is an IPv4 address in
// inet_aton form, where the last part fills the remaining bytes. numeric
// reports whether the name is meant as an address at all; ok whether it is
// a valid one.
func parseLegacyIPv4(name string) (ip netip.Addr, numeric, ok bool) {
	labels := strings.Split(name, ".")
	if !looksNumeric(labels[len(labels)-1]) {
		return netip.Addr{}, false, false
	}
	if len(labels) > 4 {
		return netip.Addr{}, true, false
	}
	var parts [4]uint64
	for i, l := range labels {
		n, isNum := parseNumber(l)
		if !isNum {
			return netip.Addr{}, true, false
		}
		parts[i] = n
	}
	last := len(labels) - 1
	for i := 0; i < last; i++ {
		if parts[i] > 255 {
			return netip.Addr{}, true, false
		}
	}
	if parts[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, true, false
	}
	v := parts[last]
	for i := 0; i < last; i++ {
		v |= parts[i] << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, true
}

// looksNumeric is the WHATWG "ends in a number" test: a last label of
// digits, or one starting with 0x (no top-level domain does either).
func looksNumeric(l string) bool {
	if l == "" {
		return false
	}
	if strings.HasPrefix(l, "0x") {
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// parseNumber parses one inet_aton part. Values are capped well above 2^32
// so that overflow cannot wrap a huge number onto a small address.
func parseNumber(l string) (uint64, bool) {
	base := 10
	switch {
	case strings.HasPrefix(l, "0x"):
		base, l = 16, l[2:]
		if l == "" {
			return 0, true // WHATWG: "0x" alone is zero
		}
	case len(l) > 1 && l[0] == '0':
		base, l = 8, l[1:]
	case l == "":
		return 0, false
	}
	if len(l) > 12 {
		return 0, false
	}
	n, err := strconv.ParseUint(l, base, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// nameReason refuses names that can only lead inside the deployment.
func (g *Guard) nameReason(name string) string {
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		// RFC 6761 pins these to loopback, so they follow the loopback
		// verdict, which the allow list may have opened (tests, demo).
		if g.reason(netip.AddrFrom4([4]byte{127, 0, 0, 1})) == "" || g.reason(netip.IPv6Loopback()) == "" {
			return ""
		}
		return "localhost name"
	}
	switch name {
	case "metadata.google.internal", "metadata.goog", "metadata",
		"instance-data", "instance-data.ec2.internal",
		"metadata.tencentyun.com":
		return reasonMetaName
	}
	if g != nil && len(g.allow) > 0 {
		return ""
	}
	if !strings.Contains(name, ".") {
		// Resolvers expand single labels through the search list
		// (cluster.local, the cloud's internal zone), so "db" or
		// "metadata" reach internal hosts.
		return "single-label name"
	}
	tld := name[strings.LastIndexByte(name, '.')+1:]
	switch {
	case strings.HasSuffix(name, ".home.arpa"):
		return reasonReservedTLD
	case tld == "internal", tld == "local", tld == "localdomain",
		tld == "lan", tld == "home", tld == "corp", tld == "intranet":
		// .internal is reserved for private use (ICANN, 2024); .local is
		// mDNS; the rest are never delegated and only exist inside
		// private networks.
		return reasonReservedTLD
	}
	return ""
}
