package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// Workspace answers GET /api/workspace: the caller's workspace and who the
// key belongs to (a cheap check that a key works).
func (c *Client) Workspace(ctx context.Context) (WhoAmI, error) {
	var out WhoAmI
	return out, c.get(ctx, "/api/workspace", &out)
}

// Projects lists the workspace's projects.
func (c *Client) Projects(ctx context.Context) ([]Project, error) {
	var out struct {
		Projects []Project `json:"projects"`
	}
	return out.Projects, c.get(ctx, "/api/projects", &out)
}

// Project reads a project, what it serves and what Deploy would do.
func (c *Client) Project(ctx context.Context, id string) (ProjectDetail, error) {
	var out ProjectDetail
	return out, c.get(ctx, "/api/projects/"+esc(id), &out)
}

// CreateProject makes a project.
func (c *Client) CreateProject(ctx context.Context, name string) (Project, error) {
	var out struct {
		Project Project `json:"project"`
	}
	return out.Project, c.post(ctx, "/api/projects", map[string]string{"name": name}, &out)
}

// SetProjectRepoURL sets a project's repoUrl; an address ending in
// /repos/<id> links the project to that workspace repo (what its Deploy
// rebuilds).
func (c *Client) SetProjectRepoURL(ctx context.Context, id, repoURL string) (Project, error) {
	var out struct {
		Project Project `json:"project"`
	}
	return out.Project, c.do(ctx, request{method: http.MethodPatch, path: "/api/projects/" + esc(id), json: map[string]string{"repoUrl": repoURL}}, &out)
}

// RepoURL is the address a project's repoUrl holds to link it to a repo
// of this API.
func (c *Client) RepoURL(repoID string) string { return c.BaseURL + "/api/repos/" + esc(repoID) }

// Repos lists the workspace's repos.
func (c *Client) Repos(ctx context.Context) ([]Repo, error) {
	var out struct {
		Repos []Repo `json:"repos"`
	}
	return out.Repos, c.get(ctx, "/api/repos", &out)
}

// Repo reads a repo and its history, newest first.
func (c *Client) Repo(ctx context.Context, id string) (RepoDetail, error) {
	var out RepoDetail
	return out, c.get(ctx, "/api/repos/"+esc(id), &out)
}

// CreateRepo makes an empty repo (409 repo_exists for a name in use).
func (c *Client) CreateRepo(ctx context.Context, name, description string) (Repo, error) {
	var out struct {
		Repo Repo `json:"repo"`
	}
	return out.Repo, c.post(ctx, "/api/repos", map[string]string{"name": name, "description": description}, &out)
}

// Files lists the files of a commit (0 for the latest).
func (c *Client) Files(ctx context.Context, repoID string, commit int) (Tree, error) {
	var out Tree
	q := url.Values{}
	if commit > 0 {
		q.Set("commit", strconv.Itoa(commit))
	}
	return out, c.do(ctx, request{method: http.MethodGet, path: "/api/repos/" + esc(repoID) + "/files", query: q}, &out)
}

// Deploy deploys a commit of a repo (0 for the latest) to a project; an
// older commit than the serving one is a rollback. The deployment starts
// in state deploying: Follow it.
func (c *Client) Deploy(ctx context.Context, repoID, projectID string, commit int) (Deployment, error) {
	return c.deploy(ctx, repoID, projectID, commit, false)
}

// DeployPreview deploys a commit (0: the latest) of a static site as a
// preview: it answers at its own address (Deployment.PreviewURL) and
// production keeps serving until Promote.
func (c *Client) DeployPreview(ctx context.Context, repoID, projectID string, commit int) (Deployment, error) {
	return c.deploy(ctx, repoID, projectID, commit, true)
}

func (c *Client) deploy(ctx context.Context, repoID, projectID string, commit int, preview bool) (Deployment, error) {
	var out struct {
		Deployment Deployment `json:"deployment"`
	}
	body := map[string]any{"projectId": projectID}
	if commit > 0 {
		body["commit"] = commit
	}
	if preview {
		body["preview"] = true
	}
	return out.Deployment, c.post(ctx, "/api/repos/"+esc(repoID)+"/deploy", body, &out)
}

// Promote makes a ready static deployment (a preview, or an earlier one)
// what its project serves, without building it again.
func (c *Client) Promote(ctx context.Context, deploymentID string) (Deployment, error) {
	var out struct {
		Deployment Deployment `json:"deployment"`
	}
	return out.Deployment, c.post(ctx, "/api/deployments/"+esc(deploymentID)+"/promote", nil, &out)
}

// Redeploy does what the project's deployAction says.
func (c *Client) Redeploy(ctx context.Context, projectID string) (Deployment, error) {
	var out struct {
		Deployment Deployment `json:"deployment"`
	}
	return out.Deployment, c.post(ctx, "/api/projects/"+esc(projectID)+"/deploy", nil, &out)
}

// Deployments lists a project's deployments, newest first (at most 50).
func (c *Client) Deployments(ctx context.Context, projectID string) ([]Deployment, error) {
	var out struct {
		Deployments []Deployment `json:"deployments"`
	}
	return out.Deployments, c.get(ctx, "/api/projects/"+esc(projectID)+"/deployments", &out)
}

// Deployment reads a deployment with its log and files.
func (c *Client) Deployment(ctx context.Context, id string) (DeploymentDetail, error) {
	var out DeploymentDetail
	return out, c.get(ctx, "/api/deployments/"+esc(id), &out)
}

// Env lists a project's variables with their values (developers and
// above).
func (c *Client) Env(ctx context.Context, projectID string) ([]Variable, error) {
	var out struct {
		Variables []Variable `json:"variables"`
	}
	return out.Variables, c.get(ctx, "/api/projects/"+esc(projectID)+"/env", &out)
}

// SetEnv creates or replaces a variable; it reaches what the project runs
// at its next deploy.
func (c *Client) SetEnv(ctx context.Context, projectID, key, value string) (EnvAnswer, error) {
	var out EnvAnswer
	return out, c.post(ctx, "/api/projects/"+esc(projectID)+"/env", map[string]string{"key": key, "value": value}, &out)
}

// DeleteEnv removes a variable by its id.
func (c *Client) DeleteEnv(ctx context.Context, projectID, envID string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/projects/" + esc(projectID) + "/env/" + esc(envID)}, nil)
}

// Query runs SQL (one or more statements, one transaction) on a database;
// params bind its placeholders in order.
func (c *Client) Query(ctx context.Context, databaseID, sql string, params ...any) (QueryResult, error) {
	var out QueryResult
	body := map[string]any{"sql": sql}
	if len(params) > 0 {
		body["params"] = params
	}
	return out, c.post(ctx, "/api/databases/"+esc(databaseID), body, &out)
}
