package replica

import (
	"testing"
	"time"
)

func TestLagTracker(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

	t.Run("caught up is zero", func(t *testing.T) {
		var l lagTracker
		l.primaryAt(at(0), 100)
		l.replayed(100)
		if got := l.lag(at(5)); got != 0 {
			t.Fatalf("lag %s, want 0", got)
		}
	})
	t.Run("an idle primary is no lag however old its last write", func(t *testing.T) {
		var l lagTracker
		l.primaryAt(at(0), 100)
		l.replayed(100)
		for s := 1; s < 3600; s++ {
			l.primaryAt(at(s), 100)
			l.replayed(100)
		}
		if got := l.lag(at(3600)); got != 0 {
			t.Fatalf("lag %s, want 0", got)
		}
	})
	t.Run("paused replay grows from the first position it lacks", func(t *testing.T) {
		var l lagTracker
		l.primaryAt(at(0), 100)
		l.replayed(100)
		for s := 1; s <= 10; s++ {
			l.primaryAt(at(s), int64(100+s))
			l.replayed(100)
		}
		if got := l.lag(at(10)); got != 9*time.Second {
			t.Fatalf("lag %s, want 9s", got)
		}
		// Replay resumes part of the way: the lag is that of the first
		// position still missing.
		l.replayed(105)
		if got := l.lag(at(10)); got != 4*time.Second {
			t.Fatalf("lag %s, want 4s", got)
		}
		l.replayed(110)
		if got := l.lag(at(10)); got != 0 {
			t.Fatalf("lag %s, want 0", got)
		}
	})
	t.Run("a cut stream with an idle primary counts from the write it missed", func(t *testing.T) {
		var l lagTracker
		l.primaryAt(at(0), 100)
		l.replayed(90)
		for s := 1; s <= 30; s++ {
			l.primaryAt(at(s), 100) // no write since
			l.replayed(90)
		}
		if got := l.lag(at(30)); got != 30*time.Second {
			t.Fatalf("lag %s, want 30s", got)
		}
	})
	t.Run("bounded, keeping the oldest", func(t *testing.T) {
		var l lagTracker
		for s := range 2 * maxPending {
			l.primaryAt(at(s), int64(s+1))
		}
		if len(l.pending) != maxPending {
			t.Fatalf("%d positions kept, want %d", len(l.pending), maxPending)
		}
		if got := l.lag(at(2 * maxPending)); got != 2*maxPending*time.Second {
			t.Fatalf("lag %s, want %ds", got, 2*maxPending)
		}
		last := l.pending[len(l.pending)-1].lsn
		if last != 2*maxPending {
			t.Fatalf("newest kept %d, want %d", last, 2*maxPending)
		}
	})
}
