-- E-mail bounces and complaints (controlplane/mail).
--
-- verp_token is the unguessable id in a message's envelope sender
-- (bounces+<token>@<bounce domain>): a delivery status notification or a
-- feedback report sent back to that address names the message. bounce_type
-- is '' until a report arrives: bounce (a recipient refused for good),
-- soft_bounce (given up with a temporary status), delayed, or complaint;
-- the diagnostic is the remote server's words.
ALTER TABLE mail_messages ADD COLUMN verp_token TEXT NOT NULL DEFAULT '';
ALTER TABLE mail_messages ADD COLUMN bounce_type TEXT NOT NULL DEFAULT '';
ALTER TABLE mail_messages ADD COLUMN bounce_recipient TEXT NOT NULL DEFAULT '';
ALTER TABLE mail_messages ADD COLUMN bounce_status TEXT NOT NULL DEFAULT '';
ALTER TABLE mail_messages ADD COLUMN bounce_diagnostic TEXT NOT NULL DEFAULT '';
ALTER TABLE mail_messages ADD COLUMN bounced_at TEXT NOT NULL DEFAULT '';
CREATE INDEX mail_messages_verp ON mail_messages(verp_token);

-- Every report received, per recipient: what the attention list counts.
CREATE TABLE mail_events (
	id            TEXT PRIMARY KEY,
	message_id    TEXT NOT NULL,
	workspace_id  TEXT NOT NULL DEFAULT '',
	project_id    TEXT NOT NULL DEFAULT '',
	kind          TEXT NOT NULL CHECK (kind IN ('bounce','soft_bounce','delayed','complaint')),
	recipient     TEXT NOT NULL,
	status        TEXT NOT NULL DEFAULT '',
	diagnostic    TEXT NOT NULL DEFAULT '',
	created_at    TEXT NOT NULL
);
CREATE INDEX mail_events_workspace ON mail_events(workspace_id, created_at);
CREATE INDEX mail_events_project ON mail_events(project_id);

-- A project's suppressed recipients: sends to them are refused until the
-- address is removed from the list.
CREATE TABLE mail_suppressions (
	project_id    TEXT NOT NULL,
	address       TEXT NOT NULL,
	workspace_id  TEXT NOT NULL,
	reason        TEXT NOT NULL CHECK (reason IN ('bounce','complaint')),
	message_id    TEXT NOT NULL DEFAULT '',
	diagnostic    TEXT NOT NULL DEFAULT '',
	created_at    TEXT NOT NULL,
	PRIMARY KEY (project_id, address)
);
