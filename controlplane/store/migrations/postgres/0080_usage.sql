-- PostgreSQL twin of ../0080_usage.sql: the same tables, columns and names.
-- Types: TEXT stays TEXT (times are RFC 3339 text on both engines),
-- INTEGER is BIGINT (booleans too, 0/1), BLOB is BYTEA, REAL is DOUBLE
-- PRECISION, AUTOINCREMENT is an identity column.

-- Usage reporting (controlplane/metering, controlplane/usage).
--
-- usage_batches: the ids of metering batches already written, so that a
-- flush retried after an answer was lost writes nothing twice. A batch and
-- its usage_events rows are written in one transaction.
CREATE TABLE usage_batches (
	id      TEXT PRIMARY KEY,
	events  BIGINT NOT NULL,
	at      TEXT NOT NULL
);
CREATE INDEX usage_batches_at ON usage_batches(at);

-- usage_measurements: what the daily measuring job found (database sizes,
-- stored bytes and objects), one row per workspace, kind, UTC day and
-- resource; measuring again the same day replaces that day's rows.
CREATE TABLE usage_measurements (
	workspace_id  TEXT NOT NULL,
	kind          TEXT NOT NULL,
	day           TEXT NOT NULL,
	project_id    TEXT NOT NULL DEFAULT '',
	resource_id   TEXT NOT NULL DEFAULT '',
	bytes         BIGINT NOT NULL CHECK (bytes >= 0),
	objects       BIGINT NOT NULL CHECK (objects >= 0),
	measured_at   TEXT NOT NULL,
	PRIMARY KEY (workspace_id, kind, day, project_id, resource_id)
);

-- The usage report groups a workspace's events by day, project and metric.
CREATE INDEX usage_events_workspace_project_day ON usage_events(workspace_id, project_id, day);
