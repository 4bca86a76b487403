-- PostgreSQL twin of ../0060_payments.sql: the same tables, columns and names.
-- Types: TEXT stays TEXT (times are RFC 3339 text on both engines),
-- INTEGER is BIGINT (booleans too, 0/1), BLOB is BYTEA, REAL is DOUBLE
-- PRECISION, AUTOINCREMENT is an identity column.

-- Payments: one payment account per project, checkout sessions, payments,
-- refunds, withdrawals, the double-entry earnings ledger, webhook events
-- with their delivery state, and the built-in test processor's own records.
-- Money is integer cents everywhere.

CREATE TABLE payment_accounts (
	id                  TEXT PRIMARY KEY,
	workspace_id        TEXT NOT NULL,
	project_id          TEXT NOT NULL UNIQUE,
	status              TEXT NOT NULL CHECK (status IN ('enabled','disabled')),
	processor           TEXT NOT NULL,
	livemode            BIGINT NOT NULL DEFAULT 0,
	webhook_url         TEXT NOT NULL DEFAULT '',
	webhook_secret      BYTEA,
	webhook_secret_hint TEXT NOT NULL DEFAULT '',
	payout_ref          TEXT NOT NULL DEFAULT '',
	created_at          TEXT NOT NULL,
	updated_at          TEXT NOT NULL
);
CREATE INDEX payment_accounts_workspace ON payment_accounts(workspace_id, created_at);

CREATE TABLE payment_sessions (
	id              TEXT PRIMARY KEY,
	account_id      TEXT NOT NULL REFERENCES payment_accounts(id) ON DELETE CASCADE,
	workspace_id    TEXT NOT NULL,
	project_id      TEXT NOT NULL,
	processor_ref   TEXT NOT NULL DEFAULT '',
	url             TEXT NOT NULL DEFAULT '',
	state           TEXT NOT NULL CHECK (state IN ('open','paid','expired')),
	amount_cents    BIGINT NOT NULL CHECK (amount_cents > 0),
	fee_cents       BIGINT NOT NULL CHECK (fee_cents >= 0),
	currency        TEXT NOT NULL DEFAULT 'usd',
	description     TEXT NOT NULL DEFAULT '',
	customer_email  TEXT NOT NULL DEFAULT '',
	reference       TEXT NOT NULL DEFAULT '',
	metadata        TEXT NOT NULL DEFAULT '{}',
	success_url     TEXT NOT NULL DEFAULT '',
	cancel_url      TEXT NOT NULL DEFAULT '',
	idempotency_key TEXT NOT NULL DEFAULT '',
	request_hash    TEXT NOT NULL DEFAULT '',
	livemode        BIGINT NOT NULL DEFAULT 0,
	created_at      TEXT NOT NULL,
	expires_at      TEXT NOT NULL,
	paid_at         TEXT NOT NULL DEFAULT '',
	payment_id      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX payment_sessions_list ON payment_sessions(account_id, created_at, id);
CREATE INDEX payment_sessions_open ON payment_sessions(project_id, state, expires_at);
CREATE UNIQUE INDEX payment_sessions_idem ON payment_sessions(account_id, idempotency_key) WHERE idempotency_key <> '';

CREATE TABLE payment_payments (
	id             TEXT PRIMARY KEY,
	account_id     TEXT NOT NULL REFERENCES payment_accounts(id) ON DELETE CASCADE,
	workspace_id   TEXT NOT NULL,
	project_id     TEXT NOT NULL,
	session_id     TEXT NOT NULL UNIQUE,
	session_key    TEXT NOT NULL DEFAULT '',
	processor_ref  TEXT NOT NULL DEFAULT '',
	reference      TEXT NOT NULL DEFAULT '',
	metadata       TEXT NOT NULL DEFAULT '{}',
	amount_cents   BIGINT NOT NULL CHECK (amount_cents > 0),
	fee_cents      BIGINT NOT NULL CHECK (fee_cents >= 0),
	net_cents      BIGINT NOT NULL,
	refunded_cents BIGINT NOT NULL DEFAULT 0 CHECK (refunded_cents >= 0 AND refunded_cents <= amount_cents),
	currency       TEXT NOT NULL DEFAULT 'usd',
	customer_email TEXT NOT NULL DEFAULT '',
	country        TEXT NOT NULL DEFAULT '',
	status         TEXT NOT NULL CHECK (status IN ('succeeded','partially_refunded','refunded','disputed','dispute_lost')),
	dispute_status TEXT NOT NULL DEFAULT '' CHECK (dispute_status IN ('','open','won','lost')),
	disputed_at    TEXT NOT NULL DEFAULT '',
	released       BIGINT NOT NULL DEFAULT 0,
	livemode       BIGINT NOT NULL DEFAULT 0,
	created_at     TEXT NOT NULL,
	available_at   TEXT NOT NULL
);
CREATE INDEX payment_payments_list ON payment_payments(account_id, created_at, id);
CREATE INDEX payment_payments_workspace ON payment_payments(workspace_id, created_at, id);
CREATE INDEX payment_payments_release ON payment_payments(account_id, released, available_at);

CREATE TABLE payment_refunds (
	id            TEXT PRIMARY KEY,
	payment_id    TEXT NOT NULL REFERENCES payment_payments(id) ON DELETE CASCADE,
	account_id    TEXT NOT NULL,
	workspace_id  TEXT NOT NULL,
	amount_cents  BIGINT NOT NULL CHECK (amount_cents > 0),
	status        TEXT NOT NULL CHECK (status IN ('pending','succeeded','failed')),
	processor_ref TEXT NOT NULL DEFAULT '',
	last_error    TEXT NOT NULL DEFAULT '',
	created_at    TEXT NOT NULL,
	settled_at    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX payment_refunds_account ON payment_refunds(account_id, status);
CREATE INDEX payment_refunds_workspace ON payment_refunds(workspace_id, created_at);

CREATE TABLE payment_withdrawals (
	id            TEXT PRIMARY KEY,
	account_id    TEXT NOT NULL REFERENCES payment_accounts(id) ON DELETE CASCADE,
	workspace_id  TEXT NOT NULL,
	amount_cents  BIGINT NOT NULL CHECK (amount_cents > 0),
	status        TEXT NOT NULL CHECK (status IN ('pending','completed','failed')),
	processor_ref TEXT NOT NULL DEFAULT '',
	last_error    TEXT NOT NULL DEFAULT '',
	created_at    TEXT NOT NULL,
	settled_at    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX payment_withdrawals_workspace ON payment_withdrawals(workspace_id, created_at);
CREATE INDEX payment_withdrawals_account ON payment_withdrawals(account_id, status);

-- The earnings ledger: every movement of money is one row moving
-- amount_cents from the debit bucket to the credit bucket, so the buckets
-- always sum to zero and every figure of earnings is a sum of rows.
CREATE TABLE payment_ledger (
	seq           BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	account_id    TEXT NOT NULL REFERENCES payment_accounts(id) ON DELETE CASCADE,
	workspace_id  TEXT NOT NULL,
	payment_id    TEXT NOT NULL DEFAULT '',
	ref_id        TEXT NOT NULL DEFAULT '',
	kind          TEXT NOT NULL,
	debit         TEXT NOT NULL,
	credit        TEXT NOT NULL,
	amount_cents  BIGINT NOT NULL CHECK (amount_cents > 0),
	at            TEXT NOT NULL,
	CHECK (debit <> credit)
);
CREATE INDEX payment_ledger_account ON payment_ledger(account_id, payment_id);

-- Webhook events and their one delivery each (Service-Delivery is the
-- event id).
CREATE TABLE payment_events (
	id               TEXT PRIMARY KEY,
	account_id       TEXT NOT NULL REFERENCES payment_accounts(id) ON DELETE CASCADE,
	workspace_id     TEXT NOT NULL,
	type             TEXT NOT NULL,
	payment_id       TEXT NOT NULL DEFAULT '',
	body             BYTEA NOT NULL,
	created_at       TEXT NOT NULL,
	url              TEXT NOT NULL DEFAULT '',
	delivery_status  TEXT NOT NULL CHECK (delivery_status IN ('no_endpoint','pending','delivered','failed')),
	attempts         BIGINT NOT NULL DEFAULT 0,
	next_attempt_at  TEXT NOT NULL DEFAULT '',
	last_status_code BIGINT NOT NULL DEFAULT 0,
	last_error       TEXT NOT NULL DEFAULT '',
	delivered_at     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX payment_events_account ON payment_events(account_id, created_at);
CREATE INDEX payment_events_pending ON payment_events(delivery_status, next_attempt_at);

-- The built-in test processor's own books: what a real processor keeps on
-- its side (charges, refunds, disputes, payout accounts and payouts).
CREATE TABLE payment_test_charges (
	id           TEXT PRIMARY KEY,
	session_ref  TEXT NOT NULL,
	amount_cents BIGINT NOT NULL,
	card_last4   TEXT NOT NULL,
	email        TEXT NOT NULL DEFAULT '',
	country      TEXT NOT NULL DEFAULT '',
	status       TEXT NOT NULL CHECK (status IN ('succeeded','declined')),
	dispute      TEXT NOT NULL DEFAULT '' CHECK (dispute IN ('','open','won','lost')),
	created_at   TEXT NOT NULL
);
CREATE UNIQUE INDEX payment_test_charges_paid ON payment_test_charges(session_ref) WHERE status = 'succeeded';

CREATE TABLE payment_test_refunds (
	id              TEXT PRIMARY KEY,
	charge_id       TEXT NOT NULL,
	amount_cents    BIGINT NOT NULL,
	idempotency_key TEXT NOT NULL UNIQUE,
	created_at      TEXT NOT NULL
);

CREATE TABLE payment_test_payout_accounts (
	id         TEXT PRIMARY KEY,
	owner      TEXT NOT NULL UNIQUE,
	token      TEXT NOT NULL UNIQUE,
	created_at TEXT NOT NULL
);

CREATE TABLE payment_test_payouts (
	id              TEXT PRIMARY KEY,
	payout_account  TEXT NOT NULL,
	amount_cents    BIGINT NOT NULL,
	status          TEXT NOT NULL CHECK (status IN ('pending','paid','failed')),
	idempotency_key TEXT NOT NULL UNIQUE,
	created_at      TEXT NOT NULL
);
