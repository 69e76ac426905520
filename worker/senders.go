package worker

import (
	"fmt"

	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
)

// buildSenders builds the dispatcher's two HTTP senders, unless the config
// gives them: one dialling through the operator's guard, one through the
// partner guard for endpoints whose URL a partner set. Each has its own
// keep-alive pool, so a connection opened under one guard never carries a
// delivery the other would judge.
func (dp *dispatcher) buildSenders(cfg dispatcherConfig) error {
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
	dp.send = cfg.Sender
	if dp.send == nil {
		if dp.send, err = build(cfg.Guard); err != nil {
			return err
		}
		dp.ownSend = true
	}
	dp.partnerSend = cfg.PartnerSender
	if dp.partnerSend == nil {
		g := cfg.PartnerGuard
		if g == nil {
			g = ssrf.NewPartner(nil) // public addresses only
		}
		if dp.partnerSend, err = build(g); err != nil {
			return err
		}
		dp.ownPartnerSend = true
	}
	return nil
}

// closeSenders closes the idle connections of the senders the dispatcher
// built.
func (dp *dispatcher) closeSenders() {
	if dp.ownSend {
		dp.send.Close()
	}
	if dp.ownPartnerSend {
		dp.partnerSend.Close()
	}
}

// senderFor is the sender a claimed delivery goes out through, by its
// claim's partner_url: a branch, nothing allocated on the hot path.
func (dp *dispatcher) senderFor(partnerURL bool) *sender.Sender {
	if partnerURL {
		return dp.partnerSend
	}
	return dp.send
}
