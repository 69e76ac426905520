package worker

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDeliversHashStylePostbacks: a CAKE-style #click_id# template with
// the hash macro style reaches the receiver with the click id substituted.
func TestDeliversHashStylePostbacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	e.endpoint(endpointOpts{kind: "postback", macroStyle: "hash", url: rcv.URL + "/p.ashx?r=#click_id#&t=#transaction_id#&n=#attempt#"})
	e.events(1, "conversion.approved", `{"click_id":"abc 1#2","transaction_id":"T-9"}`)
	e.run(e.worker(nil))
	e.waitFor("delivery", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 1 })
	if got, want := rcv.all()[0].URL, "/p.ashx?r=abc%201%232&t=T-9&n=1"; got != want {
		t.Fatalf("request URL %s, want %s", got, want)
	}
}

// TestDeliversSignedPostbacks: a postback with a signature parameter
// carries ts and an HMAC-SHA256 that the receiver verifies from the
// documented scheme alone, with the secret hookline showed at creation.
func TestDeliversSignedPostbacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	_, secret := e.endpoint(endpointOpts{kind: "postback", signatureParam: "sig", url: rcv.URL + "/pb?cid={click_id}&payout={payout}"})
	e.events(1, "conversion.approved", `{"click_id":"abc 123","payout":12.50}`)
	e.run(e.worker(nil))
	e.waitFor("delivery", func() bool { return e.count("SELECT count(*) FROM deliveries WHERE status = 'delivered'") == 1 })
	got := rcv.all()[0]
	if got.Method != http.MethodGet {
		t.Fatalf("method %s", got.Method)
	}
	// The receiver's check: its own URL (scheme and host as published) plus
	// the request URI, cut at the last "&sig=".
	full := rcv.URL + got.URL
	i := strings.LastIndex(full, "&sig=")
	if i < 0 {
		t.Fatalf("no signature in %s", got.URL)
	}
	signed, sig := full[:i], full[i+len("&sig="):]
	if !strings.HasPrefix(got.URL, "/pb?cid=abc%20123&payout=12.50&ts=") {
		t.Fatalf("request URL %s", got.URL)
	}
	ts, err := strconv.ParseInt(signed[strings.LastIndex(signed, "ts=")+3:], 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 10*time.Minute {
		t.Fatalf("ts %d is not this attempt's time (%v)", ts, err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signed))
	if want := hex.EncodeToString(mac.Sum(nil)); sig != want {
		t.Fatalf("signature %s, want %s", sig, want)
	}
	mac.Reset()
	mac.Write([]byte(strings.Replace(signed, "payout=12.50", "payout=99.50", 1)))
	if hex.EncodeToString(mac.Sum(nil)) == sig {
		t.Fatal("a tampered URL verifies")
	}
}
