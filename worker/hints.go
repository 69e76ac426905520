package worker

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// maxHinted bounds the endpoints one targeted claim looks at; past it the
// claim looks everywhere, which then costs no more.
const maxHinted = 500

// claimHints says where the claim loop should look next: at the endpoints
// named since its last claim (an ingest's NOTIFY names the endpoints it
// queued deliveries for; a recorded completion frees its endpoint's
// in-flight slot), or everywhere (a NOTIFY without names, a re-queue, a
// rescue, the poll interval). A claim that looks at a handful of
// endpoints costs a fraction of one that looks at every endpoint, and
// the difference grows with the number of endpoints.
type claimHints struct {
	mu         sync.Mutex
	ids        map[int64]struct{}
	everywhere bool
	asked      int64 // looks everywhere asked for so far
}

// add names endpoints to look at.
func (h *claimHints) add(ids ...int64) {
	if len(ids) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.everywhere {
		return
	}
	if h.ids == nil {
		h.ids = make(map[int64]struct{}, len(ids))
	}
	for _, id := range ids {
		h.ids[id] = struct{}{}
	}
	if len(h.ids) > maxHinted {
		h.everywhere, h.ids = true, nil
	}
}

// all asks the next claim to look at every endpoint.
func (h *claimHints) all() {
	h.mu.Lock()
	h.everywhere, h.ids = true, nil
	h.asked++
	h.mu.Unlock()
}

// askedEverywhere is how many looks everywhere were asked for so far.
func (h *claimHints) askedEverywhere() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.asked
}

// take returns what was asked since the last take and forgets it; asked
// is askedEverywhere as of the take.
func (h *claimHints) take() (ids []int64, everywhere bool, asked int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	asked = h.asked
	if h.everywhere {
		h.everywhere = false
		return nil, true, asked
	}
	if len(h.ids) == 0 {
		return nil, false, asked
	}
	ids = make([]int64, 0, len(h.ids))
	for id := range h.ids {
		ids = append(ids, id)
	}
	clear(h.ids)
	return ids, false, asked
}

// parseEndpointList reads a wake-up NOTIFY's payload, the endpoint ids
// DeliveryFanOut sends ("12,7,40"). ok is false for an empty or
// unreadable payload, which asks for a look everywhere.
func parseEndpointList(payload string) (ids []int64, ok bool) {
	if payload == "" {
		return nil, false
	}
	for f := range strings.SplitSeq(payload, ",") {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil || id <= 0 {
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

// listen wakes the claim loop on NOTIFY hookline_deliveries (sent by ingest
// and replay on commit). It holds its own connection, reconnecting after
// failures; polling covers any gap.
func (c *claimer) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := c.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("notification listener stopped; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (c *claimer) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, c.cfg.SessionPool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN hookline_deliveries"); err != nil {
		return err
	}
	// Notifications sent while no LISTEN was in place are lost.
	c.wakeEverywhere()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if ids, ok := parseEndpointList(n.Payload); ok {
			c.hints.add(ids...)
		} else {
			c.hints.all()
		}
		signal(c.wake)
	}
}

// wakeEverywhere makes the claim loop look at every endpoint now.
func (c *claimer) wakeEverywhere() {
	c.hints.all()
	signal(c.wake)
}

// In-process wake-ups. When the web server and the worker share a process
// (hookline serve), an ingest names the endpoints it queued deliveries for
// to the worker directly once its transaction has committed (WakeFor),
// and, while ClaimsEverything holds, sends no wake-up NOTIFY at all: no
// other replica may claim any delivery then, so none needs waking. A
// notifying commit holds a lock of the whole cluster through its WAL flush,
// so notifying ingests commit one at a time, and the NOTIFY reaches the
// worker only once PostgreSQL's listening backend has run
// (worker/bench/performance.md, "The wake-up passed in process").
//
// Should a shard move to another worker between the ingest's check and
// its commit, the new owner does not miss the delivery: it takes the shard
// only after this worker has given it up, and looks at every endpoint as
// soon as it has taken one (holdSession).

// ClaimsEverything reports whether this worker may claim from every shard
// now: it holds every shard's lock, gives none up, and no worker of the
// older claim protocol is alive. It reads an atomic and never waits.
func (w *Worker) ClaimsEverything() bool { return w.live.own.everything.Load() }

// WakeFor makes the claim loop look at these endpoints now: deliveries to
// them were just committed.
func (w *Worker) WakeFor(endpointIDs ...int64) {
	if len(endpointIDs) == 0 {
		return
	}
	w.claims.wakeFor(endpointIDs...)
}

// wakeFor makes the claim loop look at these endpoints now.
func (c *claimer) wakeFor(endpointIDs ...int64) {
	c.hints.add(endpointIDs...)
	signal(c.wake)
}
