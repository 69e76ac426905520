package worker

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/mail/mailtest"
	"github.com/hookline/hookline/worker/notify"
	"github.com/hookline/hookline/worker/sender/sendertest"
)

// emailChannel creates an email channel (its endpoint of kind email and
// the channel row) hearing kinds; partnerID, when not 0, makes it that
// partner's contact channel.
func (e *env) emailChannel(to string, maxAttempts int32, partnerID int64, kinds ...string) (channelID, endpointID int64) {
	e.t.Helper()
	endpointID, _ = e.endpoint(endpointOpts{kind: "email", method: "POST", url: "mailto:" + to, maxAttempts: maxAttempts})
	var pid *int64
	if partnerID != 0 {
		pid = &partnerID
	}
	if err := e.pool.QueryRow(context.Background(), `INSERT INTO notification_channels (name, style, endpoint_id, kinds, partner_id)
		VALUES ($1, 'email', $2, $3, $4) RETURNING id`, "mail "+to, endpointID, kinds, pid).Scan(&channelID); err != nil {
		e.t.Fatal(err)
	}
	return channelID, endpointID
}

func (e *env) notice(k notify.Kind, endpointID int64, subject string, figures string, at time.Time) {
	e.t.Helper()
	if err := e.q.NotificationInsertBatch(context.Background(), db.NotificationInsertBatchParams{Now: &at,
		Kinds: []string{string(k)}, EndpointIds: []int64{endpointID}, Subjects: []string{subject},
		Figures: []json.RawMessage{json.RawMessage(figures)}}); err != nil {
		e.t.Fatal(err)
	}
}

// parts reads a received message's headers and its text and HTML parts.
func mailParts(t *testing.T, data []byte) (*netmail.Message, string, string) {
	t.Helper()
	m, err := netmail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	_, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	var bodies []string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		bodies = append(bodies, string(b))
	}
	if len(bodies) != 2 {
		t.Fatalf("%d parts, want text and html", len(bodies))
	}
	return m, bodies[0], bodies[1]
}

// TestEmailChannelDelivers: a notification for an email channel becomes a
// delivery of the channel's endpoint, which the worker submits over
// STARTTLS with AUTH PLAIN: one message to every recipient with the
// headers, both bodies and the dashboard link, recorded as delivered.
func TestEmailChannelDelivers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	srv := mailtest.Start(t, mailtest.Options{User: "hookline", Pass: "s3cret"})
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now = clk.Now; c.PublicURL = "https://hooks.test"; c.Mail = srv.Config("s3cret") })
	partnerEp, _ := e.endpoint(endpointOpts{url: "http://127.0.0.1:1/partner"})
	_, mailEp := e.emailChannel("ops@acme.test,oncall@acme.test", 3, 0, string(notify.EndpointDisabled))
	e.notice(notify.EndpointDisabled, partnerEp, "failure_budget", `{"failures": 10}`, clk.Now())
	if err := w.notifier.dispatchNotifications(ctx, nil); err != nil {
		t.Fatal(err)
	}
	e.run(w)
	got := srv.Wait(t, 1)[0]
	if !got.TLS || got.User != "hookline" || strings.Join(got.To, ",") != "ops@acme.test,oncall@acme.test" || got.From != "hooks@hookline.test" {
		t.Fatalf("received %+v", got)
	}
	m, text, html := mailParts(t, got.Data)
	subject, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if !strings.HasPrefix(subject, "hookline: endpoint disabled — ep-") || m.Header.Get("To") != "ops@acme.test, oncall@acme.test" ||
		!strings.HasSuffix(m.Header.Get("Message-Id"), "@hookline.test>") || m.Header.Get("Date") == "" {
		t.Fatalf("headers %v (subject %q)", m.Header, subject)
	}
	link := "https://hooks.test/endpoints/"
	if !strings.Contains(text, "Disabled: endpoint") || !strings.Contains(text, "failures: 10") || !strings.Contains(text, link) ||
		!strings.Contains(html, "<td>10</td>") || !strings.Contains(html, `<a href="`+link) {
		t.Fatalf("bodies:\n%s\n%s", text, html)
	}
	e.waitFor("delivered", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status = 'delivered'", mailEp) == 1
	})
}

// TestEmailChannelRetries: a wrong password and a server that is down
// are transient: retried with the endpoint's backoff until its attempts
// run out, then dead with the failure's class on record.
func TestEmailChannelRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	srv := mailtest.Start(t, mailtest.Options{User: "hookline", Pass: "s3cret"})
	down := mailtest.Start(t, mailtest.Options{})
	down.Stop()
	w := e.worker(func(c *Config) { c.Rand = fixedRand(0); c.Mail = srv.Config("wrong") })
	partnerEp, _ := e.endpoint(endpointOpts{url: "http://127.0.0.1:1/partner"})
	_, mailEp := e.emailChannel("ops@acme.test", 2, 0, string(notify.EndpointDisabled))
	e.notice(notify.EndpointDisabled, partnerEp, "operator", `{}`, time.Now())
	if err := w.notifier.dispatchNotifications(ctx, nil); err != nil {
		t.Fatal(err)
	}
	stop := e.run(w)
	e.waitFor("dead after a wrong password", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status = 'dead' AND attempt_count = 2 AND last_error_class = 'smtp_auth'", mailEp) == 1
	})
	stop()
	if srv.AuthFailures() != 2 || len(srv.Received()) != 0 {
		t.Fatalf("auth failures %d, received %d", srv.AuthFailures(), len(srv.Received()))
	}
	if n := e.count("SELECT count(*) FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1 AND a.error LIKE '%535%'", mailEp); n != 2 {
		t.Fatalf("%d attempts recorded with the server's 535, want 2", n)
	}

	w2 := e.worker(func(c *Config) { c.Rand = fixedRand(0); c.Mail = down.Config("") })
	e.notice(notify.EndpointDisabled, partnerEp, "gone", `{}`, time.Now().Add(time.Hour))
	if err := w2.notifier.dispatchNotifications(ctx, nil); err != nil {
		t.Fatal(err)
	}
	e.run(w2)
	e.waitFor("dead with the server down", func() bool {
		return e.count("SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status = 'dead' AND attempt_count = 2 AND last_error_class = 'connect'", mailEp) == 1
	})
}

// TestPartnerContactsHearOnlyTheirOwn: partner A's contact channel gets
// the partner kinds about A's endpoints, linked into the portal, and never
// anything about partner B's endpoints or the pipeline; nothing at all
// while the operator has not allowed it.
func TestPartnerContactsHearOnlyTheirOwn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	w := e.worker(func(c *Config) { c.PublicURL = "https://hooks.test" })
	partnerA := e.pid
	epA, _ := e.endpoint(endpointOpts{url: "http://127.0.0.1:1/a"})
	pb, err := e.q.PartnerCreate(ctx, db.PartnerCreateParams{Name: "Partner B"})
	if err != nil {
		t.Fatal(err)
	}
	e.pid = pb.ID
	epB, _ := e.endpoint(endpointOpts{url: "http://127.0.0.1:1/b"})
	e.pid = partnerA
	_, chA := e.emailChannel("a@partner-a.test", 3, partnerA, notify.PartnerKinds...)
	_, chB := e.emailChannel("b@partner-b.test", 3, pb.ID, notify.PartnerKinds...)
	payloads := func(endpointID int64) []notify.Email {
		rows, err := e.pool.Query(ctx, `SELECT ev.payload::text FROM deliveries d JOIN events ev ON ev.id = d.event_id WHERE d.endpoint_id = $1 ORDER BY d.id`, endpointID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []notify.Email
		for rows.Next() {
			var s string
			var m notify.Email
			if err := rows.Scan(&s); err != nil || json.Unmarshal([]byte(s), &m) != nil {
				t.Fatalf("payload %s: %v", s, err)
			}
			out = append(out, m)
		}
		return out
	}
	now := time.Now()
	t.Run("not allowed: nothing", func(t *testing.T) {
		e.notice(notify.EndpointDisabled, epA, "operator", `{}`, now)
		if err := w.notifier.dispatchNotifications(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if got := payloads(chA); len(got) != 0 {
			t.Fatalf("sent before the operator allowed it: %+v", got)
		}
	})
	if _, err := e.pool.Exec(ctx, `INSERT INTO partner_contacts (partner_id, enabled) VALUES ($1, true), ($2, true)`, partnerA, pb.ID); err != nil {
		t.Fatal(err)
	}
	t.Run("each hears its own", func(t *testing.T) {
		e.notice(notify.EndpointWarned, epA, "70", `{"failures": 7}`, now)
		e.notice(notify.CertificateExpiring, epB, "30", `{}`, now)
		e.notice(notify.BreakerOpened, epA, "", `{}`, now) // not a partner kind
		e.notice(notify.AlertFired, 0, "oldest_pending", `{}`, now)
		if err := w.notifier.dispatchNotifications(ctx, nil); err != nil {
			t.Fatal(err)
		}
		a, b := payloads(chA), payloads(chB)
		if len(a) != 1 || a[0].Kind != notify.EndpointWarned || !strings.Contains(a[0].Text, "https://hooks.test/portal/endpoints/") {
			t.Fatalf("partner A got %+v", a)
		}
		if len(b) != 1 || b[0].Kind != notify.CertificateExpiring {
			t.Fatalf("partner B got %+v", b)
		}
		for _, m := range a {
			if strings.Contains(m.Text+m.HTML+m.Subject, "Partner B") || strings.Contains(m.Text, "/endpoints/"+itoa(epB)) {
				t.Fatalf("partner A heard about partner B: %+v", m)
			}
		}
		if strings.Contains(b[0].Text, "/dashboard") || strings.Contains(b[0].Text, "hooks.test/endpoints/") {
			t.Fatalf("partner B linked to the dashboard: %q", b[0].Text)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestCertificateAndHeldBreakerNotices: with an injected clock, a client
// certificate made to expire in 20 days raises the 30-day warning once,
// the 7-day one once when 6 days are left; a breaker open past
// HeldOpenAfter raises breaker.held_open once per opening.
func TestCertificateAndHeldBreakerNotices(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	clk := newClock()
	w := e.worker(func(c *Config) { c.Now = clk.Now; c.HeldOpenAfter = 30 * time.Minute })
	epID, _ := e.endpoint(endpointOpts{url: "https://127.0.0.1:1/mtls"})
	ca := sendertest.NewCA(t, "partner CA")
	leaf := ca.Issue(t, sendertest.Leaf{CommonName: "hookline client", Client: true, NotAfter: clk.Now().Add(20 * 24 * time.Hour)})
	block, _ := pem.Decode(leaf.CertPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO endpoint_egress (endpoint_id, client_cert, client_key, client_cert_subject, client_cert_expires_at)
		VALUES ($1, $2, '\x00', $3, $4)`, epID, string(leaf.CertPEM), cert.Subject.String(), cert.NotAfter); err != nil {
		t.Fatal(err)
	}
	watch := func() {
		t.Helper()
		if err := w.notifier.watchNotices(ctx); err != nil {
			t.Fatal(err)
		}
	}
	warnings := func() string {
		rows, err := e.pool.Query(ctx, `SELECT subject FROM notifications WHERE kind = 'certificate.expiring' AND endpoint_id = $1 ORDER BY id`, epID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var s []string
		for rows.Next() {
			var x string
			_ = rows.Scan(&x)
			s = append(s, x)
		}
		return strings.Join(s, ",")
	}
	watch()
	watch()
	if got := warnings(); got != "30" {
		t.Fatalf("warnings %q after two looks at 20 days, want one 30-day", got)
	}
	var figures map[string]any
	if err := e.pool.QueryRow(ctx, `SELECT figures FROM notifications WHERE kind = 'certificate.expiring'`).Scan(&figures); err != nil {
		t.Fatal(err)
	}
	if figures["certificate"] != "CN=hookline client,O=hookline tests" || figures["days_left"] != float64(20) {
		t.Fatalf("figures %v", figures)
	}
	clk.Advance(14 * 24 * time.Hour)
	watch()
	watch()
	if got := warnings(); got != "30,7" {
		t.Fatalf("warnings %q at 6 days, want 30,7", got)
	}

	held := func() int {
		return e.count(`SELECT count(*) FROM notifications WHERE kind = 'breaker.held_open' AND endpoint_id = $1`, epID)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE endpoint_health SET state = 'open', opened_at = $2 WHERE endpoint_id = $1`, epID, clk.Now()); err != nil {
		t.Fatal(err)
	}
	e.notice(notify.BreakerOpened, epID, "", `{}`, clk.Now())
	clk.Advance(20 * time.Minute)
	watch()
	if n := held(); n != 0 {
		t.Fatal("held open reported before the threshold")
	}
	clk.Advance(11 * time.Minute)
	watch()
	watch()
	if n := held(); n != 1 {
		t.Fatalf("%d held-open rows, want 1", n)
	}
}
