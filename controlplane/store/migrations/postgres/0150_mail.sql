-- PostgreSQL twin of ../0150_mail.sql: the same tables, columns and names.

-- E-mail (controlplane/mail): the queue of messages the platform and its
-- projects send, and each project's sending domains.
--
-- A message is kept with its recipients, subject and state; its content
-- (text and HTML) is sealed and dropped once the message is sent or failed.
-- workspace_id and project_id are '' for the platform's own mail
-- (verification tokens, invitations). recipient_count is what the per-plan
-- daily limit and the emails metric count. sending_until is the claim of
-- the attempt under way, so two attempts never deliver one message at once.
CREATE TABLE mail_messages (
	id               TEXT PRIMARY KEY,
	workspace_id     TEXT NOT NULL DEFAULT '',
	project_id       TEXT NOT NULL DEFAULT '',
	source           TEXT NOT NULL,
	idempotency_key  TEXT NOT NULL DEFAULT '',
	from_addr        TEXT NOT NULL,
	envelope_from    TEXT NOT NULL,
	reply_to         TEXT NOT NULL DEFAULT '',
	requested_reply  TEXT NOT NULL DEFAULT '',
	recipients       TEXT NOT NULL,
	recipient_count  BIGINT NOT NULL,
	subject          TEXT NOT NULL,
	content_sealed   BYTEA,
	size_bytes       BIGINT NOT NULL,
	domain_id        TEXT NOT NULL DEFAULT '',
	message_id       TEXT NOT NULL,
	state            TEXT NOT NULL CHECK (state IN ('queued','sent','failed')),
	attempts         BIGINT NOT NULL DEFAULT 0,
	last_error       TEXT NOT NULL DEFAULT '',
	smtp_code        BIGINT NOT NULL DEFAULT 0,
	sending_until    TEXT NOT NULL DEFAULT '',
	created_at       TEXT NOT NULL,
	updated_at       TEXT NOT NULL,
	sent_at          TEXT NOT NULL DEFAULT '',
	failed_at        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX mail_messages_project ON mail_messages(project_id, created_at, id);
CREATE INDEX mail_messages_quota ON mail_messages(workspace_id, created_at);
CREATE INDEX mail_messages_failed ON mail_messages(workspace_id, state, failed_at);
CREATE UNIQUE INDEX mail_messages_idempotency ON mail_messages(project_id, idempotency_key) WHERE idempotency_key <> '';

-- A sending domain of a project: the DKIM key pair made for it (the
-- private key sealed), the selector its public key is published under, and
-- what the last look at its DNS records found.
CREATE TABLE mail_domains (
	id               TEXT PRIMARY KEY,
	workspace_id     TEXT NOT NULL,
	project_id       TEXT NOT NULL,
	name             TEXT NOT NULL,
	selector         TEXT NOT NULL,
	dkim_public      TEXT NOT NULL,
	dkim_key_sealed  BYTEA NOT NULL,
	state            TEXT NOT NULL CHECK (state IN ('pending','verified','failed')),
	spf_status       TEXT NOT NULL DEFAULT 'pending',
	dkim_status      TEXT NOT NULL DEFAULT 'pending',
	last_error       TEXT NOT NULL DEFAULT '',
	checked_at       TEXT NOT NULL DEFAULT '',
	verified_at      TEXT NOT NULL DEFAULT '',
	created_at       TEXT NOT NULL,
	updated_at       TEXT NOT NULL
);
CREATE UNIQUE INDEX mail_domains_name ON mail_domains(project_id, name);
CREATE INDEX mail_domains_workspace ON mail_domains(workspace_id);
