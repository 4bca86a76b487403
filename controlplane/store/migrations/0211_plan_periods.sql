-- What each workspace paid for its current plan (controlplane/billing):
-- the amount, from when and until the end of the UTC month it covers. A
-- plan change credits the unused part of paid and replaces the row.

CREATE TABLE billing_plan_periods (
	workspace_id TEXT PRIMARY KEY REFERENCES billing_accounts(workspace_id),
	plan         TEXT NOT NULL,
	paid         INTEGER NOT NULL CHECK (paid >= 0),
	covered_from TEXT NOT NULL,
	period_end   TEXT NOT NULL,
	updated_at   TEXT NOT NULL
);
CREATE INDEX billing_plan_periods_end ON billing_plan_periods(period_end);
