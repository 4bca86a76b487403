-- agent_runs.seq orders an agent's runs in creation order where created_at
-- ties (it replaces ORDER BY rowid, which PostgreSQL has not): each insert
-- takes the agent's largest seq plus one.
ALTER TABLE agent_runs ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
UPDATE agent_runs SET seq = rowid;
CREATE INDEX agent_runs_agent_seq ON agent_runs(agent_id, seq);
