// Package projects is the projects and environment variables area: projects
// with a permanent slug and address, their variables, and the deletion rules
// that take a project's resources with it.
package projects

import (
	"context"
	"time"
)

// Project is a project as the API shows it.
type Project struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	Slug           string    `json:"slug"`
	URL            string    `json:"url"`
	LiveURL        *string   `json:"live_url"`
	RepoURL        string    `json:"repoUrl"`
	RepoBranch     string    `json:"repoBranch"`
	MailSenderName string    `json:"mailSenderName"`
	MailFrom       string    `json:"mailFrom"`
	MailReplyTo    string    `json:"mailReplyTo"`
	Status         string    `json:"status"`
	TeardownError  string    `json:"teardownError,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	WorkspaceID    string    `json:"-"`
}

// Project statuses.
const (
	StatusActive         = "active"
	StatusTeardownFailed = "teardown_failed"
)

// Serving states.
const (
	NotDeployed = "not_deployed"
	Deploying   = "deploying"
	Live        = "live"
	Down        = "down"
	Failed      = "failed"
)

// Serving is what a project serves now: its state and the serving
// deployment (nil before the first deploy).
type Serving struct {
	State      string `json:"state"`
	Deployment any    `json:"deployment"`
}

// DeployAction says what Deploy will do for the project.
type DeployAction struct {
	// Kind is rebuild (the latest commit of the linked repository),
	// redeploy (the kept files of the serving deployment) or none.
	Kind        string `json:"kind"`
	Description string `json:"description"`
	RepoID      string `json:"repoId,omitempty"`
	Commit      int    `json:"commit,omitempty"`
}

// Blocker is a reason a project cannot be deleted yet, with what to do.
type Blocker struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Action  string `json:"action"`
}

// Dependent is an area holding resources of projects. Deleting a project
// asks every dependent for blockers first, then removes its resources.
type Dependent interface {
	// Name names the resources for teardown messages (e.g. "databases").
	Name() string
	// Blockers lists what stops the project being deleted now.
	Blockers(ctx context.Context, projectID string) ([]Blocker, error)
	// Remove deletes the project's resources; it must be safe to call again
	// after a partial failure.
	Remove(ctx context.Context, projectID string) error
}

// Deployments tells the projects area what other areas know of a project's
// deployments. Without one every project is not_deployed.
type Deployments interface {
	Serving(ctx context.Context, p Project) (Serving, *string, error)
	DeployAction(ctx context.Context, p Project) (DeployAction, error)
	// FunctionsBehind names the project's functions deployed with older
	// environment variables than the current ones.
	FunctionsBehind(ctx context.Context, projectID string) ([]string, error)
}

// Counter counts one kind of a project's services (vectors, agents, ...).
type Counter interface {
	// Service is the key in the services object.
	Service() string
	Count(ctx context.Context, projectID string) (int, error)
}

// ServiceKeys are the keys of the services object of a project read, in the
// spec's order; areas not built yet count zero.
var ServiceKeys = []string{"vectors", "memoryStores", "agents", "authPools", "media", "paymentAccount"}
