-- PostgreSQL twin of ../0020_databases.sql: the same tables, columns and names.
-- Types: TEXT stays TEXT (times are RFC 3339 text on both engines),
-- INTEGER is BIGINT (booleans too, 0/1), BLOB is BYTEA, REAL is DOUBLE
-- PRECISION, AUTOINCREMENT is an identity column.

-- Databases: one row per customer database (its SQLite file lives at
-- DATA/databases/<id>.db), kept as a tombstone after deletion so later calls
-- answer 410; and the exports of each database.

CREATE TABLE databases (
	id               TEXT PRIMARY KEY,
	workspace_id     TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
	project_id       TEXT NOT NULL,
	name             TEXT NOT NULL,
	engine           TEXT NOT NULL DEFAULT 'sqlite',
	status           TEXT NOT NULL CHECK (status IN ('creating','ready','failed','deleted')),
	error            TEXT NOT NULL DEFAULT '',
	size_bytes       BIGINT NOT NULL DEFAULT 0,
	size_measured_at TEXT NOT NULL DEFAULT '',
	created_at       TEXT NOT NULL,
	updated_at       TEXT NOT NULL,
	deleted_at       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX databases_workspace ON databases(workspace_id, status);
CREATE INDEX databases_project ON databases(project_id, status);
CREATE UNIQUE INDEX databases_name ON databases(project_id, name) WHERE status <> 'deleted';

CREATE TABLE database_exports (
	bookmark      TEXT PRIMARY KEY,
	database_id   TEXT NOT NULL REFERENCES databases(id) ON DELETE CASCADE,
	status        TEXT NOT NULL CHECK (status IN ('active','complete','failed')),
	error         TEXT NOT NULL DEFAULT '',
	size_bytes    BIGINT NOT NULL DEFAULT 0,
	created_at    TEXT NOT NULL,
	completed_at  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX database_exports_database ON database_exports(database_id, created_at);
