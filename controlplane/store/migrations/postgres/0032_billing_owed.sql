-- PostgreSQL twin of ../0032_billing_owed.sql.

-- What a workspace owes (controlplane/billing): what settled requests used
-- above what their reservation, the included credit and the Balance could
-- pay then. Each reservation keeps its part in billing_reservations.uncollected;
-- billing_accounts.owed is their sum, counted against the Balance (available
-- = balance - reserved - owed) and paid by the next load with charge entries
-- against those reservations, oldest first.
ALTER TABLE billing_accounts ADD COLUMN owed BIGINT NOT NULL DEFAULT 0 CHECK (owed >= 0);
UPDATE billing_accounts SET owed = coalesce((SELECT sum(r.uncollected) FROM billing_reservations r
	WHERE r.workspace_id = billing_accounts.workspace_id), 0);
CREATE INDEX billing_reservations_owed ON billing_reservations(workspace_id, created_at) WHERE uncollected > 0;
