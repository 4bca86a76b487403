-- Certificates shared by every edge (controlplane/certs): the
-- installation's local CA (one row, its key sealed), the host certificates
-- it signed (keys sealed), and the autocert cache (ACME account key,
-- certificates, challenge tokens; values sealed).

CREATE TABLE cert_authority (
	id          INTEGER PRIMARY KEY CHECK (id = 1),
	cert_pem    TEXT NOT NULL,
	key_sealed  BLOB NOT NULL,
	created_at  TEXT NOT NULL
);

CREATE TABLE cert_leaves (
	host        TEXT PRIMARY KEY,
	chain_pem   TEXT NOT NULL,
	key_sealed  BLOB NOT NULL,
	not_after   TEXT NOT NULL,
	created_at  TEXT NOT NULL
);

CREATE TABLE cert_cache (
	cache_key     TEXT PRIMARY KEY,
	value_sealed  BLOB NOT NULL,
	updated_at    TEXT NOT NULL
);
