-- Rate limits shared by control-plane replicas (controlplane/ratelimit):
-- the GCRA's theoretical arrival time of each workspace's bucket, in unix
-- nanoseconds. A row whose tat is past says nothing (an idle bucket) and is
-- deleted by the limiter's sweep. SQLite runs one process: its limiter is
-- in memory and this table stays empty there.
CREATE TABLE ratelimit_tat (
	workspace TEXT NOT NULL,
	bucket    TEXT NOT NULL,
	tat       INTEGER NOT NULL,
	PRIMARY KEY (workspace, bucket)
);
CREATE INDEX ratelimit_tat_tat ON ratelimit_tat(tat);
-- Exact "n per window" limits (Limit.Window): one row per admitted unit,
-- until = when it leaves the window (unix nanoseconds).
CREATE TABLE ratelimit_log (
	workspace TEXT NOT NULL,
	bucket    TEXT NOT NULL,
	until     INTEGER NOT NULL
);
CREATE INDEX ratelimit_log_key ON ratelimit_log(workspace, bucket, until);
CREATE INDEX ratelimit_log_until ON ratelimit_log(until);
