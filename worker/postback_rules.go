package worker

import (
	"errors"
	"fmt"

	"github.com/hookline/hookline/worker/postback"
)

// rules returns an endpoint's stored postback rules, decoded once per
// stored text (they change only when the endpoint is edited); nil for
// none, which is every endpoint that does not use them, at no cost.
func (dp *dispatcher) rules(stored []byte) (*postback.Rules, error) {
	if len(stored) == 0 {
		return nil, nil
	}
	key := "rules " + string(stored) // beside the templates, which start with a style
	if r, ok := dp.tmpls.Load(key); ok {
		return r.(*postback.Rules), nil
	}
	r, err := postback.ParseRules(stored)
	if err != nil {
		return nil, fmt.Errorf("stored postback rules cannot be read: %w", err)
	}
	dp.tmpls.Store(key, r)
	return r, nil
}

// body parses a POST postback's body template once per text, format and
// style; nil for none, or when it does not parse (Build parses it again
// and says why).
func (dp *dispatcher) body(tmpl, format string, style postback.Style) *postback.Body {
	if tmpl == "" {
		return nil
	}
	key := "body " + format + " " + string(style) + " " + tmpl
	if b, ok := dp.tmpls.Load(key); ok {
		return b.(*postback.Body)
	}
	b, err := postback.ParseBody(tmpl, format, style)
	if err != nil {
		return nil
	}
	dp.tmpls.Store(key, b)
	return b
}

// unmapped classifies a build error that is a value the endpoint's map
// lacks: its class, and whether the delivery is skipped (recorded as
// delivered without a send, the error saying why) rather than dead.
func unmapped(err error) (class string, skip bool) {
	var u *postback.UnmappedError
	if !errors.As(err, &u) {
		return "", false
	}
	return classUnmapped, u.Skip()
}
