-- Workspaces, members, API keys, owner sessions, projects, environment
-- variables, the audit log and usage events.

CREATE TABLE workspaces (
	id          TEXT PRIMARY KEY,
	name        TEXT NOT NULL,
	plan        TEXT NOT NULL DEFAULT 'hobby',
	created_at  TEXT NOT NULL
);

CREATE TABLE members (
	id             TEXT PRIMARY KEY,
	workspace_id   TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
	email          TEXT NOT NULL,
	name           TEXT NOT NULL DEFAULT '',
	role           TEXT NOT NULL CHECK (role IN ('viewer','developer','admin','owner')),
	status         TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('invited','active')),
	email_verified INTEGER NOT NULL DEFAULT 0,
	password_hash  TEXT NOT NULL DEFAULT '',
	password_set_at TEXT NOT NULL DEFAULT '',
	totp_secret    TEXT NOT NULL DEFAULT '',
	totp_enabled   INTEGER NOT NULL DEFAULT 0,
	totp_last_step INTEGER NOT NULL DEFAULT 0,
	invite_hash    TEXT NOT NULL DEFAULT '',
	invite_expires TEXT NOT NULL DEFAULT '',
	created_at     TEXT NOT NULL,
	UNIQUE (workspace_id, email)
);
CREATE INDEX members_invite ON members(invite_hash) WHERE invite_hash <> '';

CREATE TABLE api_keys (
	id            TEXT PRIMARY KEY,
	workspace_id  TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
	member_id     TEXT NOT NULL,
	name          TEXT NOT NULL,
	public_id     TEXT NOT NULL UNIQUE,
	secret_hash   BLOB NOT NULL,
	access        TEXT NOT NULL CHECK (access IN ('full','read_only')),
	project_id    TEXT NOT NULL DEFAULT '',
	created_at    TEXT NOT NULL,
	expires_at    TEXT NOT NULL DEFAULT '',
	last_used_at  TEXT NOT NULL DEFAULT '',
	revoked_at    TEXT NOT NULL DEFAULT '',
	ephemeral     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX api_keys_workspace ON api_keys(workspace_id);
CREATE UNIQUE INDEX api_keys_hash ON api_keys(secret_hash);

CREATE TABLE sessions (
	id            TEXT PRIMARY KEY,
	token_hash    BLOB NOT NULL UNIQUE,
	csrf_hash     BLOB NOT NULL,
	member_id     TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,
	workspace_id  TEXT NOT NULL,
	second_factor INTEGER NOT NULL DEFAULT 0,
	created_at    TEXT NOT NULL,
	expires_at    TEXT NOT NULL
);

CREATE TABLE projects (
	id               TEXT PRIMARY KEY,
	workspace_id     TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
	name             TEXT NOT NULL,
	slug             TEXT NOT NULL UNIQUE,
	repo_url         TEXT NOT NULL DEFAULT '',
	repo_branch      TEXT NOT NULL DEFAULT '',
	mail_sender_name TEXT NOT NULL DEFAULT '',
	mail_from        TEXT NOT NULL DEFAULT '',
	mail_reply_to    TEXT NOT NULL DEFAULT '',
	status           TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active','teardown_failed')),
	teardown_error   TEXT NOT NULL DEFAULT '',
	created_at       TEXT NOT NULL,
	updated_at       TEXT NOT NULL
);
CREATE INDEX projects_workspace ON projects(workspace_id, created_at);

CREATE TABLE env_vars (
	id          TEXT PRIMARY KEY,
	project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	key         TEXT NOT NULL,
	value_enc   BLOB NOT NULL,
	created_at  TEXT NOT NULL,
	updated_at  TEXT NOT NULL,
	UNIQUE (project_id, key)
);

CREATE TABLE audit_log (
	seq           INTEGER PRIMARY KEY AUTOINCREMENT,
	id            TEXT NOT NULL UNIQUE,
	workspace_id  TEXT NOT NULL,
	at            TEXT NOT NULL,
	actor_member  TEXT NOT NULL DEFAULT '',
	actor_key     TEXT NOT NULL DEFAULT '',
	actor_label   TEXT NOT NULL DEFAULT '',
	action        TEXT NOT NULL,
	category      TEXT NOT NULL,
	target_type   TEXT NOT NULL DEFAULT '',
	target_id     TEXT NOT NULL DEFAULT '',
	project_id    TEXT NOT NULL DEFAULT '',
	summary       TEXT NOT NULL DEFAULT '',
	details       TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_workspace ON audit_log(workspace_id, seq);
CREATE INDEX audit_action ON audit_log(workspace_id, action, seq);

CREATE TABLE usage_events (
	seq           INTEGER PRIMARY KEY AUTOINCREMENT,
	workspace_id  TEXT NOT NULL,
	project_id    TEXT NOT NULL DEFAULT '',
	metric        TEXT NOT NULL,
	quantity      REAL NOT NULL,
	at            TEXT NOT NULL,
	day           TEXT NOT NULL
);
CREATE INDEX usage_workspace_day ON usage_events(workspace_id, day, metric);
