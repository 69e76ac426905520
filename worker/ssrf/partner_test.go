package ssrf

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestPartnerGuard: the partner guard has its own allow list, empty by
// default, whatever the operator's says; its refusals name
// HOOKLINE_PARTNER_ALLOW_NETWORKS and say they are a partner guard's.
func TestPartnerGuard(t *testing.T) {
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	operator, partner := New(loopback), NewPartner(nil)
	ip := netip.MustParseAddr("127.0.0.1")

	t.Run("operator allow list does not reach partners", func(t *testing.T) {
		if err := operator.Check(ip); err != nil {
			t.Fatalf("operator guard: %v", err)
		}
		var be *BlockedError
		if err := partner.Check(ip); !errors.As(err, &be) || be.Reason != reasonLoopback {
			t.Fatalf("partner guard: %v, want loopback refused", err)
		}
		if !be.Partner() || !strings.Contains(be.Hint(), PartnerVariable) {
			t.Fatalf("Partner() = %v, hint %q", be.Partner(), be.Hint())
		}
	})
	t.Run("public addresses pass", func(t *testing.T) {
		for _, a := range []string{"8.8.8.8", "2606:4700::1111"} {
			if err := partner.Check(netip.MustParseAddr(a)); err != nil {
				t.Fatalf("%s: %v", a, err)
			}
		}
	})
	t.Run("own allow list opens a range", func(t *testing.T) {
		onPrem := NewPartner([]netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")})
		if err := onPrem.Check(netip.MustParseAddr("10.20.1.2")); err != nil {
			t.Fatal(err)
		}
		if err := onPrem.Check(netip.MustParseAddr("10.21.1.2")); err == nil {
			t.Fatal("10.21.1.2 allowed outside the partner allow list")
		}
	})
	t.Run("host names", func(t *testing.T) {
		var be *BlockedError
		if err := partner.CheckHost("localhost:8080"); !errors.As(err, &be) || !be.Partner() || !strings.Contains(be.Hint(), PartnerVariable) {
			t.Fatalf("localhost: %v", err)
		}
		if err := operator.CheckHost("localhost:8080"); err != nil {
			t.Fatalf("operator localhost: %v", err)
		}
		if err := partner.CheckHost("hooks.partner.invalid"); err != nil {
			t.Fatalf("a public-looking name is judged at dial time: %v", err)
		}
	})
	t.Run("operator refusals stay the operator's", func(t *testing.T) {
		var be *BlockedError
		if err := New(nil).Check(ip); !errors.As(err, &be) || be.Partner() || !strings.Contains(be.Hint(), AllowVariable) {
			t.Fatalf("operator refusal: %v", err)
		}
	})
	t.Run("dial hook", func(t *testing.T) {
		if err := partner.Control("tcp4", "127.0.0.1:8080", nil); err == nil {
			t.Fatal("Control let the partner guard dial loopback")
		}
	})
}

// TestClassify: an address is public or reached only through an allow
// list, judged without the allow list, for every guard.
func TestClassify(t *testing.T) {
	g := New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")})
	for _, tc := range []struct {
		addr string
		want Class
	}{
		{"8.8.8.8", ClassPublic},
		{"2606:4700::1111", ClassPublic},
		{"::ffff:8.8.8.8", ClassPublic},
		{"127.0.0.1", ClassAllowListed},
		{"::ffff:127.0.0.1", ClassAllowListed},
		{"::1", ClassAllowListed},
		{"10.1.2.3", ClassAllowListed},
		{"169.254.169.254", ClassAllowListed},
		{"64:ff9b::7f00:1", ClassAllowListed},
	} {
		if got := g.Classify(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("Classify(%s) = %s, want %s", tc.addr, got, tc.want)
		}
		if got := NewPartner(nil).Classify(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("partner Classify(%s) = %s, want %s", tc.addr, got, tc.want)
		}
	}
	if got := g.Classify(netip.Addr{}); got != ClassNone {
		t.Errorf("invalid address: %s", got)
	}
	if got := (&Guard{}).Classify(netip.MustParseAddr("8.8.8.8")); got != ClassAllowListed {
		t.Errorf("zero guard: %s, want the worst", got)
	}
	ip := netip.MustParseAddr("127.0.0.1")
	if n := testing.AllocsPerRun(100, func() { g.Classify(ip) }); n != 0 {
		t.Errorf("Classify allocates %v times", n)
	}
}
