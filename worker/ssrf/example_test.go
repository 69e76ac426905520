package ssrf_test

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/hookline/hookline/worker/ssrf"
)

func Example() {
	// HOOKLINE_ALLOW_NETWORKS=127.0.0.0/8, as the demo and tests run.
	allow, err := ssrf.ParseAllowList("127.0.0.0/8")
	if err != nil {
		panic(err)
	}
	g := ssrf.New(allow)

	for _, a := range []string{"127.0.0.1", "169.254.169.254", "64:ff9b::a00:1", "93.184.215.14"} {
		fmt.Printf("%s: %v\n", a, g.Check(netip.MustParseAddr(a)))
	}
	fmt.Println(g.CheckHost("metadata.google.internal"))

	// Installed as net.Dialer.Control, the guard sees the address being
	// dialled after DNS resolution, whatever name the URL held.
	d := &net.Dialer{Control: g.Control}
	fmt.Println(d.Control("tcp4", "10.0.0.5:443", nil))

	// Output:
	// 127.0.0.1: <nil>
	// 169.254.169.254: blocked destination 169.254.169.254 (link-local (cloud metadata))
	// 64:ff9b::a00:1: blocked destination 64:ff9b::a00:1 (NAT64 10.0.0.1: private (RFC 1918)): allowed only when HOOKLINE_ALLOW_NETWORKS includes it (e.g. 64:ff9b::a00:1/128)
	// 93.184.215.14: <nil>
	// blocked destination metadata.google.internal (cloud metadata name)
	// blocked destination 10.0.0.5 (private (RFC 1918)): allowed only when HOOKLINE_ALLOW_NETWORKS includes it (e.g. 10.0.0.0/8)
}
