-- PostgreSQL twin of ../0013_edgesync.sql: the same tables, columns and names.
-- Types: TEXT stays TEXT (times are RFC 3339 text on both engines),
-- INTEGER is BIGINT (booleans too, 0/1), BLOB is BYTEA, REAL is DOUBLE
-- PRECISION, AUTOINCREMENT is an identity column.

-- Edge configuration: the snapshot version, edge credentials, the sealed
-- site-session signing key, and the counts edges report.

CREATE TABLE edge_config (
	id           BIGINT PRIMARY KEY CHECK (id = 1),
	version      BIGINT NOT NULL,
	session_key  BYTEA,
	updated_at   TEXT NOT NULL
);
INSERT INTO edge_config(id, version, updated_at) VALUES (1, 1, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));

CREATE TABLE edge_tokens (
	id            TEXT PRIMARY KEY,
	name          TEXT NOT NULL,
	token_hash    BYTEA NOT NULL UNIQUE,
	local         BIGINT NOT NULL DEFAULT 0,
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
	n             BIGINT NOT NULL,
	PRIMARY KEY (project_id, rule, verdict, day)
);
CREATE INDEX edge_counts_workspace ON edge_counts(workspace_id, day);

CREATE TABLE edge_count_batches (
	batch_id     TEXT PRIMARY KEY,
	token_id     TEXT NOT NULL,
	received_at  TEXT NOT NULL
);
CREATE INDEX edge_count_batches_at ON edge_count_batches(received_at);
