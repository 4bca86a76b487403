-- Sign-in pools (controlplane/signin): end-user authentication for a
-- project's apps. Times are TEXT in store.TimeFormat; '' is "never".
CREATE TABLE signin_pools (
	id           TEXT PRIMARY KEY,
	workspace_id TEXT NOT NULL,
	project_id   TEXT NOT NULL,
	name         TEXT NOT NULL,
	-- settings is the pool's JSON settings (signin.Settings).
	settings     TEXT NOT NULL,
	-- user_count is kept in the transactions that add and remove users,
	-- so the plan's cap is checked without counting rows.
	user_count   BIGINT NOT NULL DEFAULT 0,
	created_at   TEXT NOT NULL,
	updated_at   TEXT NOT NULL,
	UNIQUE (project_id, name)
);
CREATE INDEX signin_pools_workspace ON signin_pools(workspace_id);

-- Signing keys (ES256): next (published, not signing yet), current (signs)
-- and retired (published until publish_until, when the last token it
-- signed has expired). The private scalar is sealed (controlplane/seal).
CREATE TABLE signin_keys (
	id              TEXT PRIMARY KEY,
	pool_id         TEXT NOT NULL,
	state           TEXT NOT NULL,
	public_key      BYTEA NOT NULL,
	private_sealed  BYTEA NOT NULL,
	-- longest_seconds is the longest access-token lifetime in force while
	-- the key signed.
	longest_seconds BIGINT NOT NULL,
	created_at      TEXT NOT NULL,
	activated_at    TEXT NOT NULL DEFAULT '',
	publish_until   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX signin_keys_pool ON signin_keys(pool_id, state);

CREATE TABLE signin_users (
	id              TEXT PRIMARY KEY,
	pool_id         TEXT NOT NULL,
	email           TEXT NOT NULL,
	password_hash   TEXT NOT NULL,
	email_verified  BIGINT NOT NULL DEFAULT 0,
	disabled        BIGINT NOT NULL DEFAULT 0,
	created_at      TEXT NOT NULL,
	updated_at      TEXT NOT NULL,
	last_sign_in_at TEXT NOT NULL DEFAULT '',
	UNIQUE (pool_id, email)
);
CREATE INDEX signin_users_list ON signin_users(pool_id, created_at, id);

-- A session is one refresh-token family: every rotation stays in it, and a
-- refresh token used twice revokes it.
CREATE TABLE signin_sessions (
	id             TEXT PRIMARY KEY,
	pool_id        TEXT NOT NULL,
	user_id        TEXT NOT NULL,
	created_at     TEXT NOT NULL,
	expires_at     TEXT NOT NULL,
	revoked_at     TEXT NOT NULL DEFAULT '',
	revoked_reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX signin_sessions_user ON signin_sessions(user_id);
CREATE INDEX signin_sessions_pool ON signin_sessions(pool_id);
CREATE INDEX signin_sessions_expiry ON signin_sessions(expires_at);

-- Refresh tokens, by SHA-256 of the token; state is active or used.
CREATE TABLE signin_refresh_tokens (
	token_hash BYTEA PRIMARY KEY,
	pool_id    TEXT NOT NULL,
	session_id TEXT NOT NULL,
	state      TEXT NOT NULL,
	created_at TEXT NOT NULL,
	expires_at TEXT NOT NULL
);
CREATE INDEX signin_refresh_session ON signin_refresh_tokens(session_id);
CREATE INDEX signin_refresh_expiry ON signin_refresh_tokens(expires_at);

-- Single-use e-mail tokens (kind verify or reset), by SHA-256.
CREATE TABLE signin_email_tokens (
	token_hash BYTEA PRIMARY KEY,
	pool_id    TEXT NOT NULL,
	user_id    TEXT NOT NULL,
	kind       TEXT NOT NULL,
	created_at TEXT NOT NULL,
	expires_at TEXT NOT NULL
);
CREATE INDEX signin_email_tokens_user ON signin_email_tokens(user_id);
CREATE INDEX signin_email_tokens_expiry ON signin_email_tokens(expires_at);

-- Failed sign-ins in a row per pool and e-mail address, whether or not a
-- user has the address (so a lockout says nothing about who exists).
CREATE TABLE signin_lockouts (
	pool_id         TEXT NOT NULL,
	email           TEXT NOT NULL,
	failures        BIGINT NOT NULL,
	last_failure_at TEXT NOT NULL,
	locked_until    TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (pool_id, email)
);
CREATE INDEX signin_lockouts_last ON signin_lockouts(last_failure_at);
