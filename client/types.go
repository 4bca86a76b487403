package client

import (
	"encoding/json"
	"time"
)

// The types mirror the API's JSON (the OpenAPI document at
// /api/openapi.json); TestTypesMatchServer holds every field to the
// server's own types.

// WhoAmI is the answer of GET /api/workspace.
type WhoAmI struct {
	Workspace Workspace `json:"workspace"`
	You       You       `json:"you"`
}

// Workspace is the caller's workspace.
type Workspace struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Plan      string    `json:"plan"`
	CreatedAt time.Time `json:"createdAt"`
}

// You describes the caller.
type You struct {
	MemberID string `json:"memberId"`
	// Role is viewer, developer, admin or owner.
	Role string `json:"role"`
	// Via is the key kind or session.
	Via       string `json:"via"`
	KeyPrefix string `json:"keyPrefix,omitempty"`
	// ProjectID is set for a key limited to one project.
	ProjectID string `json:"projectId,omitempty"`
}

// Project is a project.
type Project struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Slug string `json:"slug"`
	// URL is the project's address, https://<slug>.<apps domain>.
	URL string `json:"url"`
	// LiveURL is URL once a deploy is live, else nil.
	LiveURL   *string   `json:"live_url"`
	RepoURL   string    `json:"repoUrl"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ProjectDetail is the answer of GET /api/projects/{id}.
type ProjectDetail struct {
	Project      Project        `json:"project"`
	Serving      Serving        `json:"serving"`
	DeployAction DeployAction   `json:"deployAction"`
	Services     map[string]int `json:"services"`
}

// Serving is what a project serves: state not_deployed, deploying, live,
// down or failed, and the serving deployment (else the latest attempt).
type Serving struct {
	State      string      `json:"state"`
	Deployment *Deployment `json:"deployment"`
}

// DeployAction says what POST /api/projects/{id}/deploy would do.
type DeployAction struct {
	Kind        string `json:"kind"`
	Description string `json:"description"`
	RepoID      string `json:"repoId,omitempty"`
	Commit      int    `json:"commit,omitempty"`
}

// Repo is a repo.
type Repo struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Commits     int       `json:"commits"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// Commit is one numbered snapshot of a repo.
type Commit struct {
	Number  int    `json:"commit"`
	Message string `json:"message"`
	Files   int    `json:"files"`
	Size    int64  `json:"size"`
	// StoredBytes is what the push added to storage.
	StoredBytes int64     `json:"storedBytes"`
	Author      string    `json:"author"`
	CreatedAt   time.Time `json:"createdAt"`
}

// RepoDetail is the answer of GET /api/repos/{id}: the history newest
// first.
type RepoDetail struct {
	Repo    Repo     `json:"repo"`
	Commits []Commit `json:"commits"`
}

// Tree is the file list of a commit.
type Tree struct {
	RepoID string     `json:"repoId"`
	Commit int        `json:"commit"`
	Files  []TreeFile `json:"files"`
}

// TreeFile is one file of a commit.
type TreeFile struct {
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	Binary   bool   `json:"binary"`
	Readable bool   `json:"readable"`
	Reason   string `json:"reason,omitempty"`
}

// Deployment is one deploy of a project.
type Deployment struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	RepoID    string `json:"repoId,omitempty"`
	RepoName  string `json:"repoName,omitempty"`
	Commit    int    `json:"commit"`
	// Number is the deployment's place among its project's deployments;
	// it names its own address.
	Number int `json:"number"`
	// Preview is set on a preview that has not been promoted.
	Preview bool `json:"preview"`
	// PreviewURL is the deployment's own address
	// (https://<number>--<slug>.<apps-domain>, noindex), while it has one.
	PreviewURL string `json:"previewUrl,omitempty"`
	// Source is repo or redeploy.
	Source string `json:"source"`
	// Kind is static, app, worker or function.
	Kind string `json:"kind"`
	// State is deploying, live, preview, inactive or failed.
	State      string     `json:"state"`
	Rollback   bool       `json:"rollback"`
	Error      string     `json:"error,omitempty"`
	EnvKeys    []string   `json:"envKeys"`
	Files      int        `json:"files"`
	Size       int64      `json:"size"`
	Actor      string     `json:"actor"`
	CreatedAt  time.Time  `json:"createdAt"`
	FinishedAt *time.Time `json:"finishedAt"`
}

// Deployment states.
const (
	StateDeploying = "deploying"
	StateLive      = "live"
	StateInactive  = "inactive"
	StateFailed    = "failed"
	// StatePreview is a ready preview: it answers at its own address only.
	StatePreview = "preview"
)

// DeploymentDetail is the answer of GET /api/deployments/{id}.
type DeploymentDetail struct {
	Deployment Deployment     `json:"deployment"`
	Log        []LogLine      `json:"log"`
	Files      []DeployedFile `json:"files"`
	Output     []OutputLine   `json:"output"`
}

// LogLine is one line of a deploy log.
type LogLine struct {
	At   time.Time `json:"at"`
	Line string    `json:"line"`
}

// OutputLine is one line a running deployment printed.
type OutputLine struct {
	At     time.Time `json:"at"`
	Stream string    `json:"stream"`
	Line   string    `json:"line"`
}

// DeployedFile is one file a deployment serves or keeps.
type DeployedFile struct {
	Path        string `json:"path"`
	Size        int64  `json:"size"`
	ContentType string `json:"contentType"`
	SHA256      string `json:"sha256"`
}

// Variable is a project's environment variable.
type Variable struct {
	ID        string    `json:"id"`
	Key       string    `json:"key"`
	Value     string    `json:"value"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// EnvAnswer is the answer of setting a variable.
type EnvAnswer struct {
	Variable Variable `json:"variable"`
	Created  bool     `json:"created"`
	// FunctionsBehind names deployments still running older values.
	FunctionsBehind []string `json:"functions_behind"`
	Note            string   `json:"note,omitempty"`
}

// QueryResult is the answer of a single SQL query.
type QueryResult struct {
	// Results are the rows of the last statement, one object per row.
	Results []map[string]any `json:"results"`
	// Statements is how many statements ran.
	Statements int `json:"statements"`
	// Meta is what they did (changes, last_row_id, rows read and written).
	Meta map[string]json.RawMessage `json:"meta"`
}
