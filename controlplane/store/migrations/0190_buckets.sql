-- Storage buckets (controlplane/buckets): object storage for a project's
-- apps. Object bytes live in the content-addressed blob store
-- (controlplane/blobs); these rows name them by SHA-256, so the blob
-- cleanup keeps every blob an object, an object's part or an unfinished
-- upload's part names. Times are TEXT in store.TimeFormat.
--
-- A bucket: its name is unique in its project (the S3 surface finds it by
-- name within the access key's project). signing_key_sealed is the HMAC key
-- of its signed URLs (controlplane/seal). object_count, object_bytes and
-- upload_bytes (parts of unfinished multipart uploads) are kept in the
-- transactions that change objects, so the plan's byte cap is checked
-- without summing objects.
CREATE TABLE storage_buckets (
	id                 TEXT PRIMARY KEY,
	workspace_id       TEXT NOT NULL,
	project_id         TEXT NOT NULL,
	name               TEXT NOT NULL,
	public             INTEGER NOT NULL DEFAULT 0,
	signing_key_sealed BLOB NOT NULL,
	object_count       INTEGER NOT NULL DEFAULT 0,
	object_bytes       INTEGER NOT NULL DEFAULT 0,
	upload_bytes       INTEGER NOT NULL DEFAULT 0,
	created_at         TEXT NOT NULL,
	updated_at         TEXT NOT NULL
);
CREATE UNIQUE INDEX storage_buckets_name ON storage_buckets(project_id, name);
CREATE INDEX storage_buckets_workspace ON storage_buckets(workspace_id);

-- An object: one blob (sha256) or, made by a multipart upload, the blobs
-- of its parts in order (storage_object_parts; sha256 is then '' and parts
-- their count). object_key orders listings: byte order on both engines.
-- metadata is a JSON object of the user metadata (lower-case names).
CREATE TABLE storage_objects (
	id                  TEXT PRIMARY KEY,
	bucket_id           TEXT NOT NULL,
	object_key          TEXT NOT NULL,
	sha256              TEXT NOT NULL,
	size                INTEGER NOT NULL,
	parts               INTEGER NOT NULL DEFAULT 0,
	etag                TEXT NOT NULL,
	content_type        TEXT NOT NULL,
	cache_control       TEXT NOT NULL DEFAULT '',
	content_disposition TEXT NOT NULL DEFAULT '',
	content_encoding    TEXT NOT NULL DEFAULT '',
	metadata            TEXT NOT NULL DEFAULT '{}',
	created_at          TEXT NOT NULL
);
CREATE UNIQUE INDEX storage_objects_key ON storage_objects(bucket_id, object_key);

CREATE TABLE storage_object_parts (
	object_id TEXT NOT NULL,
	part      INTEGER NOT NULL,
	sha256    TEXT NOT NULL,
	size      INTEGER NOT NULL,
	PRIMARY KEY (object_id, part)
);

-- An unfinished multipart upload and its parts; expires_at is when it and
-- its parts go (the parts' bytes count against the plan until then).
CREATE TABLE storage_uploads (
	id                  TEXT PRIMARY KEY,
	bucket_id           TEXT NOT NULL,
	object_key          TEXT NOT NULL,
	content_type        TEXT NOT NULL,
	cache_control       TEXT NOT NULL DEFAULT '',
	content_disposition TEXT NOT NULL DEFAULT '',
	content_encoding    TEXT NOT NULL DEFAULT '',
	metadata            TEXT NOT NULL DEFAULT '{}',
	created_at          TEXT NOT NULL,
	expires_at          TEXT NOT NULL
);
CREATE INDEX storage_uploads_bucket ON storage_uploads(bucket_id, object_key);
CREATE INDEX storage_uploads_expiry ON storage_uploads(expires_at);

CREATE TABLE storage_upload_parts (
	upload_id   TEXT NOT NULL,
	part_number INTEGER NOT NULL,
	sha256      TEXT NOT NULL,
	size        INTEGER NOT NULL,
	etag        TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	PRIMARY KEY (upload_id, part_number)
);

-- S3 access keys of a project: id is the access key id clients send; the
-- secret is sealed (SigV4 needs it to check signatures) and shown once.
-- buckets is a JSON array of the bucket names the key reaches ('' for all).
CREATE TABLE storage_access_keys (
	id            TEXT PRIMARY KEY,
	workspace_id  TEXT NOT NULL,
	project_id    TEXT NOT NULL,
	name          TEXT NOT NULL,
	secret_sealed BLOB NOT NULL,
	read_only     INTEGER NOT NULL DEFAULT 0,
	buckets       TEXT NOT NULL DEFAULT '',
	created_by    TEXT NOT NULL DEFAULT '',
	created_at    TEXT NOT NULL,
	last_used_at  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX storage_access_keys_project ON storage_access_keys(project_id);
