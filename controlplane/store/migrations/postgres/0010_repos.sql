-- PostgreSQL twin of ../0010_repos.sql: the same tables, columns and names.
-- Types: TEXT stays TEXT (times are RFC 3339 text on both engines),
-- INTEGER is BIGINT (booleans too, 0/1), BLOB is BYTEA, REAL is DOUBLE
-- PRECISION, AUTOINCREMENT is an identity column.

-- Repos: workspace-wide code storage. Each push is a full numbered snapshot
-- whose files point at content-addressed blobs (DATA/blobs).

CREATE TABLE repos (
	id            TEXT PRIMARY KEY,
	workspace_id  TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
	name          TEXT NOT NULL,
	description   TEXT NOT NULL DEFAULT '',
	commit_count  BIGINT NOT NULL DEFAULT 0,
	created_at    TEXT NOT NULL,
	updated_at    TEXT NOT NULL,
	UNIQUE (workspace_id, name)
);

CREATE TABLE repo_commits (
	repo_id     TEXT NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
	number      BIGINT NOT NULL,
	message     TEXT NOT NULL,
	file_count  BIGINT NOT NULL,
	total_size  BIGINT NOT NULL,
	new_bytes   BIGINT NOT NULL,
	author      TEXT NOT NULL DEFAULT '',
	created_at  TEXT NOT NULL,
	PRIMARY KEY (repo_id, number)
);

-- sha256 is empty for environment files, whose content is never kept.
CREATE TABLE repo_files (
	repo_id  TEXT NOT NULL,
	number   BIGINT NOT NULL,
	path     TEXT NOT NULL,
	sha256   TEXT NOT NULL,
	size     BIGINT NOT NULL,
	"binary"   BIGINT NOT NULL,
	PRIMARY KEY (repo_id, number, path),
	FOREIGN KEY (repo_id, number) REFERENCES repo_commits(repo_id, number) ON DELETE CASCADE
);
