-- PostgreSQL twin of ../0212_password_resets.sql.

CREATE TABLE password_resets (
	token_hash  BYTEA PRIMARY KEY,
	person_id   TEXT NOT NULL REFERENCES people(id) ON DELETE CASCADE,
	email       TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	expires_at  TEXT NOT NULL
);
CREATE INDEX password_resets_person ON password_resets(person_id);
