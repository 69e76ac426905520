package web

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/mail"
	"github.com/hookline/hookline/worker/notify"
	"github.com/hookline/hookline/worker/signing"
)

// A partner's notification contacts: email addresses and optionally a
// webhook URL of its own, stored as notification channels with the
// partner's id (one per style), delivered by hookline's engine like the
// operator's channels. They hear notify.PartnerKinds about that partner's
// endpoints only, and only while the operator allows it (the partner page
// or the API); the partner edits them in its portal.

// contactsInput is a change of contacts; absent fields keep their value.
type contactsInput struct {
	Enabled    *bool     `json:"enabled,omitempty"` // the operator's opt-in; the portal cannot set it
	Emails     *[]string `json:"emails,omitempty"`
	WebhookURL *string   `json:"webhook_url,omitempty"`
}

// contactsJSON is a partner's contacts as the API answers them.
type contactsJSON struct {
	Enabled    bool     `json:"enabled"`
	Emails     []string `json:"emails"`
	WebhookURL string   `json:"webhook_url,omitempty"`
	Kinds      []string `json:"kinds"`
	// WebhookSecret signs the contact webhook's requests; only in the
	// answer that set a new webhook URL.
	WebhookSecret string `json:"webhook_secret,omitempty"`
	// emailEndpoint and webhookEndpoint are the channels' endpoints (0:
	// none), for the operator's links.
	emailEndpoint, webhookEndpoint int64
}

// partnerContacts reads a partner's contacts.
func partnerContacts(ctx context.Context, q *db.Queries, partnerID int64) (contactsJSON, error) {
	v := contactsJSON{Emails: []string{}, Kinds: notify.PartnerKinds}
	var err error
	if v.Enabled, err = q.PartnerContactsEnabled(ctx, partnerID); err != nil {
		return v, fmt.Errorf("partner contacts: %w", err)
	}
	chs, err := q.NotificationChannelsOfPartner(ctx, &partnerID)
	if err != nil {
		return v, fmt.Errorf("partner contact channels: %w", err)
	}
	for _, c := range chs {
		switch c.Style {
		case "email":
			v.Emails, v.emailEndpoint = mailtoRecipients(c.URL), c.EndpointID
		case "webhook":
			v.WebhookURL, v.webhookEndpoint = c.URL, c.EndpointID
		}
	}
	return v, nil
}

// validateContacts checks the contact fields given; an empty list or URL
// removes that contact. A webhook URL is the partner's, so it is checked
// by the partner guard (HOOKLINE_PARTNER_ALLOW_NETWORKS), names resolved,
// and dialled with it by the worker (url_set_by partner).
func (s *Server) validateContacts(ctx context.Context, in contactsInput) (contactsInput, []fieldError) {
	var errs []fieldError
	if in.Emails != nil {
		var to []string
		if len(strings.Join(*in.Emails, "")) > 0 {
			var err error
			if to, err = mail.ParseRecipients(*in.Emails); err != nil {
				errs = append(errs, fieldError{"emails", err.Error()})
			}
		}
		in.Emails = &to
	}
	if in.WebhookURL != nil {
		u := strings.TrimSpace(*in.WebhookURL)
		in.WebhookURL = &u
		if u != "" {
			if msg := checkWebhookURL(u, s.partnerGuard); msg != "" {
				errs = append(errs, fieldError{"webhook_url", msg})
			} else if msg := s.checkPartnerURL(ctx, "webhook", u); msg != "" {
				errs = append(errs, fieldError{"webhook_url", msg})
			}
		}
	}
	return in, errs
}

// savePartnerContacts applies a validated change in one transaction and
// audits it as actor: which contacts changed and how many addresses, never
// a URL (it may carry a token) nor the webhook's secret.
func (s *Server) savePartnerContacts(ctx context.Context, p db.Partner, in contactsInput, actor string) (contactsJSON, error) {
	var out contactsJSON
	var secret string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		cur, err := partnerContacts(ctx, q, p.ID)
		if err != nil {
			return err
		}
		details := map[string]any{"partner": p.Name}
		if in.Enabled != nil && *in.Enabled != cur.Enabled {
			if err := q.PartnerContactsSetEnabled(ctx, db.PartnerContactsSetEnabledParams{PartnerID: p.ID, Enabled: *in.Enabled, UpdatedBy: actor}); err != nil {
				return fmt.Errorf("set partner contacts enabled: %w", err)
			}
			details["enabled"] = *in.Enabled
		}
		if in.Emails != nil && mailtoURL(*in.Emails) != mailtoURL(cur.Emails) {
			if _, err := s.putContactChannel(ctx, q, p, "email", cur.emailEndpoint, mailtoURL(*in.Emails), actor); err != nil {
				return err
			}
			details["emails"] = len(*in.Emails)
		}
		if in.WebhookURL != nil && *in.WebhookURL != cur.WebhookURL {
			if secret, err = s.putContactChannel(ctx, q, p, "webhook", cur.webhookEndpoint, *in.WebhookURL, actor); err != nil {
				return err
			}
			details["webhook"] = contactHost(*in.WebhookURL)
		}
		if len(details) > 1 {
			if err := audit(ctx, q, actor, "partner.notification_contacts", "partner", p.ID, details); err != nil {
				return err
			}
		}
		out, err = partnerContacts(ctx, q, p.ID)
		return err
	})
	out.WebhookSecret = secret
	return out, err
}

// contactHost is what the audit log keeps of a contact URL: its host, or
// "removed".
func contactHost(raw string) string {
	if raw == "" {
		return "removed"
	}
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}

// putContactChannel creates, re-addresses or (addr "") deletes a partner's
// contact channel of one style; it returns a new webhook channel's
// signing secret.
func (s *Server) putContactChannel(ctx context.Context, q *db.Queries, p db.Partner, style string, endpointID int64, addr, actor string) (string, error) {
	chs, err := q.NotificationChannelsOfPartner(ctx, &p.ID)
	if err != nil {
		return "", err
	}
	var channelID int64
	for _, c := range chs {
		if c.Style == style {
			channelID = c.ID
		}
	}
	switch {
	case addr == "" && channelID != 0:
		_, err := q.NotificationChannelDelete(ctx, channelID)
		return "", err
	case addr == "":
		return "", nil
	case channelID != 0:
		return "", q.NotificationContactEndpointSetURL(ctx, db.NotificationContactEndpointSetURLParams{ID: endpointID, URL: addr, URLSetBy: urlSetByPartner})
	}
	owner, err := q.NotificationPartnerEnsure(ctx, notificationPartner)
	if err != nil {
		return "", err
	}
	kind := "webhook"
	if style == "email" {
		kind = "email"
	}
	name := fmt.Sprintf("partner %d contacts (%s)", p.ID, style)
	endpointID, err = q.NotificationContactEndpointCreate(ctx, db.NotificationContactEndpointCreateParams{
		PartnerID: owner, Name: "channel: " + name, Kind: kind, URL: addr, URLSetBy: urlSetByPartner})
	if err != nil {
		return "", fmt.Errorf("create contact endpoint: %w", err)
	}
	if err := q.EndpointHealthCreate(ctx, endpointID); err != nil {
		return "", err
	}
	secret, err := signing.NewSecret(rand.Reader)
	if err != nil {
		return "", err
	}
	sealed, err := s.box.Seal(endpointID, []byte(secret))
	if err != nil {
		return "", err
	}
	if _, err := q.EndpointSecretCreate(ctx, db.EndpointSecretCreateParams{EndpointID: endpointID, Ciphertext: sealed}); err != nil {
		return "", err
	}
	if _, err := q.NotificationChannelCreateForPartner(ctx, db.NotificationChannelCreateForPartnerParams{
		Name: name, Style: style, EndpointID: endpointID, Kinds: notify.PartnerKinds, CreatedBy: actor, PartnerID: &p.ID}); err != nil {
		return "", fmt.Errorf("create contact channel: %w", err)
	}
	if style != "webhook" {
		return "", nil
	}
	return secret, nil
}
