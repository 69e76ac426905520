-- +goose Up
-- Postback token styles and signed GET postbacks.
--
-- macro_style is how a postback template writes its macros: "braces"
-- ({click_id}, the Voluum/Binom/Keitaro/Everflow/Affise way) or "hash"
-- (#click_id#, the CAKE way). Webhooks ignore it.
--
-- signature_param, when not empty, makes hookline append ts=<unix seconds>
-- and <signature_param>=<hex HMAC-SHA256> to every postback URL it sends
-- (keyed with the endpoint's signing secret); '' sends unsigned postbacks.
-- It is a query parameter name, so it is kept to a safe alphabet.
--
-- preset is the tracker preset the endpoint was made from ('' for none):
-- the save-time lint checks the preset's required parameters on every edit.
ALTER TABLE endpoints
    ADD COLUMN macro_style text NOT NULL DEFAULT 'braces'
        CHECK (macro_style IN ('braces', 'hash')),
    ADD COLUMN signature_param text NOT NULL DEFAULT ''
        CHECK (signature_param ~ '^([A-Za-z_][A-Za-z0-9_.-]{0,63})?$'),
    ADD COLUMN preset text NOT NULL DEFAULT ''
        CHECK (length(preset) <= 64);
