-- PostgreSQL twin of ../0012_shield_cdn.sql: the same tables, columns and names.
-- Types: TEXT stays TEXT (times are RFC 3339 text on both engines),
-- INTEGER is BIGINT (booleans too, 0/1), BLOB is BYTEA, REAL is DOUBLE
-- PRECISION, AUTOINCREMENT is an identity column.

-- Shield settings and site passwords, and CDN settings: one record per
-- workspace; no row means the defaults.

CREATE TABLE shield_settings (
	workspace_id  TEXT PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
	settings      TEXT NOT NULL,
	updated_at    TEXT NOT NULL
);

-- hash is the argon2id PHC string; the password itself is never kept.
CREATE TABLE site_passwords (
	project_id    TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
	workspace_id  TEXT NOT NULL,
	hash          TEXT NOT NULL,
	set_at        TEXT NOT NULL
);
CREATE INDEX site_passwords_workspace ON site_passwords(workspace_id);

CREATE TABLE cdn_settings (
	workspace_id       TEXT PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
	enabled            BIGINT NOT NULL,
	cache_ttl_seconds  BIGINT NOT NULL,
	updated_at         TEXT NOT NULL
);
