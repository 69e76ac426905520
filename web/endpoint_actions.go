package web

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/worker/breaker"
	"github.com/hookline/hookline/worker/signing"
)

// Secret rotation overlap bounds.
const (
	defaultOverlap = 24 * time.Hour
	maxOverlap     = 30 * 24 * time.Hour
)

// rotateSecret creates a new signing secret for an endpoint and lets the old
// ones keep signing for overlapSeconds more, so receivers can switch without
// rejecting anything. Returns the new secret (shown once) and when the old
// ones stop signing. The overlap is checked in seconds, before it becomes a
// time.Duration: a huge count of seconds would overflow to a small or
// negative duration and expire the old secrets at once.
func (s *Server) rotateSecret(ctx context.Context, endpointID int64, overlapSeconds int64, actor string) (string, time.Time, error) {
	if overlapSeconds < 0 || overlapSeconds > int64(maxOverlap/time.Second) {
		return "", time.Time{}, invalidField("overlap_seconds", fmt.Sprintf("must be between 0 and %d", int(maxOverlap/time.Second)))
	}
	overlap := time.Duration(overlapSeconds) * time.Second
	secret, err := signing.NewSecret(rand.Reader)
	if err != nil {
		return "", time.Time{}, err
	}
	until := s.now().Add(overlap)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if _, err := q.EndpointGetForUpdate(ctx, endpointID); err != nil {
			return missing(err, "endpoint")
		}
		sealed, err := s.box.Seal(endpointID, []byte(secret))
		if err != nil {
			return err
		}
		created, err := q.EndpointSecretCreate(ctx, db.EndpointSecretCreateParams{EndpointID: endpointID, Ciphertext: sealed})
		if err != nil {
			return err
		}
		if err := q.EndpointSecretExpireCurrent(ctx, db.EndpointSecretExpireCurrentParams{
			EndpointID: endpointID, KeepID: created.ID, ExpiresAt: &until}); err != nil {
			return err
		}
		return audit(ctx, q, actor, "endpoint.rotate_secret", "endpoint", endpointID,
			map[string]any{"overlap_seconds": int(overlap / time.Second), "secret_id": created.ID})
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return secret, until, nil
}

// Breaker actions an operator can take.
const (
	actionPause      = "pause"
	actionResume     = "resume"
	actionForceClose = "force_close"
)

// breakerAction applies an operator's pause, resume or force-close to an
// endpoint's breaker under its row lock, audited.
func (s *Server) breakerAction(ctx context.Context, endpointID int64, action, actor string) (db.EndpointHealth, error) {
	var out db.EndpointHealth
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		row, err := q.EndpointHealthGetForUpdate(ctx, endpointID)
		if err != nil {
			return missing(err, "endpoint")
		}
		p := breaker.DefaultPolicy()
		h := breaker.Stored(row.State, row.ConsecutiveFailures, row.OpenedAt, row.CooldownSeconds, row.Paused)
		now := s.now()
		switch action {
		case actionPause:
			h = p.Pause(h, now)
		case actionResume:
			if !h.Paused {
				return conflict("", "the endpoint is not paused")
			}
			h = p.Resume(h, now)
		case actionForceClose:
			h = p.ForceClose(h, now)
		default:
			return fmt.Errorf("unknown breaker action %q", action)
		}
		var opened *time.Time
		if !h.OpenedAt.IsZero() && h.State != breaker.Closed {
			opened = &h.OpenedAt
		}
		if err := q.EndpointHealthSetBreaker(ctx, db.EndpointHealthSetBreakerParams{
			EndpointID: endpointID, State: string(h.State), ConsecutiveFailures: int32(h.ConsecutiveFailures),
			OpenedAt: opened, CooldownSeconds: int32(h.Cooldown / time.Second), Paused: h.Paused,
		}); err != nil {
			return err
		}
		if err := audit(ctx, q, actor, "endpoint."+action, "endpoint", endpointID,
			map[string]any{"from": row.State, "to": string(h.State), "paused": h.Paused}); err != nil {
			return err
		}
		if action != actionPause {
			if err := q.EventNotify(ctx, db.NotifyQueueLimit); err != nil {
				return err
			}
		}
		out, err = q.EndpointHealthGetForUpdate(ctx, endpointID)
		return err
	})
	return out, err
}

// savedTestFireConfig is a saved endpoint's configuration and signing keys,
// as a test fire of it sends them.
func (s *Server) savedTestFireConfig(ctx context.Context, id int64) (endpointConfig, [][]byte, error) {
	e, err := s.q.EndpointGet(ctx, id)
	if err != nil {
		return endpointConfig{}, nil, missing(err, "endpoint")
	}
	in := inputFromEndpoint(e)
	if in.Headers, err = s.box.OpenHeaders(e.ID, e.Headers); err != nil {
		return endpointConfig{}, nil, err
	}
	cfg, _ := validateEndpoint(in, s.guard)
	cfg.URL = e.URL           // stored as saved, even if a later rule would refuse it now
	cfg.URLSetBy = e.URLSetBy // dialled through the guard the worker uses for it
	keys, err := s.activeKeys(ctx, id)
	if err != nil {
		return endpointConfig{}, nil, err
	}
	return cfg, keys, nil
}

// activeKeys decrypts the endpoint's signing keys, newest first.
func (s *Server) activeKeys(ctx context.Context, id int64) ([][]byte, error) {
	rows, err := s.q.EndpointSecretListActive(ctx, db.EndpointSecretListActiveParams{EndpointID: id})
	if err != nil {
		return nil, err
	}
	keys := make([][]byte, 0, len(rows))
	for _, r := range rows {
		plain, err := s.box.Open(id, r.Ciphertext)
		if err != nil {
			return nil, err
		}
		k, err := signing.ParseSecret(string(plain))
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// rotateFromForm rotates the endpoint's secret with the overlap a rotate
// form chose (the dashboard's or the portal's): the new secret, and when
// the old ones stop signing, nil when they stopped at once.
func (s *Server) rotateFromForm(c echo.Context, endpointID int64, actor string) (string, *time.Time, error) {
	overlap, err := strconv.Atoi(c.FormValue("overlap"))
	if err != nil {
		return "", nil, invalidField("overlap", "choose how long the old secret keeps signing")
	}
	secret, until, err := s.rotateSecret(c.Request().Context(), endpointID, int64(overlap), actor)
	if err != nil || overlap <= 0 {
		return secret, nil, err
	}
	return secret, &until, nil
}
