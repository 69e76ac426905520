package web

import (
	"context"
	"crypto/rand"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/mail"
	"github.com/hookline/hookline/worker/notify"
	"github.com/hookline/hookline/worker/signing"
)

// notificationPartner owns the endpoints operator notifications are
// delivered through (hookline's own engine: signed, retried, with a
// breaker and an attempt log, visible like any partner's).
const notificationPartner = "hookline notifications"

// channelInput is a notification channel as the API and the settings form
// accept it.
type channelInput struct {
	Name  string   `json:"name"`
	Style string   `json:"style"` // webhook (signed JSON), chat ({"text": ...}) or email
	URL   string   `json:"url"`   // webhook and chat
	Kinds []string `json:"kinds"`
	// Recipients are an email channel's addresses (HOOKLINE_SMTP_URL
	// sends them).
	Recipients []string `json:"recipients,omitempty"`
}

// channelJSON is a channel as the API answers it.
// Alike in shape to endpointJSON and pipelineStats by chance: a channel's own wire format.
type channelJSON struct {
	ID         int64    `json:"id"`
	Name       string   `json:"name"`
	Style      string   `json:"style"`
	URL        string   `json:"url,omitempty"`
	Recipients []string `json:"recipients,omitempty"`
	Kinds      []string `json:"kinds"`
	// PartnerID: a partner's own contact channel (its portal edits it).
	PartnerID    *int64    `json:"partner_id,omitempty"`
	EndpointID   int64     `json:"endpoint_id"`
	Enabled      bool      `json:"enabled"`
	BreakerState string    `json:"breaker_state,omitempty"`
	CreatedBy    string    `json:"created_by"`
	CreatedAt    time.Time `json:"created_at"`
	// Secret signs a webhook channel's requests (Standard Webhooks); it is
	// only in the response that created the channel.
	Secret string `json:"secret,omitempty"`
}

// validateChannel checks every field; the API reports the first problem,
// the form shows them all.
func (s *Server) validateChannel(in channelInput) (channelInput, []fieldError) {
	var errs []fieldError
	in.Name, in.Style, in.URL = strings.TrimSpace(in.Name), strings.TrimSpace(in.Style), strings.TrimSpace(in.URL)
	switch {
	case in.Name == "":
		errs = append(errs, fieldError{"name", "is required"})
	case utf8.RuneCountInString(in.Name) > 150:
		errs = append(errs, fieldError{"name", "must be at most 150 characters"})
	}
	switch in.Style {
	case "email":
		to, err := mail.ParseRecipients(in.Recipients)
		if err != nil {
			errs = append(errs, fieldError{"recipients", err.Error()})
		}
		in.Recipients, in.URL = to, mailtoURL(to)
	case "webhook", "chat":
		if msg := checkWebhookURL(in.URL, s.guard); msg != "" {
			errs = append(errs, fieldError{"url", msg})
		}
		in.Recipients = nil
	default:
		errs = append(errs, fieldError{"style", `must be "webhook" (a signed JSON document), "chat" (an incoming webhook taking {"text": ...}) or "email" (recipients)`})
	}
	kinds, err := notify.ParseKinds(in.Kinds)
	if err != nil {
		errs = append(errs, fieldError{"kinds", err.Error()})
	}
	in.Kinds = kinds
	return in, errs
}

// createChannel stores a validated channel with the endpoint it is
// delivered through and that endpoint's signing secret, audited. The
// secret is returned once.
func (s *Server) createChannel(ctx context.Context, in channelInput, actor string) (db.NotificationChannel, string, error) {
	secret, err := signing.NewSecret(rand.Reader)
	if err != nil {
		return db.NotificationChannel{}, "", err
	}
	var ch db.NotificationChannel
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		partnerID, err := q.NotificationPartnerEnsure(ctx, notificationPartner)
		if err != nil {
			return err
		}
		var endpointID int64
		if in.Style == "email" {
			endpointID, err = q.NotificationContactEndpointCreate(ctx, db.NotificationContactEndpointCreateParams{
				PartnerID: partnerID, Name: "channel: " + in.Name, Kind: "email", URL: in.URL, URLSetBy: "operator"})
		} else {
			endpointID, err = q.NotificationEndpointCreate(ctx, db.NotificationEndpointCreateParams{
				PartnerID: partnerID, Name: "channel: " + in.Name, URL: in.URL})
		}
		if db.IsUniqueViolation(err) {
			return conflict("name", "a notification channel with this name exists")
		}
		if err != nil {
			return err
		}
		if err := q.EndpointHealthCreate(ctx, endpointID); err != nil {
			return err
		}
		sealed, err := s.box.Seal(endpointID, []byte(secret))
		if err != nil {
			return err
		}
		if _, err := q.EndpointSecretCreate(ctx, db.EndpointSecretCreateParams{EndpointID: endpointID, Ciphertext: sealed}); err != nil {
			return err
		}
		ch, err = q.NotificationChannelCreate(ctx, db.NotificationChannelCreateParams{
			Name: in.Name, Style: in.Style, EndpointID: endpointID, Kinds: in.Kinds, CreatedBy: actor})
		if db.IsUniqueViolation(err) {
			return conflict("name", "a notification channel with this name exists")
		}
		if err != nil {
			return err
		}
		return audit(ctx, q, actor, "notification_channel.create", "notification_channel", ch.ID,
			map[string]any{"name": ch.Name, "style": ch.Style, "kinds": ch.Kinds, "endpoint_id": endpointID, "recipients": len(in.Recipients)})
	})
	if err != nil {
		return db.NotificationChannel{}, "", err
	}
	if ch.Style != "webhook" {
		secret = "" // a chat service verifies nothing; the secret stays stored, unused
	}
	return ch, secret, nil
}

// deleteChannel removes a channel; what was queued for it is dropped.
func (s *Server) deleteChannel(ctx context.Context, id int64, actor string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		row, err := q.NotificationChannelDelete(ctx, id)
		if err != nil {
			return missing(err, "notification channel")
		}
		return audit(ctx, q, actor, "notification_channel.delete", "notification_channel", row.ID,
			map[string]any{"name": row.Name, "endpoint_id": row.EndpointID})
	})
}

// testChannel queues a test notification for one channel; the worker
// sends it within a second, through the channel's endpoint.
func (s *Server) testChannel(ctx context.Context, id int64, actor string) (db.NotificationChannel, error) {
	var ch db.NotificationChannel
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		var err error
		ch, err = q.NotificationChannelGet(ctx, id)
		if err != nil {
			return missing(err, "notification channel")
		}
		if err := q.NotificationInsertTest(ctx, &ch.ID); err != nil {
			return err
		}
		return audit(ctx, q, actor, "notification_channel.test", "notification_channel", ch.ID, map[string]any{"name": ch.Name})
	})
	return ch, err
}

func channelView(r db.NotificationChannelListRow) channelJSON {
	v := channelJSON{ID: r.ID, Name: r.Name, Style: r.Style, URL: r.URL, Kinds: r.Kinds, EndpointID: r.EndpointID, PartnerID: r.PartnerID,
		Enabled: r.Enabled, BreakerState: r.BreakerState, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt}
	if r.Style == "email" {
		v.URL, v.Recipients = "", mailtoRecipients(r.URL)
	}
	return v
}

// mailtoURL is an email channel's endpoint URL: its recipients, as the
// worker reads them back.
func mailtoURL(to []string) string {
	if len(to) == 0 {
		return ""
	}
	return "mailto:" + strings.Join(to, ",")
}

func mailtoRecipients(u string) []string {
	rest, ok := strings.CutPrefix(u, "mailto:")
	if !ok || rest == "" {
		return nil
	}
	return strings.Split(rest, ",")
}
