package db

import "github.com/google/uuid"

// NewEvent is one validated event for EventInsertSet.
type NewEvent struct {
	ID             uuid.UUID
	Type           string
	Payload        []byte // the exact bytes signed and sent
	IdempotencyKey *string
	PartnerID      *int64
	APIKeyID       *int64   // the key that posted it; nil when none
	SearchKeys     []string // parallel to SearchValues; nil when none
	SearchValues   []string
}

// EventSet lays events out as EventInsertSet's parallel arrays, the batch
// of one statement that stores them all.
func EventSet(events []NewEvent) []EventInsertSetParams {
	p := EventInsertSetParams{
		Ids:           make([]uuid.UUID, len(events)),
		Types:         make([]string, len(events)),
		Payloads:      make([]string, len(events)),
		Keys:          make([]string, len(events)),
		PartnerIds:    make([]int64, len(events)),
		APIKeyIDs:     make([]int64, len(events)),
		SearchOffsets: make([]int32, len(events)),
		SearchCounts:  make([]int32, len(events)),
		SearchKeys:    []string{},
		SearchValues:  []string{},
	}
	for i, e := range events {
		p.Ids[i], p.Types[i], p.Payloads[i] = e.ID, e.Type, string(e.Payload)
		if e.IdempotencyKey != nil {
			p.Keys[i] = *e.IdempotencyKey
		}
		if e.PartnerID != nil {
			p.PartnerIds[i] = *e.PartnerID
		}
		if e.APIKeyID != nil {
			p.APIKeyIDs[i] = *e.APIKeyID
		}
		p.SearchOffsets[i], p.SearchCounts[i] = int32(len(p.SearchKeys)), int32(len(e.SearchKeys))
		p.SearchKeys = append(p.SearchKeys, e.SearchKeys...)
		p.SearchValues = append(p.SearchValues, e.SearchValues...)
	}
	return []EventInsertSetParams{p}
}
