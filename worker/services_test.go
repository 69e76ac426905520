package worker

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

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
