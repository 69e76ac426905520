package request

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	"github.com/hookline/hookline/worker/postback"
	"github.com/hookline/hookline/worker/signing"
)

// verifyPostback is a receiver's check written from the documented scheme
// alone (web/API.md, "Signed postbacks"): cut the URL at the last
// "&<param>=", HMAC-SHA256 the part before it with the secret's raw bytes
// (base64 after "whsec_"), compare the lowercase hex. It uses nothing from
// the package under test.
func verifyPostback(t *testing.T, fullURL, param, secret string) bool {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(fullURL, "&"+param+"=")
	if i < 0 {
		return false
	}
	signed, got := fullURL[:i], fullURL[i+len(param)+2:]
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signed))
	want := hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(got), []byte(want))
}

func TestSignedPostbackVerifiesIndependently(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key1)
	key, err := signing.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	ep := Endpoint{Kind: KindPostback, URL: "https://t.test/pb?cid={click_id}&payout={payout}", SignatureParam: "sig"}
	r, err := Build(ep, [][]byte{key}, event(), at)
	if err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	prefix := "https://t.test/pb?cid=clk-secret-77&payout=12.5&ts=" + ts + "&sig="
	if !strings.HasPrefix(r.URL, prefix) || len(r.URL) != len(prefix)+64 {
		t.Fatalf("URL = %s, want %s<64 hex digits>", r.URL, prefix)
	}
	if !verifyPostback(t, r.URL, "sig", secret) {
		t.Fatal("the signature does not verify with the documented scheme")
	}

	tampered := map[string]string{
		"value":     strings.Replace(r.URL, "payout=12.5", "payout=99.5", 1),
		"timestamp": strings.Replace(r.URL, "ts="+ts, "ts="+strconv.FormatInt(at.Unix()+1, 10), 1),
		"host":      strings.Replace(r.URL, "t.test", "u.test", 1),
		"added":     strings.Replace(r.URL, "&ts=", "&extra=1&ts=", 1),
		"signature": r.URL[:len(r.URL)-1] + "0",
	}
	for name, u := range tampered {
		if u == r.URL {
			t.Fatalf("%s: tampering changed nothing", name)
		}
		if verifyPostback(t, u, "sig", secret) {
			t.Errorf("tampered %s still verifies: %s", name, u)
		}
	}
	other := "whsec_" + base64.StdEncoding.EncodeToString(key2)
	if verifyPostback(t, r.URL, "sig", other) {
		t.Error("verifies with another secret")
	}
}

func TestSignedPostbackShapes(t *testing.T) {
	cases := []struct{ name, tmpl, want string }{
		{"no query", "https://t.test/pb/{click_id}", "https://t.test/pb/clk-secret-77?ts=1772366400&s="},
		{"empty path", "https://t.test?cid={click_id}", "https://t.test/?cid=clk-secret-77&ts=1772366400&s="},
		{"hash style", "https://t.test/pb?cid=#click_id#", "https://t.test/pb?cid=clk-secret-77&ts=1772366400&s="},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			style := ""
			if strings.Contains(c.tmpl, "#") {
				style = "hash"
			}
			r, err := Build(Endpoint{Kind: KindPostback, URL: c.tmpl, MacroStyle: styleOf(style), SignatureParam: "s"}, [][]byte{key1}, event(), at)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(r.URL, c.want) {
				t.Fatalf("URL = %s, want prefix %s", r.URL, c.want)
			}
			mac := hmac.New(sha256.New, key1)
			mac.Write([]byte(strings.TrimSuffix(c.want, "&s=")))
			if got := strings.TrimPrefix(r.URL, c.want); got != hex.EncodeToString(mac.Sum(nil)) {
				t.Fatalf("signature %s does not match", got)
			}
		})
	}
	if _, err := Build(Endpoint{Kind: KindPostback, URL: "https://t.test/pb?cid={click_id}", SignatureParam: "sig"}, nil, event(), at); err == nil {
		t.Fatal("a signed postback without a key was built")
	}
	if _, err := Build(Endpoint{Kind: KindPostback, URL: "https://u:p@t.test/pb?cid={click_id}", SignatureParam: "sig"}, [][]byte{key1}, event(), at); err == nil {
		t.Fatal("a URL with user info was signed")
	}
}

// During a rotation overlap the oldest active key signs: the partner keeps
// verifying with the secret it has until the overlap ends.
func TestSignedPostbackOverlapSignsWithOldest(t *testing.T) {
	ep := Endpoint{Kind: KindPostback, URL: "https://t.test/pb?cid={click_id}", SignatureParam: "sig"}
	newest, oldest := key2, key1
	r, err := Build(ep, [][]byte{newest, oldest}, event(), at)
	if err != nil {
		t.Fatal(err)
	}
	if !verifyPostback(t, r.URL, "sig", "whsec_"+base64.StdEncoding.EncodeToString(oldest)) {
		t.Fatal("not signed with the oldest active key")
	}
}

func TestSignedPostbackViews(t *testing.T) {
	ep := Endpoint{Kind: KindPostback, URL: "https://t.test/pb?cid={click_id}", SignatureParam: "sig"}
	r, err := Build(ep, [][]byte{key1}, event(), at)
	if err != nil {
		t.Fatal(err)
	}
	red := r.Redacted("hookline/test")
	if want := "https://t.test/pb?cid=***&ts=1772366400&sig=***"; red.URL != want {
		t.Fatalf("redacted URL = %s, want %s", red.URL, want)
	}
	sig := r.URL[strings.LastIndex(r.URL, "=")+1:]
	for _, text := range []string{red.String(), red.Curl()} {
		if strings.Contains(text, sig) || strings.Contains(text, "clk-secret-77") {
			t.Fatalf("redacted view leaks the signature or a value: %s", text)
		}
	}
	exact := r.Exact("hookline/test")
	if exact.URL != r.URL || !strings.Contains(exact.Curl(), r.URL) {
		t.Fatalf("exact view and curl do not show the URL sent: %s", exact.Curl())
	}
}

func styleOf(s string) postback.Style { return postback.Style(s) }
