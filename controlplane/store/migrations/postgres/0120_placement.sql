-- PostgreSQL twin of ../0120_placement.sql: the same tables, columns and names.

-- Placement: which control-plane node owns each file-backed resource (a
-- customer database, later a vector collection). Every replica registers
-- itself in nodes with the address the others reach it at and beats a
-- heartbeat; placements names the owner of each resource. A request that
-- reaches another replica is forwarded to the owner (controlplane/placement).

CREATE TABLE nodes (
	id         TEXT PRIMARY KEY,
	url        TEXT NOT NULL,
	started_at TEXT NOT NULL,
	last_seen  TEXT NOT NULL
);

CREATE TABLE placements (
	kind        TEXT NOT NULL,
	resource_id TEXT NOT NULL,
	node_id     TEXT NOT NULL REFERENCES nodes(id),
	created_at  TEXT NOT NULL,
	moved_at    TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (kind, resource_id)
);
CREATE INDEX placements_node ON placements(node_id, kind);
