package replica

import "time"

// lagTracker measures how far behind the primary a replica's data is, in
// time, from WAL positions alone. Each measurement records where the
// primary's WAL was at that moment (after); what the replica has replayed
// (reached) then drops every recorded position it has passed. The oldest
// position left is data the primary had at its time and the replica still
// lacks: the replica is at least that old.
//
// This is how PostgreSQL's walsender times replay_lag, and why hookline
// does not use now() - pg_last_xact_replay_timestamp() on the replica
// alone: that is the age of the last transaction replayed, which on an
// idle primary grows for hours while the replica lacks nothing, and a
// check on the replica alone (received = replayed) misses a replica whose
// WAL stream is cut. The estimate errs low by at most one measurement
// interval; it is exact at zero (the replica has everything the primary
// had at the last measurement).
//
// Not safe for concurrent use: Reads holds it under its lock.
type lagTracker struct {
	// pending are primary WAL positions the replica had not replayed when
	// last told, oldest first, strictly increasing.
	pending []position
}

type position struct {
	at  time.Time
	lsn int64
}

// maxPending bounds the positions kept while a replica falls behind (one a
// measurement: an hour at one a second). When full, the newest but one is
// dropped: the oldest decides the lag, and a gap among the newer ones only
// makes the lag, once the oldest is passed, read a little high for a while.
const maxPending = 3600

// primaryAt records that the primary's WAL was at lsn at time at.
func (l *lagTracker) primaryAt(at time.Time, lsn int64) {
	if n := len(l.pending); n > 0 && lsn <= l.pending[n-1].lsn {
		return // no write since: the older entry already stands for it
	}
	if len(l.pending) == maxPending {
		l.pending = append(l.pending[:maxPending-2], l.pending[maxPending-1])
	}
	l.pending = append(l.pending, position{at, lsn})
}

// replayed records that the replica has replayed up to lsn.
func (l *lagTracker) replayed(lsn int64) {
	i := 0
	for i < len(l.pending) && l.pending[i].lsn <= lsn {
		i++
	}
	l.pending = l.pending[i:]
	if len(l.pending) == 0 {
		l.pending = nil // let the backing array go
	}
}

// lag is how old the replica's data is at now: zero when it has replayed
// everything recorded.
func (l *lagTracker) lag(now time.Time) time.Duration {
	if len(l.pending) == 0 {
		return 0
	}
	return max(0, now.Sub(l.pending[0].at))
}
