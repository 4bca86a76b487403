-- agent_runs.event_key identifies a signed app event run by what its
-- signature covers: "<signed timestamp>.<hex SHA-256 of the body>"
-- (controlplane/agents). The delivery id is not signed, so a signed event
-- sent again under another delivery id answers the first run instead of
-- starting another.
ALTER TABLE agent_runs ADD COLUMN event_key TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX agent_runs_event_key ON agent_runs(agent_id, event_key) WHERE event_key <> '';
