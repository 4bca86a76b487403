-- Edge configuration: the snapshot version, edge credentials, the sealed
-- site-session signing key, and the counts edges report.

CREATE TABLE edge_config (
	id           INTEGER PRIMARY KEY CHECK (id = 1),
	version      INTEGER NOT NULL,
	session_key  BLOB,
	updated_at   TEXT NOT NULL
);
INSERT INTO edge_config(id, version, updated_at) VALUES (1, 1, strftime('%Y-%m-%dT%H:%M:%fZ','now'));

CREATE TABLE edge_tokens (
	id            TEXT PRIMARY KEY,
	name          TEXT NOT NULL,
	token_hash    BLOB NOT NULL UNIQUE,
	local         INTEGER NOT NULL DEFAULT 0,
	created_at    TEXT NOT NULL,
	revoked_at    TEXT NOT NULL DEFAULT ''
);

CREATE TABLE edge_counts (
	workspace_id  TEXT NOT NULL,
	project_id    TEXT NOT NULL,
	kind          TEXT NOT NULL,
	rule          TEXT NOT NULL,
	verdict       TEXT NOT NULL,
	day           TEXT NOT NULL,
	n             INTEGER NOT NULL,
	PRIMARY KEY (project_id, rule, verdict, day)
);
CREATE INDEX edge_counts_workspace ON edge_counts(workspace_id, day);

CREATE TABLE edge_count_batches (
	batch_id     TEXT PRIMARY KEY,
	token_id     TEXT NOT NULL,
	received_at  TEXT NOT NULL
);
CREATE INDEX edge_count_batches_at ON edge_count_batches(received_at);
