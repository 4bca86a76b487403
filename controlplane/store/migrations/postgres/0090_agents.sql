-- PostgreSQL twin of ../0090_agents.sql: the same tables, columns and names.
-- Types: TEXT stays TEXT (times are RFC 3339 text on both engines),
-- INTEGER is BIGINT (booleans too, 0/1), BLOB is BYTEA, REAL is DOUBLE
-- PRECISION, AUTOINCREMENT is an identity column.

-- Agents: tool-calling loops over a project's own resources, and their runs.
--
-- A start mode (schedule, signed events, visitor chat) remembers who set it
-- up (setup_member, setup_key): its runs get a key cut from that member's
-- access as it stands when the run starts. At most one of the three is on.

CREATE TABLE agents (
	id               TEXT PRIMARY KEY,
	workspace_id     TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
	project_id       TEXT NOT NULL,
	name             TEXT NOT NULL,
	model            TEXT NOT NULL,
	instructions     TEXT NOT NULL DEFAULT '',
	tools            TEXT NOT NULL DEFAULT '[]',
	max_steps        BIGINT NOT NULL,
	allow_writes     BIGINT NOT NULL DEFAULT 0,
	trigger_kind     TEXT NOT NULL DEFAULT 'manual' CHECK (trigger_kind IN ('manual','chat','schedule','event')),
	trigger_label    TEXT NOT NULL DEFAULT '',
	purpose          TEXT NOT NULL DEFAULT '',
	status           TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active','paused')),
	setup_member     TEXT NOT NULL DEFAULT '',
	setup_key        TEXT NOT NULL DEFAULT '',
	setup_read_only  BIGINT NOT NULL DEFAULT 0,
	schedule_cron    TEXT NOT NULL DEFAULT '',
	schedule_input   TEXT NOT NULL DEFAULT '',
	schedule_next    TEXT NOT NULL DEFAULT '',
	events_secret    BYTEA,
	chat_id          TEXT,
	chat_origins     TEXT NOT NULL DEFAULT '[]',
	chat_daily_limit BIGINT NOT NULL DEFAULT 200,
	last_error       TEXT NOT NULL DEFAULT '',
	last_error_at    TEXT NOT NULL DEFAULT '',
	created_at       TEXT NOT NULL,
	updated_at       TEXT NOT NULL
);
CREATE INDEX agents_project ON agents(project_id);
CREATE INDEX agents_workspace ON agents(workspace_id);
CREATE UNIQUE INDEX agents_chat ON agents(chat_id) WHERE chat_id IS NOT NULL;
CREATE INDEX agents_schedule ON agents(schedule_next) WHERE schedule_cron <> '';

-- One row per run. steps is the JSON array of recorded steps (each result
-- cut to 4,000 characters). key_id is the run's own key, revoked at the end.
CREATE TABLE agent_runs (
	id             TEXT PRIMARY KEY,
	agent_id       TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
	workspace_id   TEXT NOT NULL,
	project_id     TEXT NOT NULL,
	mode           TEXT NOT NULL CHECK (mode IN ('manual','background','schedule','event','chat')),
	status         TEXT NOT NULL CHECK (status IN ('queued','running','completed','failed')),
	stop_reason    TEXT NOT NULL DEFAULT '',
	input          TEXT NOT NULL DEFAULT '',
	output         TEXT NOT NULL DEFAULT '',
	steps          TEXT NOT NULL DEFAULT '[]',
	tokens_used    BIGINT NOT NULL DEFAULT 0,
	cost_micros    BIGINT NOT NULL DEFAULT 0,
	model          TEXT NOT NULL DEFAULT '',
	duration_ms    BIGINT NOT NULL DEFAULT 0,
	starter_member TEXT NOT NULL,
	starter_key    TEXT NOT NULL DEFAULT '',
	read_only      BIGINT NOT NULL DEFAULT 1,
	delivery_id    TEXT NOT NULL DEFAULT '',
	event_type     TEXT NOT NULL DEFAULT '',
	visitor        TEXT NOT NULL DEFAULT '',
	key_id         TEXT NOT NULL DEFAULT '',
	created_at     TEXT NOT NULL,
	started_at     TEXT NOT NULL DEFAULT '',
	finished_at    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX agent_runs_agent ON agent_runs(agent_id, created_at DESC);
CREATE INDEX agent_runs_workspace_status ON agent_runs(workspace_id, status);
CREATE INDEX agent_runs_status_started ON agent_runs(status, started_at);
CREATE UNIQUE INDEX agent_runs_delivery ON agent_runs(agent_id, delivery_id) WHERE delivery_id <> '';
