-- +goose Up
-- Single sign-on (OpenID Connect): a user signed in through the provider is
-- known by the provider's issuer and subject, which never change, rather
-- than by an email address, which may. Both are NULL for a user who signs
-- in with a password only; a user is linked to at most one provider
-- account, and a provider account to at most one user.
ALTER TABLE users
    ADD COLUMN oidc_issuer  text,
    ADD COLUMN oidc_subject text,
    ADD CONSTRAINT users_oidc_pair CHECK ((oidc_issuer IS NULL) = (oidc_subject IS NULL)),
    ADD CONSTRAINT users_oidc_length CHECK (length(oidc_issuer) <= 2048 AND length(oidc_subject) <= 255);
CREATE UNIQUE INDEX users_oidc_key ON users (oidc_issuer, oidc_subject) WHERE oidc_issuer IS NOT NULL;
