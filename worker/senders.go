package worker

import (
	"fmt"

	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
)

// buildSenders builds the worker's two HTTP senders, unless the config
// gives them: one dialling through the operator's guard, one through the
// partner guard for endpoints whose URL a partner set. Each has its own
// keep-alive pool, so a connection opened under one guard never carries a
// delivery the other would judge.
func (w *Worker) buildSenders(cfg Config) error {
	ua := cfg.UserAgent
	if ua == "" {
		ua = "hookline"
	}
	// Up to Concurrency sends may go to one host (many endpoints of one
	// partner, or one with a high max_in_flight); a smaller idle pool
	// would close and redial connections under exactly that load.
	build := func(g *ssrf.Guard) (*sender.Sender, error) {
		s, err := sender.New(sender.Options{
			Guard: g, UserAgent: ua, Now: cfg.Now, MaxIdleConnsPerHost: cfg.Concurrency,
			Proxy: cfg.EgressProxy, RootCAs: cfg.RootCAs,
		})
		if err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
		return s, nil
	}
	var err error
	if w.send == nil {
		if w.send, err = build(cfg.Guard); err != nil {
			return err
		}
		w.ownSend = true
	}
	w.partnerSend = cfg.PartnerSender
	if w.partnerSend == nil {
		g := cfg.PartnerGuard
		if g == nil {
			g = ssrf.NewPartner(nil) // public addresses only
		}
		if w.partnerSend, err = build(g); err != nil {
			return err
		}
		w.ownPartnerSend = true
	}
	return nil
}

// closeSenders closes the idle connections of the senders the worker built.
func (w *Worker) closeSenders() {
	if w.ownSend {
		w.send.Close()
	}
	if w.ownPartnerSend {
		w.partnerSend.Close()
	}
}

// senderFor is the sender a claimed delivery goes out through, by its
// claim's partner_url: a branch, nothing allocated on the hot path.
func (w *Worker) senderFor(partnerURL bool) *sender.Sender {
	if partnerURL {
		return w.partnerSend
	}
	return w.send
}
