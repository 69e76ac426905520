package mail_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/mail"
	"github.com/hookline/hookline/worker/mail/mailtest"
)

func message(to ...string) []byte {
	b, err := mail.Message{From: `"hookline" <hooks@hookline.test>`, To: to, Subject: "Disabled: endpoint \"orders\"\r\nBcc: evil@x.test",
		Text: "Disabled: endpoint orders.\nhttps://hooks.test/endpoints/1", HTML: "<p>Disabled: <b>orders</b></p>",
		Date: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), MessageID: "0190-abc@hookline.test"}.Bytes()
	if err != nil {
		panic(err)
	}
	return b
}

// TestSendSTARTTLSWithAuth: smtp:// upgrades with STARTTLS, authenticates
// with AUTH PLAIN, and the server takes a message whose headers and both
// bodies are as composed, over TLS.
func TestSendSTARTTLSWithAuth(t *testing.T) {
	srv := mailtest.Start(t, mailtest.Options{User: "hookline", Pass: "s3cret"})
	r := mail.Send(context.Background(), srv.Config("s3cret"), []string{"ops@acme.test", "oncall@acme.test"}, message("ops@acme.test", "oncall@acme.test"))
	if r.Err != nil || r.Code != 250 || r.TLSVersion < tls.VersionTLS12 {
		t.Fatalf("send: %+v", r)
	}
	got := srv.Wait(t, 1)[0]
	if !got.TLS || got.User != "hookline" || got.From != "hooks@hookline.test" || strings.Join(got.To, ",") != "ops@acme.test,oncall@acme.test" {
		t.Fatalf("received %+v", got)
	}
	checkMessage(t, got.Data)
}

func checkMessage(t *testing.T, data []byte) {
	t.Helper()
	m, err := netmail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"From": `"hookline" <hooks@hookline.test>`, "To": "ops@acme.test, oncall@acme.test",
		"Date": "Sun, 01 Mar 2026 12:00:00 +0000", "Message-Id": "<0190-abc@hookline.test>",
		"Mime-Version": "1.0", "Auto-Submitted": "auto-generated", "Bcc": "",
	} {
		if got := m.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if subject != `Disabled: endpoint "orders" Bcc: evil@x.test` {
		t.Errorf("subject %q: a line break must not start a header", subject)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("content type %q: %v", m.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	var types, bodies []string
	for {
		p, err := mr.NextPart() // decodes quoted-printable
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		types = append(types, p.Header.Get("Content-Type"))
		bodies = append(bodies, string(b))
	}
	if strings.Join(types, "|") != "text/plain; charset=utf-8|text/html; charset=utf-8" {
		t.Fatalf("parts %q", types)
	}
	if !strings.Contains(bodies[0], "https://hooks.test/endpoints/1") || !strings.Contains(bodies[1], "<b>orders</b>") {
		t.Fatalf("bodies %q", bodies)
	}
}

// TestSendFailures: each way a submission fails is classified, and only a
// refused recipient is permanent.
func TestSendFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("implicit TLS works", func(t *testing.T) {
		srv := mailtest.Start(t, mailtest.Options{ImplicitTLS: true, User: "u", Pass: "p"})
		if r := mail.Send(ctx, srv.Config("p"), []string{"ops@acme.test"}, message("ops@acme.test")); r.Err != nil || r.TLSVersion == 0 {
			t.Fatalf("%+v", r)
		}
		if got := srv.Wait(t, 1)[0]; !got.TLS {
			t.Fatal("not over TLS")
		}
	})
	t.Run("wrong password is a transient auth failure", func(t *testing.T) {
		srv := mailtest.Start(t, mailtest.Options{User: "u", Pass: "p"})
		r := mail.Send(ctx, srv.Config("wrong"), []string{"ops@acme.test"}, message("ops@acme.test"))
		if r.Err == nil || r.Class != mail.ClassAuth || r.Permanent || r.Code != 535 || srv.AuthFailures() != 1 {
			t.Fatalf("%+v (auth failures %d)", r, srv.AuthFailures())
		}
		if strings.Contains(r.Err.Error(), "wrong") {
			t.Fatalf("error shows the password: %v", r.Err)
		}
	})
	t.Run("server down is a transient connect failure", func(t *testing.T) {
		srv := mailtest.Start(t, mailtest.Options{})
		srv.Stop()
		r := mail.Send(ctx, srv.Config(""), []string{"ops@acme.test"}, message("ops@acme.test"))
		if r.Err == nil || r.Class != "connect" || r.Permanent {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("no STARTTLS offered: nothing sent in clear text", func(t *testing.T) {
		srv := mailtest.Start(t, mailtest.Options{NoStartTLS: true})
		r := mail.Send(ctx, srv.Config(""), []string{"ops@acme.test"}, message("ops@acme.test"))
		if r.Err == nil || r.Class != "tls" || len(srv.Received()) != 0 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		srv := mailtest.Start(t, mailtest.Options{})
		c := srv.Config("")
		c.RootCAs = mailtest.Start(t, mailtest.Options{}).CA.Pool()
		if r := mail.Send(ctx, c, []string{"ops@acme.test"}, message("ops@acme.test")); r.Err == nil || r.Class != "tls" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("refused recipient is permanent", func(t *testing.T) {
		srv := mailtest.Start(t, mailtest.Options{RejectRcpt: []string{"gone@acme.test"}})
		r := mail.Send(ctx, srv.Config(""), []string{"gone@acme.test"}, message("gone@acme.test"))
		if r.Err == nil || r.Class != mail.ClassRejected || !r.Permanent || r.Code != 550 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("not configured", func(t *testing.T) {
		if r := mail.Send(ctx, nil, []string{"ops@acme.test"}, nil); r.Class != mail.ClassNotConfigured {
			t.Fatalf("%+v", r)
		}
	})
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in       string
		addr     string
		implicit bool
		user     string
		bad      bool
	}{
		{in: "smtp://u:p@mail.acme.test", addr: "mail.acme.test:587", user: "u"},
		{in: "smtps://u:p@mail.acme.test", addr: "mail.acme.test:465", implicit: true, user: "u"},
		{in: "smtp://127.0.0.1:2525", addr: "127.0.0.1:2525"},
		{in: "http://mail.acme.test", bad: true},
		{in: "smtp://:p@mail.acme.test", bad: true},
		{in: "smtp://mail.acme.test/x", bad: true},
	} {
		c, err := mail.ParseURL(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%s: no error", tc.in)
			} else if strings.Contains(err.Error(), ":p@") {
				t.Errorf("%s: error quotes the URL", tc.in)
			}
			continue
		}
		if err != nil || c.Addr != tc.addr || c.ImplicitTLS != tc.implicit || c.Username != tc.user {
			t.Errorf("%s: %+v %v", tc.in, c, err)
		}
	}
}

func TestFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if c, errs := mail.FromEnv(env(nil)); c != nil || errs != nil {
		t.Fatalf("unset: %v %v", c, errs)
	}
	if _, errs := mail.FromEnv(env(map[string]string{"HOOKLINE_SMTP_FROM": "a@b.test"})); len(errs) != 1 || !strings.Contains(errs[0].Error(), "HOOKLINE_SMTP_URL") {
		t.Fatalf("from without url: %v", errs)
	}
	if _, errs := mail.FromEnv(env(map[string]string{"HOOKLINE_SMTP_URL": "smtp://u:p@h.test"})); len(errs) != 1 || !strings.Contains(errs[0].Error(), "HOOKLINE_SMTP_FROM") {
		t.Fatalf("url without from: %v", errs)
	}
	c, errs := mail.FromEnv(env(map[string]string{"HOOKLINE_SMTP_URL": "smtps://u:p@h.test", "HOOKLINE_SMTP_FROM": "hookline <hooks@h.test>"}))
	if errs != nil || c.From != `"hookline" <hooks@h.test>` || !c.ImplicitTLS {
		t.Fatalf("%+v %v", c, errs)
	}
}

func TestParseRecipients(t *testing.T) {
	got, err := mail.ParseRecipients([]string{" ops@acme.test", "", "OPS@acme.test", "b@acme.test"})
	if err != nil || strings.Join(got, ",") != "ops@acme.test,b@acme.test" {
		t.Fatalf("%q %v", got, err)
	}
	for _, bad := range [][]string{nil, {"x"}, {"Ops <ops@acme.test>"}, {"a@localhost"}, {"a@b.test,c@d.test"}} {
		if _, err := mail.ParseRecipients(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
