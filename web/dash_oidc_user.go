package web

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/web/sso"
)

// oidcUser finds the user a provider account signs in as, or provisions
// one, in one transaction with its audit records:
//
//   - linked already (issuer and subject): the user, its role (and email)
//     updated from the provider, as the provider owns who may do what;
//   - not linked, but a user has the same email: that user is linked,
//     once. web/sso lets in only emails the provider marks verified, so the
//     person proved they hold the mailbox the account was made for, which
//     is what an admin's invitation rests on too; a user already linked to
//     another provider account is refused, so one mailbox cannot take over
//     an account another person signs in to;
//   - otherwise: a new user (just-in-time provisioning).
//
// A disabled user is refused and left unchanged.
func (s *Server) oidcUser(ctx context.Context, id sso.Identity) (db.User, error) {
	var u db.User
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		actor := "user:" + id.Email
		details := map[string]any{"email": id.Email, "role": id.Role, "issuer": id.Issuer}
		linked, err := q.UserGetByOIDC(ctx, db.UserGetByOIDCParams{Issuer: &id.Issuer, Subject: &id.Subject})
		switch {
		case err == nil:
			if linked.DisabledAt != nil {
				return refusedDisabled(linked.Email)
			}
			u = linked
			if linked.Email != id.Email || linked.Role != id.Role {
				u, err = q.UserOIDCSync(ctx, db.UserOIDCSyncParams{ID: linked.ID, Email: id.Email, Role: id.Role})
				if db.IsUniqueViolation(err) {
					return &sso.Refusal{Reason: "new email belongs to another user: " + id.Email,
						Message: "Your email at the sign-in provider changed to " + id.Email + ", which another hookline user has. Ask an admin."}
				}
				if err != nil {
					return fmt.Errorf("update signed-in user: %w", err)
				}
				if err := audit(ctx, q, actor, "user.sso_update", "user", u.ID,
					map[string]any{"email": u.Email, "role": u.Role, "was_email": linked.Email, "was_role": linked.Role}); err != nil {
					return err
				}
			}
		case !db.NoRows(err):
			return fmt.Errorf("find signed-in user: %w", err)
		default:
			u, err = s.oidcLinkOrProvision(ctx, q, id)
			if err != nil {
				return err
			}
		}
		return audit(ctx, q, actor, "user.sso_signin", "user", u.ID, details)
	})
	return u, err
}

func (s *Server) oidcLinkOrProvision(ctx context.Context, q *db.Queries, id sso.Identity) (db.User, error) {
	actor := "user:" + id.Email
	details := map[string]any{"email": id.Email, "role": id.Role, "issuer": id.Issuer}
	existing, err := q.UserGetByEmailForLink(ctx, id.Email)
	switch {
	case err == nil:
		if existing.OidcIssuer != nil {
			return db.User{}, &sso.Refusal{Reason: "email's user linked to another provider account: " + id.Email,
				Message: "The hookline user " + existing.Email + " signs in with another account. Ask an admin."}
		}
		if existing.DisabledAt != nil {
			return db.User{}, refusedDisabled(existing.Email)
		}
		u, err := q.UserOIDCLink(ctx, db.UserOIDCLinkParams{ID: existing.ID, Issuer: &id.Issuer, Subject: &id.Subject, Role: id.Role})
		if err != nil {
			return db.User{}, fmt.Errorf("link user: %w", err)
		}
		details["was_role"] = existing.Role
		return u, audit(ctx, q, actor, "user.sso_link", "user", u.ID, details)
	case !db.NoRows(err):
		return db.User{}, fmt.Errorf("find user by email: %w", err)
	}
	// A provisioned user has no password, but its hash is a real bcrypt
	// hash of a random one nobody knows: a password sign-in with its email
	// then fails in the same time as any other, and tells nothing.
	hash, err := account.HashPassword(account.RandomToken(32))
	if err != nil {
		return db.User{}, err
	}
	u, err := q.UserOIDCCreate(ctx, db.UserOIDCCreateParams{Email: id.Email, PasswordHash: hash, Role: id.Role, Issuer: &id.Issuer, Subject: &id.Subject})
	if db.IsUniqueViolation(err) {
		// The same person signing in twice at once: the other sign-in won.
		return db.User{}, &sso.Refusal{Reason: "concurrent provisioning of " + id.Email, Message: "Your account was being set up by another sign-in. Please sign in again."}
	}
	if err != nil {
		return db.User{}, fmt.Errorf("provision user: %w", err)
	}
	return u, audit(ctx, q, actor, "user.sso_provision", "user", u.ID, details)
}

func refusedDisabled(email string) error {
	return &sso.Refusal{Reason: "user disabled: " + email, Message: "The hookline user " + email + " is disabled. Ask an admin."}
}
