-- The key a client chose for minting a token to resume a discussion (`Idempotency-Key`): a
-- request it sends again, because the answer to the first was lost, revokes the token the
-- first minted (nobody saw it) instead of leaving it live beside the new one.
ALTER TABLE tokens ADD COLUMN start_key TEXT;
CREATE UNIQUE INDEX tokens_by_start_key ON tokens (start_key);
