-- PostgreSQL twin of ../0011_deploys.sql: the same tables, columns and names.
-- Types: TEXT stays TEXT (times are RFC 3339 text on both engines),
-- INTEGER is BIGINT (booleans too, 0/1), BLOB is BYTEA, REAL is DOUBLE
-- PRECISION, AUTOINCREMENT is an identity column.

-- Deployments built from repo commits, their file manifests and logs, and
-- which deployment each project serves.

CREATE TABLE deployments (
	id             TEXT PRIMARY KEY,
	workspace_id   TEXT NOT NULL,
	project_id     TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	repo_id        TEXT NOT NULL DEFAULT '',
	repo_name      TEXT NOT NULL DEFAULT '',
	commit_number  BIGINT NOT NULL DEFAULT 0,
	source         TEXT NOT NULL,
	kind           TEXT NOT NULL CHECK (kind IN ('static','app','function')),
	origin         TEXT NOT NULL DEFAULT '',
	root           TEXT NOT NULL DEFAULT '',
	state          TEXT NOT NULL CHECK (state IN ('deploying','ready','failed')),
	rollback       BIGINT NOT NULL DEFAULT 0,
	error          TEXT NOT NULL DEFAULT '',
	env_sealed     BYTEA,
	env_digest     TEXT NOT NULL DEFAULT '',
	env_keys       TEXT NOT NULL DEFAULT '[]',
	cdn_enabled    BIGINT NOT NULL DEFAULT 1,
	cdn_ttl        BIGINT NOT NULL DEFAULT 3600,
	shield         TEXT NOT NULL DEFAULT '',
	file_count     BIGINT NOT NULL DEFAULT 0,
	total_size     BIGINT NOT NULL DEFAULT 0,
	actor          TEXT NOT NULL DEFAULT '',
	created_at     TEXT NOT NULL,
	finished_at    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX deployments_project ON deployments(project_id, created_at);
CREATE INDEX deployments_state ON deployments(state) WHERE state = 'deploying';

CREATE TABLE deployment_files (
	deployment_id  TEXT NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
	path           TEXT NOT NULL,
	sha256         TEXT NOT NULL,
	size           BIGINT NOT NULL,
	content_type   TEXT NOT NULL,
	PRIMARY KEY (deployment_id, path)
);
CREATE INDEX deployment_files_sha ON deployment_files(sha256);

CREATE TABLE deployment_logs (
	deployment_id  TEXT NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
	seq            BIGINT NOT NULL,
	at             TEXT NOT NULL,
	line           TEXT NOT NULL,
	PRIMARY KEY (deployment_id, seq)
);

CREATE TABLE project_serving (
	project_id     TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
	deployment_id  TEXT NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
	since          TEXT NOT NULL
);
