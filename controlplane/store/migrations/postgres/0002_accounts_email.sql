-- PostgreSQL twin of ../0002_accounts_email.sql: the same tables, columns and names.
-- Types: TEXT stays TEXT (times are RFC 3339 text on both engines),
-- INTEGER is BIGINT (booleans too, 0/1), BLOB is BYTEA, REAL is DOUBLE
-- PRECISION, AUTOINCREMENT is an identity column.

-- Owner e-mail verification: one outstanding token per member, stored as
-- its SHA-256 hash, single use, expiring after 24 hours.

CREATE TABLE email_verifications (
	token_hash  BYTEA PRIMARY KEY,
	member_id   TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,
	email       TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	expires_at  TEXT NOT NULL
);
CREATE INDEX email_verifications_member ON email_verifications(member_id);
