-- Memory stores (controlplane/memory): key-value stores of a project.
--
-- key_count and bytes are kept exact by the transactions that change a
-- store's keys (each holds the store's row first), so the plan's caps are
-- checked without counting rows; expired keys count until they are swept.
-- status is active, or deleting while its keys are removed (a deleting store
-- is invisible to the API and its name is free again).
CREATE TABLE memory_stores (
	id           TEXT PRIMARY KEY,
	workspace_id TEXT NOT NULL,
	project_id   TEXT NOT NULL,
	name         TEXT NOT NULL,
	status       TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active','deleting')),
	key_count    INTEGER NOT NULL DEFAULT 0,
	bytes        INTEGER NOT NULL DEFAULT 0,
	created_at   TEXT NOT NULL,
	updated_at   TEXT NOT NULL
);
CREATE UNIQUE INDEX memory_stores_name ON memory_stores(project_id, name) WHERE status = 'active';
CREATE INDEX memory_stores_workspace ON memory_stores(workspace_id);

-- A store's keys. key_name and value are bytes compared bytewise, so a
-- listing by prefix is a range of the primary key on both engines.
-- expires_at is Unix milliseconds, 0 for never; size is the bytes of the
-- key, the value and the metadata, what the store's bytes sum.
CREATE TABLE memory_keys (
	store_id   TEXT NOT NULL,
	key_name   BLOB NOT NULL,
	value      BLOB NOT NULL,
	metadata   TEXT NOT NULL DEFAULT '',
	expires_at INTEGER NOT NULL DEFAULT 0,
	size       INTEGER NOT NULL,
	updated_at TEXT NOT NULL,
	PRIMARY KEY (store_id, key_name)
);
-- The sweep finds expired keys across stores, then removes them store by store.
CREATE INDEX memory_keys_expiry ON memory_keys(expires_at) WHERE expires_at > 0;
CREATE INDEX memory_keys_store_expiry ON memory_keys(store_id, expires_at) WHERE expires_at > 0;
