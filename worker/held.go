package worker

import (
	"sync"
	"time"
)

// holdings are the deliveries this worker has claimed whose results are
// not yet recorded: queued for a sender, being sent, or waiting for their
// completion batch to commit. A claim writes nothing to the table, so this
// is the only record of them: the claim skips them (they are still due
// there) and counts them against their endpoint's max_in_flight, and a
// shard is given up only once it holds none of them. A delivery leaves
// only after the transaction recording its result has committed (or the
// result was refused, or given up on), so no claim can read it as due
// while its result is still on the way.
type holdings struct {
	mu       sync.Mutex
	ids      map[int64]heldDelivery
	perShard [shardCount]int
	retries  int
}

type heldDelivery struct {
	endpoint int64
	retry    bool // claimed while awaiting a retry (status failed)
}

// add records claimed deliveries.
func (h *holdings) add(rows []claimed) {
	if len(rows) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ids == nil {
		h.ids = make(map[int64]heldDelivery, len(rows))
	}
	for i := range rows {
		r := &rows[i]
		if _, dup := h.ids[r.ID]; dup {
			continue
		}
		h.ids[r.ID] = heldDelivery{endpoint: r.EndpointID, retry: r.Retry}
		h.perShard[shardOf(r.EndpointID)]++
		if r.Retry {
			h.retries++
		}
	}
}

// remove forgets the deliveries of a batch whose results are recorded (or
// refused by the fence), all but those in kept.
func (h *holdings) remove(batch, kept []outcome) {
	var keep map[int64]bool
	if len(kept) > 0 {
		keep = make(map[int64]bool, len(kept))
		for i := range kept {
			keep[kept[i].d.ID] = true
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range batch {
		if id := batch[i].d.ID; !keep[id] {
			h.removeLocked(id)
		}
	}
}

func (h *holdings) removeLocked(id int64) {
	d, ok := h.ids[id]
	if !ok {
		return
	}
	delete(h.ids, id)
	h.perShard[shardOf(d.endpoint)]--
	if d.retry {
		h.retries--
	}
}

// removeAfter forgets deliveries after a while: results that could not be
// recorded. Forgotten at once, such a delivery would be claimed and sent
// again straight away, and if its result can never be stored (a bug, a
// constraint), sent in a tight loop; held a while, it is sent again no
// sooner than a lease used to expire.
func (h *holdings) removeAfter(batch []outcome, d time.Duration) {
	ids := make([]int64, len(batch))
	for i := range batch {
		ids[i] = batch[i].d.ID
	}
	time.AfterFunc(d, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, id := range ids {
			h.removeLocked(id)
		}
	})
}

// snapshot lists the held deliveries as parallel arrays of endpoint and
// delivery ids, for the claim.
func (h *holdings) snapshot() (endpoints, ids []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	endpoints = make([]int64, 0, len(h.ids))
	ids = make([]int64, 0, len(h.ids))
	for id, d := range h.ids {
		endpoints = append(endpoints, d.endpoint)
		ids = append(ids, id)
	}
	return endpoints, ids
}

// inShard is how many held deliveries belong to a shard.
func (h *holdings) inShard(s int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.perShard[s]
}

// counts is how many deliveries are held, and how many of them are
// retries (for the heartbeat).
func (h *holdings) counts() (n, retries int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ids), h.retries
}
