-- The billing ledger (controlplane/billing), in integer micro-dollars.
-- billing_entries is the append-only ledger; billing_accounts and
-- billing_months are derived from it, changed only in the transaction that
-- appends the entry (billing.Verify recomputes them).

CREATE TABLE billing_accounts (
	workspace_id TEXT PRIMARY KEY REFERENCES workspaces(id),
	-- balance: money loaded and not yet charged, including what is held.
	balance      INTEGER NOT NULL DEFAULT 0 CHECK (balance >= 0),
	-- reserved: the part of balance held by open reservations.
	reserved     INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0 AND reserved <= balance),
	-- spend_limit: most that may be charged to the Balance in a UTC month; NULL for none.
	spend_limit  INTEGER CHECK (spend_limit IS NULL OR spend_limit >= 0),
	created_at   TEXT NOT NULL,
	updated_at   TEXT NOT NULL
);

-- Per UTC month and pool: what was charged (used) and what is held (reserved).
-- Pools: ai_credit (included monthly AI credit), usage_credit (team's monthly
-- usage credit, pays storage first) and balance (month spend from the Balance).
CREATE TABLE billing_months (
	workspace_id TEXT NOT NULL REFERENCES billing_accounts(workspace_id),
	month        TEXT NOT NULL,
	pool         TEXT NOT NULL CHECK (pool IN ('ai_credit','usage_credit','balance')),
	used         INTEGER NOT NULL DEFAULT 0 CHECK (used >= 0),
	reserved     INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0),
	PRIMARY KEY (workspace_id, month, pool)
);

CREATE TABLE billing_entries (
	seq            INTEGER PRIMARY KEY AUTOINCREMENT,
	id             TEXT NOT NULL UNIQUE,
	workspace_id   TEXT NOT NULL REFERENCES billing_accounts(workspace_id),
	at             TEXT NOT NULL,
	month          TEXT NOT NULL,
	pool           TEXT NOT NULL CHECK (pool IN ('ai_credit','usage_credit','balance')),
	kind           TEXT NOT NULL CHECK (kind IN ('load','hold','release','charge')),
	amount         INTEGER NOT NULL CHECK (amount > 0),
	project_id     TEXT NOT NULL DEFAULT '',
	purpose        TEXT NOT NULL DEFAULT '',
	ref            TEXT NOT NULL DEFAULT '',
	reservation_id TEXT NOT NULL DEFAULT '',
	actor          TEXT NOT NULL DEFAULT '',
	reason         TEXT NOT NULL DEFAULT ''
);
CREATE INDEX billing_entries_workspace ON billing_entries(workspace_id, seq);
CREATE TRIGGER billing_entries_no_update BEFORE UPDATE ON billing_entries
BEGIN SELECT RAISE(ABORT, 'billing_entries is append-only'); END;
CREATE TRIGGER billing_entries_no_delete BEFORE DELETE ON billing_entries
BEGIN SELECT RAISE(ABORT, 'billing_entries is append-only'); END;

CREATE TABLE billing_reservations (
	id           TEXT PRIMARY KEY,
	workspace_id TEXT NOT NULL REFERENCES billing_accounts(workspace_id),
	project_id   TEXT NOT NULL DEFAULT '',
	purpose      TEXT NOT NULL,
	ref          TEXT NOT NULL DEFAULT '',
	month        TEXT NOT NULL,
	credit_pool  TEXT NOT NULL CHECK (credit_pool IN ('ai_credit','usage_credit')),
	amount       INTEGER NOT NULL CHECK (amount > 0),
	held_credit  INTEGER NOT NULL CHECK (held_credit >= 0),
	held_balance INTEGER NOT NULL CHECK (held_balance >= 0),
	state        TEXT NOT NULL CHECK (state IN ('open','settled','released','expired')),
	charged      INTEGER NOT NULL DEFAULT 0,
	uncollected  INTEGER NOT NULL DEFAULT 0,
	created_at   TEXT NOT NULL,
	expires_at   TEXT NOT NULL,
	closed_at    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX billing_reservations_open ON billing_reservations(state, expires_at);

-- Direct charges with a ref, so that a retried daily charge is charged once.
CREATE TABLE billing_charges (
	workspace_id TEXT NOT NULL,
	purpose      TEXT NOT NULL,
	ref          TEXT NOT NULL,
	charged      INTEGER NOT NULL,
	at           TEXT NOT NULL,
	PRIMARY KEY (workspace_id, purpose, ref)
);
