package worker

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookline/hookline/db/secretbox"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestHousekeeperConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func() housekeeperConfig {
		return housekeeperConfig{Pool: &pgxpool.Pool{}, SessionPool: &pgxpool.Pool{}, Retention: DefaultRetention(),
			Logger: slog.New(slog.DiscardHandler), Now: time.Now}
	}
	if err := valid().validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(*housekeeperConfig)
		want   string
	}{
		{"no pool", func(c *housekeeperConfig) { c.Pool = nil }, "Pool"},
		{"no session pool", func(c *housekeeperConfig) { c.SessionPool = nil }, "SessionPool"},
		{"no logger", func(c *housekeeperConfig) { c.Logger = nil }, "Logger"},
		{"no clock", func(c *housekeeperConfig) { c.Now = nil }, "Now"},
		{"no attempts retention", func(c *housekeeperConfig) { c.Retention.Attempts = 0 }, "Retention"},
		{"no batch", func(c *housekeeperConfig) { c.Retention.Batch = 0 }, "Batch"},
	} {
		cfg := valid()
		c.change(&cfg)
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.want)
		}
	}
}

func TestNotifierConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func() notifierConfig {
		return notifierConfig{Pool: &pgxpool.Pool{}, Outbox: make(chan struct{}, 1), WakeClaims: func() {},
			Logger: slog.New(slog.DiscardHandler), Now: time.Now, DBNow: func() *time.Time { return nil }}
	}
	if err := valid().validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(*notifierConfig)
		want   string
	}{
		{"no pool", func(c *notifierConfig) { c.Pool = nil }, "Pool"},
		{"no outbox", func(c *notifierConfig) { c.Outbox = nil }, "Outbox"},
		{"no claim wake-up", func(c *notifierConfig) { c.WakeClaims = nil }, "WakeClaims"},
		{"no logger", func(c *notifierConfig) { c.Logger = nil }, "Logger"},
		{"no SQL clock", func(c *notifierConfig) { c.DBNow = nil }, "DBNow"},
	} {
		cfg := valid()
		c.change(&cfg)
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.want)
		}
	}
}

func TestLivenessConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func() livenessConfig {
		return livenessConfig{Pool: &pgxpool.Pool{}, SessionPool: &pgxpool.Pool{}, WorkerID: "w1", Held: &holdings{},
			Rescue: func(context.Context, ...string) (int, error) { return 0, nil }, WakeClaims: func() {},
			Logger: slog.New(slog.DiscardHandler)}
	}
	if err := valid().validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(*livenessConfig)
		want   string
	}{
		{"no session pool", func(c *livenessConfig) { c.SessionPool = nil }, "SessionPool"},
		{"no worker id", func(c *livenessConfig) { c.WorkerID = "" }, "WorkerID"},
		{"no holdings", func(c *livenessConfig) { c.Held = nil }, "Held"},
		{"no rescue", func(c *livenessConfig) { c.Rescue = nil }, "Rescue"},
		{"no logger", func(c *livenessConfig) { c.Logger = nil }, "Logger"},
	} {
		cfg := valid()
		c.change(&cfg)
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.want)
		}
	}
}

func TestCompleterConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func() completerConfig {
		return completerConfig{Pool: &pgxpool.Pool{}, WorkerID: "w1", Results: make(chan outcome),
			Recorded: func(_, _ []outcome) {}, Pause: func(int64, time.Time) {}, Outbox: make(chan struct{}, 1),
			FlushInterval: time.Millisecond, FlushSize: 1, Flushers: 1, Rand: fixedRand(0),
			Logger: slog.New(slog.DiscardHandler), Now: time.Now, DBNow: func() *time.Time { return nil }}
	}
	if err := valid().validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(*completerConfig)
		want   string
	}{
		{"no pool", func(c *completerConfig) { c.Pool = nil }, "Pool"},
		{"no worker id", func(c *completerConfig) { c.WorkerID = "" }, "WorkerID"},
		{"no results", func(c *completerConfig) { c.Results = nil }, "Results"},
		{"no recorded", func(c *completerConfig) { c.Recorded = nil }, "Recorded"},
		{"no pause", func(c *completerConfig) { c.Pause = nil }, "Pause"},
		{"no outbox", func(c *completerConfig) { c.Outbox = nil }, "Outbox"},
		{"no flushers", func(c *completerConfig) { c.Flushers = 0 }, "Flushers"},
		{"no rand", func(c *completerConfig) { c.Rand = nil }, "Rand"},
		{"no SQL clock", func(c *completerConfig) { c.DBNow = nil }, "DBNow"},
	} {
		cfg := valid()
		c.change(&cfg)
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.want)
		}
	}
}

func TestClaimerConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func() claimerConfig {
		return claimerConfig{Pool: &pgxpool.Pool{}, SessionPool: &pgxpool.Pool{}, WorkerID: "w1",
			Own: &ownership{}, Alive: &atomic.Bool{}, Held: &holdings{}, Queue: make(chan queued, 1), Probes: make(chan claimed),
			Concurrency: 1, ClaimBatch: 1, PollInterval: time.Second, LeaseMargin: time.Second,
			Logger: slog.New(slog.DiscardHandler), Now: time.Now, DBNow: func() *time.Time { return nil }}
	}
	if err := valid().validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(*claimerConfig)
		want   string
	}{
		{"no session pool", func(c *claimerConfig) { c.SessionPool = nil }, "SessionPool"},
		{"no worker id", func(c *claimerConfig) { c.WorkerID = "" }, "WorkerID"},
		{"no ownership", func(c *claimerConfig) { c.Own = nil }, "Own"},
		{"no holdings", func(c *claimerConfig) { c.Held = nil }, "Held"},
		{"no queue", func(c *claimerConfig) { c.Queue = nil }, "Queue"},
		{"no probes", func(c *claimerConfig) { c.Probes = nil }, "Probes"},
		{"no batch", func(c *claimerConfig) { c.ClaimBatch = 0 }, "ClaimBatch"},
		{"no poll interval", func(c *claimerConfig) { c.PollInterval = 0 }, "PollInterval"},
		{"no SQL clock", func(c *claimerConfig) { c.DBNow = nil }, "DBNow"},
	} {
		cfg := valid()
		c.change(&cfg)
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.want)
		}
	}
}

func TestDispatcherConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func() dispatcherConfig {
		return dispatcherConfig{Pool: &pgxpool.Pool{}, Box: &secretbox.Box{}, Queue: make(chan queued), Probes: make(chan claimed),
			Results: make(chan outcome), Sent: func() {}, Concurrency: 1, LeaseMargin: time.Second, Guard: loopbackGuard(),
			Logger: slog.New(slog.DiscardHandler), Now: time.Now, DBNow: func() *time.Time { return nil }}
	}
	if err := valid().validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(*dispatcherConfig)
		want   string
	}{
		{"no pool", func(c *dispatcherConfig) { c.Pool = nil }, "Pool"},
		{"no box", func(c *dispatcherConfig) { c.Box = nil }, "Box"},
		{"no results", func(c *dispatcherConfig) { c.Results = nil }, "Results"},
		{"no sent", func(c *dispatcherConfig) { c.Sent = nil }, "Sent"},
		{"no concurrency", func(c *dispatcherConfig) { c.Concurrency = 0 }, "Concurrency"},
		{"no guard nor sender", func(c *dispatcherConfig) { c.Guard = nil }, "Guard"},
		{"no logger", func(c *dispatcherConfig) { c.Logger = nil }, "Logger"},
	} {
		cfg := valid()
		c.change(&cfg)
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.want)
		}
	}
}

func TestMaintainerConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func() maintainerConfig {
		return maintainerConfig{Pool: &pgxpool.Pool{}, ReapDead: func(context.Context) error { return nil }, WakeClaims: func() {},
			Logger: slog.New(slog.DiscardHandler), Now: time.Now, DBNow: func() *time.Time { return nil }}
	}
	if err := valid().validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(*maintainerConfig)
		want   string
	}{
		{"no pool", func(c *maintainerConfig) { c.Pool = nil }, "Pool"},
		{"no reap", func(c *maintainerConfig) { c.ReapDead = nil }, "ReapDead"},
		{"no claim wake-up", func(c *maintainerConfig) { c.WakeClaims = nil }, "WakeClaims"},
		{"no clock", func(c *maintainerConfig) { c.Now = nil }, "Now"},
	} {
		cfg := valid()
		c.change(&cfg)
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.want)
		}
	}
}

// TestClaimOnce runs single passes of the claim loop: a look everywhere
// queues what it claimed for the senders and holds it; a pass with
// nothing named and no look everywhere due claims nothing.
func TestClaimOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.endpoint(endpointOpts{url: "http://127.0.0.1:9/", maxInFlight: 10})
	e.events(3, "order.created", `{}`)
	w := e.worker(nil)
	e.sole(w)
	ctx := context.Background()
	c := w.claims
	c.hints.take() // the looks everywhere asked for as the shards were taken
	if pass, err := c.claimOnce(ctx, 10, false); err != nil || pass.claimed {
		t.Fatalf("a pass with nothing named: %+v, %v; want no claim", pass, err)
	}
	pass, err := c.claimOnce(ctx, 10, true)
	if err != nil || !pass.claimed || !pass.everywhere || pass.full {
		t.Fatalf("a look everywhere: %+v, %v; want a claim everywhere, not full", pass, err)
	}
	if n, _ := c.held.counts(); len(c.queue) != 3 || c.busy.Load() != 3 || n != 3 || c.claimPasses.Load() != 1 {
		t.Fatalf("queued %d, busy %d, held %d, passes %d; want 3, 3, 3, 1", len(c.queue), c.busy.Load(), n, c.claimPasses.Load())
	}
	if pass, err := c.claimOnce(ctx, 2, true); err != nil || !pass.claimed || pass.full {
		t.Fatalf("a look everywhere with all held: %+v, %v; want a claim of nothing", pass, err)
	}
}
