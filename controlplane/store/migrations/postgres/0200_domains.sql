-- PostgreSQL twin of ../0200_domains.sql: the same tables, columns and names.

-- Custom domains (controlplane/domains): names projects answer at besides
-- <slug>.<apps domain>.
--
-- A domain is added pending with a random token to publish in a TXT record
-- at _platform-challenge.<name>; once the record is found the domain is
-- claimed: its hosts (the name, and www.<name> for an apex with a redirect)
-- go into domain_hosts, whose primary key lets one project in the whole
-- installation hold a host. After that, each look at its A/AAAA or CNAME
-- records makes it verified or misconfigured; what is wrong is kept in
-- words (problem).
CREATE TABLE domains (
	id            TEXT PRIMARY KEY,
	workspace_id  TEXT NOT NULL,
	project_id    TEXT NOT NULL,
	name          TEXT NOT NULL,
	apex          BIGINT NOT NULL DEFAULT 0,
	redirect      TEXT NOT NULL DEFAULT '' CHECK (redirect IN ('','www','apex')),
	token         TEXT NOT NULL,
	state         TEXT NOT NULL CHECK (state IN ('pending','verified','misconfigured')),
	records       TEXT NOT NULL DEFAULT '',
	problem       TEXT NOT NULL DEFAULT '',
	checked_at    TEXT NOT NULL DEFAULT '',
	verified_at   TEXT NOT NULL DEFAULT '',
	created_at    TEXT NOT NULL,
	updated_at    TEXT NOT NULL
);
CREATE UNIQUE INDEX domains_project_name ON domains(project_id, name);
CREATE INDEX domains_workspace ON domains(workspace_id, state);
CREATE INDEX domains_name ON domains(name);

-- The hosts of claimed domains: one row per host, held by one domain.
CREATE TABLE domain_hosts (
	host        TEXT PRIMARY KEY,
	domain_id   TEXT NOT NULL,
	project_id  TEXT NOT NULL,
	redirect_to TEXT NOT NULL DEFAULT ''
);
CREATE INDEX domain_hosts_domain ON domain_hosts(domain_id);
