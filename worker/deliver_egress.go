package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/egress"
	"github.com/hookline/hookline/worker/sender"
)

// classEgress: the endpoint's egress settings could not be read.
const classEgress = "egress_settings"

// egressEntry is an endpoint's Egress as built for one egress_rev; nil e
// means the row changes nothing.
type egressEntry struct {
	rev int64
	e   *sender.Egress
}

// egressFor is the Egress of an endpoint at rev (claimed with the
// delivery; 0 means none, and costs nothing). It is read and built once
// per revision and shared by every send of this process, so the OAuth2
// token it carries is fetched once per expiry, not per delivery.
func (dp *dispatcher) egressFor(ctx context.Context, endpointID, rev int64) (*sender.Egress, error) {
	if rev == 0 {
		return nil, nil
	}
	if v, ok := dp.egress.Load(endpointID); ok {
		if en := v.(egressEntry); en.rev == rev {
			return en.e, nil
		}
	}
	v, err, _ := dp.secrets.flight.Do("egress/"+strconv.FormatInt(endpointID, 10)+"/"+strconv.FormatInt(rev, 10), func() (any, error) {
		row, err := dp.q.EndpointEgressGet(ctx, endpointID)
		if db.NoRows(err) {
			return egressEntry{rev: rev}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read egress settings: %w", err)
		}
		e, err := egress.Build(row, rev, dp.box, dp.now)
		if err != nil {
			return nil, &egressError{err}
		}
		en := egressEntry{rev: rev, e: e}
		dp.egress.Store(endpointID, en)
		return en, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(egressEntry).e, nil
}

// egressError is stored settings that do not build (sealed under another
// key, or corrupt): no retry will change that.
type egressError struct{ err error }

func (e *egressError) Error() string { return e.err.Error() }

// egressFailed is the result of a delivery whose egress settings failed.
func egressFailed(o *outcome, err error) {
	var bad *egressError
	if errors.As(err, &bad) {
		o.res = failed(o.finished, sender.Permanent, classEgress, "egress settings cannot be used: "+bad.Error())
		return
	}
	o.res = failed(o.finished, sender.Transient, classEgress, "egress settings unavailable")
}
