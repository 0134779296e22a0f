-- Who wrote each change: the user token of the request that made it (absent for changes the
-- server made itself, such as failing a silent run, and for changes older than this column).
ALTER TABLE issue_activity ADD COLUMN author_token_id TEXT REFERENCES tokens(id);
