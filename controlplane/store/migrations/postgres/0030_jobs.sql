-- PostgreSQL twin of ../0030_jobs.sql: the same tables, columns and names.
-- Types: TEXT stays TEXT (times are RFC 3339 text on both engines),
-- INTEGER is BIGINT (booleans too, 0/1), BLOB is BYTEA, REAL is DOUBLE
-- PRECISION, AUTOINCREMENT is an identity column.

-- Durable background jobs (controlplane/jobs). A row is one job: queued until
-- run_at, running while a runner holds its lease (lease_until), then done or
-- dead (kept with its last error). Periodic jobs are a row per due time.

CREATE TABLE jobs (
	id          TEXT PRIMARY KEY,
	kind        TEXT NOT NULL,
	key         TEXT NOT NULL DEFAULT '',
	payload     BYTEA NOT NULL,
	state       TEXT NOT NULL CHECK (state IN ('queued','running','done','dead')),
	attempt     BIGINT NOT NULL DEFAULT 0,
	run_at      TEXT NOT NULL,
	lease_owner TEXT NOT NULL DEFAULT '',
	lease_until TEXT NOT NULL DEFAULT '',
	last_error  TEXT NOT NULL DEFAULT '',
	created_at  TEXT NOT NULL,
	updated_at  TEXT NOT NULL,
	finished_at TEXT NOT NULL DEFAULT ''
);
-- Idempotency: one job per kind and key.
CREATE UNIQUE INDEX jobs_kind_key ON jobs(kind, key) WHERE key <> '';
-- What is due: queued by run_at, running by lease expiry.
CREATE INDEX jobs_due ON jobs(state, run_at);
CREATE INDEX jobs_lease ON jobs(state, lease_until);
CREATE INDEX jobs_finished ON jobs(state, finished_at);
