-- Certificates of custom domains obtained ahead of their first visitor
-- (controlplane/domains): per host of a verified domain, the last order's
-- outcome, the failures in a row and when the next attempt is due (the
-- backoff after a failure).
CREATE TABLE domain_certs (
	host          TEXT PRIMARY KEY,
	domain_id     TEXT NOT NULL,
	last_error    TEXT NOT NULL DEFAULT '',
	failures      INTEGER NOT NULL DEFAULT 0,
	next_try      TEXT NOT NULL DEFAULT '',
	not_after     TEXT NOT NULL DEFAULT '',
	updated_at    TEXT NOT NULL
);
CREATE INDEX domain_certs_domain ON domain_certs(domain_id);
