-- Twin of ../0091_agents_run_seq.sql.
ALTER TABLE agent_runs ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
UPDATE agent_runs r SET seq = o.n FROM (
	SELECT id, row_number() OVER (PARTITION BY agent_id ORDER BY created_at, id) AS n FROM agent_runs
) o WHERE o.id = r.id;
CREATE INDEX agent_runs_agent_seq ON agent_runs(agent_id, seq);
