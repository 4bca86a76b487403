-- Password resets: one outstanding token per person, stored as its SHA-256
-- hash, single use, expiring after an hour (controlplane/accounts).

CREATE TABLE password_resets (
	token_hash  BLOB PRIMARY KEY,
	person_id   TEXT NOT NULL REFERENCES people(id) ON DELETE CASCADE,
	email       TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	expires_at  TEXT NOT NULL
);
CREATE INDEX password_resets_person ON password_resets(person_id);
