package twofactor

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boombuler/barcode/qr"
)

// rfcSecret is the SHA-1 seed of RFC 6238's test vectors,
// "12345678901234567890", in base32.
const rfcSecret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

func TestCodeMatchesRFC6238(t *testing.T) {
	// RFC 6238 appendix B, SHA-1, the last six of the eight digits.
	for unix, want := range map[int64]string{59: "287082", 1111111109: "081804", 1234567890: "005924", 2000000000: "279037"} {
		got, err := Code(rfcSecret, time.Unix(unix, 0))
		if err != nil || got != want {
			t.Errorf("code at %d = %q, %v; want %q", unix, got, err, want)
		}
	}
}

func TestMatch(t *testing.T) {
	now := time.Unix(1234567890, 0)
	code, _ := Code(rfcSecret, now)
	t.Run("the current step", func(t *testing.T) {
		step, ok := Match(rfcSecret, code, now)
		if !ok || step != Step(now) {
			t.Fatalf("step %d, %v; want %d", step, ok, Step(now))
		}
	})
	t.Run("one step of skew either way", func(t *testing.T) {
		for _, d := range []time.Duration{-Period, Period} {
			step, ok := Match(rfcSecret, code, now.Add(d))
			if !ok || step != Step(now) {
				t.Errorf("at %s: step %d, %v; want the code's own step %d", d, step, ok, Step(now))
			}
		}
	})
	t.Run("two steps away", func(t *testing.T) {
		for _, d := range []time.Duration{-2 * Period, 2 * Period} {
			if _, ok := Match(rfcSecret, code, now.Add(d)); ok {
				t.Errorf("accepted %s away", d)
			}
		}
	})
	t.Run("wrong or malformed", func(t *testing.T) {
		for _, c := range []string{"000000", "12345", "1234567", "", "abcdef"} {
			if c == code {
				continue
			}
			if _, ok := Match(rfcSecret, c, now); ok {
				t.Errorf("accepted %q", c)
			}
		}
	})
}

func TestNewSecretAndKeyURI(t *testing.T) {
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if len(secret) != 32 || strings.Trim(secret, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
		t.Fatalf("secret %q: want 32 base32 characters (160 bits)", secret)
	}
	if other, _ := NewSecret(); other == secret {
		t.Fatal("two secrets alike")
	}
	uri, err := KeyURI(secret, "ops@hookline.test")
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"otpauth://totp/hookline:ops@hookline.test?", "secret=" + secret, "issuer=hookline", "period=30", "digits=6", "algorithm=SHA1"} {
		if !strings.Contains(uri, part) {
			t.Errorf("uri %q lacks %q", uri, part)
		}
	}
	if _, err := KeyURI("not base32!", "x"); err == nil {
		t.Error("a malformed secret gave a URI")
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind Kind
		out  string
	}{
		{"123456", TOTP, "123456"},
		{" 123 456 ", TOTP, "123456"},
		{"12345", Invalid, ""},
		{"12345a", Invalid, ""},
		{"ABCD-EFGH-ijkm-npqr", Recovery, "abcdefghijkmnpqr"},
		{"abcd efgh ijkm npq", Invalid, ""},
		{"abcd-efgh-ijkm-npq0", Invalid, ""}, // 0 is not in the alphabet
		{"", Invalid, ""},
	} {
		if kind, out := Normalize(tc.in); kind != tc.kind || out != tc.out {
			t.Errorf("Normalize(%q) = %v %q, want %v %q", tc.in, kind, out, tc.kind, tc.out)
		}
	}
}

func TestRecoveryCodes(t *testing.T) {
	codes, err := NewRecoveryCodes()
	if err != nil {
		t.Fatal(err)
	}
	shape := regexp.MustCompile(`^[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}$`)
	seen := map[string]bool{}
	for _, c := range codes {
		if !shape.MatchString(c) || seen[c] {
			t.Fatalf("code %q (seen: %v)", c, seen[c])
		}
		seen[c] = true
	}
	if len(codes) != RecoveryCount {
		t.Fatalf("%d codes", len(codes))
	}
	h, err := HashRecoveryCode(codes[0])
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := HashRecoveryCode(codes[0])
	if string(h.Hash) == string(h2.Hash) {
		t.Error("the same code hashed twice alike: no salt")
	}
	_, typed := Normalize(strings.ToUpper(strings.ReplaceAll(codes[0], "-", " ")))
	if !RecoveryMatches(h, typed) || !RecoveryMatches(h2, typed) {
		t.Error("the code does not match its hash")
	}
	_, other := Normalize(codes[1])
	if RecoveryMatches(h, other) {
		t.Error("another code matches")
	}
	if _, err := HashRecoveryCode("123456"); err == nil {
		t.Error("hashed a TOTP code as a recovery code")
	}
}

// TestQRPathDrawsTheCode reads the path back and compares it module by
// module with the encoder's bitmap.
func TestQRPathDrawsTheCode(t *testing.T) {
	uri, _ := KeyURI(rfcSecret, "ops@hookline.test")
	q, err := NewQR(uri)
	if err != nil {
		t.Fatal(err)
	}
	code, _ := qr.Encode(uri, qr.M, qr.Auto)
	n := code.Bounds().Dx()
	if q.Size != n+2*quietZone || (n-21)%4 != 0 {
		t.Fatalf("size %d for %d modules", q.Size, n)
	}
	drawn := map[[2]int]bool{}
	for _, m := range regexp.MustCompile(`M(\d+) (\d+)h(\d+)v1h-(\d+)z`).FindAllStringSubmatch(q.Path, -1) {
		x, _ := strconv.Atoi(m[1])
		y, _ := strconv.Atoi(m[2])
		w, _ := strconv.Atoi(m[3])
		for i := range w {
			drawn[[2]int{x + i - quietZone, y - quietZone}] = true
		}
	}
	for y := range n {
		for x := range n {
			if drawn[[2]int{x, y}] != dark(code.At(x, y)) {
				t.Fatalf("module %d,%d differs", x, y)
			}
		}
	}
}

func ExampleMatch() {
	secret := "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
	now := time.Unix(1234567890, 0)
	step, ok := Match(secret, "005924", now.Add(20*time.Second))
	fmt.Println(step, ok)
	// Output: 41152263 true
}
