-- The tokens a user created in the last hour, revoked ones included
-- (createApiToken's bound, --tokens-per-user-per-hour): the listing's
-- index holds live tokens only.
CREATE INDEX api_tokens_created ON api_tokens (user_id, created_at);
