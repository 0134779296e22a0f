-- Team tokens: a user token may expire, and remembers when it was last used (to the minute).
ALTER TABLE tokens ADD COLUMN expires_at TEXT;
ALTER TABLE tokens ADD COLUMN last_used_at TEXT;
