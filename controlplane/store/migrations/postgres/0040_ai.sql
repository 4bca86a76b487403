-- PostgreSQL twin of ../0040_ai.sql: the same tables, columns and names.
-- Types: TEXT stays TEXT (times are RFC 3339 text on both engines),
-- INTEGER is BIGINT (booleans too, 0/1), BLOB is BYTEA, REAL is DOUBLE
-- PRECISION, AUTOINCREMENT is an identity column.

-- AI gateway: one row per call (kept 30 days; never the prompt or the
-- answer), this month's spend by model and project (kept past the 30 days
-- so a 31-day month adds up), and the workspace admins' switches.

CREATE TABLE ai_requests (
	id              TEXT PRIMARY KEY,
	workspace_id    TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
	project_id      TEXT NOT NULL DEFAULT '',
	kind            TEXT NOT NULL CHECK (kind IN ('chat','embeddings')),
	surface         TEXT NOT NULL,
	model_requested TEXT NOT NULL,
	model_used      TEXT NOT NULL DEFAULT '',
	provider        TEXT NOT NULL DEFAULT '',
	fell_back_from  TEXT NOT NULL DEFAULT '',
	status          TEXT NOT NULL,
	error_code      TEXT NOT NULL DEFAULT '',
	stream          BIGINT NOT NULL DEFAULT 0,
	tokens_in       BIGINT NOT NULL DEFAULT 0,
	tokens_out      BIGINT NOT NULL DEFAULT 0,
	inputs          BIGINT NOT NULL DEFAULT 0,
	cost_micros     BIGINT NOT NULL DEFAULT 0,
	latency_ms      BIGINT NOT NULL DEFAULT 0,
	created_at      TEXT NOT NULL
);
CREATE INDEX ai_requests_workspace ON ai_requests(workspace_id, created_at);
CREATE INDEX ai_requests_created ON ai_requests(created_at);

CREATE TABLE ai_spend_month (
	workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
	month        TEXT NOT NULL,
	model        TEXT NOT NULL,
	project_id   TEXT NOT NULL DEFAULT '',
	requests     BIGINT NOT NULL DEFAULT 0,
	tokens_in    BIGINT NOT NULL DEFAULT 0,
	tokens_out   BIGINT NOT NULL DEFAULT 0,
	cost_micros  BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (workspace_id, month, model, project_id)
);

CREATE TABLE ai_settings (
	workspace_id    TEXT PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
	gateway_enabled BIGINT NOT NULL DEFAULT 1,
	updated_at      TEXT NOT NULL
);

CREATE TABLE ai_model_settings (
	workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
	model_id     TEXT NOT NULL,
	enabled      BIGINT NOT NULL,
	PRIMARY KEY (workspace_id, model_id)
);
