-- Payment mail (controlplane/payments): the health of each payment
-- account's webhook endpoint, so that the workspace's owners get one notice
-- when it keeps failing. consecutive_failures counts failed delivery
-- attempts since the last success to url (a new url starts again at 0);
-- noticed_at is when the last notice went (at most one a day per endpoint).
-- Rows go with their account. Times are TEXT in store.TimeFormat ('' for never).
CREATE TABLE payment_webhook_health (
	account_id           TEXT PRIMARY KEY REFERENCES payment_accounts(id) ON DELETE CASCADE,
	url                  TEXT NOT NULL,
	consecutive_failures INTEGER NOT NULL DEFAULT 0,
	last_error           TEXT NOT NULL DEFAULT '',
	noticed_at           TEXT NOT NULL DEFAULT '',
	updated_at           TEXT NOT NULL
);
