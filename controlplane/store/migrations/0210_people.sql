-- People: one e-mail, one password and one optional TOTP second factor,
-- belonging to several workspaces through members (a role in each).
-- Existing members become people: one person per e-mail among active
-- members, taking the credentials of the member whose password was set
-- last; the credentials then live only on the person. Invited members get
-- their person when they accept. Sessions and keys keep referencing the
-- member (one workspace each); a session switches workspace by moving to
-- the same person's member of another workspace.

CREATE TABLE people (
	id              TEXT PRIMARY KEY,
	email           TEXT NOT NULL UNIQUE,
	name            TEXT NOT NULL DEFAULT '',
	email_verified  INTEGER NOT NULL DEFAULT 0,
	password_hash   TEXT NOT NULL DEFAULT '',
	password_set_at TEXT NOT NULL DEFAULT '',
	totp_secret     TEXT NOT NULL DEFAULT '',
	totp_enabled    INTEGER NOT NULL DEFAULT 0,
	totp_last_step  INTEGER NOT NULL DEFAULT 0,
	created_at      TEXT NOT NULL
);

ALTER TABLE members ADD COLUMN person_id TEXT NOT NULL DEFAULT '';

INSERT INTO people (id, email, name, email_verified, password_hash, password_set_at, totp_secret, totp_enabled, totp_last_step, created_at)
SELECT 'per_' || substr(m.id, 5), lower(m.email), m.name, m.email_verified, m.password_hash, m.password_set_at,
	m.totp_secret, m.totp_enabled, m.totp_last_step, m.created_at
FROM members m
WHERE m.status = 'active' AND m.id = (SELECT m2.id FROM members m2 WHERE lower(m2.email) = lower(m.email) AND m2.status = 'active'
	ORDER BY m2.password_set_at DESC, m2.created_at, m2.id LIMIT 1);

UPDATE members SET person_id = (SELECT p.id FROM people p WHERE p.email = lower(members.email)) WHERE status = 'active';
UPDATE members SET password_hash = '', totp_secret = '', totp_last_step = 0;

CREATE INDEX members_person ON members(person_id);
CREATE UNIQUE INDEX members_workspace_person ON members(workspace_id, person_id) WHERE person_id <> '';

-- Workspaces made by an open sign-up wait for their owner's e-mail
-- verification (verification_required 1) before they can do anything.
ALTER TABLE workspaces ADD COLUMN verification_required INTEGER NOT NULL DEFAULT 0;

-- A deleted workspace keeps its row (the ledger's entries and the audit log
-- refer to it) with deleted_at set; it has no members, keys or sessions.
ALTER TABLE workspaces ADD COLUMN deleted_at TEXT NOT NULL DEFAULT '';
