-- PostgreSQL twin of ../0070_media.sql: the same tables, columns and names.
-- Types: TEXT stays TEXT (times are RFC 3339 text on both engines),
-- INTEGER is BIGINT (booleans too, 0/1), BLOB is BYTEA, REAL is DOUBLE
-- PRECISION, AUTOINCREMENT is an identity column.

-- Media: one row per video asset or live channel. A video's files live in
-- DATA/media/<id>/ (source upload, HLS renditions, poster); a live
-- channel's HLS is written by the RTMP server under DATA/media/live/<id>/.
-- Rows go with their project (projects teardown calls the media area).

CREATE TABLE media_assets (
	id                TEXT PRIMARY KEY,
	workspace_id      TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
	project_id        TEXT NOT NULL,
	name              TEXT NOT NULL,
	kind              TEXT NOT NULL CHECK (kind IN ('video','live')),
	status            TEXT NOT NULL CHECK (status IN ('pending_upload','processing','ready','failed','idle','live','ended')),
	failure_code      TEXT NOT NULL DEFAULT '',
	failure           TEXT NOT NULL DEFAULT '',
	-- video: the uploaded file and what processing made of it
	source_bytes      BIGINT NOT NULL DEFAULT 0,
	stored_bytes      BIGINT NOT NULL DEFAULT 0,
	duration_ms       BIGINT NOT NULL DEFAULT 0,
	width             BIGINT NOT NULL DEFAULT 0,
	height            BIGINT NOT NULL DEFAULT 0,
	renditions        TEXT NOT NULL DEFAULT '',
	attempts          BIGINT NOT NULL DEFAULT 0,
	-- the one-time upload URL: SHA-256 of its token, cleared on first use
	upload_token_hash TEXT NOT NULL DEFAULT '',
	upload_expires_at TEXT NOT NULL DEFAULT '',
	upload_claimed_at TEXT NOT NULL DEFAULT '',
	uploaded_at       TEXT NOT NULL DEFAULT '',
	ready_at          TEXT NOT NULL DEFAULT '',
	stored_day        TEXT NOT NULL DEFAULT '',
	-- live: the stream key, sealed (shown to developers) and hashed (checked)
	stream_key_sealed BYTEA,
	stream_key_hash   TEXT NOT NULL DEFAULT '',
	live_since        TEXT NOT NULL DEFAULT '',
	created_at        TEXT NOT NULL,
	updated_at        TEXT NOT NULL
);
CREATE INDEX media_assets_workspace ON media_assets(workspace_id);
CREATE INDEX media_assets_project ON media_assets(project_id);
CREATE INDEX media_assets_status ON media_assets(status);
CREATE INDEX media_assets_stream_key ON media_assets(stream_key_hash) WHERE stream_key_hash <> '';
CREATE UNIQUE INDEX media_assets_upload_token ON media_assets(upload_token_hash) WHERE upload_token_hash <> '';
