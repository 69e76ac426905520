-- +goose Up
-- An endpoint's conversion rules (postbacks only), applied to each macro
-- value at render (worker/postback.Rules): value_maps (the producer's words
-- to the tracker's, per field), unmapped ('send' when absent, 'skip' or
-- 'fail'), payout_share_bp (the share of the payout sent, in basis points,
-- so a share is exact) and payout_field (the field it applies to; 'payout'
-- when absent). NULL, which every endpoint saved before has, sends every
-- value as it is: those endpoints behave exactly as before. The API and the
-- form validate the document; the database keeps it an object.
ALTER TABLE endpoints ADD COLUMN postback_rules jsonb
    CHECK (postback_rules IS NULL OR jsonb_typeof(postback_rules) = 'object');
