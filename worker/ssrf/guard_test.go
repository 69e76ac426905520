package ssrf

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// checkCase is one decision: want is a substring of the refusal reason, or
// "" when the address must be allowed.
type checkCase struct {
	name string
	addr string
	want string
}

func runCheck(t *testing.T, g *Guard, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := g.Check(netip.MustParseAddr(tc.addr))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check(%s) = %v, want allowed", tc.addr, err)
				}
				return
			}
			var be *BlockedError
			if !errors.As(err, &be) {
				t.Fatalf("Check(%s) = %v, want *BlockedError containing %q", tc.addr, err, tc.want)
			}
			if !strings.Contains(be.Reason, tc.want) {
				t.Fatalf("Check(%s) reason = %q, want it to contain %q", tc.addr, be.Reason, tc.want)
			}
			if be.Addr != netip.MustParseAddr(tc.addr) {
				t.Fatalf("Check(%s) Addr = %v", tc.addr, be.Addr)
			}
		})
	}
}

func TestCheckIPv4(t *testing.T) {
	runCheck(t, New(nil), []checkCase{
		{"unspecified", "0.0.0.0", reasonUnspecified},
		{"this network upper edge", "0.255.255.255", reasonUnspecified},
		{"above this network", "1.0.0.0", ""},
		{"private 10 lower edge", "10.0.0.0", reasonPrivate},
		{"private 10 upper edge", "10.255.255.255", reasonPrivate},
		{"below private 10", "9.255.255.255", ""},
		{"above private 10", "11.0.0.0", ""},
		{"cgnat lower edge", "100.64.0.0", reasonCGNAT},
		{"cgnat upper edge", "100.127.255.255", reasonCGNAT},
		{"below cgnat", "100.63.255.255", ""},
		{"above cgnat", "100.128.0.0", ""},
		{"alibaba metadata", "100.100.100.200", "cloud metadata"},
		{"loopback", "127.0.0.1", reasonLoopback},
		{"loopback lower edge", "127.0.0.0", reasonLoopback},
		{"loopback upper edge", "127.255.255.255", reasonLoopback},
		{"below loopback", "126.255.255.255", ""},
		{"above loopback", "128.0.0.0", ""},
		{"metadata", "169.254.169.254", reasonMetadata},
		{"ecs task metadata", "169.254.170.2", reasonMetadata},
		{"eks pod identity", "169.254.170.23", reasonMetadata},
		{"tencent metadata", "169.254.0.23", reasonMetadata},
		{"link-local lower edge", "169.254.0.0", reasonLinkLocal},
		{"link-local upper edge", "169.254.255.255", reasonLinkLocal},
		{"below link-local", "169.253.255.255", ""},
		{"above link-local", "169.255.0.0", ""},
		{"private 172 lower edge", "172.16.0.0", reasonPrivate},
		{"private 172 upper edge", "172.31.255.255", reasonPrivate},
		{"below private 172", "172.15.255.255", ""},
		{"above private 172", "172.32.0.0", ""},
		{"ietf lower edge", "192.0.0.0", reasonIETF},
		{"ietf upper edge", "192.0.0.255", reasonIETF},
		{"oracle metadata", "192.0.0.192", "cloud metadata"},
		{"above ietf", "192.0.1.0", ""},
		{"documentation test-net-1", "192.0.2.1", reasonDoc},
		{"documentation test-net-2", "198.51.100.200", reasonDoc},
		{"documentation test-net-3", "203.0.113.255", reasonDoc},
		{"6to4 relay anycast", "192.88.99.1", "6to4 relay"},
		{"private 192.168 lower edge", "192.168.0.0", reasonPrivate},
		{"private 192.168 upper edge", "192.168.255.255", reasonPrivate},
		{"below private 192.168", "192.167.255.255", ""},
		{"above private 192.168", "192.169.0.0", ""},
		{"benchmarking lower edge", "198.18.0.0", reasonBenchmark},
		{"benchmarking upper edge", "198.19.255.255", reasonBenchmark},
		{"below benchmarking", "198.17.255.255", ""},
		{"above benchmarking", "198.20.0.0", ""},
		{"multicast lower edge", "224.0.0.0", reasonMulticast},
		{"multicast upper edge", "239.255.255.255", reasonMulticast},
		{"below multicast", "223.255.255.255", ""},
		{"reserved lower edge", "240.0.0.0", reasonReserved},
		{"reserved upper edge", "255.255.255.254", reasonReserved},
		{"broadcast", "255.255.255.255", reasonBroadcast},
		{"public cloudflare", "1.1.1.1", ""},
		{"public google", "8.8.8.8", ""},
	})
}

func TestCheckIPv6(t *testing.T) {
	runCheck(t, New(nil), []checkCase{
		{"unspecified", "::", reasonUnspecified},
		{"loopback", "::1", reasonLoopback},
		{"link-local", "fe80::1", reasonLinkLocal},
		{"link-local with zone", "fe80::1%eth0", reasonLinkLocal},
		{"link-local upper edge", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", reasonLinkLocal},
		{"site-local", "fec0::1", "site-local"},
		{"ula lower edge", "fc00::", reasonULA},
		{"ula", "fd12:3456::1", reasonULA},
		{"ula upper edge", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", reasonULA},
		{"aws metadata", "fd00:ec2::254", "cloud metadata"},
		{"eks pod identity", "fd00:ec2::23", "cloud metadata"},
		{"multicast link scope", "ff02::1", reasonMulticast},
		{"multicast global scope", "ff0e::1", reasonMulticast},
		{"documentation", "2001:db8::1", reasonDoc},
		{"documentation rfc 9637", "3fff::1", reasonDoc},
		{"benchmarking", "2001:2::1", reasonBenchmark},
		{"orchid", "2001:10::1", "ORCHID"},
		{"orchid v2", "2001:20::1", "ORCHIDv2"},
		{"discard-only", "100::1", reasonNotGlobal},
		{"below global unicast", "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", reasonNotGlobal},
		{"above global unicast", "4000::1", reasonNotGlobal},
		{"global unicast lower edge", "2000::", ""},
		{"public cloudflare", "2606:4700:4700::1111", ""},
		{"public google", "2001:4860:4860::8888", ""},
	})
}

func TestCheckEmbeddedIPv4(t *testing.T) {
	runCheck(t, New(nil), []checkCase{
		{"mapped loopback", "::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1: loopback"},
		{"mapped private", "::ffff:10.0.0.1", reasonPrivate},
		{"mapped metadata", "::ffff:169.254.169.254", reasonMetadata},
		{"mapped unspecified", "::ffff:0.0.0.0", reasonUnspecified},
		{"mapped public", "::ffff:8.8.8.8", ""},
		{"compatible loopback", "::127.0.0.1", "IPv4-compatible 127.0.0.1: loopback"},
		{"compatible unspecified range", "::2", reasonUnspecified},
		{"compatible public is deprecated", "::8.8.8.8", "IPv4-compatible (deprecated)"},
		{"translated loopback", "::ffff:0:127.0.0.1", "IPv4-translated 127.0.0.1: loopback"},
		{"translated public is refused", "::ffff:0:8.8.8.8", "SIIT"},
		{"nat64 loopback", "64:ff9b::7f00:1", "NAT64 127.0.0.1: loopback"},
		{"nat64 metadata", "64:ff9b::169.254.169.254", reasonMetadata},
		{"nat64 private", "64:ff9b::c0a8:101", reasonPrivate},
		{"nat64 public", "64:ff9b::808:808", ""},
		{"nat64 outside the /96", "64:ff9b:0:0:1::808:808", reasonNotGlobal},
		{"nat64 local /96 loopback", "64:ff9b:1::7f00:1", "NAT64 127.0.0.1: loopback"},
		{"nat64 local /48 loopback", "64:ff9b:1:7f00:0:100::", "NAT64 127.0.0.1: loopback"},
		{"nat64 local /56 private", "64:ff9b:1:ab0a:0:1::", "NAT64 10.0.0.1"},
		{"nat64 local /64 private", "64:ff9b:1:1234:c0:a801:100:0", "NAT64 192.168.1.1"},
		{"nat64 local public", "64:ff9b:1::808:808", ""},
		{"nat64 local /48 public", "64:ff9b:1:808:8:808::", ""},
		{"nat64 local /56 public", "64:ff9b:1:ab08:8:808::", ""},
		{"nat64 local bits 64-71 set", "64:ff9b:1:0:ff00::", reasonUnspecified},
		{"6to4 loopback", "2002:7f00:1::", "6to4 127.0.0.1: loopback"},
		{"6to4 metadata", "2002:a9fe:a9fe::1", reasonMetadata},
		{"6to4 public", "2002:808:808::1", ""},
		{"teredo server loopback", "2001:0:7f00:1::", "Teredo server 127.0.0.1"},
		{"teredo client loopback", "2001:0:808:808::80ff:fefe", "Teredo client 127.0.1.1"},
		{"teredo public", "2001:0:808:808::f7f7:f7f7", ""},
	})
}

func TestCheckAllowList(t *testing.T) {
	t.Run("loopback range opens only loopback", func(t *testing.T) {
		runCheck(t, New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}), []checkCase{
			{"lower edge", "127.0.0.0", ""},
			{"typical", "127.0.0.1", ""},
			{"upper edge", "127.255.255.255", ""},
			{"mapped form follows", "::ffff:127.0.0.1", ""},
			{"nat64 form follows", "64:ff9b::7f00:1", ""},
			{"ipv6 loopback stays refused", "::1", reasonLoopback},
			{"unspecified stays refused", "0.0.0.0", reasonUnspecified},
			{"private stays refused", "10.0.0.1", reasonPrivate},
			{"metadata stays refused", "169.254.169.254", reasonMetadata},
		})
	})
	t.Run("narrow private range", func(t *testing.T) {
		runCheck(t, New([]netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}), []checkCase{
			{"inside", "10.1.2.3", ""},
			{"upper edge", "10.1.255.255", ""},
			{"just outside", "10.2.0.0", reasonPrivate},
			{"just below", "10.0.255.255", reasonPrivate},
		})
	})
	t.Run("single address", func(t *testing.T) {
		allow, err := ParseAllowList("192.168.1.10")
		if err != nil {
			t.Fatal(err)
		}
		runCheck(t, New(allow), []checkCase{
			{"the address", "192.168.1.10", ""},
			{"its neighbour", "192.168.1.11", reasonPrivate},
		})
	})
	t.Run("ipv6 loopback", func(t *testing.T) {
		runCheck(t, New([]netip.Prefix{netip.MustParsePrefix("::1/128")}), []checkCase{
			{"ipv6 loopback", "::1", ""},
			{"ipv4 loopback stays refused", "127.0.0.1", reasonLoopback},
		})
	})
	t.Run("mapped prefix is unmapped", func(t *testing.T) {
		runCheck(t, New([]netip.Prefix{netip.MustParsePrefix("::ffff:127.0.0.0/104")}), []checkCase{
			{"ipv4", "127.0.0.1", ""},
			{"mapped", "::ffff:127.0.0.1", ""},
		})
	})
	t.Run("invalid prefix ignored", func(t *testing.T) {
		runCheck(t, New([]netip.Prefix{{}}), []checkCase{
			{"still refused", "127.0.0.1", reasonLoopback},
		})
	})
}

func TestCheckFailsClosed(t *testing.T) {
	t.Run("zero guard", func(t *testing.T) {
		if err := new(Guard).Check(netip.MustParseAddr("8.8.8.8")); err == nil {
			t.Fatal("zero Guard allowed a public address")
		}
	})
	t.Run("nil guard", func(t *testing.T) {
		var g *Guard
		if err := g.Check(netip.MustParseAddr("8.8.8.8")); err == nil {
			t.Fatal("nil Guard allowed a public address")
		}
	})
	t.Run("invalid address", func(t *testing.T) {
		if err := New(nil).Check(netip.Addr{}); err == nil {
			t.Fatal("invalid address allowed")
		}
	})
}

// TestRulesNotShadowed guards the ordering of the rule tables: each rule's
// first address must be refused for that rule's reason, so a broad range
// listed too early cannot hide a narrower one.
func TestRulesNotShadowed(t *testing.T) {
	g := New(nil)
	for _, rules := range [][]rule{g.v4, g.v6} {
		for _, r := range rules {
			if r.reason == "" {
				continue
			}
			t.Run(r.prefix.String(), func(t *testing.T) {
				if got := match(rules, r.prefix.Addr()); got != r.reason {
					t.Fatalf("first address of %s matched %q, want %q", r.prefix, got, r.reason)
				}
			})
		}
	}
}

func TestBlockedErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *BlockedError
		want string
	}{
		{"address", &BlockedError{Addr: netip.MustParseAddr("127.0.0.1"), Reason: "loopback"},
			"blocked destination 127.0.0.1 (loopback): allowed only when HOOKLINE_ALLOW_NETWORKS includes it (e.g. 127.0.0.0/8)"},
		{"host", &BlockedError{Host: "localhost", Reason: "localhost name"},
			"blocked destination localhost (localhost name): allowed only when HOOKLINE_ALLOW_NETWORKS includes loopback (e.g. 127.0.0.0/8)"},
		{"internal name", &BlockedError{Host: "hooks.internal", Reason: reasonReservedTLD},
			"blocked destination hooks.internal (reserved or internal name): allowed only when HOOKLINE_ALLOW_NETWORKS is set (names are then judged by the addresses they resolve to)"},
		{"metadata has no way out", &BlockedError{Addr: netip.MustParseAddr("169.254.169.254"), Reason: reasonMetadata},
			"blocked destination 169.254.169.254 (link-local (cloud metadata))"},
		{"neither", &BlockedError{Reason: "malformed host"}, "blocked destination (malformed host)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Fatalf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseAllowList(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr string
	}{
		{name: "empty", in: "", want: nil},
		{name: "only separators", in: " ,, \n", want: nil},
		{name: "one cidr", in: "127.0.0.0/8", want: []string{"127.0.0.0/8"}},
		{name: "commas and spaces", in: "127.0.0.0/8, ::1 10.0.0.0/8,\t192.168.1.5", want: []string{"127.0.0.0/8", "::1/128", "10.0.0.0/8", "192.168.1.5/32"}},
		{name: "host bits cleared", in: "10.1.2.3/8", want: []string{"10.0.0.0/8"}},
		{name: "mapped cidr unmapped", in: "::ffff:10.0.0.0/104", want: []string{"10.0.0.0/8"}},
		{name: "mapped address unmapped", in: "::ffff:10.0.0.1", want: []string{"10.0.0.1/32"}},
		{name: "bad prefix length", in: "127.0.0.0/8,10.0.0.0/33", wantErr: `"10.0.0.0/33"`},
		{name: "not an address", in: "localhost", wantErr: `"localhost"`},
		{name: "zoned address", in: "fe80::1%eth0", wantErr: `"fe80::1%eth0"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAllowList(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseAllowList(%q) error = %v, want it to name %s", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseAllowList(%q): %v", tc.in, err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("ParseAllowList(%q) = %v, want %v", tc.in, got, tc.want)
			}
			for i := range got {
				if got[i].String() != tc.want[i] {
					t.Fatalf("ParseAllowList(%q)[%d] = %v, want %v", tc.in, i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestControl(t *testing.T) {
	strict := New(nil)
	loopbackOK := New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	tests := []struct {
		name    string
		guard   *Guard
		network string
		address string
		want    string // reason substring, "" = allowed
	}{
		{"ipv4 loopback", strict, "tcp4", "127.0.0.1:80", reasonLoopback},
		{"ipv6 loopback", strict, "tcp6", "[::1]:443", reasonLoopback},
		{"zoned link-local", strict, "tcp6", "[fe80::1%eth0]:80", reasonLinkLocal},
		{"mapped loopback", strict, "tcp6", "[::ffff:127.0.0.1]:80", reasonLoopback},
		{"metadata", strict, "tcp4", "169.254.169.254:80", reasonMetadata},
		{"public", strict, "tcp4", "8.8.8.8:443", ""},
		{"allowed loopback", loopbackOK, "tcp4", "127.0.0.1:8080", ""},
		{"name instead of address", loopbackOK, "tcp", "localhost:80", "not a literal IP"},
		{"missing port", loopbackOK, "tcp4", "127.0.0.1", "not a host:port"},
		{"unix socket", loopbackOK, "unix", "/run/postgresql/.s.PGSQL.5432", "not allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.guard.Control(tc.network, tc.address, nil)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Control(%s, %s) = %v, want nil", tc.network, tc.address, err)
				}
				return
			}
			var be *BlockedError
			if !errors.As(err, &be) || !strings.Contains(be.Reason, tc.want) {
				t.Fatalf("Control(%s, %s) = %v, want reason containing %q", tc.network, tc.address, err, tc.want)
			}
		})
	}
}

// TestBlockedHintIsTrue checks every hint against the guard itself: a guard
// whose allow list is the hinted prefix lets the refused destination
// through, and without it the decision is unchanged.
func TestBlockedHintIsTrue(t *testing.T) {
	var addrs []netip.Addr
	for _, r := range append(ipv4Rules(), ipv6Rules()...) {
		addrs = append(addrs, r.prefix.Addr(), r.prefix.Addr().Next())
	}
	for _, s := range []string{"127.0.0.1", "10.1.2.3", "::ffff:127.0.0.1", "::ffff:192.168.1.1", "64:ff9b::a00:1",
		"64:ff9b:1::a00:1", "2002:a00:1::", "::1", "::", "fe80::1", "fd12::1", "::127.0.0.1", "100.64.0.1"} {
		addrs = append(addrs, netip.MustParseAddr(s))
	}
	strict := New(nil)
	for _, a := range addrs {
		err := strict.Check(a)
		var be *BlockedError
		if !errors.As(err, &be) {
			continue
		}
		h := be.Hint()
		if h == "" {
			if !strings.Contains(be.Reason, "metadata") && be.Reason != "invalid address" {
				t.Errorf("%s (%s): no hint", a, be.Reason)
			}
			continue
		}
		i, j := strings.Index(h, "(e.g. "), strings.LastIndex(h, ")")
		if !strings.Contains(h, "HOOKLINE_ALLOW_NETWORKS") || i < 0 || j < i {
			t.Fatalf("%s: hint %q", a, h)
		}
		p := netip.MustParsePrefix(h[i+len("(e.g. ") : j])
		if err := New([]netip.Prefix{p}).Check(a); err != nil {
			t.Errorf("%s: allowing %s as hinted still refuses: %v", a, p, err)
		}
	}
}
