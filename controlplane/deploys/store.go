package deploys

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/rules"
)

// Deployment states as stored; the API shows ready ones as live (serving)
// or inactive.
const (
	stateDeploying = "deploying"
	stateReady     = "ready"
	stateFailed    = "failed"
)

// Deployment states as the API shows them.
const (
	StateDeploying = "deploying"
	StateLive      = "live"
	StateInactive  = "inactive"
	StateFailed    = "failed"
	// StatePreview is a preview deployment that is ready and has not
	// been promoted: it answers at its own address only.
	StatePreview = "preview"
)

// Deployment is a deployment as the API shows it.
type Deployment struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	RepoID    string `json:"repoId,omitempty"`
	RepoName  string `json:"repoName,omitempty"`
	// Commit is the repo commit deployed.
	Commit int `json:"commit"`
	// Number is the deployment's place among its project's deployments
	// (1, 2, 3 ...); it names the deployment's own address.
	Number int `json:"number"`
	// Preview is set on a deployment made with preview: true until it is
	// promoted: it never replaced production.
	Preview bool `json:"preview"`
	// PreviewURL is the deployment's own address,
	// https://<number>--<slug>.<apps-domain>, served with X-Robots-Tag:
	// noindex: set for a static site (that is ready or deploying) while it
	// is among its project's AddressedDeployments latest deployments.
	PreviewURL string `json:"previewUrl,omitempty"`
	// Source is repo (built from a commit) or redeploy (the kept files of
	// an earlier deployment).
	Source string `json:"source"`
	// Kind is static, app, worker or function.
	Kind string `json:"kind"`
	// Origin is the external origin requests are forwarded to (apps and
	// functions that run elsewhere).
	Origin string `json:"origin,omitempty"`
	Root   string `json:"root,omitempty"`
	// Run is the command of an app or worker program the platform runs.
	Run []string `json:"run,omitempty"`
	// Health is the health-check path of an app the platform runs.
	Health string `json:"health,omitempty"`
	// Module is the WASI module of a function the platform runs.
	Module string `json:"module,omitempty"`
	// State is deploying, live (the project serves it), preview (ready,
	// made with preview: true, never promoted), inactive (served before,
	// or never after a newer one) or failed.
	State string `json:"state"`
	// Rollback is true when an older commit replaced a newer one.
	Rollback bool   `json:"rollback"`
	Error    string `json:"error,omitempty"`
	// CDN is the cache setting pinned at deploy.
	CDN snapshot.CDN `json:"cdn"`
	// Shield is the rules pinned at deploy (functions and worker programs).
	Shield *rules.Settings `json:"shield,omitempty"`
	// EnvKeys names the environment variables copied in (values are
	// never shown).
	EnvKeys    []string   `json:"envKeys"`
	Files      int        `json:"files"`
	Size       int64      `json:"size"`
	Actor      string     `json:"actor"`
	CreatedAt  time.Time  `json:"createdAt"`
	FinishedAt *time.Time `json:"finishedAt"`

	workspaceID string
	envDigest   string
	serving     bool
	// managed: the platform runs it (run or module); spec is what it
	// runs and addr its loopback origin while it runs.
	managed bool
	spec    runSpec
	addr    string
	// memberID and starterKey are who deploys (the deployment's key acts
	// for them); set for a deployment being built only.
	memberID, starterKey string
}

// LogLine is one line of a deploy log.
type LogLine struct {
	At   time.Time `json:"at"`
	Line string    `json:"line"`
}

// DeployedFile is one file a static deployment serves.
type DeployedFile struct {
	Path        string `json:"path"`
	Size        int64  `json:"size"`
	ContentType string `json:"contentType"`
	SHA256      string `json:"sha256"`
}

const deploymentCols = `d.id, d.workspace_id, d.project_id, d.repo_id, d.repo_name, d.commit_number, d.source, d.kind, d.origin, d.root,
	d.state, d.rollback, d.error, d.env_digest, d.env_keys, d.cdn_enabled, d.cdn_ttl, d.shield, d.file_count, d.total_size, d.actor,
	d.created_at, d.finished_at, s.project_id IS NOT NULL, d.number, d.preview`

const deploymentFrom = ` FROM deployments d LEFT JOIN project_serving s ON s.deployment_id = d.id`

func scanDeployment(sc interface{ Scan(...any) error }) (Deployment, error) {
	var d Deployment
	var keys, shield, created, finished string
	err := sc.Scan(&d.ID, &d.workspaceID, &d.ProjectID, &d.RepoID, &d.RepoName, &d.Commit, &d.Source, &d.Kind, &d.Origin, &d.Root,
		&d.State, &d.Rollback, &d.Error, &d.envDigest, &keys, &d.CDN.Enabled, &d.CDN.CacheTTLSeconds, &shield, &d.Files, &d.Size, &d.Actor,
		&created, &finished, &d.serving, &d.Number, &d.Preview)
	if err != nil {
		return d, err
	}
	if sp, ok := decodeSpec(d.Kind, d.Root); ok {
		d.managed, d.spec = true, sp
		d.Kind, d.Run, d.Health, d.Module = sp.Kind, sp.Run, sp.Health, sp.Module
		d.addr, d.Origin, d.Root = d.Origin, "", ""
	}
	d.CreatedAt = store.ParseTime(created)
	if finished != "" {
		t := store.ParseTime(finished)
		d.FinishedAt = &t
	}
	d.EnvKeys = []string{}
	json.Unmarshal([]byte(keys), &d.EnvKeys)
	if shield != "" {
		var st rules.Settings
		if json.Unmarshal([]byte(shield), &st) == nil {
			d.Shield = &st
		}
	}
	if d.State == stateReady {
		switch {
		case d.serving:
			d.State = StateLive
		case d.Preview:
			d.State = StatePreview
		default:
			d.State = StateInactive
		}
	}
	return d, nil
}

func getDeployment(ctx context.Context, q store.Querier, id string) (Deployment, error) {
	d, err := scanDeployment(q.QueryRowContext(ctx, `SELECT `+deploymentCols+deploymentFrom+` WHERE d.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, api.NotFound("deployment")
	}
	if err != nil {
		return d, fmt.Errorf("deploys: get: %w", err)
	}
	return d, nil
}

// queryDeployments returns the deployments a WHERE clause selects, newest first.
// limit 0 means all.
func queryDeployments(ctx context.Context, q store.Querier, limit int, where string, args ...any) ([]Deployment, error) {
	query := `SELECT ` + deploymentCols + deploymentFrom + ` WHERE ` + where + ` ORDER BY d.created_at DESC, d.seq DESC`
	if limit > 0 {
		query += fmt.Sprintf(` LIMIT %d`, limit)
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("deploys: list: %w", err)
	}
	out, err := store.AppendRows([]Deployment{}, rows, scanDeployment)
	if err != nil {
		return nil, fmt.Errorf("deploys: list: %w", err)
	}
	return out, nil
}

// servingOf returns the project's serving deployment, or nil.
func servingOf(ctx context.Context, q store.Querier, projectID string) (*Deployment, error) {
	ds, err := queryDeployments(ctx, q, 1, `d.id = (SELECT deployment_id FROM project_serving WHERE project_id = ?)`, projectID)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	return &ds[0], nil
}

// latestOf returns the project's newest deployment, or nil.
func latestOf(ctx context.Context, q store.Querier, projectID string) (*Deployment, error) {
	ds, err := queryDeployments(ctx, q, 1, `d.project_id = ?`, projectID)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	return &ds[0], nil
}

func appendLog(ctx context.Context, q store.Querier, id string, at time.Time, line string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO deployment_logs(deployment_id, seq, at, line)
		VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM deployment_logs WHERE deployment_id = ?), ?, ?)`, id, id, store.FormatTime(at), line)
	if err != nil {
		return fmt.Errorf("deploys: log: %w", err)
	}
	return nil
}

func readLog(ctx context.Context, q store.Querier, id string) ([]LogLine, error) {
	rows, err := q.QueryContext(ctx, `SELECT at, line FROM deployment_logs WHERE deployment_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("deploys: log: %w", err)
	}
	defer rows.Close()
	out := []LogLine{}
	for rows.Next() {
		var l LogLine
		var at string
		if err := rows.Scan(&at, &l.Line); err != nil {
			return nil, fmt.Errorf("deploys: log: %w", err)
		}
		l.At = store.ParseTime(at)
		out = append(out, l)
	}
	return out, rows.Err()
}

func readFiles(ctx context.Context, q store.Querier, id string) ([]DeployedFile, error) {
	rows, err := q.QueryContext(ctx, `SELECT path, size, content_type, sha256 FROM deployment_files WHERE deployment_id = ? ORDER BY path`, id)
	if err != nil {
		return nil, fmt.Errorf("deploys: files: %w", err)
	}
	defer rows.Close()
	out := []DeployedFile{}
	for rows.Next() {
		var f DeployedFile
		if err := rows.Scan(&f.Path, &f.Size, &f.ContentType, &f.SHA256); err != nil {
			return nil, fmt.Errorf("deploys: files: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}
