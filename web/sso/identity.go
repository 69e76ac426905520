package sso

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Identity is a person the provider vouched for and the checks let in.
type Identity struct {
	Issuer  string
	Subject string
	Email   string
	// Role is admin, operator or viewer, from the role claim.
	Role string
}

// Refusal is a sign-in the checks turned down. Message is for the person
// signing in; Reason is for the log. Neither ever holds a token or a code.
type Refusal struct {
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return "sso: refused: " + r.Reason }

func refuse(reason, message string) error { return &Refusal{Reason: reason, Message: message} }

// Exchange completes an attempt: it trades the code (with the PKCE
// verifier) for tokens, verifies the ID token (signature, issuer, audience,
// expiry), checks its nonce against the attempt's, and requires a verified
// email in an allowed domain and a role. The caller has already checked
// the state.
func (c *Client) Exchange(ctx context.Context, a Attempt, code string) (Identity, error) {
	p, scopes, err := c.discover(ctx)
	if err != nil {
		return Identity{}, err
	}
	ctx = oidc.ClientContext(ctx, c.http)
	tok, err := c.oauth2Config(p, scopes).Exchange(ctx, code, oauth2.VerifierOption(a.Verifier))
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re):
		// The error code only: a provider's description or body may
		// repeat the code ("Invalid code: ...").
		return Identity{}, refuse("code exchange refused: "+truncate(re.ErrorCode, 64),
			"The sign-in provider did not accept this sign-in (it may have been used already or taken too long). Please sign in again.")
	case err != nil:
		return Identity{}, fmt.Errorf("%w: code exchange: %w", ErrUnreachable, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, refuse("no id_token in the token response", "The sign-in provider sent no ID token. Check that the client is an OpenID Connect client.")
	}
	idt, err := p.VerifierContext(ctx, &oidc.Config{ClientID: c.cfg.ClientID, Now: c.cfg.Now}).Verify(ctx, raw)
	if err != nil {
		return Identity{}, refuse("id token: "+err.Error(), "The sign-in could not be verified. Please sign in again.")
	}
	if idt.Nonce == "" || subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(a.Nonce)) != 1 {
		return Identity{}, refuse("id token nonce does not match the attempt's", "The sign-in could not be verified. Please sign in again.")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, refuse("id token claims: "+err.Error(), "The sign-in could not be verified. Please sign in again.")
	}
	return c.identify(idt.Issuer, idt.Subject, claims)
}

// identify applies the rules to verified claims.
func (c *Client) identify(issuer, subject string, claims map[string]any) (Identity, error) {
	email, _ := claims["email"].(string)
	email = strings.TrimSpace(email)
	at := strings.LastIndexByte(email, '@')
	if at < 1 || at == len(email)-1 {
		return Identity{}, refuse("no email claim", "The sign-in provider did not share your email address, which hookline needs to know who you are.")
	}
	if !verified(claims["email_verified"]) {
		return Identity{}, refuse("email not verified: "+email, "Your email address "+email+" is not verified at the sign-in provider. Verify it there, then sign in again.")
	}
	domain := strings.ToLower(email[at+1:])
	if len(c.cfg.AllowedDomains) > 0 && !slices.Contains(c.cfg.AllowedDomains, domain) {
		return Identity{}, refuse("email domain not allowed: "+domain, "Accounts at "+domain+" cannot sign in to this hookline.")
	}
	role := c.MapRole(claims)
	if role == "" {
		return Identity{}, refuse("no role for "+email, "Your account has no hookline role ("+c.cfg.RoleClaim+" names none this hookline maps to a role). Ask an admin.")
	}
	return Identity{Issuer: issuer, Subject: subject, Email: email, Role: role}, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// verified reads email_verified, a boolean (or, from some providers, the
// string "true").
func verified(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}

// MapRole maps the role claim's values to a role: admin if any value is an
// admin value, else operator if any is an operator value, else the default
// role ("" = none).
func (c *Client) MapRole(claims map[string]any) string {
	values := claimValues(claims, c.cfg.RoleClaim)
	switch {
	case slices.ContainsFunc(values, func(v string) bool { return slices.Contains(c.cfg.AdminValues, v) }):
		return RoleAdmin
	case slices.ContainsFunc(values, func(v string) bool { return slices.Contains(c.cfg.OperatorValues, v) }):
		return RoleOperator
	}
	return c.cfg.DefaultRole
}

// claimValues reads a claim as a list of strings: a string is one value, an
// array its string items. The whole name is looked up first, as namespaced
// claims hold dots ("https://hooks.acme.test/roles"); then a dotted path
// into nested objects ("realm_access.roles").
func claimValues(claims map[string]any, name string) []string {
	v, ok := claims[name]
	if !ok {
		var cur any = claims
		for part := range strings.SplitSeq(name, ".") {
			m, isMap := cur.(map[string]any)
			if !isMap {
				return nil
			}
			cur = m[part]
		}
		v = cur
	}
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, item := range v {
			if s, ok := item.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
