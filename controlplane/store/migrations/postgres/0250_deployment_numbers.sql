-- Deployment addresses (controlplane/deploys): number is the deployment's
-- place among its project's deployments (1, 2, 3 ...), which names its own
-- address https://<number>--<slug>.<apps-domain>; preview is 1 for a
-- deployment made with preview: true that has not been promoted (it never
-- replaced production). Existing deployments are numbered in the order
-- they were made.
ALTER TABLE deployments ADD COLUMN number BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN preview BIGINT NOT NULL DEFAULT 0;
UPDATE deployments SET number = (SELECT COUNT(*) FROM deployments d2 WHERE d2.project_id = deployments.project_id
	AND (d2.created_at < deployments.created_at OR (d2.created_at = deployments.created_at AND d2.id <= deployments.id)));
CREATE UNIQUE INDEX deployments_project_number ON deployments(project_id, number);
