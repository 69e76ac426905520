package ssrf

import "net/netip"

// PartnerVariable is the configuration variable whose prefixes open refused
// ranges to URLs that partners enter in the portal (web/app reads it into
// NewPartner's allow list). It is separate from HOOKLINE_ALLOW_NETWORKS on
// purpose: an operator opens loopback or a private range for tests, the
// demo or an on-premise receiver of their own, and a partner typing a URL
// must not inherit that (hookline's own /metrics is on loopback).
const PartnerVariable = "HOOKLINE_PARTNER_ALLOW_NETWORKS"

// NewPartner returns the Guard for URLs partners enter: the same rules as
// New, its own allow list (empty: public addresses only), and hints that
// name HOOKLINE_PARTNER_ALLOW_NETWORKS.
func NewPartner(allow []netip.Prefix) *Guard {
	g := New(allow)
	g.variable = PartnerVariable
	return g
}

// allowVariable is the variable a refusal by g names in its hint.
func (g *Guard) allowVariable() string {
	if g == nil || g.variable == "" {
		return AllowVariable
	}
	return g.variable
}

// Partner reports whether the refusal came from a partner guard
// (NewPartner), so that a caller can word it for a partner, who cannot
// change the configuration, rather than for the operator.
func (e *BlockedError) Partner() bool { return e.Variable == PartnerVariable }

// Class is what kind of address a connection went to.
type Class uint8

const (
	// ClassNone: no connection was made (or its address is unknown).
	ClassNone Class = iota
	// ClassPublic: ordinary public unicast, which every guard allows.
	ClassPublic
	// ClassAllowListed: an address the rules refuse (loopback, private,
	// link-local, ...) that the guard's allow list opened.
	ClassAllowListed
)

func (c Class) String() string {
	switch c {
	case ClassPublic:
		return "public"
	case ClassAllowListed:
		return "allow-listed"
	}
	return "none"
}

// Classify says whether ip is public or reached only through an allow list,
// judged with g's rules and without its allow list. It is a few prefix
// comparisons and allocates nothing, so the sender classifies every
// connection it makes.
func (g *Guard) Classify(ip netip.Addr) Class {
	if !ip.IsValid() {
		return ClassNone
	}
	if g == nil || g.public == nil {
		return ClassAllowListed // a zero Guard knows no rules: assume the worst
	}
	if g.public.reason(ip) == "" {
		return ClassPublic
	}
	return ClassAllowListed
}
