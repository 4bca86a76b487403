-- Twin of ../0130_ratelimit.sql: the GCRA state of rate limits shared by
-- control-plane replicas (controlplane/ratelimit), tat in unix nanoseconds.
CREATE TABLE ratelimit_tat (
	workspace TEXT NOT NULL,
	bucket    TEXT NOT NULL,
	tat       BIGINT NOT NULL,
	PRIMARY KEY (workspace, bucket)
);
CREATE INDEX ratelimit_tat_tat ON ratelimit_tat(tat);
-- Exact "n per window" limits (Limit.Window): one row per admitted unit,
-- until = when it leaves the window (unix nanoseconds).
CREATE TABLE ratelimit_log (
	workspace TEXT NOT NULL,
	bucket    TEXT NOT NULL,
	until     BIGINT NOT NULL
);
CREATE INDEX ratelimit_log_key ON ratelimit_log(workspace, bucket, until);
CREATE INDEX ratelimit_log_until ON ratelimit_log(until);
