package filter

import "sync"

// maxCached bounds a Cache: past it the cache starts over, which costs a
// compile per filter and nothing else.
const maxCached = 4096

// Cache compiles each distinct filter text once. Fan-out reads the
// endpoints' stored filters in its own transaction and looks them up here,
// so a changed filter is a new key: there is nothing to invalidate and no
// replica ever evaluates a stale filter. The zero value is ready to use.
type Cache struct {
	mu sync.Mutex
	m  map[string]*Filter
}

// Compile returns the compiled filter for raw, compiling it on first use.
func (c *Cache) Compile(raw []byte) (*Filter, error) {
	c.mu.Lock()
	f, ok := c.m[string(raw)]
	c.mu.Unlock()
	if ok {
		return f, nil
	}
	f, err := Compile(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = map[string]*Filter{}
	}
	c.m[string(raw)] = f
	c.mu.Unlock()
	return f, nil
}

// Endpoint is one endpoint's compiled filter.
type Endpoint struct {
	ID     int64
	Filter *Filter
}

// Rejecting returns the ids of the endpoints whose filter the payload does
// not pass (nil when every filter passes). The payload is decoded once
// however many filters there are; a payload that is not JSON passes none.
func Rejecting(endpoints []Endpoint, payload []byte) []int64 {
	if len(endpoints) == 0 {
		return nil
	}
	var ids []int64
	d, err := Decode(payload)
	// Endpoints with the same filter text share one compiled *Filter
	// (Cache), evaluated once per event.
	var seen map[*Filter]bool
	for _, e := range endpoints {
		pass := false
		if err == nil {
			var known bool
			if pass, known = seen[e.Filter]; !known {
				pass = e.Filter.MatchDocument(d)
				if seen == nil {
					seen = make(map[*Filter]bool, 8)
				}
				seen[e.Filter] = pass
			}
		}
		if !pass {
			ids = append(ids, e.ID)
		}
	}
	return ids
}
