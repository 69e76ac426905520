package bench

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/signing"
	"github.com/hookline/hookline/worker/ssrf"
)

func raw(ctx context.Context, guard *ssrf.Guard, rcv *receiver, o Options, payload []byte) (Phase, error) {
	s := o.sender
	if s == nil {
		var err error
		if s, err = sender.New(sender.Options{Guard: guard, UserAgent: "hookline/bench", MaxIdleConnsPerHost: o.Concurrency}); err != nil {
			return Phase{}, err
		}
		defer s.Close()
	}
	keys := [][]byte{make([]byte, 32)}
	trust := rcv.egress()
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range o.Concurrency {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(o.Deliveries) || ctx.Err() != nil {
					return
				}
				h := http.Header{}
				h.Set("Content-Type", "application/json")
				signing.Headers(h, keys, fmt.Sprint("ev-", i), time.Now(), payload)
				res := s.Send(ctx, sender.Request{Method: "POST", URL: fmt.Sprintf("%s/ep%d", rcv.url, i%int64(o.Endpoints)), Header: h, Body: payload, Timeout: 15 * time.Second, Egress: trust})
				if res.Outcome != sender.OK {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	if n := failed.Load(); n > 0 {
		return Phase{}, fmt.Errorf("%d raw requests failed", n)
	}
	return Phase{Count: o.Deliveries, Duration: d}, ctx.Err()
}
