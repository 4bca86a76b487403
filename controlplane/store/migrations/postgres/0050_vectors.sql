-- PostgreSQL twin of ../0050_vectors.sql: the same tables, columns and names.
-- Types: TEXT stays TEXT (times are RFC 3339 text on both engines),
-- INTEGER is BIGINT (booleans too, 0/1), BLOB is BYTEA, REAL is DOUBLE
-- PRECISION, AUTOINCREMENT is an identity column.

-- Vector collections: one row per collection (its vectors live in their own
-- SQLite file, DATA/vectors/<id>.db), kept as a tombstone after deletion so
-- later calls answer 410.

CREATE TABLE vector_collections (
	id           TEXT PRIMARY KEY,
	workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
	project_id   TEXT NOT NULL,
	name         TEXT NOT NULL,
	dimensions   BIGINT NOT NULL,
	metric       TEXT NOT NULL CHECK (metric IN ('cosine','euclidean','dot-product')),
	status       TEXT NOT NULL CHECK (status IN ('ready','deleted')),
	stored_day   TEXT NOT NULL DEFAULT '',
	created_at   TEXT NOT NULL,
	updated_at   TEXT NOT NULL,
	deleted_at   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX vector_collections_workspace ON vector_collections(workspace_id, status);
CREATE INDEX vector_collections_project ON vector_collections(project_id, status);
CREATE UNIQUE INDEX vector_collections_name ON vector_collections(project_id, name) WHERE status <> 'deleted';
