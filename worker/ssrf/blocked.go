// The error a refused dial returns, and the hint it gives the operator.

package ssrf

import (
	"net/netip"
	"strings"
)

// BlockedError reports a refused destination. Addr is the refused address;
// Host is set instead when a name (not an address) was refused.
type BlockedError struct {
	Addr   netip.Addr
	Host   string
	Reason string
	// Variable is the configuration variable whose prefixes would open
	// the destination (HOOKLINE_ALLOW_NETWORKS, or
	// HOOKLINE_PARTNER_ALLOW_NETWORKS for a partner guard); "" is the
	// former.
	Variable string
}

func (e *BlockedError) Error() string {
	dest := e.Host
	if e.Addr.IsValid() {
		dest = e.Addr.String()
	}
	msg := "blocked destination " + dest + " (" + e.Reason + ")"
	if dest == "" {
		msg = "blocked destination (" + e.Reason + ")"
	}
	if h := e.Hint(); h != "" {
		msg += ": " + h
	}
	return msg
}

// AllowVariable is the configuration variable whose prefixes open refused
// ranges (web/app reads it into New's allow list).
const AllowVariable = "HOOKLINE_ALLOW_NETWORKS"

// Hint says how an operator could allow the destination, naming
// HOOKLINE_ALLOW_NETWORKS and a prefix that covers it, or "" when no
// allow list can (cloud metadata names, malformed hosts).
func (e *BlockedError) Hint() string {
	if strings.Contains(e.Reason, "metadata") {
		return "" // never a destination to open
	}
	allowVariable := e.Variable
	if allowVariable == "" {
		allowVariable = AllowVariable
	}
	if e.Addr.IsValid() {
		p, ok := coveringPrefix(e.Addr.WithZone(""), e.Reason)
		if !ok {
			return ""
		}
		return "allowed only when " + allowVariable + " includes it (e.g. " + p.String() + ")"
	}
	switch e.Reason {
	case "localhost name":
		return "allowed only when " + allowVariable + " includes loopback (e.g. 127.0.0.0/8)"
	case reasonReservedTLD, "single-label name":
		return "allowed only when " + allowVariable + " is set (names are then judged by the addresses they resolve to)"
	}
	return ""
}

// coveringPrefix is the refused range named by reason that holds the
// address (what an operator would allow), or the address alone when it was
// refused for another reason (an embedded IPv4 form): the allow list is
// checked against the address as dialled, and an IPv4-mapped address as
// its IPv4 address.
func coveringPrefix(a netip.Addr, reason string) (netip.Prefix, bool) {
	switch reason {
	case "invalid address", "guard not configured":
		return netip.Prefix{}, false
	}
	rules := ipv6Rules()
	if a.Is4In6() {
		a = a.Unmap()
		reason = reason[strings.LastIndex(reason, ": ")+2:]
	}
	if a.Is4() {
		rules = ipv4Rules()
	}
	for _, r := range rules {
		if r.reason == reason && r.prefix.Contains(a) {
			return r.prefix, true
		}
	}
	return netip.PrefixFrom(a, a.BitLen()), true
}
