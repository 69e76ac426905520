package notify_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/worker/notify"
)

// clock is an injected clock the tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestLimiterOnePerWindowAndSummarises(t *testing.T) {
	l := notify.Limiter{Window: notify.Window}
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}

	t.Run("first goes out at once", func(t *testing.T) {
		d := l.Decide([]int64{1}, time.Time{}, c.now())
		if d.Send != 1 || d.Repeats != 0 || len(d.Suppress) != 0 {
			t.Fatalf("decision = %+v", d)
		}
	})
	lastSent := c.now()

	t.Run("flapping inside the window waits", func(t *testing.T) {
		for _, step := range []time.Duration{time.Minute, 5 * time.Minute, 8 * time.Minute} {
			c.advance(step - (c.now().Sub(lastSent)))
			d := l.Decide([]int64{2, 3, 4}, lastSent, c.now())
			if d.Send != 0 || !d.Wait.Equal(lastSent.Add(15*time.Minute)) {
				t.Fatalf("at +%s: decision = %+v, want to wait until +15 min", step, d)
			}
		}
	})

	t.Run("after the window one summary for the held rows", func(t *testing.T) {
		c.advance(lastSent.Add(15 * time.Minute).Sub(c.now()))
		d := l.Decide([]int64{2, 3, 4}, lastSent, c.now())
		if d.Send != 4 || d.Repeats != 2 || !slices.Equal(d.Suppress, []int64{2, 3}) {
			t.Fatalf("decision = %+v, want send 4 summarising 2 and 3", d)
		}
	})
}

func TestParseKinds(t *testing.T) {
	got, err := notify.ParseKinds([]string{"endpoint.disabled", "breaker.opened", "breaker.opened"})
	if err != nil || fmt.Sprint(got) != "[breaker.opened endpoint.disabled]" {
		t.Fatalf("ParseKinds = %v, %v", got, err)
	}
	if _, err := notify.ParseKinds([]string{"breaker.exploded"}); err == nil {
		t.Fatal("unknown kind accepted")
	}
	if _, err := notify.ParseKinds(nil); err == nil {
		t.Fatal("empty list accepted")
	}
}

func TestComposeChatAndWebhook(t *testing.T) {
	m := notify.Message{Kind: notify.EndpointWarned, Subject: "70", EndpointID: 7, Endpoint: "conversions",
		Partner: "Acme", Figures: map[string]any{"failures": 7, "of": 10},
		OccurredAt: time.Unix(0, 0), DashboardURL: notify.Link("https://hooks.test/", notify.EndpointWarned, 7)}
	chat, _ := json.Marshal(notify.Compose("chat", m))
	var c map[string]string
	if err := json.Unmarshal(chat, &c); err != nil || len(c) != 1 {
		t.Fatalf("chat body %s", chat)
	}
	for _, want := range []string{`"conversions"`, `"Acme"`, "70 %", "failures: 7", "https://hooks.test/endpoints/7"} {
		if !strings.Contains(c["text"], want) {
			t.Errorf("text %q lacks %q", c["text"], want)
		}
	}
	doc, _ := json.Marshal(notify.Compose("webhook", m))
	if !strings.Contains(string(doc), `"kind":"endpoint.warned"`) || !strings.Contains(string(doc), `"partner":"Acme"`) {
		t.Fatalf("webhook body %s", doc)
	}
}

func ExampleLimiter_Decide() {
	l := notify.Limiter{Window: 15 * time.Minute}
	sent := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fmt.Println(l.Decide([]int64{8, 9}, sent, sent.Add(10*time.Minute)).Send)
	d := l.Decide([]int64{8, 9}, sent, sent.Add(15*time.Minute))
	fmt.Println(d.Send, d.Repeats)
	// Output:
	// 0
	// 9 1
}

// TestComposeEmail: the email body has the chat text's facts and link in
// both parts, escapes what names carry into the HTML, and a subject line
// saying what and where.
func TestComposeEmail(t *testing.T) {
	m := notify.Message{Kind: notify.EndpointWarned, Subject: "70", EndpointID: 7, Endpoint: "orders<script>", Partner: "Acme",
		Figures: map[string]any{"failures": 7, "budget": 10}, Repeats: 2, DashboardURL: "https://hooks.test/endpoints/7"}
	e := notify.Compose("email", m).(notify.Email)
	if e.Subject != `hookline: failure budget warning (70%) — orders<script> (Acme)` {
		t.Errorf("subject %q", e.Subject)
	}
	text := notify.Text(m)
	if !strings.HasPrefix(e.Text, strings.TrimSuffix(text, " "+m.DashboardURL)) || !strings.HasSuffix(e.Text, "\n\nhttps://hooks.test/endpoints/7") {
		t.Errorf("text %q, chat %q", e.Text, text)
	}
	for _, want := range []string{"orders&lt;script&gt;", "<th style=\"text-align: left; padding-right: 1em\">failures</th><td>7</td>",
		"2 more like this", `<a href="https://hooks.test/endpoints/7">`} {
		if !strings.Contains(e.HTML, want) {
			t.Errorf("html lacks %q:\n%s", want, e.HTML)
		}
	}
	if strings.Contains(e.HTML, "<script>") {
		t.Error("html not escaped")
	}
	if got := notify.PortalLink("https://hooks.test/", 7); got != "https://hooks.test/portal/endpoints/7" {
		t.Errorf("portal link %q", got)
	}
}
