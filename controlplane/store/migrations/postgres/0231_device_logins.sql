-- Device logins (controlplane/devicelogin): a CLI without a browser asks for
-- a code pair, a signed-in member approves the short user code, and the CLI
-- collects the key made for that member. device_hash is the SHA-256 (hex) of
-- the secret device code the CLI polls with (the code itself is never
-- stored); user_code is the short code a person types (XXXX-XXXX). Once
-- approved, key_sealed holds the new key's secret sealed with the row's id
-- (controlplane/seal) until the CLI collects it, when the row is deleted.
-- status is pending, approved or denied. Times are TEXT in
-- store.TimeFormat.
CREATE TABLE device_logins (
	id           TEXT PRIMARY KEY,
	device_hash  TEXT NOT NULL,
	user_code    TEXT NOT NULL,
	client_name  TEXT NOT NULL,
	client_ip    TEXT NOT NULL,
	status       TEXT NOT NULL,
	workspace_id TEXT NOT NULL DEFAULT '',
	member_id    TEXT NOT NULL DEFAULT '',
	key_id       TEXT NOT NULL DEFAULT '',
	key_sealed   BYTEA,
	created_at   TEXT NOT NULL,
	expires_at   TEXT NOT NULL,
	last_poll_at TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX device_logins_device ON device_logins(device_hash);
CREATE UNIQUE INDEX device_logins_user_code ON device_logins(user_code);
