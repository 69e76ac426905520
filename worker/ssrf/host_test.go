package ssrf

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheckHost(t *testing.T) {
	strict := New(nil)
	loopbackOK := New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	tests := []struct {
		name  string
		guard *Guard
		host  string
		want  string // reason substring, "" = allowed
	}{
		{"dotted loopback", strict, "127.0.0.1", reasonLoopback},
		{"dotted loopback with port", strict, "127.0.0.1:8080", reasonLoopback},
		{"hex and short form", strict, "0x7f.1", reasonLoopback},
		{"single decimal", strict, "2130706433", reasonLoopback},
		{"two parts", strict, "127.1", reasonLoopback},
		{"three parts", strict, "127.0.1", reasonLoopback},
		{"octal", strict, "0177.0.0.1", reasonLoopback},
		{"single hex", strict, "0x7f000001", reasonLoopback},
		{"leading zero octets", strict, "127.000.000.001", reasonLoopback},
		{"numeric with trailing dot", strict, "127.0.0.1.", reasonLoopback},
		{"decimal metadata", strict, "2852039166", reasonMetadata},
		{"fullwidth digits", strict, "１２７．０．０．１", reasonLoopback},
		{"bracketed mapped", strict, "[::ffff:127.0.0.1]", reasonLoopback},
		{"bracketed mapped with port", strict, "[::ffff:127.0.0.1]:443", reasonLoopback},
		{"bracketed loopback", strict, "[::1]", reasonLoopback},
		{"bare ipv6 loopback", strict, "::1", reasonLoopback},
		{"bracketed zoned link-local", strict, "[fe80::1%eth0]:80", reasonLinkLocal},
		{"too many parts", strict, "1.2.3.4.5", "malformed numeric"},
		{"octet too large", strict, "256.0.0.1", "malformed numeric"},
		{"number too large", strict, "4294967296", "malformed numeric"},
		{"bad octal digit", strict, "09.0.0.1", "malformed numeric"},
		{"numeric last label", strict, "example.123", "malformed numeric"},
		{"localhost", strict, "localhost", "localhost"},
		{"localhost upper case root", strict, "LOCALHOST.", "localhost"},
		{"localhost subdomain", strict, "api.localhost:3000", "localhost"},
		{"gcp metadata", strict, "metadata.google.internal", reasonMetaName},
		{"gcp metadata short", strict, "metadata", reasonMetaName},
		{"aws metadata name", strict, "instance-data.ec2.internal", reasonMetaName},
		{"internal tld", strict, "billing.corp.internal", reasonReservedTLD},
		{"mdns", strict, "printer.local", reasonReservedTLD},
		{"home.arpa", strict, "router.home.arpa", reasonReservedTLD},
		{"lan", strict, "nas.lan", reasonReservedTLD},
		{"single label", strict, "db", "single-label"},
		{"empty", strict, "", "malformed"},
		{"unclosed bracket", strict, "[::1", "malformed"},
		{"junk after bracket", strict, "[::1]x", "malformed"},
		{"bad port", strict, "example.com:99999", "malformed"},
		{"colons without brackets", strict, "a:b:c", "malformed"},
		{"empty label", strict, "hooks..example.com", "malformed"},
		{"public name", strict, "hooks.partner.com", ""},
		{"public name with port", strict, "hooks.partner.com:8443", ""},
		{"public name trailing dot", strict, "hooks.partner.com.", ""},
		{"public address", strict, "8.8.8.8", ""},
		{"public ipv6", strict, "[2606:4700:4700::1111]:443", ""},
		{"unicode name", strict, "bücher.example", ""},
		{"allowed loopback address", loopbackOK, "127.0.0.1:8080", ""},
		{"allowed loopback short form", loopbackOK, "127.1", ""},
		{"localhost follows allowed loopback", loopbackOK, "localhost:8080", ""},
		{"internal names deferred to dial time", loopbackOK, "receiver.internal", ""},
		{"metadata name still refused", loopbackOK, "metadata.google.internal", reasonMetaName},
		{"private address still refused", loopbackOK, "10.0.0.1", reasonPrivate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.guard.CheckHost(tc.host)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckHost(%q) = %v, want allowed", tc.host, err)
				}
				return
			}
			var be *BlockedError
			if !errors.As(err, &be) || !strings.Contains(be.Reason, tc.want) {
				t.Fatalf("CheckHost(%q) = %v, want reason containing %q", tc.host, err, tc.want)
			}
		})
	}
}
