package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/google/uuid"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/filter"
)

// eventInput is one event as producers post it.
type eventInput struct {
	Type           string          `json:"type"`
	Payload        json.RawMessage `json:"payload"`
	IdempotencyKey *string         `json:"idempotency_key"`
	PartnerID      *int64          `json:"partner_id"`
}

// Outcomes of ingesting one event.
const (
	ingestAccepted  = "accepted"  // stored, deliveries queued
	ingestDuplicate = "duplicate" // idempotency key seen before: the original event
	ingestRejected  = "rejected"  // invalid; nothing stored
)

type deliveryRef struct {
	ID         int64  `json:"id"`
	EndpointID int64  `json:"endpoint_id"`
	Status     string `json:"status"`
}

type ingestResult struct {
	Status     string        `json:"status"`
	ID         *uuid.UUID    `json:"id,omitempty"`
	Deliveries []deliveryRef `json:"deliveries,omitempty"`
	Error      *apiError     `json:"error,omitempty"`
}

// maxBatchEvents bounds one batch request (DESIGN §10).
const maxBatchEvents = 1000

// eventTypeName is what an event type may be: the one pattern for the
// types producers post and the types (and prefixes before a ".*")
// endpoints subscribe to.
var eventTypeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$`)

// validated is an event that passed validation, ready to insert.
type validated struct {
	index   int
	id      uuid.UUID
	typ     string
	payload []byte // compacted: the exact bytes signed and sent
	key     *string
	partner *int64
	apiKey  int64 // the key that posted it
}

// ingest validates and stores events: every valid event and its fan-out in
// one transaction (two round trips however many events), followed by one
// NOTIFY for the workers. An invalid event is rejected alone; the others
// are still stored. Each event records the key that posted it; a key
// bound to a partner posts only that partner's events: an event without a
// partner_id takes the key's, one with another's is refused.
func (s *Server) ingest(ctx context.Context, by apiPrincipal, events []eventInput) ([]ingestResult, error) {
	return s.ingestDecoded(ctx, by, events, nil)
}

// ingestDecoded is ingest with each event's decoding error, if any (a
// batch decodes its events one by one): such events are rejected alone.
func (s *Server) ingestDecoded(ctx context.Context, by apiPrincipal, events []eventInput, decodeErrs []error) ([]ingestResult, error) {
	results := make([]ingestResult, len(events))
	var ok []validated
	partnerIDs := map[int64]bool{}
	for i, in := range events {
		var v validated
		var err error
		if i < len(decodeErrs) && decodeErrs[i] != nil {
			err = decodeErrs[i]
		} else {
			v, err = validateEvent(in)
		}
		if err == nil && by.PartnerID != nil {
			switch {
			case v.partner == nil:
				v.partner = by.PartnerID
			case *v.partner != *by.PartnerID:
				err = errPartnerMismatch(*by.PartnerID)
			}
		}
		if err != nil {
			results[i] = ingestResult{Status: ingestRejected, Error: asAPIError(err)}
			continue
		}
		v.index, v.apiKey = i, by.ID
		id, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("event id: %w", err)
		}
		v.id = id
		ok = append(ok, v)
		if v.partner != nil {
			partnerIDs[*v.partner] = true
		}
	}
	if len(ok) == 0 {
		return results, nil
	}
	if len(partnerIDs) > 0 {
		ids := make([]int64, 0, len(partnerIDs))
		for id := range partnerIDs {
			ids = append(ids, id)
		}
		found, err := s.q.PartnerExisting(ctx, ids)
		if err != nil {
			return nil, err
		}
		exists := map[int64]bool{}
		for _, id := range found {
			exists[id] = true
		}
		kept := ok[:0]
		for _, v := range ok {
			if v.partner != nil && !exists[*v.partner] {
				results[v.index] = ingestResult{Status: ingestRejected, Error: asAPIError(invalidField("partner_id", "no partner with this id"))}
				continue
			}
			kept = append(kept, v)
		}
		ok = kept
	}

	// An event PostgreSQL refuses as data despite validation is rejected
	// alone and the rest are stored in a new transaction: a batch is never
	// failed whole by one event.
	for {
		err := s.storeTraced(ctx, ok, results)
		var re *refusedEvent
		if !errors.As(err, &re) {
			if err != nil {
				return nil, err
			}
			return results, nil
		}
		results[ok[re.at].index] = ingestResult{Status: ingestRejected, Error: asAPIError(re.apiError())}
		ok = append(ok[:re.at:re.at], ok[re.at+1:]...)
		if len(ok) == 0 {
			return results, nil
		}
	}
}

// storeEvents inserts validated events and their fan-out in one
// transaction, filling in their results. The transaction is pipelined
// (db.TxPipeline): BEGIN, the endpoints' filters and the inserts go in one
// round trip, the fan-out, NOTIFY and COMMIT in another. An event is
// accepted only once that COMMIT has succeeded.
//
// With a worker in this process (Config.Worker) the endpoints queued for
// are named to it once committed; while it claims from every shard the
// fan-out sends no NOTIFY (worker/hints.go, "In-process wake-ups").
//
// The events are inserted by one statement. Should PostgreSQL refuse one
// of them as data, that statement cannot say which: the transaction is
// rolled back and tried again with a statement per event, which does.
//
// traceContext is the ingest request's trace context, stored with every
// event (nil with traces off).
func (s *Server) storeEvents(ctx context.Context, ok []validated, results []ingestResult, traceContext *string) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	oneByOne, rerouted := false, 0
	for {
		notify := s.cfg.Worker == nil || !s.cfg.Worker.ClaimsEverything()
		tx := db.NewTxPipeline(conn)
		var queuedFor []int64
		queuedFor, err = s.storeEventsIn(ctx, tx, ok, results, oneByOne, notify, traceContext)
		if err == nil {
			if s.cfg.Worker != nil && len(queuedFor) > 0 {
				s.cfg.Worker.WakeFor(queuedFor...)
			}
			return nil
		}
		tx.Rollback(ctx)
		switch {
		case errors.Is(err, errRefusedInSet) && !oneByOne:
			oneByOne = true
		case db.RoutedToDefault(err) && rerouted < 3:
			// A partition of events was made meanwhile: stored again,
			// the events go into it.
			rerouted++
		default:
			return err
		}
	}
}

// errRefusedInSet: PostgreSQL refused one of a set of events as data.
var errRefusedInSet = errors.New("an event of the set was refused")

// storeEventsIn runs one try of storeEvents' transaction; queuedFor are
// the endpoints it queued deliveries for, each once. notify makes the
// fan-out send the wake-up NOTIFY.
func (s *Server) storeEventsIn(ctx context.Context, tx *db.TxPipeline, ok []validated, results []ingestResult, oneByOne, notify bool, traceContext *string) (queuedFor []int64, err error) {
	q := db.New(tx)
	// The filters as of the transaction's first statement: one saved
	// before it applies to these events.
	var filterRows []db.EndpointFiltersRow
	tx.EndpointFiltersWithNextBatch(&filterRows)
	keys := newSearchKeySet(s.cfg.SearchKeys)
	events := make([]db.NewEvent, len(ok))
	for i, v := range ok {
		events[i] = db.NewEvent{ID: v.id, Type: v.typ, Payload: v.payload, IdempotencyKey: v.key, PartnerID: v.partner}
		if v.apiKey != 0 {
			events[i].APIKeyID = &v.apiKey
		}
		events[i].SearchKeys, events[i].SearchValues = keys.extract(v.payload)
	}
	inserted := make([]bool, len(ok))
	if oneByOne {
		if err := insertOneByOne(ctx, q, events, inserted, traceContext); err != nil {
			return nil, err
		}
	} else {
		at := make(map[uuid.UUID]int, len(ok))
		for i, v := range ok {
			at[v.id] = i
		}
		var setErr error
		set := db.EventSet(events)
		set[0].TraceContext = traceContext
		q.EventInsertSet(ctx, set).Query(func(_ int, ids []uuid.UUID, err error) {
			setErr = err
			for _, id := range ids {
				inserted[at[id]] = true
			}
		})
		if _, ok := refusedAsInput(setErr); ok {
			return nil, errRefusedInSet
		}
		if setErr != nil {
			return nil, fmt.Errorf("insert events: %w", setErr)
		}
	}
	if err := tx.Err(); err != nil {
		return nil, fmt.Errorf("insert events: %w", err)
	}
	filters := s.compileFilters(filterRows)

	var fan []db.FanOutEvent
	var fanIdx []int
	var dupKeys []string
	for i, v := range ok {
		if inserted[i] {
			fan = append(fan, db.FanOutEvent{ID: v.id, Type: v.typ, PartnerID: v.partner,
				Excluded: filter.Rejecting(filters, v.payload)})
			fanIdx = append(fanIdx, i)
		} else {
			dupKeys = append(dupKeys, *v.key)
		}
	}
	if len(fan) > 0 {
		refs := make(map[uuid.UUID][]deliveryRef, len(fan))
		for i := range fan {
			refs[fan[i].ID] = []deliveryRef{}
		}
		if len(dupKeys) == 0 {
			tx.CommitWithNextBatch()
		}
		var fanErr error
		seen := map[int64]bool{}
		q.DeliveryFanOut(ctx, db.FanOut(fan, notify)).Query(func(_ int, rows []db.DeliveryFanOutRow, err error) {
			if err != nil {
				fanErr = err
				return
			}
			for _, r := range rows {
				refs[r.EventID] = append(refs[r.EventID], deliveryRef{ID: r.ID, EndpointID: r.EndpointID, Status: r.Status})
				if !seen[r.EndpointID] {
					seen[r.EndpointID] = true
					queuedFor = append(queuedFor, r.EndpointID)
				}
			}
		})
		if fanErr != nil {
			return nil, fmt.Errorf("queue deliveries: %w", fanErr)
		}
		for _, i := range fanIdx {
			v := ok[i]
			id := v.id
			results[v.index] = ingestResult{Status: ingestAccepted, ID: &id, Deliveries: refs[id]}
		}
	}
	if err := tx.Err(); err != nil {
		return nil, fmt.Errorf("queue deliveries: %w", err)
	}
	if len(dupKeys) > 0 {
		if err := s.resolveDuplicates(ctx, q, ok, inserted, dupKeys, results); err != nil {
			return nil, err
		}
	}
	return queuedFor, tx.Commit(ctx)
}

// insertOneByOne inserts events with a statement each, marking those
// inserted (an idempotency key used before inserts nothing); it names the
// event PostgreSQL refuses as data, if any.
func insertOneByOne(ctx context.Context, q *db.Queries, events []db.NewEvent, inserted []bool, traceContext *string) error {
	params := make([]db.EventInsertBatchParams, len(events))
	for i, e := range events {
		params[i] = db.EventInsertBatchParams{ID: e.ID, Type: e.Type, Payload: e.Payload, IdempotencyKey: e.IdempotencyKey,
			PartnerID: e.PartnerID, SearchKeys: e.SearchKeys, SearchValues: e.SearchValues, APIKeyID: e.APIKeyID,
			TraceContext: traceContext}
	}
	var batchErr error
	batchAt := 0
	q.EventInsertBatch(ctx, params).QueryRow(func(i int, _ uuid.UUID, err error) {
		switch {
		case err == nil:
			inserted[i] = true
		case db.NoRows(err): // idempotency key used before
		case batchErr == nil:
			batchErr, batchAt = err, i
		}
	})
	if pgErr, ok := refusedAsInput(batchErr); ok {
		return &refusedEvent{at: batchAt, err: pgErr}
	}
	if batchErr != nil {
		return fmt.Errorf("insert events: %w", batchErr)
	}
	return nil
}

// compileFilters compiles the payload filters of the endpoints that can
// receive deliveries, as the ingest transaction read them
// (db.TxPipeline.EndpointFiltersWithNextBatch), through the server's cache (keyed by the filter's text, so an edited filter is simply
// a new entry). A stored filter that no longer compiles filters nothing:
// delivering an event too many is better than losing one.
func (s *Server) compileFilters(rows []db.EndpointFiltersRow) []filter.Endpoint {
	out := make([]filter.Endpoint, 0, len(rows))
	for _, r := range rows {
		f, err := s.filters.Compile(r.Filter)
		if err != nil {
			s.log.Warn("stored endpoint filter does not compile; it filters nothing", "endpoint_id", r.ID, "error", err)
			continue
		}
		out = append(out, filter.Endpoint{ID: r.ID, Filter: f})
	}
	return out
}

// resolveDuplicates answers events whose idempotency key was used before
// with the original event, or a conflict when the request differs from the
// original: a key identifies one request, not merely one call.
func (s *Server) resolveDuplicates(ctx context.Context, q *db.Queries, ok []validated, inserted []bool, keys []string, results []ingestResult) error {
	originals, err := q.EventListByIdempotencyKeys(ctx, keys)
	if err != nil {
		return err
	}
	byKey := make(map[string]db.Event, len(originals))
	ids := make([]uuid.UUID, 0, len(originals))
	for _, e := range originals {
		byKey[*e.IdempotencyKey] = e
		ids = append(ids, e.ID)
	}
	refs, err := q.DeliveryRefsByEvents(ctx, ids)
	if err != nil {
		return err
	}
	refsByEvent := map[uuid.UUID][]deliveryRef{}
	for _, r := range refs {
		refsByEvent[r.EventID] = append(refsByEvent[r.EventID], deliveryRef{ID: r.ID, EndpointID: r.EndpointID, Status: r.Status})
	}
	for i, v := range ok {
		if inserted[i] {
			continue
		}
		orig, found := byKey[*v.key]
		if !found { // cannot happen: the conflicting row is committed or ours
			return fmt.Errorf("idempotency key without an event")
		}
		if orig.Type != v.typ || !bytes.Equal(compactJSON(orig.Payload), v.payload) || !samePtr(orig.PartnerID, v.partner) {
			results[v.index] = ingestResult{Status: ingestRejected, Error: asAPIError(
				conflict("idempotency_key", "this idempotency key was already used for a different event"))}
			continue
		}
		id := orig.ID
		results[v.index] = ingestResult{Status: ingestDuplicate, ID: &id, Deliveries: refsByEvent[id]}
	}
	return nil
}
