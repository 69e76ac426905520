package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookline/hookline/db/dbtest"
)

// TestServeSignedHashPostback runs "hookline serve": a CAKE-style
// #click_id# postback with the hash macro style and a signature parameter,
// created through the API, reaches a loopback receiver with the click id
// substituted and a signature that verifies with the documented scheme
// (computed here from the secret the API showed), and not once tampered.
// After a rotation with overlap the previous secret still signs; after one
// without, the new one does.
func TestServeSignedHashPostback(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var urls []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		urls = append(urls, r.RequestURI)
		mu.Unlock()
		w.Write([]byte("OK"))
	}))
	defer rcv.Close()
	env := serveEnv(t, dbtest.URL(t))
	p := start(t, env, "serve")
	key := lastLine(command(t, env, "", "apikey", "create", "--name", "e2e"))
	status, partner := api(t, p.addr, key, "POST", "/api/v1/partners", map[string]any{"name": "Clickwave"})
	if status != 201 {
		t.Fatalf("partner: %d %v", status, partner)
	}
	status, ep := api(t, p.addr, key, "POST", "/api/v1/endpoints", map[string]any{
		"partner_id": partner["id"], "name": "cake", "kind": "postback", "macro_style": "hash", "signature_param": "sig",
		"url": rcv.URL + "/p.ashx?r=#click_id#&t=#transaction_id#", "success_body_contains": "OK"})
	if status != 201 || len(ep["warnings"].([]any)) != 0 {
		t.Fatalf("endpoint: %d %v", status, ep)
	}
	post := func(tx string) string {
		t.Helper()
		mu.Lock()
		n := len(urls)
		mu.Unlock()
		status, ev := api(t, p.addr, key, "POST", "/api/v1/events", map[string]any{"type": "conversion.approved",
			"payload": map[string]any{"click_id": "abc 123&x", "transaction_id": tx}})
		if status != 202 {
			t.Fatalf("event: %d %v", status, ev)
		}
		waitUntil(t, 20*time.Second, "the postback", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(urls) > n
		})
		mu.Lock()
		defer mu.Unlock()
		return urls[n]
	}
	verifies := func(got, secret string) bool {
		t.Helper()
		full := rcv.URL + got
		i := strings.LastIndex(full, "&sig=")
		if i < 0 {
			t.Fatalf("no signature in %q", got)
		}
		signed, sig := full[:i], full[i+len("&sig="):]
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if err != nil {
			t.Fatal(err)
		}
		mac := hmac.New(sha256.New, raw)
		mac.Write([]byte(signed))
		return hex.EncodeToString(mac.Sum(nil)) == sig
	}

	first := ep["secret"].(string)
	got := post("T-9")
	if !strings.HasPrefix(got, "/p.ashx?r=abc%20123%26x&t=T-9&ts=") {
		t.Fatalf("receiver got %q", got)
	}
	if !verifies(got, first) {
		t.Fatalf("signature of %q does not verify", got)
	}
	if verifies(strings.Replace(got, "T-9", "T-8", 1), first) {
		t.Fatal("a tampered URL verifies")
	}

	// A rotation with overlap: the previous secret keeps signing until the
	// overlap ends. Without overlap: the new secret signs at once.
	path := "/api/v1/endpoints/" + strconv.Itoa(int(ep["id"].(float64))) + "/secrets/rotate"
	status, rot := api(t, p.addr, key, "POST", path, map[string]any{"overlap_seconds": 3600})
	if status != 200 {
		t.Fatalf("rotate: %d %v", status, rot)
	}
	second := rot["secret"].(string)
	if got := post("T-10"); !verifies(got, first) || verifies(got, second) {
		t.Fatalf("during the overlap %q is not signed with the previous secret only", got)
	}
	status, rot = api(t, p.addr, key, "POST", path, map[string]any{"overlap_seconds": 0})
	if status != 200 {
		t.Fatalf("rotate: %d %v", status, rot)
	}
	third := rot["secret"].(string)
	if got := post("T-11"); !verifies(got, third) {
		t.Fatalf("after a rotation without overlap %q is not signed with the new secret", got)
	}
}
