// Package ssrf owns hookline's outbound destination policy: which IP
// addresses and host names the delivery worker and the dashboard's test fire
// may connect to. Endpoint URLs are written by partners and operators, so
// without this guard a webhook could be aimed at the cloud metadata service,
// the database, or anything else reachable from inside the deployment.
//
// The authoritative check is Guard.Control, installed as the dialer's
// Control hook: it sees the address actually being connected to, after DNS
// resolution, so a name that resolves to a public address when the endpoint
// is saved and to 127.0.0.1 when it is called (DNS rebinding) is still
// refused. Guard.CheckHost is the friendlier save-time check for forms.
package ssrf

// Long file: the guard's decision, its IPv4 and IPv6 rule tables and its dial hook belong together; a reader checks a rule against the table beside it.

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// Guard decides whether hookline may connect to an address. Everything that
// is not ordinary public unicast is refused unless an allow-list prefix
// (HOOKLINE_ALLOW_NETWORKS) covers it. A Guard is immutable after New and
// safe for concurrent use; the zero Guard refuses every address.
type Guard struct {
	allow []netip.Prefix
	v4    []rule
	v6    []rule
	// variable is the configuration variable the allow list came from,
	// named in hints ("" means HOOKLINE_ALLOW_NETWORKS); see NewPartner.
	variable string
	// public judges addresses with the same rules and no allow list, for
	// Classify.
	public *Guard
}

// rule is one refused range. Rules are checked in order and the first match
// names the reason, so narrower ranges (a metadata address) come before the
// ranges that contain them (link-local).
type rule struct {
	prefix netip.Prefix
	reason string
}

// Reasons shared by several rules. Callers match on the *BlockedError type,
// not on these strings; they exist so that tests and messages agree.
const (
	reasonLoopback    = "loopback"
	reasonUnspecified = "unspecified"
	reasonPrivate     = "private (RFC 1918)"
	reasonCGNAT       = "shared address space (CGNAT)"
	reasonLinkLocal   = "link-local"
	reasonMetadata    = "link-local (cloud metadata)"
	reasonULA         = "unique local (IPv6 ULA)"
	reasonMulticast   = "multicast"
	reasonBroadcast   = "broadcast"
	reasonReserved    = "reserved"
	reasonBenchmark   = "benchmarking (RFC 2544)"
	reasonDoc         = "documentation"
	reasonIETF        = "IETF protocol assignments"
	reasonNotGlobal   = "not global unicast"
	reasonReservedTLD = "reserved or internal name"
	reasonMetaName    = "cloud metadata name"
)

// New returns a Guard that refuses every special-purpose range except those
// covered by allow. The allow list is absolute: a prefix opens every address
// in it, including ones that would otherwise be refused for a stronger
// reason (169.254.169.254 inside an allowed 169.254.0.0/16), because an
// operator who lists a range has decided that this deployment may reach it.
// An IPv4-mapped allow prefix (::ffff:127.0.0.0/104) is stored as its IPv4
// form, since addresses are unmapped before they are checked.
func New(allow []netip.Prefix) *Guard {
	g := &Guard{v4: ipv4Rules(), v6: ipv6Rules()}
	g.public = &Guard{v4: g.v4, v6: g.v6}
	for _, p := range allow {
		if !p.IsValid() {
			continue
		}
		g.allow = append(g.allow, normalizePrefix(p))
	}
	return g
}

func normalizePrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// ParseAllowList parses HOOKLINE_ALLOW_NETWORKS: CIDRs separated by commas
// and/or white space. A bare address becomes a single-address prefix (/32
// or /128). Host bits in a CIDR are cleared, as every router does. An empty
// string is an empty list.
func ParseAllowList(s string) ([]netip.Prefix, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	var out []netip.Prefix
	for _, f := range fields {
		p, err := parseAllowEntry(f)
		if err != nil {
			return nil, fmt.Errorf("allow list entry %q: %w", f, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseAllowEntry(f string) (netip.Prefix, error) {
	if strings.Contains(f, "/") {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return netip.Prefix{}, err
		}
		return normalizePrefix(p), nil
	}
	a, err := netip.ParseAddr(f)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a.Zone() != "" {
		// A zone names an interface on this host, not a network; accepting
		// it would silently open the address on every interface.
		return netip.Prefix{}, fmt.Errorf("zoned address not allowed")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// Check is the decision function: nil means hookline may connect to ip,
// otherwise the error is a *BlockedError naming the reason.
func (g *Guard) Check(ip netip.Addr) error {
	if reason := g.reason(ip); reason != "" {
		return &BlockedError{Addr: ip, Reason: reason, Variable: g.allowVariable()}
	}
	return nil
}

func (g *Guard) reason(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid address"
	}
	if g == nil || g.v4 == nil {
		return "guard not configured"
	}
	// A zone picks the interface, not the destination: fe80::1%eth0 is
	// link-local whichever interface it names.
	ip = ip.WithZone("")
	if ip.Is4In6() {
		// A dual-stack socket sends ::ffff:a.b.c.d to a.b.c.d, so the
		// mapped form is judged exactly as the IPv4 address.
		v4 := ip.Unmap()
		if r := g.reason(v4); r != "" {
			return "IPv4-mapped " + v4.String() + ": " + r
		}
		return ""
	}
	if g.allowed(ip) {
		return ""
	}
	if ip.Is4() {
		return match(g.v4, ip)
	}
	return g.reason6(ip)
}

func (g *Guard) allowed(ip netip.Addr) bool {
	for _, p := range g.allow {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func match(rules []rule, ip netip.Addr) string {
	for _, r := range rules {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	return ""
}

// reason6 judges an IPv6 address that is neither allow-listed nor
// IPv4-mapped. Forms that carry an IPv4 address are judged by that address
// as well: a NAT64 gateway or 6to4/Teredo relay would deliver the packet to
// it, so 64:ff9b::7f00:1 is as dangerous as 127.0.0.1. The embedded address
// is checked with the allow list too, so allowing 10.0.0.0/8 on an
// IPv6-only network (where DNS64 hands out 64:ff9b::a00:5) still works.
func (g *Guard) reason6(ip netip.Addr) string {
	b := ip.As16()
	switch {
	case ip == netip.IPv6Unspecified():
		return reasonUnspecified
	case ip == netip.IPv6Loopback():
		return reasonLoopback
	case isZero(b[:12]):
		// IPv4-compatible (::a.b.c.d, RFC 4291 §2.5.5.1) is deprecated and
		// never routed; refuse it even when the IPv4 address is public.
		if r := g.embedded("IPv4-compatible", v4At(b, 12, 13, 14, 15)); r != "" {
			return r
		}
		return "IPv4-compatible (deprecated)"
	case isZero(b[:8]) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0:
		// ::ffff:0:a.b.c.d, the SIIT "IPv4-translated" form (RFC 2765).
		if r := g.embedded("IPv4-translated", v4At(b, 12, 13, 14, 15)); r != "" {
			return r
		}
		return "IPv4-translated (SIIT)"
	case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && isZero(b[4:12]):
		// 64:ff9b::/96, the well-known NAT64 prefix (RFC 6052).
		return g.embedded("NAT64", v4At(b, 12, 13, 14, 15))
	case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0 && b[5] == 1:
		// 64:ff9b:1::/48, the local-use NAT64 prefix (RFC 8215).
		return g.nat64Local(b)
	case b[0] == 0x20 && b[1] == 0x02:
		// 2002::/16 6to4: the relay forwards to the IPv4 in bits 16-47.
		if r := g.embedded("6to4", v4At(b, 2, 3, 4, 5)); r != "" {
			return r
		}
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0:
		// 2001::/32 Teredo: bits 32-63 are the server, the last 32 bits
		// the client address with every bit inverted (RFC 4380 §4).
		if r := g.embedded("Teredo server", v4At(b, 4, 5, 6, 7)); r != "" {
			return r
		}
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		if r := g.embedded("Teredo client", client); r != "" {
			return r
		}
	}
	return match(g.v6, ip)
}

// nat64Local decodes 64:ff9b:1::/48, the local-use NAT64 prefix (RFC
// 8215). Unlike the well-known /96, an operator may carve a /48, /56, /64
// or /96 translation prefix out of it, and RFC 6052 places the IPv4 address
// at a position that depends on that length (skipping bits 64-71, which
// must be zero). The address alone does not say which length is in use, so
// every layout that fits (zero bits 64-71 and a zero suffix) is decoded and
// the address is refused if any reading is refused: a guard must fail
// closed. The /96 reading is skipped only when it would be 0.0.0.0, which
// no translator forwards, so that it does not refuse every address written
// in a shorter layout. What remains ambiguous is a /64-layout address whose
// /96 reading lands in a refused range; an operator using such a layout
// can allow-list the translation prefix.
func (g *Guard) nat64Local(b [16]byte) string {
	if b[8] == 0 {
		layouts := [...]struct {
			pos    [4]int
			suffix int // first byte of the zero suffix
		}{
			{[4]int{6, 7, 9, 10}, 11},   // /48
			{[4]int{7, 9, 10, 11}, 12},  // /56
			{[4]int{9, 10, 11, 12}, 13}, // /64
		}
		for _, l := range layouts {
			if !isZero(b[l.suffix:]) {
				continue
			}
			if r := g.embedded("NAT64", v4At(b, l.pos[0], l.pos[1], l.pos[2], l.pos[3])); r != "" {
				return r
			}
		}
		if isZero(b[12:]) {
			return ""
		}
	}
	return g.embedded("NAT64", v4At(b, 12, 13, 14, 15))
}

// embedded judges the IPv4 address carried by an IPv6 form and returns the
// outer address's reason, or "" if the IPv4 address may be reached.
func (g *Guard) embedded(form string, v4 netip.Addr) string {
	if g.allowed(v4) {
		return ""
	}
	r := match(g.v4, v4)
	if r == "" {
		return ""
	}
	return form + " " + v4.String() + ": " + r
}

func v4At(b [16]byte, i, j, k, l int) netip.Addr {
	return netip.AddrFrom4([4]byte{b[i], b[j], b[k], b[l]})
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// ipv4Rules lists refused IPv4 ranges (IANA special-purpose registry plus
// cloud metadata addresses), narrowest first where they nest.
//
// Documentation ranges are refused: they are never routed on the internet,
// so a connection to one can only reach something a local network has
// repurposed them for (lab and VPN setups do), which is exactly what the
// guard exists to stop. No real receiver can live there.
func ipv4Rules() []rule {
	p := func(a, b, c, d byte, bits int) netip.Prefix {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{a, b, c, d}), bits)
	}
	return []rule{
		{p(0, 0, 0, 0, 8), reasonUnspecified},
		{p(10, 0, 0, 0, 8), reasonPrivate},
		{p(100, 100, 100, 200, 32), "shared address space (cloud metadata)"}, // Alibaba Cloud
		{p(100, 64, 0, 0, 10), reasonCGNAT},
		{p(127, 0, 0, 0, 8), reasonLoopback},
		{p(169, 254, 169, 254, 32), reasonMetadata}, // AWS, GCP, Azure, OCI, ...
		{p(169, 254, 170, 2, 32), reasonMetadata},   // AWS ECS task metadata
		{p(169, 254, 170, 23, 32), reasonMetadata},  // AWS EKS pod identity
		{p(169, 254, 0, 23, 32), reasonMetadata},    // Tencent Cloud
		{p(169, 254, 0, 0, 16), reasonLinkLocal},
		{p(172, 16, 0, 0, 12), reasonPrivate},
		{p(192, 0, 0, 192, 32), "IETF protocol assignments (cloud metadata)"}, // Oracle Cloud
		{p(192, 0, 0, 0, 24), reasonIETF},
		{p(192, 0, 2, 0, 24), reasonDoc + " (TEST-NET-1)"},
		{p(192, 88, 99, 0, 24), "6to4 relay anycast (deprecated)"},
		{p(192, 168, 0, 0, 16), reasonPrivate},
		{p(198, 18, 0, 0, 15), reasonBenchmark},
		{p(198, 51, 100, 0, 24), reasonDoc + " (TEST-NET-2)"},
		{p(203, 0, 113, 0, 24), reasonDoc + " (TEST-NET-3)"},
		{p(224, 0, 0, 0, 4), reasonMulticast},
		{p(255, 255, 255, 255, 32), reasonBroadcast},
		{p(240, 0, 0, 0, 4), reasonReserved + " (240.0.0.0/4)"},
	}
}

// ipv6Rules lists refused IPv6 ranges that carry no IPv4 address (those are
// decoded in reason6). The final rule refuses everything outside 2000::/3:
// IANA allocates global unicast only from there, and the rest of the space
// is special-purpose (discard-only 100::/64, SRv6 5f00::/16, ...) or
// unassigned, so nothing a partner can legitimately host lives outside it.
func ipv6Rules() []rule {
	p := func(s string) netip.Prefix { return netip.MustParsePrefix(s) }
	return []rule{
		{p("fd00:ec2::254/128"), "unique local (cloud metadata)"}, // AWS IMDS over IPv6
		{p("fd00:ec2::23/128"), "unique local (cloud metadata)"},  // AWS EKS pod identity
		{p("fc00::/7"), reasonULA},
		{p("fe80::/10"), reasonLinkLocal},
		{p("fec0::/10"), "site-local (deprecated)"},
		{p("ff00::/8"), reasonMulticast},
		{p("2001:2::/48"), reasonBenchmark},
		{p("2001:10::/28"), reasonIETF + " (ORCHID)"},
		{p("2001:20::/28"), reasonIETF + " (ORCHIDv2)"},
		{p("2001:db8::/32"), reasonDoc},
		{p("3fff::/20"), reasonDoc},
		{p("2000::/3"), ""}, // global unicast: allowed unless matched above
		{p("::/0"), reasonNotGlobal},
	}
}

// Control is a net.Dialer.Control hook. It runs after DNS resolution, on the
// address the socket is about to connect to, so it cannot be fooled by a
// name that resolved differently when it was checked before. Anything that
// is not a literal IP and port is refused: the dialer always passes one,
// and guessing at anything else would be a way around the guard.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
	default:
		return &BlockedError{Host: address, Reason: "network " + strconv.Quote(network) + " not allowed"}
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return &BlockedError{Host: address, Reason: "not a host:port address"}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return &BlockedError{Host: host, Reason: "not a literal IP address"}
	}
	return g.Check(ip)
}
