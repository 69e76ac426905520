-- +goose Up
-- POST postbacks with a body (worker/postback.Body): body_template uses the
-- endpoint's macros, each value encoded for its place; body_format is
-- 'form' (application/x-www-form-urlencoded) or 'json'. body_signature
-- 'webhook' adds Standard Webhooks headers signed over the exact body bytes
-- with the endpoint's signing secrets, as a webhook's. '' everywhere, which
-- every endpoint saved before has, sends no body: those endpoints behave
-- exactly as before.
ALTER TABLE endpoints
    ADD COLUMN body_template text NOT NULL DEFAULT ''
        CHECK (length(body_template) <= 16384),
    ADD COLUMN body_format text NOT NULL DEFAULT ''
        CHECK (body_format IN ('', 'form', 'json')),
    ADD COLUMN body_signature text NOT NULL DEFAULT ''
        CHECK (body_signature IN ('', 'webhook')),
    ADD CONSTRAINT endpoints_body_check CHECK ((body_template = '') = (body_format = ''));
