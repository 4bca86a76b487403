package projects

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
)

// Config is the projects area's configuration.
type Config struct {
	// AppsDomain is the domain projects answer under: https://<slug>.<AppsDomain>.
	AppsDomain string `json:"appsDomain"`
	// AppsPort is appended to addresses when not 443 (local development).
	AppsPort int `json:"appsPort"`
	// ReservedPrefixes may not start a project address.
	ReservedPrefixes []string `json:"reservedPrefixes"`
	// ReservedNames may not be a project address.
	ReservedNames []string `json:"reservedNames"`
}

// Provision fills defaults.
func (c *Config) Provision() {
	if c.AppsDomain == "" {
		c.AppsDomain = "localhost"
	}
	if c.ReservedPrefixes == nil {
		c.ReservedPrefixes = DefaultReservedPrefixes
	}
	if c.ReservedNames == nil {
		c.ReservedNames = DefaultReservedNames
	}
}

// Service is the projects area: its rules, over a Store.
type Service struct {
	cfg         Config
	store       Store
	clock       clock.Clock
	meter       metering.Recorder
	sealer      *seal.Sealer
	deployments Deployments
	dependents  []Dependent
	counters    map[string]Counter
	log         *slog.Logger
}

// Deps are what the area is built on.
type Deps struct {
	DB *store.DB
	// Clock dates projects (clock.System when nil).
	Clock clock.Clock
	// Audit records changes (audit.New over DB when nil).
	Audit *audit.Log
	// Meter receives projects_created.
	Meter metering.Recorder
	// Sealer seals environment variables at rest.
	Sealer *seal.Sealer
	// Logger receives teardown failures in full (slog.Default when nil).
	Logger *slog.Logger
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Meter": d.Meter != nil, "Sealer": d.Sealer != nil} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%w: %s", ErrNotConfigured, strings.Join(missing, ", "))
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("projects: missing dependencies")

// New returns the projects service over the platform's SQL database.
func New(cfg Config, d Deps) (*Service, error) {
	cfg.Provision()
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Audit == nil {
		d.Audit = audit.New(d.DB, d.Clock)
	}
	s := &Service{cfg: cfg, clock: d.Clock, meter: d.Meter, sealer: d.Sealer, counters: map[string]Counter{}, log: d.Logger}
	s.store = &SQLStore{DB: d.DB, Audit: d.Audit, Address: s.Address}
	return s, nil
}

// SetKeyRevoker installs what revokes a deleted project's keys.
func (s *Service) SetKeyRevoker(k KeyRevoker) {
	if st, ok := s.store.(*SQLStore); ok {
		st.Keys = k
	}
}

// SetDeployments installs what knows the projects' deployments.
func (s *Service) SetDeployments(d Deployments) { s.deployments = d }

// AddDependent registers an area whose resources go with a deleted project.
func (s *Service) AddDependent(d Dependent) { s.dependents = append(s.dependents, d) }

// AddCounter registers a services counter.
func (s *Service) AddCounter(c Counter) { s.counters[c.Service()] = c }

// Address is the permanent address of slug.
func (s *Service) Address(slug string) string {
	host := slug + "." + s.cfg.AppsDomain
	if s.cfg.AppsPort != 0 && s.cfg.AppsPort != 443 {
		host += ":" + strconv.Itoa(s.cfg.AppsPort)
	}
	return "https://" + host
}

// Get returns a project of the workspace (404 for another workspace's).
func (s *Service) Get(ctx context.Context, workspace, id string) (Project, error) {
	return s.store.Project(ctx, workspace, id)
}

// Exists tells whether a project exists in a workspace.
func (s *Service) Exists(ctx context.Context, workspace, id string) (bool, error) {
	_, err := s.Get(ctx, workspace, id)
	if err == nil {
		return true, nil
	}
	var e *api.Error
	if errors.As(err, &e) && e.Kind == api.KindNotFound {
		return false, nil
	}
	return false, err
}

// Writable returns the project when it accepts changes: other areas call it
// before creating anything under a project.
func (s *Service) Writable(ctx context.Context, workspace, id string) (Project, error) {
	p, err := s.Get(ctx, workspace, id)
	if err != nil {
		return p, err
	}
	if p.Status == StatusTeardownFailed {
		return p, ErrTeardownFailed
	}
	return p, nil
}

// withServing fills LiveURL from the deployments.
func (s *Service) withServing(ctx context.Context, p Project) (Project, Serving, error) {
	sv := Serving{State: NotDeployed}
	if s.deployments == nil {
		return p, sv, nil
	}
	sv, live, err := s.deployments.Serving(ctx, p)
	if err != nil {
		return p, sv, err
	}
	p.LiveURL = live
	return p, sv, nil
}

// List returns the workspace's projects (only its own for a project key),
// each with live_url.
func (s *Service) List(ctx context.Context, pr *auth.Principal) ([]Project, error) {
	out, err := s.store.Projects(ctx, pr.WorkspaceID, pr.ProjectID)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if out[i], _, err = s.withServing(ctx, out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Detail is the answer of a project read.
type Detail struct {
	Project      Project        `json:"project"`
	Serving      Serving        `json:"serving"`
	DeployAction DeployAction   `json:"deployAction"`
	Services     map[string]int `json:"services"`
}

// Read returns a project with what it serves, what Deploy will do and the
// counts of its services.
func (s *Service) Read(ctx context.Context, workspace, id string) (Detail, error) {
	p, err := s.Get(ctx, workspace, id)
	if err != nil {
		return Detail{}, err
	}
	d := Detail{Services: map[string]int{}}
	if d.Project, d.Serving, err = s.withServing(ctx, p); err != nil {
		return Detail{}, err
	}
	d.DeployAction = DeployAction{Kind: "none", Description: "nothing to deploy yet: push a commit to a repo and deploy it to this project"}
	if s.deployments != nil {
		if d.DeployAction, err = s.deployments.DeployAction(ctx, p); err != nil {
			return Detail{}, err
		}
	}
	for _, k := range ServiceKeys {
		d.Services[k] = 0
		if c, ok := s.counters[k]; ok {
			if d.Services[k], err = c.Count(ctx, p.ID); err != nil {
				return Detail{}, err
			}
		}
	}
	return d, nil
}

// CreateRequest is the body of POST /api/projects.
type CreateRequest struct {
	Name    string `json:"name"`
	RepoURL string `json:"repoUrl,omitempty"`
}

// MaxNameLen bounds a project name.
const MaxNameLen = 100

func validName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", api.Invalid("name is required")
	}
	if len(name) > MaxNameLen {
		return "", api.Invalid("name is at most %d characters", MaxNameLen)
	}
	return name, nil
}

func validRepoURL(u string) error {
	if u == "" {
		return nil
	}
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" || len(u) > 2000 {
		return api.Invalid("repoUrl must be an http or https address")
	}
	return nil
}

// Create makes a project. Its slug is derived from the name, made unique
// with a numeric suffix, and never changes.
func (s *Service) Create(ctx context.Context, pr *auth.Principal, req CreateRequest) (Project, error) {
	name, err := validName(req.Name)
	if err != nil {
		return Project{}, err
	}
	if err := validRepoURL(req.RepoURL); err != nil {
		return Project{}, err
	}
	base := Slugify(name)
	if base == "" {
		return Project{}, api.Invalid("name %q has no letters or digits to form an address from", name)
	}
	if why, ok := reserved(base, s.cfg.ReservedPrefixes, s.cfg.ReservedNames); ok {
		return Project{}, api.E(api.KindInvalid, "reserved_name", "the address %s is not available: %s", s.Address(base), why)
	}
	now := s.clock.Now()
	p := Project{ID: store.NewID("prj"), WorkspaceID: pr.WorkspaceID, Name: name, RepoURL: req.RepoURL, Status: StatusActive, CreatedAt: now, UpdatedAt: now}
	err = s.store.CreateProject(ctx, &p, base, func(p Project) audit.Event {
		return audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "project.create", Category: audit.CategoryProject,
			TargetType: "project", TargetID: p.ID, ProjectID: p.ID, Summary: fmt.Sprintf("created project %s (%s)", name, p.Slug)}
	})
	if err != nil {
		return Project{}, err
	}
	s.meter.Record(ctx, metering.Event{Workspace: pr.WorkspaceID, Project: p.ID, Metric: metering.Projects, Quantity: 1})
	return p, nil
}

// UpdateRequest is the body of PATCH /api/projects/{id}; absent fields are
// kept, an empty string clears an optional field.
type UpdateRequest struct {
	Name           *string `json:"name,omitempty"`
	RepoURL        *string `json:"repoUrl,omitempty"`
	RepoBranch     *string `json:"repoBranch,omitempty"`
	MailSenderName *string `json:"mailSenderName,omitempty"`
	MailFrom       *string `json:"mailFrom,omitempty"`
	MailReplyTo    *string `json:"mailReplyTo,omitempty"`
}

func validEmailField(field string, v *string) error {
	if v == nil || *v == "" {
		return nil
	}
	a, err := mail.ParseAddress(*v)
	if err != nil || a.Address != *v || len(*v) > 254 {
		return api.Invalid("%s must be an e-mail address", field)
	}
	return nil
}

func validBranch(b string) bool {
	if len(b) > 255 || strings.HasPrefix(b, "-") || strings.Contains(b, "..") || strings.HasSuffix(b, ".lock") || strings.HasSuffix(b, "/") {
		return false
	}
	for _, r := range b {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("~^:?*[\\", r) {
			return false
		}
	}
	return true
}

// Update changes a project's name and optional fields; the slug stays.
func (s *Service) Update(ctx context.Context, pr *auth.Principal, id string, req UpdateRequest) (Project, error) {
	if req.Name != nil {
		n, err := validName(*req.Name)
		if err != nil {
			return Project{}, err
		}
		req.Name = &n
	}
	if req.RepoURL != nil {
		if err := validRepoURL(*req.RepoURL); err != nil {
			return Project{}, err
		}
	}
	if req.RepoBranch != nil && !validBranch(*req.RepoBranch) {
		return Project{}, api.Invalid("repoBranch %q is not a valid branch name", *req.RepoBranch)
	}
	if req.MailSenderName != nil && (len(*req.MailSenderName) > 100 || strings.ContainsAny(*req.MailSenderName, "\r\n")) {
		return Project{}, api.Invalid("mailSenderName is one line of at most 100 characters")
	}
	if err := validEmailField("mailFrom", req.MailFrom); err != nil {
		return Project{}, err
	}
	if err := validEmailField("mailReplyTo", req.MailReplyTo); err != nil {
		return Project{}, err
	}
	now := s.clock.Now()
	p, err := s.store.UpdateProject(ctx, pr.WorkspaceID, id, func(p *Project) ([]string, error) {
		if p.Status == StatusTeardownFailed {
			return nil, ErrTeardownFailed
		}
		var changed []string
		set := func(field string, dst *string, v *string) {
			if v != nil && *v != *dst {
				*dst = *v
				changed = append(changed, field)
			}
		}
		set("name", &p.Name, req.Name)
		set("repoUrl", &p.RepoURL, req.RepoURL)
		set("repoBranch", &p.RepoBranch, req.RepoBranch)
		set("mailSenderName", &p.MailSenderName, req.MailSenderName)
		set("mailFrom", &p.MailFrom, req.MailFrom)
		set("mailReplyTo", &p.MailReplyTo, req.MailReplyTo)
		if len(changed) > 0 {
			p.UpdatedAt = now
		}
		return changed, nil
	}, func(p Project, changed []string) audit.Event {
		return audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "project.update", Category: audit.CategorySettings,
			TargetType: "project", TargetID: id, ProjectID: id, Summary: "changed " + strings.Join(changed, ", "), Details: map[string]any{"fields": changed}}
	})
	if err != nil {
		return Project{}, err
	}
	p, _, err = s.withServing(ctx, p)
	return p, err
}
