-- The key each deployment of an app or worker program the platform runs is
-- given (controlplane/deploys): an ephemeral API key of the accounts area
-- (api_keys.ephemeral), limited to the deployment's project, injected as
-- PLATFORM_TOKEN. secret_sealed is the key's secret sealed with the
-- deployment id (controlplane/seal), so a restarted platform gives a
-- resumed deployment the same key. revoked_at is set when the deployment
-- is replaced, stopped, fails, or its project is deleted ('' while in
-- force). Times are TEXT in store.TimeFormat.
CREATE TABLE deployment_keys (
	deployment_id TEXT PRIMARY KEY,
	project_id    TEXT NOT NULL,
	key_id        TEXT NOT NULL,
	secret_sealed BYTEA NOT NULL,
	created_at    TEXT NOT NULL,
	revoked_at    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX deployment_keys_project ON deployment_keys(project_id);
