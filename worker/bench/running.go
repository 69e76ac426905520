package bench

import (
	"context"

	"github.com/hookline/hookline/worker"
)

// runningWorker is hookline's worker running in a goroutine of its own, as
// every bench that measures it runs it. It is the ingest's local worker
// (localWorker) too, as in hookline serve.
type runningWorker struct {
	*worker.Worker
	// exited is closed when Run returns, err is then its result: a bench
	// selects on exited to fail when the worker stops before its work is
	// done.
	exited chan struct{}
	err    error
	cancel context.CancelFunc
}

// startWorker makes the worker of cfg and runs it until stop. Where cfg
// leaves them unset, it takes the bench's user agent and a guard that lets
// it reach the loopback receivers.
func startWorker(ctx context.Context, cfg worker.Config) (*runningWorker, error) {
	if cfg.Guard == nil {
		cfg.Guard = loopbackGuard()
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "hookline/bench"
	}
	w, err := worker.New(cfg)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	r := &runningWorker{Worker: w, exited: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(r.exited)
		r.err = w.Run(wctx)
	}()
	return r, nil
}

// stop stops the worker and waits until it has: its sessions are closed
// when it returns.
func (r *runningWorker) stop() {
	r.cancel()
	<-r.exited
}
