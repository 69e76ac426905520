package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/worker/sender/sendertest"
)

// TestMain fails the package when a test leaves a goroutine running: every
// goroutine the program starts has an owner that stops it. The commands a
// test runs in this process hash passwords at bcrypt's minimum cost
// (account.UseMinCost): at the production cost a "user add" or a sign-in
// took seconds under the race detector, minutes on a loaded machine. The
// binary the process tests run keeps the production cost.
func TestMain(m *testing.M) {
	account.UseMinCost()
	goleak.VerifyTestMain(m, sendertest.IgnoreCleaners...)
}

func TestWithSteadySysmon(t *testing.T) {
	base := []string{"PATH=/usr/bin", "HOME=/root"}
	for _, tc := range []struct {
		name    string
		args    []string
		env     []string
		restart bool
		godebug string // GODEBUG in the restart's environment
	}{
		{"serve by default", nil, base, true, steadySysmon},
		{"serve", []string{"serve"}, base, true, steadySysmon},
		{"worker", []string{"worker"}, base, true, steadySysmon},
		{"web", []string{"web"}, base, true, steadySysmon},
		{"bench with flags", []string{"bench", "-rate", "3000"}, base, true, steadySysmon},
		{"demo", []string{"demo"}, base, true, steadySysmon},
		{"other settings kept", []string{"serve"}, append([]string{"GODEBUG=madvdontneed=1"}, base...), true, "madvdontneed=1," + steadySysmon},
		{"empty GODEBUG", []string{"serve"}, append([]string{"GODEBUG="}, base...), true, steadySysmon},
		{"the first GODEBUG is the one", []string{"serve"}, append([]string{"GODEBUG=x=1", "GODEBUG=schedtrace=0"}, base...), true, "x=1," + steadySysmon},
		{"schedtrace=0 keeps the default", []string{"serve"}, append([]string{"GODEBUG=schedtrace=0"}, base...), false, ""},
		{"an operator's schedtrace", []string{"serve"}, append([]string{"GODEBUG=gctrace=1, schedtrace=1000"}, base...), false, ""},
		{"migrate", []string{"migrate"}, base, false, ""},
		{"version", []string{"version"}, base, false, ""},
		{"help", []string{"--help"}, base, false, ""},
		{"db start", []string{"db", "start"}, base, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, restart := withSteadySysmon(tc.args, tc.env)
			if restart != tc.restart {
				t.Fatalf("restart %v, want %v", restart, tc.restart)
			}
			if !restart {
				return
			}
			if godebug := godebugValues(env); len(godebug) != 1 || godebug[0] != tc.godebug {
				t.Errorf("GODEBUG %q, want only %q", godebug, tc.godebug)
			}
			if got, want := len(env), len(base)+1; got != want {
				t.Errorf("%d variables (%q), want %d", got, env, want)
			}
			for i, kv := range base {
				if env[i] != kv {
					t.Errorf("variable %d %q, want %q", i, env[i], kv)
				}
			}
		})
	}
}

// godebugValues is every GODEBUG setting in env, in order.
func godebugValues(env []string) []string {
	var v []string
	for _, kv := range env {
		if g, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			v = append(v, g)
		}
	}
	return v
}
