package db

import "github.com/google/uuid"

// FanOutEvent is one stored event for DeliveryFanOut.
type FanOutEvent struct {
	ID        uuid.UUID
	Type      string
	PartnerID *int64  // restrict to one partner's endpoints; nil: any partner
	Excluded  []int64 // endpoints whose payload filter the event fails
}

// FanOut lays events out as DeliveryFanOut's parallel arrays, the batch of
// one statement that queues every event's deliveries and, with notify,
// wakes the workers for them by NOTIFY (unless PostgreSQL's NOTIFY queue
// is fuller than NotifyQueueLimit). Without notify the caller wakes the
// one worker that may claim them in process (worker.Worker.WakeFor).
func FanOut(events []FanOutEvent, notify bool) []DeliveryFanOutParams {
	p := DeliveryFanOutParams{
		EventIds:   make([]uuid.UUID, len(events)),
		EventTypes: make([]string, len(events)),
		PartnerIds: make([]int64, len(events)),
	}
	if notify {
		p.WakeUnder = NotifyQueueLimit
	}
	for i, e := range events {
		p.EventIds[i], p.EventTypes[i] = e.ID, e.Type
		if e.PartnerID != nil {
			p.PartnerIds[i] = *e.PartnerID
		}
		for _, id := range e.Excluded {
			p.ExcludedEventIds = append(p.ExcludedEventIds, e.ID)
			p.ExcludedEndpointIds = append(p.ExcludedEndpointIds, id)
		}
	}
	return []DeliveryFanOutParams{p}
}
